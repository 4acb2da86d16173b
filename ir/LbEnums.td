#ifndef LOWBIT_IR_LBENUMS_TD
#define LOWBIT_IR_LBENUMS_TD

include "mlir/IR/EnumAttr.td"

// Which encodings are reserved for non-finite values, following the OCP 8-bit
// and MX specifications: `ieee` (all-ones exponent is Inf/NaN, as e5m2),
// `fn` (only the all-ones code is NaN, as e4m3fn and e8m0), `finite` (every
// code is a number, as e2m1, e2m3, e3m2).
def Lb_SpecialValues : I32EnumAttr<"SpecialValues", "non-finite encodings", [
  I32EnumAttrCase<"finite", 0>,
  I32EnumAttrCase<"fn", 1>,
  I32EnumAttrCase<"ieee", 2>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

def Lb_ScaleGranularity : I32EnumAttr<"ScaleGranularity",
    "how many weights share one scale", [
  I32EnumAttrCase<"tensor", 0>,
  I32EnumAttrCase<"channel", 1>,
  I32EnumAttrCase<"group", 2>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

// `sub_code`: w = (q - z)·s with z in code units; `sub_value`: w = q·s - z;
// `quantized`: as sub_code, with z stored as integer codes.
def Lb_ZeroMode : I32EnumAttr<"ZeroMode", "how zero points apply", [
  I32EnumAttrCase<"none", 0>,
  I32EnumAttrCase<"sub_code", 1>,
  I32EnumAttrCase<"sub_value", 2>,
  I32EnumAttrCase<"quantized", 3>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

// How blocks meet output tiles (core::TileScheduler): `grid`, a block a
// tile; `persistent`, a block an SM walking the tiles; `stream_k`, the same
// with the last wave's tiles split along K.
def Lb_TileScheduler : I32EnumAttr<"TileScheduler", "tile scheduler", [
  I32EnumAttrCase<"grid", 0>,
  I32EnumAttrCase<"persistent", 1>,
  I32EnumAttrCase<"stream_k", 2>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

def Lb_KernelFamily : I32EnumAttr<"KernelFamily", "kernel family", [
  I32EnumAttrCase<"gemv", 0>,
  I32EnumAttrCase<"mma", 1>,
  I32EnumAttrCase<"wgmma", 2>,
  I32EnumAttrCase<"gemv_tiled", 3>,
  I32EnumAttrCase<"dequant", 4>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

def Lb_ThreadCoord : I32EnumAttr<"ThreadCoord", "a thread's position", [
  I32EnumAttrCase<"lane", 0>,
  I32EnumAttrCase<"warp", 1>,
  I32EnumAttrCase<"block_x", 2>,
  I32EnumAttrCase<"block_y", 3>,
  I32EnumAttrCase<"grid_x", 4>, // blocks in the grid along x
  I32EnumAttrCase<"grid_y", 5>,
  I32EnumAttrCase<"block_z", 6> // a split-K block's rank in its cluster (cluster_k > 1)
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

// Which logical weight elements one thread's unit of 32 codes holds:
// gemv_row is 32 consecutive K of one row; mma_b_paired is the m16n8k16 B
// operand of eight 8-column subtiles with K reordered inside each 32-wide
// block, so that the A values a lane needs for two consecutive k16 steps are
// 8 consecutive activations (one 16-byte load); the weights carry the same
// order.
def Lb_Fragment : I32EnumAttr<"Fragment", "a thread's share of a weight tile", [
  I32EnumAttrCase<"gemv_row", 0>,
  I32EnumAttrCase<"mma_b_paired", 2>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

// What the decode sequences (passes/DecodeStrategy.cpp) compute on packed
// pairs: removing a bias (sub) or scaling and biasing at once (fma).
def Lb_PairOp : I32EnumAttr<"PairOp", "packed-pair arithmetic", [
  I32EnumAttrCase<"sub", 0>,
  I32EnumAttrCase<"fma", 2>
]> {
  let cppNamespace = "::lowbit::lb";
  let genSpecializedAttr = 0;
}

#endif // LOWBIT_IR_LBENUMS_TD

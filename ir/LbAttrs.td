#ifndef LOWBIT_IR_LBATTRS_TD
#define LOWBIT_IR_LBATTRS_TD

include "ir/LbDialect.td"
include "ir/LbEnums.td"
include "mlir/IR/AttrTypeBase.td"

class Lb_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Lb_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Lb_QuantAttr : Lb_Attr<"Quant", "quant"> {
  let summary = "a quantization scheme: scale granularity, scale type, zeros";
  let description = [{
    `#lb.quant<granularity = group, group_size = 128, scale = f16, zero = none>`:
    one f16 scale per 128 consecutive weights along K. `group_size` is
    meaningful only for `group`. `act_order = true` means groups follow the
    `g_idx` permutation of K, which the runtime applies to the activations.
    Block scales are one byte per group: `scale = !lb.float<ue8m0, fn>` (OCP
    MX, groups of 32) or `scale = f8E4M3FN`, without zero points.
    `tensor_scale = f32` (NVFP4's second level, over f8E4M3FN block scales)
    is one f32 multiplying every block scale; it is stored in the scales
    operand's buffer after the block scales, at the next multiple of 4 bytes
    (core::tensorScaleOffset, lowbit.h), and read by lb.load_tensor_scale.
    Two-level scales: `super_block = 256, super_step = f16` makes each
    group's scale an integer code (`scale = ui8` or `si8`) times one step per
    256 weights along K; with `zero = sub_value` the zeros (mins) are codes of
    the same type times their own steps. Each buffer holds its codes, then its
    steps at the next multiple of 16 bytes (core::superStepOffset), read by
    lb.load_super_step.
  }];
  let parameters = (ins
    "::lowbit::lb::ScaleGranularity":$granularity,
    DefaultValuedParameter<"int64_t", "0">:$group_size,
    "::mlir::Type":$scale,
    OptionalParameter<"::mlir::Type", "the per-tensor second-level scale's type">:$tensor_scale,
    DefaultValuedParameter<"::lowbit::lb::ZeroMode", "::lowbit::lb::ZeroMode::none">:$zero,
    DefaultValuedParameter<"bool", "false">:$act_order,
    DefaultValuedParameter<"int64_t", "0">:$super_block,
    OptionalParameter<"::mlir::Type", "the type of the steps of super-blocks">:$super_step
  );
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def Lb_ScheduleAttr : Lb_Attr<"Schedule", "schedule"> {
  let summary = "how a kernel computes a problem: family, tiles, warps, stages";
  let description = [{
    `#lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 4, split_k = 1>`.
    `tile` is the block tile [M, N, K]; `warps` the warp grid over [M, N].
    `cluster_k = c` (left out when 1) splits K across c blocks of one
    thread-block cluster, which add their sums over distributed shared
    memory (core/Schedule.h). `scheduler = persistent` (left out when
    `grid`) launches a block an SM that walks the output tiles;
    `scheduler = stream_k` also splits the last wave's tiles along K.
    The schedule never names a datatype: the tuner searches these alone.
  }];
  let parameters = (ins
    "::lowbit::lb::KernelFamily":$family,
    ArrayRefParameter<"int64_t", "block tile [M, N, K]">:$tile,
    ArrayRefParameter<"int64_t", "warp grid [M, N]">:$warps,
    "int64_t":$stages,
    "int64_t":$split_k,
    DefaultValuedParameter<"int64_t", "1">:$cluster_k,
    DefaultValuedParameter<"::lowbit::lb::TileScheduler",
                           "::lowbit::lb::TileScheduler::grid">:$scheduler
  );
  // `<family = f, tile = [..], warps = [..], stages = s, split_k = k` and
  // then the optional `cluster_k = c` and `scheduler = s` in that order
  // (LbAttrs.cpp): ODS's optional groups cannot tell two that both start
  // with a comma apart.
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
}

def Lb_SwizzleAttr : Lb_Attr<"Swizzle", "swizzle"> {
  let summary = "a shared-memory layout: 16-byte chunks XOR-swizzled by an F2-linear map of the row";
  let description = [{
    `#lb.swizzle<bytes = 128, xor = [1, 2, 4]>`: rows hold whole spans of
    `bytes` bytes, and the 16-byte chunk c of row r lives at chunk
    c ^ f(r), where f(r) XORs together `xor[i]` for every set bit i of
    r mod 8 (each mask names chunk bits of the span). So f is linear over
    F2, and each row's chunks are a permutation of the unswizzled ones.
    - The hardware's layouts, which the TMA unit writes with
      CU_TENSOR_MAP_SWIZZLE_{128B,64B,32B} and wgmma reads with a descriptor
      of swizzle mode 128B, 64B or 32B (PTX ISA, "Shared Memory Matrix
      Layout"), XOR address bits 4.. with address bits 7..: `xor = [1, 2,
      4]` (f(r) = r mod 8) for 128-byte rows, `xor = [0, 1, 2]` (f(r) =
      (r / 2) mod 4) for 64, `xor = [0, 0, 1]` for 32. Both units swizzle
      address bits, so a stage in one must start on 8 rows x `bytes`.
    - `xor = [5, 2, 4]` (f(r) = (r mod 8) ^ 4 (r mod 2)) is the staged mma's
      activation layout: a phase of lb.load_a_fragment (rows 2 i and 2 i + 1,
      chunks c .. c + 3, c a multiple of 4) finds the odd row's chunks in
      the other half of the 128-byte bank window, so it is conflict-free.
    Every address into such a buffer is computed from this attribute by
    one emitter helper (codegen/emit/EmitWgmma.cpp, swizzledChunk).
  }];
  let parameters = (ins "int64_t":$bytes,
                        ArrayRefParameter<"int64_t", "chunk bits each row bit toggles">:$toggles);
  let assemblyFormat = "`<` `bytes` `=` $bytes `,` `xor` `=` `[` $toggles `]` `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// The hardware's swizzle of rows of `bytes` (address bits 4.. XOR 7..).
    static SwizzleAttr getHardware(::mlir::MLIRContext *context, int64_t bytes);
    /// Whether this is the layout TMA and wgmma swizzle addresses in.
    bool isHardware() const;
    /// Rows one swizzle pattern spans: f reads r mod 8.
    static constexpr int64_t kRowBits = 3;
    static constexpr int64_t kPatternRows = int64_t{1} << kRowBits;
    int64_t getPatternRows() const { return kPatternRows; }
    /// The alignment a stage needs when the hardware reads it.
    int64_t getAlignment() const { return getPatternRows() * getBytes(); }
  }];
}

def Lb_ThreadCoordAttr : EnumAttr<Lb_Dialect, Lb_ThreadCoord, "coord">;
def Lb_FragmentAttr : EnumAttr<Lb_Dialect, Lb_Fragment, "fragment">;
def Lb_PairOpAttr : EnumAttr<Lb_Dialect, Lb_PairOp, "pair_op">;

#endif // LOWBIT_IR_LBATTRS_TD

#ifndef LOWBIT_IR_LBMMAS8OPS_TD
#define LOWBIT_IR_LBMMAS8OPS_TD

// Tile-level ops of the split-K mma on the integer tensor cores (s8
// activations): mma.sync m16n8k32 with s8 operands and s32 accumulators,
// which leave the K loop as f32 and are scaled once, after the sum.
// Fragment values: `vector<16xi8>` is an A fragment (4 registers of 4
// bytes, byte b of a register its element + b), `vector<8xi8>` a B
// fragment (2 registers), `vector<4xsi32>` an accumulator, `vector<32xi8>`
// a unit lb.decode turned into s8 bytes (8 registers, register s the 4
// bytes of 8-column subtile s).

include "ir/LbDialect.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lb_S8AccumulatorType : VectorOfLengthAndType<[4], [SI32]>;

def Lb_ZeroAccumulatorOp : Lb_Op<"zero_accumulator", [Pure]> {
  let summary = "s32 accumulators of zeros: an mma fragment, or a thread's share of a wgmma's";
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [SI32]>:$acc);
  let assemblyFormat = "attr-dict `:` type($acc)";
}

def Lb_PackAFragmentS8Op : Lb_Op<"pack_a_fragment_s8", [Pure, AllTypesMatch<["step0", "step1"]>]> {
  let summary = "the m16 x k32 A fragment of a 16-column slice from two decoded k16 units";
  let description = [{
    The weights are the A operand (W·xᵀ). In m16n8k32, lane (g, t) holds A
    bytes of rows g, g + 8 at K slots 4t + b (registers 0, 1) and
    16 + 4t + b (registers 2, 3). The family maps slot 4t + b to K
    8t + b and 16 + 4t + b to 8t + 4 + b: the paired K order
    (core::pairedKOf) in which a unit of k16 step j holds, in register s,
    column 8s + g's bytes at K 8t + 4j + b. So slice w (columns 16w ..
    16w + 16 of a 64-column unit) is a0..a3 = step0.r[2w], step0.r[2w + 1],
    step1.r[2w], step1.r[2w + 1]: no data moves, the emitted CUDA only
    names registers.
  }];
  let arguments = (ins VectorOfLengthAndType<[32], [I8]>:$step0,
                       VectorOfLengthAndType<[32], [I8]>:$step1, I64Attr:$slice);
  let results = (outs VectorOfLengthAndType<[16], [I8]>:$fragment);
  let assemblyFormat = [{
    $step0 `,` $step1 `[` $slice `]` attr-dict `:` type($step0) `->` type($fragment)
  }];
  let hasVerifier = 1;
}

def Lb_MmaS8Op : Lb_Op<"mma_s8", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "mma.sync.m16n8k32 with s8 operands and s32 accumulation";
  let arguments = (ins VectorOfLengthAndType<[16], [I8]>:$a,
                       VectorOfLengthAndType<[8], [I8]>:$b, Lb_S8AccumulatorType:$acc);
  let results = (outs Lb_S8AccumulatorType:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc)";
}

def Lb_MmaE4M3Op : Lb_Op<"mma_e4m3", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "mma.sync.m16n8k32 with e4m3 operands and f32 accumulation (sm_89+)";
  let description = [{
    The fp8 form of lb.mma_s8: the same fragments of bytes (e4m3fn bit
    patterns, held as i8), summed in f32.
  }];
  let arguments = (ins VectorOfLengthAndType<[16], [I8]>:$a,
                       VectorOfLengthAndType<[8], [I8]>:$b, VectorOfLengthAndType<[4], [F32]>:$acc);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc)";
}

def Lb_OnesAFragmentS8Op : Lb_Op<"ones_a_fragment_s8", [Pure]> {
  let summary = "an m16 x k32 A fragment of ones: its mma sums each token's x";
  let description = [{
    Codes whose s8 bytes are centred on c ≠ 0 (core::s8Decode) need
    c · Σx per token: an mma of this fragment with a token slice's B
    fragment gives every row the slice's Σx over the block's 32 K.
  }];
  let results = (outs VectorOfLengthAndType<[16], [I8]>:$fragment);
  let assemblyFormat = "attr-dict `:` type($fragment)";
}

def Lb_AddTokenSumsOp : Lb_Op<"add_token_sums", [Pure, AllTypesMatch<["acc", "sums", "result"]>]> {
  let summary = "acc + factor · sums, in s32: the centre's c · 2^shift · Σx";
  let description = [{
    `sums` is an accumulator whose rows all hold their tokens' Σx
    (lb.ones_a_fragment_s8), so it adds register by register: an mma
    fragment, or a thread's share of a wgmma accumulator.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [SI32]>:$acc,
                       VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [SI32]>:$sums, I64Attr:$factor);
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [SI32]>:$result);
  let assemblyFormat = "$acc `,` $sums `x` $factor attr-dict `:` type($acc)";
}

def Lb_ConvertAccumulatorOp : Lb_Op<"convert_accumulator", [Pure]> {
  let summary = "an s32 accumulator fragment as f32 (exact below 2^24, rounded above)";
  let description = [{
    A warp's integer sum leaves the K loop once, before the f32 split-K
    partials: the warps' and the cluster's reduction stay the f16 families'.
  }];
  let arguments = (ins Lb_S8AccumulatorType:$acc);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$acc attr-dict `:` type($acc) `->` type($result)";
}

def Lb_LoadTokenScalesOp : Lb_Op<"load_token_scales", [MemoryEffects<[MemRead]>]> {
  let summary = "the f32 scales of the two tokens a lane's accumulator registers hold";
  let description = [{
    In a W·xᵀ accumulator of the 8 tokens at m0, lane (g, t) holds tokens
    m0 + 2t and m0 + 2t + 1 (registers 0, 1 and again 2, 3). Per token
    (`x_scales` [M]) those two scales, 0 for tokens at or past `rows` (M);
    per tensor ([1]) the one scale twice.
  }];
  let arguments = (ins MemRefRankOf<[F32], [1]>:$scales, Index:$m0, Index:$rows);
  let results = (outs VectorOfLengthAndType<[2], [F32]>:$values);
  let assemblyFormat = [{
    $scales `[` $m0 `]` `rows` $rows attr-dict `:` type($scales) `->` type($values)
  }];
}

def Lb_ScaleTokensOp : Lb_Op<"scale_tokens", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "a W·xᵀ accumulator times its tokens' scales (lb.load_token_scales)";
  let arguments = (ins VectorOfLengthAndType<[4], [F32]>:$acc,
                       VectorOfLengthAndType<[2], [F32]>:$scales);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$acc `,` $scales attr-dict `:` type($acc) `,` type($scales)";
}

#endif // LOWBIT_IR_LBMMAS8OPS_TD

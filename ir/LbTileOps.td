#ifndef LOWBIT_IR_LBTILEOPS_TD
#define LOWBIT_IR_LBTILEOPS_TD

// Tile-level ops: what `lb-tile` produces. They describe one thread's work in
// a kernel (SIMT), with loops and index math in scf/arith. Fragment-shaped
// values are vectors: `vector<4xi32>` is one 16-byte load of packed codes,
// `vector<32xf16>` 32 decoded values held as 16 f16x2 registers (elements
// 2j and 2j+1 share register j).

include "ir/LbDialect.td"
include "ir/LbAttrs.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// One unit of 32 packed codes: as many 32-bit words as the code has bits (3, 5
// and 6: its low-plane words, then its high-plane words), or two units of
// 1-, 2- or 3-bit codes.
def Lb_CodeWords : VectorOfLengthAndType<[1, 2, 3, 4, 5, 6, 8], [I32]>;

def Lb_ThreadCoordOp : Lb_Op<"thread_coord", [Pure]> {
  let summary = "the calling thread's lane, warp, or block index";
  let arguments = (ins Lb_ThreadCoordAttr:$coord);
  let results = (outs Index:$result);
  let assemblyFormat = "$coord attr-dict";
}

def Lb_WarpUniformOp : Lb_Op<"warp_uniform", [Pure]> {
  let summary = "an index every lane of the warp holds: said so to the CUDA compiler";
  let description = [{
    `value`, which the caller guarantees is the same in all 32 lanes of every
    warp that runs it, all of which do, and below 2^31. The emitter reads it
    from lane 0 (a 32-bit `__shfl_sync`; ptxas did not take a 64-bit one's
    result as uniform), which ptxas then knows to be warp-uniform, so it and
    what is derived from it stay in uniform registers. A persistent wgmma
    block's tile index, derived from blockIdx.x in a loop, otherwise went to
    vector registers, and with it the wgmma descriptors: 21 more
    instructions a K tile (sm_90a, t128x256).
  }];
  let arguments = (ins Index:$value);
  let results = (outs Index:$result);
  let assemblyFormat = "$value attr-dict";
}

def Lb_LoadCodesOp : Lb_Op<"load_codes", [
    MemoryEffects<[MemRead]>]> {
  let summary = "one 16-byte load of packed weight codes into a fragment";
  let description = [{
    Loads this thread's share of the codes of the weight tile whose origin is
    (`n0`, `k0`): one unit of 32 codes, `bits` 32-bit words (32 bytes for
    8-bit codes, 16 for 4-bit, 8 for 2-bit, 4 for 1-bit), or for
    mma_b_paired with 2- and 1-bit codes the two units of both k16 steps of
    the 32-wide block at `k0` (core/FragmentFacts.h). Which logical codes a thread receives, and in which register
    and bit position, is the `fragment`: `gemv_row` (lane l holds codes
    k0 + 32 l .. k0 + 32 l + 31 of row n0) or `mma_b_paired` (the m16n8k16 B
    operand of eight n-subtiles, paired K order). The weight's memory layout is not chosen here:
    `lb-propagate-layouts` derives it so that this load is one contiguous
    16-byte access, and records the tile it covers in `tile`. With a `stage`,
    the codes come from that stage of a shared staging buffer ([stages, N
    tile, K tile]) that lb.copy_codes_async filled tile by tile.
  }];
  let arguments = (ins AnyMemRef:$weights, Optional<Index>:$stage, Index:$n0, Index:$k0,
                       Lb_FragmentAttr:$fragment,
                       OptionalAttr<DenseI64ArrayAttr>:$tile);
  let results = (outs Lb_CodeWords:$words);
  let assemblyFormat = [{
    $weights (`stage` $stage^)? `[` $n0 `,` $k0 `]` $fragment (`tile` $tile^)? attr-dict
    `:` type($weights) `->` type($words)
  }];
  let hasVerifier = 1;
}

def Lb_DecodeOp : Lb_Op<"decode", [Pure]> {
  let summary = "packed codes to compute-type values (before lb-lower-decode)";
  let description = [{
    Decodes the 32 codes of unit `unit` (words [unit x bits, (unit + 1) x
    bits) of a load that holds one or two units) to 32 values of the result
    type, in the order the codes' fragment defines; `lb-lower-decode`
    replaces this op by bit operations, and lb-propagate-layouts folds their
    in-register interleave into the weight layout. With `raw` (unsigned codes
    or minifloats to f16, no zero points) the values are the codes' values
    times 2^-e, e the exponent core::rawScaleExponent gives each subtile
    (24 - p for integer codes at bit p): the consumer scales them.

    An i8 result is s8 bytes for the integer tensor cores, 4 a register
    (8 registers): byte d = 2^shift · (v - centre), core::s8Decode's shift
    and centre, which the consumer folds into its scale and Σx term; it
    takes neither `raw` nor zero points.

    With `minus` zero points, the values are q - z: the 16 registers (value
    pairs) are split evenly between the zeros, in order (one zero for a
    gemv_row unit, one per 8-column subtile of an mma_b_paired unit, whose
    registers 2 s and 2 s + 1 are subtile s). The subtraction happens before
    any scale, in the value type, where q - z is exact for integer zeros and
    one rounding of it otherwise: folding the zero into the scale as
    q·s + (-z·s) rounds -z·s to the value type, an error that is the same
    for every K of a column and so grows with Σx (docs/architecture.md).
    `residual` says the zeros may not be exact in the value type (f16 or f32
    zeros with bf16 values, f32 zeros with f16 values): then what rounding
    them left is subtracted too.
  }];
  let arguments = (ins Lb_CodeWords:$words, TypeAttr:$code_type,
                       DefaultValuedAttr<I64Attr, "0">:$unit, Variadic<F32>:$zeros,
                       UnitAttr:$residual, UnitAttr:$raw);
  let results = (outs VectorOfLengthAndType<[32], [F16, BF16, I8]>:$values);
  let assemblyFormat = [{
    $words (`unit` $unit^)? (`raw` $raw^)? (`minus` `(` $zeros^ `)`)? (`residual` $residual^)?
    `as` $code_type attr-dict `:` type($words) `->` type($values)
  }];
  let hasVerifier = 1;
}

def Lb_RoundToOp : Lb_Op<"round_to", [Pure]> {
  let summary = "an f32 rounded to nearest (even) in `element` (f16 or bf16), widened back";
  let arguments = (ins F32:$value, TypeAttr:$element);
  let results = (outs F32:$result);
  let assemblyFormat = "$value `as` $element attr-dict";
}

def Lb_ExtractWordOp : Lb_Op<"extract_word", [Pure]> {
  let summary = "one 32-bit word of a loaded fragment";
  let arguments = (ins Lb_CodeWords:$words, I64Attr:$index);
  let results = (outs I32:$word);
  let assemblyFormat = "$words `[` $index `]` attr-dict `:` type($words)";
}

def Lb_Lop3Op : Lb_Op<"lop3", [Pure]> {
  let summary = "any three-input bitwise function (PTX lop3.b32)";
  let description = [{
    `lut` is the function's truth table: evaluate it on a = 0xF0, b = 0xCC,
    c = 0xAA, e.g. (a & b) | c is 0xEA.
  }];
  let arguments = (ins I32:$a, I32:$b, I32:$c, I32Attr:$lut);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `,` $c `lut` $lut attr-dict";
}

def Lb_PairArithOp : Lb_Op<"pair_arith", [Pure]> {
  let summary = "f16x2 / bf16x2 arithmetic on 32-bit registers";
  let description = [{
    `op` is sub or fma (fma uses `c`). Operands are the bit patterns of
    two packed halves, so decode sequences stay in registers.
  }];
  let arguments = (ins Lb_PairOpAttr:$op, TypeAttr:$element, I32:$a, I32:$b,
                       Optional<I32>:$c);
  let results = (outs I32:$result);
  let assemblyFormat = "$op $element $a `,` $b (`,` $c^)? attr-dict";
}

def Lb_PackPairsOp : Lb_Op<"pack_pairs", [Pure]> {
  let summary = "registers of packed values (2 halves or 4 bytes) viewed as a vector of values";
  let arguments = (ins Variadic<I32>:$pairs);
  let results = (outs VectorOfRankAndType<[1], [F16, BF16, I8]>:$values);
  let assemblyFormat = "$pairs attr-dict `:` type($values)";
  let hasVerifier = 1;
}

def Lb_PrmtOp : Lb_Op<"prmt", [Pure]> {
  let summary = "byte permute (PTX prmt.b32): byte i of the result is byte selector[4i+3:4i] of {b, a}";
  let description = [{
    Bytes 0..3 are a's, 4..7 b's. With b a magic constant, one prmt places
    codes in the mantissa of floats (8-bit decodes).
  }];
  let arguments = (ins I32:$a, I32:$b, I32Attr:$selector);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `selector` $selector attr-dict";
}

def Lb_PrmtLookupOp : Lb_Op<"prmt_lookup", [Pure]> {
  let summary = "prmt.b32 with the selector in a register: four lookups in an 8-byte table";
  let description = [{
    Byte i of the result is byte `selector[4i+2:4i]` of {b, a} (bytes 0..3
    a's, 4..7 b's), or, where bit 4i+3 is set, that byte's sign bit spread
    over the byte. With a table's bytes as `a` and `b` and codes as the
    selector, one prmt looks up four codes (lookup-table decodes).
  }];
  let arguments = (ins I32:$a, I32:$b, I32:$selector);
  let results = (outs I32:$result);
  let assemblyFormat = "$a `,` $b `by` $selector attr-dict";
}

def Lb_PackF32PairOp : Lb_Op<"pack_f32_pair", [Pure]> {
  let summary = "two f32 rounded into one f16x2 / bf16x2 register (lo in the low half)";
  let arguments = (ins F32:$lo, F32:$hi, TypeAttr:$element);
  let results = (outs I32:$result);
  let assemblyFormat = "$lo `,` $hi `as` $element attr-dict";
}

def Lb_LoadActivationsOp : Lb_Op<"load_activations", [MemoryEffects<[MemRead]>]> {
  let summary = "contiguous activations x[m, k .. k + n); zeros where m >= M";
  let description = [{
    16-bit activations come in 16-byte loads; s8 and e4m3 ones (an si8 or
    f8E4M3FN x, i8 values: the bytes) in one 8-byte load, which is an
    m16n8k32 B fragment.
  }];
  let arguments = (ins AnyMemRef:$x, Index:$m, Index:$k, Index:$rows);
  let results = (outs VectorOfRankAndType<[1], [F16, BF16, I8]>:$values);
  let assemblyFormat = "$x `[` $m `,` $k `]` `rows` $rows attr-dict `:` type($x) `->` type($values)";
  let hasVerifier = 1;
}

def Lb_DotOp : Lb_Op<"dot", [Pure, AllTypesMatch<["a", "b"]>]> {
  let summary = "acc + Σ a_i b_i, in f32 with pairwise f16x2/bf16x2 products";
  let description = [{
    Up to four pair products are summed in packed halves, then widened to
    f32. With `wide`, every product and sum is f32: for f16 codes whose
    values overflow a packed sum (core::needsWideDot: e5m2).
  }];
  let arguments = (ins VectorOfRankAndType<[1], [F16, BF16]>:$a,
                       VectorOfRankAndType<[1], [F16, BF16]>:$b, F32:$acc, UnitAttr:$wide);
  let results = (outs F32:$result);
  let assemblyFormat = "$a `,` $b `,` $acc (`wide` $wide^)? attr-dict `:` type($a)";
}

def Lb_SumOp : Lb_Op<"sum", [Pure]> {
  let summary = "Σ a_i in f32 (the Σx that zero points need)";
  let arguments = (ins VectorOfRankAndType<[1], [F16, BF16]>:$a);
  let results = (outs F32:$result);
  let assemblyFormat = "$a attr-dict `:` type($a)";
}

def Lb_WarpSumOp : Lb_Op<"warp_sum", [Pure]> {
  let summary = "sum of a value over aligned groups of `width` lanes (butterfly shuffles)";
  let arguments = (ins F32:$value, DefaultValuedAttr<I64Attr, "32">:$width);
  let results = (outs F32:$result);
  let assemblyFormat = "$value (`width` $width^)? attr-dict";
}

def Lb_StorePartialOp : Lb_Op<"store_partial", [MemoryEffects<[MemWrite]>]> {
  let summary = "a warp's partial sum for `slot`, one per group of 4 lanes, into a [warps, slots, 8] buffer";
  let arguments = (ins F32:$value, AnyMemRef:$buffer, Index:$warp, Index:$slot);
  let assemblyFormat = "$value `,` $buffer `[` $warp `,` $slot `]` attr-dict `:` type($buffer)";
}

def Lb_SumPartialsOp : Lb_Op<"sum_partials", [MemoryEffects<[MemRead]>]> {
  let summary = "the partial sums of the calling lane's group for `slot`, added over all warps";
  let arguments = (ins AnyMemRef:$buffer, Index:$slot);
  let results = (outs F32:$result);
  let assemblyFormat = "$buffer `[` $slot `]` attr-dict `:` type($buffer)";
}

def Lb_ClusterBarrierOp : Lb_Op<"cluster_barrier"> {
  let summary = "a barrier over every thread of the block's cluster (release, then acquire)";
  let description = [{
    `barrier.cluster.arrive.release` then `barrier.cluster.wait.acquire`:
    what any thread of the cluster wrote to its block's shared memory
    before it is visible to every thread of the cluster after it, and no
    block gets past it (or exits) while another is still short of it.
  }];
  let assemblyFormat = "attr-dict";
}

def Lb_SumClusterPartialsOp : Lb_Op<"sum_cluster_partials", [MemoryEffects<[MemRead]>]> {
  let summary = "a block total for `slot`, added over the `blocks` blocks of the cluster in rank order";
  let description = [{
    Reads row 0 of `slot` in `buffer` (a [warps, slots, 8] buffer of
    `lb.store_partial`, giving f32: the calling lane's group's value; or a
    [warps, slots, 128] buffer of `lb.store_partial_fragment`, giving
    vector<4xf32>: the calling lane's fragment) in the shared memory of
    each block of the cluster, ranks 0 .. blocks - 1, and adds them in that
    order. So the sum does not depend on which block reads it or when:
    split-K across a cluster is deterministic. Every block must have
    written its totals there before an `lb.cluster_barrier`, and must not
    exit before another `lb.cluster_barrier` after the last read.
  }];
  let arguments = (ins AnyMemRef:$buffer, Index:$slot, I64Attr:$blocks);
  let results = (outs AnyTypeOf<[F32, VectorOfLengthAndType<[4], [F32]>]>:$result);
  let assemblyFormat = "$buffer `[` $slot `]` attr-dict `:` type($buffer) `->` type($result)";
  let hasVerifier = 1;
}

def Lb_LoadScalarOp : Lb_Op<"load_scalar", [MemoryEffects<[MemRead]>]> {
  let summary = "one element of a 2-D or 1-D tensor, widened to f32";
  let arguments = (ins AnyMemRef:$source, Variadic<Index>:$indices);
  let results = (outs F32:$result);
  let assemblyFormat = "$source `[` $indices `]` attr-dict `:` type($source)";
}

def Lb_LoadScaleRunOp : Lb_Op<"load_scale_run", [MemoryEffects<[MemRead]>]> {
  let summary = "`count` consecutive block scales of one row, widened to f32";
  let description = [{
    Loads scales[`row`, `first` .. `first` + `count`) of a [N, K / group]
    scale tensor with as few loads as their alignment allows: 16 bytes when
    the run and the row's length in bytes are multiples of 16, else the
    widest power of two both are multiples of. A split-K warp meets a
    chunk's groups in order, so with groups shorter than the chunk it loads
    each column's run once per chunk instead of one scalar per group (group
    32 with one byte per scale had 8 such loads per lane per 32-wide block,
    each touching its own L1 line). lb.scale_in_run picks one out.
  }];
  let arguments = (ins AnyMemRef:$scales, Index:$row, Index:$first, I64Attr:$count);
  let results = (outs VectorOfRankAndType<[1], [F32]>:$result);
  let assemblyFormat =
      "$scales `[` $row `,` $first `]` attr-dict `:` type($scales) `->` type($result)";
  let hasVerifier = 1;
}

def Lb_ScaleInRunOp : Lb_Op<"scale_in_run", [Pure]> {
  let summary = "element `position` of an lb.load_scale_run";
  let description = [{
    `position` need not be a constant in the IR: the split-K period loops are
    fully unrolled by nvcc, which makes it one and keeps the run in
    registers.

    With `upper_half` (groups of 16, where lanes 2 and 3 of a quad take the
    second group of each 32-wide block): element `position + 1` where it is
    true. Both are picked at their constant positions and the stored bits
    selected, so the scale is widened to f32 once (an e4m3fn widening is
    about ten instructions).
  }];
  let arguments = (ins VectorOfRankAndType<[1], [F32]>:$run, Index:$position,
                       Optional<I1>:$upper_half);
  let results = (outs F32:$result);
  let assemblyFormat =
      "$run `[` $position `]` (`next` `if` $upper_half^)? attr-dict `:` type($run)";
}

def Lb_LoadTensorScaleOp : Lb_Op<"load_tensor_scale", [MemoryEffects<[MemRead]>]> {
  let summary = "the f32 tensor scale stored after the block scales of `scales`";
  let description = [{
    With `#lb.quant<..., tensor_scale = f32>` the scales buffer holds the
    block scales (`scales`' elements, one byte each) and then, at the next
    multiple of 4 bytes, one f32 that multiplies every block scale
    (core::tensorScaleOffset). Kernels load it once and multiply each loaded
    block scale by it; it is never folded into the scales on the host.
  }];
  let arguments = (ins AnyMemRef:$scales);
  let results = (outs F32:$result);
  let assemblyFormat = "$scales attr-dict `:` type($scales)";
}

def Lb_LoadSuperStepOp : Lb_Op<"load_super_step", [MemoryEffects<[MemRead]>]> {
  let summary = "the f32 step of super-block `block` of row `row`, stored after the codes";
  let description = [{
    With `#lb.quant<..., super_block = S, super_step = T>` the scales buffer
    (and the zeros buffer) holds the per-group codes (`codes`' elements, one
    byte each) and then, at the next multiple of 16 bytes
    (core::superStepOffset), the steps [N][K / S] of type `step_type`,
    `steps_per_row` = K / S of them a row. A group's scale is its code times
    its super-block's step, in f32.
  }];
  let arguments = (ins AnyMemRef:$codes, Index:$row, Index:$block,
                       TypeAttr:$step_type, I64Attr:$steps_per_row);
  let results = (outs F32:$result);
  let assemblyFormat = [{
    $codes `[` $row `,` $block `]` attr-dict `:` type($codes)
  }];
}

def Lb_StoreOutputOp : Lb_Op<"store_output", [MemoryEffects<[MemWrite]>]> {
  let summary = "y[m, n] = value, rounded to y's element type";
  let arguments = (ins F32:$value, AnyMemRef:$y, Index:$m, Index:$n);
  let assemblyFormat = "$value `,` $y `[` $m `,` $n `]` attr-dict `:` type($y)";
}

def Lb_StoreDenseWeightsOp : Lb_Op<"store_dense_weights", [MemoryEffects<[MemWrite]>,
                                                         AllTypesMatch<["low", "high"]>]> {
  let summary = "w[n, k .. k + 8) = the two k16 steps' registers of one subtile";
  let description = [{
    The dequant family's write. In the paired K order a lane's register r of
    k16 step j holds k0 + 8 tig + 4 j + 2 r + {0, 1} of one column, so the
    subtile's registers of both steps (`low`: step 0, `high`: step 1) are the
    8 consecutive values w[n, k .. k + 8) with k = k0 + 8 tig: one 16-byte
    store of a row-major matrix. k must be a multiple of 8.
  }];
  let arguments = (ins VectorOfLengthAndType<[4], [F16, BF16]>:$low,
                       VectorOfLengthAndType<[4], [F16, BF16]>:$high,
                       MemRefRankOf<[F16, BF16], [2]>:$w, Index:$n, Index:$k);
  let assemblyFormat = [{
    $low `,` $high `,` $w `[` $n `,` $k `]` attr-dict `:` type($low) `,` type($w)
  }];
  let hasVerifier = 1;
}

#endif // LOWBIT_IR_LBTILEOPS_TD

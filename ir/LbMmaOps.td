#ifndef LOWBIT_IR_LBMMAOPS_TD
#define LOWBIT_IR_LBMMAOPS_TD

// Tile-level ops of the `mma` family: activations staged through shared
// memory with cp.async, A fragments read from the stage with 16-byte shared
// loads, B fragments decoded from weights loaded straight into registers,
// m16n8k16 mma with f32 accumulators.
// Fragment values: `vector<8xf16>` is an A fragment (4 registers),
// `vector<4xf16>` a B fragment (2 registers), `vector<4xf32>` an accumulator.

include "ir/LbDialect.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lb_SharedBufferOp : Lb_Op<"shared_buffer", [MemoryEffects<[MemAlloc]>]> {
  let summary = "the block's staging buffer for activation tiles";
  let description = [{
    `stages` tiles of `rows` x `cols` values (or codes, or partial sums) in
    shared memory, row-major; with a `layout` (`#lb.swizzle`) each row's
    16-byte chunks are permuted as it says, and every address into the
    buffer follows it (the staged mma's activation tiles, whose reads by
    `lb.load_a_fragment` it makes conflict-free, and the wgmma ring, which
    wgmma reads in the hardware's swizzle). Without one, rows are plain.
    With `dynamic` the buffer lives in the kernel's dynamic shared memory
    (the kernel's `lb.dynamic_shared_bytes`, passed at launch), which may
    exceed the 48 KiB a static allocation is limited to.
  }];
  let arguments = (ins I64Attr:$stages, I64Attr:$rows, I64Attr:$cols, UnitAttr:$dynamic,
                       OptionalAttr<Lb_SwizzleAttr>:$layout);
  let results = (outs AnyMemRef:$buffer);
  let assemblyFormat = [{
    $stages `x` $rows `x` $cols (`dynamic` $dynamic^)? (`layout` $layout^)? attr-dict `:`
    type($buffer)
  }];
  let builders = [
    OpBuilder<(ins "::mlir::Type":$buffer, "int64_t":$stages, "int64_t":$rows, "int64_t":$cols,
                   CArg<"bool", "false">:$dynamic,
                   CArg<"::lowbit::lb::SwizzleAttr", "{}">:$layout), [{
      build($_builder, $_state, buffer, $_builder.getI64IntegerAttr(stages),
            $_builder.getI64IntegerAttr(rows), $_builder.getI64IntegerAttr(cols),
            dynamic ? $_builder.getUnitAttr() : ::mlir::UnitAttr(), layout);
    }]>
  ];
  let hasVerifier = 1;
}

def Lb_CopyTileAsyncOp : Lb_Op<"copy_tile_async", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the whole block copies x[m0 .., k0 ..] into one buffer stage";
  let description = [{
    Each thread issues cp.async 16-byte copies for its share of the tile's
    chunks; rows at or past `rows` (M) are zero-filled. Completion is tracked
    by lb.async_commit / lb.async_wait.
  }];
  let arguments = (ins AnyMemRef:$x, AnyMemRef:$buffer, Index:$stage, Index:$m0,
                       Index:$k0, Index:$rows, I64Attr:$threads);
  let assemblyFormat = [{
    $x `[` $m0 `,` $k0 `]` `to` $buffer `[` $stage `]` `rows` $rows `threads` $threads
    attr-dict `:` type($x) `,` type($buffer)
  }];
}

def Lb_CopyCodesAsyncOp : Lb_Op<"copy_codes_async", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the whole block copies the weight tiles of [n0, k0 ..] into one stage";
  let description = [{
    Copies the packed codes of the block's [N tile, K tile] region, whole
    layout tiles at a time (`tile`, set by lb-propagate-layouts), so the
    staging buffer keeps the weight layout and lb.load_codes reads it the
    same way it would read global memory. Thread t of the `threads` that
    share the copy is threadIdx.x mod `threads`: with 32, each warp copies
    into its own stage on its own (a per-warp ring), and lane l copies
    16-byte chunks l, l + 32, ..., which are the chunks lane l later reads
    with a warp-wide lb.load_codes.
  }];
  let arguments = (ins AnyMemRef:$weights, AnyMemRef:$buffer, Index:$stage, Index:$n0,
                       Index:$k0, I64Attr:$threads, OptionalAttr<DenseI64ArrayAttr>:$tile);
  let assemblyFormat = [{
    $weights `[` $n0 `,` $k0 `]` `to` $buffer `[` $stage `]` `threads` $threads
    (`tile` $tile^)? attr-dict `:` type($weights) `,` type($buffer)
  }];
}

def Lb_CopyActivationsAsyncOp : Lb_Op<"copy_activations_async", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "a warp copies x[m0 .. m0 + rows, k0 .. k0 + 32) into its own stage";
  let description = [{
    The buffer is [stages, tile rows, 32] 16-bit values, unswizzled: a row
    is four 16-byte chunks. Lane l copies chunks l, l + 32, ... (row c / 4,
    chunk c mod 4), which are exactly the 16 bytes lb.load_staged_activations
    gives lane (groupID g, thread-in-group t) for rows g + 8 i at k0 + 8 t:
    no lane reads another lane's copy, and a quarter warp's reads are 128
    consecutive bytes (no bank conflicts). Rows at or past `rows` (M) are
    zero-filled. Completion is tracked by lb.async_commit / lb.async_wait.
  }];
  let arguments = (ins AnyMemRef:$x, AnyMemRef:$buffer, Index:$stage, Index:$m0, Index:$k0,
                       Index:$rows);
  let assemblyFormat = [{
    $x `[` $m0 `,` $k0 `]` `to` $buffer `[` $stage `]` `rows` $rows attr-dict `:` type($x) `,`
    type($buffer)
  }];
}

def Lb_LoadStagedActivationsOp : Lb_Op<"load_staged_activations", [MemoryEffects<[MemRead]>]> {
  let summary = "8 activations at (row, k) of a stage that lb.copy_activations_async filled";
  let arguments = (ins AnyMemRef:$buffer, Index:$stage, Index:$row, Index:$k);
  let results = (outs VectorOfLengthAndType<[8], [F16, BF16]>:$values);
  let assemblyFormat = [{
    $buffer `[` $stage `,` $row `,` $k `]` attr-dict `:` type($buffer) `->` type($values)
  }];
}

def Lb_AsyncCommitOp : Lb_Op<"async_commit"> {
  let summary = "close the group of async copies issued so far";
  let assemblyFormat = "attr-dict";
}

def Lb_AsyncWaitOp : Lb_Op<"async_wait"> {
  let summary = "wait until at most `pending` groups of async copies are in flight";
  let arguments = (ins I64Attr:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def Lb_BarrierOp : Lb_Op<"barrier"> {
  let summary = "block-wide barrier, or with `warp` the calling warp's (__syncwarp)";
  let arguments = (ins UnitAttr:$warp);
  let assemblyFormat = "(`warp` $warp^)? attr-dict";
}

def Lb_LoadAFragmentOp : Lb_Op<"load_a_fragment", [MemoryEffects<[MemRead]>]> {
  let summary = "the A fragments of one 32-wide K block at (row0, k0) of a stage";
  let description = [{
    The A fragments of both k16 steps of the 32-wide block at k0, in the
    mma_b_paired K order, where step j's slot k = 2t + h + 8r holds column
    k0 + 8t + 4j + 2r + h: lane (groupID g, thread-in-group t) reads the 8
    activations at k0 + 8t of rows g and g + 8, one 16-byte shared load each,
    and step j is registers [4 j, 4 j + 4) (`lb.slice_pairs` takes it).
  }];
  let arguments = (ins AnyMemRef:$buffer, Index:$stage, Index:$row0, Index:$k0);
  let results = (outs VectorOfLengthAndType<[16], [F16, BF16]>:$fragment);
  let assemblyFormat = [{
    $buffer `[` $stage `,` $row0 `,` $k0 `]` attr-dict `:` type($buffer) `->` type($fragment)
  }];
}

def Lb_SlicePairsOp : Lb_Op<"slice_pairs", [Pure]> {
  let summary = "registers [offset, offset + n) of a decoded vector";
  let arguments = (ins VectorOfRankAndType<[1], [F16, BF16]>:$values, I64Attr:$offset);
  let results = (outs VectorOfRankAndType<[1], [F16, BF16]>:$slice);
  let assemblyFormat = "$values `[` $offset `]` attr-dict `:` type($values) `->` type($slice)";
}

def Lb_JoinPairsOp : Lb_Op<"join_pairs", [Pure]> {
  let summary = "the registers of several decoded vectors, one after the other";
  let description = [{
    The inverse of lb.slice_pairs: a CUDA-core dot over both k16 steps of a
    block joins the steps' fragments, so one packed-half chain (lb.dot)
    spans the 8 values a lane holds of a column.
  }];
  let arguments = (ins Variadic<VectorOfRankAndType<[1], [F16, BF16]>>:$parts);
  let results = (outs VectorOfRankAndType<[1], [F16, BF16]>:$values);
  let assemblyFormat = "$parts attr-dict `:` type($parts) `->` type($values)";
  let hasVerifier = 1;
}

def Lb_ScaleFragmentOp : Lb_Op<"scale_fragment", [Pure, AllTypesMatch<["fragment", "result"]>]> {
  let summary = "value·scale (+ bias) on every element of a fragment";
  let description = [{
    One packed multiply (or fma with the bias: q·s - z for sub_value zero
    points, with bias -z) per register; scale and bias are rounded to the
    element type and splatted to both halves. (q - z)·s zero points are not
    a bias: lb.decode subtracts them first, exactly.
    `wide`: each value is widened to f32, scaled (fma'd) there and rounded
    once. Two-level scales and mins (a code times a step) are not exact in
    the element type, and q·s − z cancels: rounding s and z first left
    errors of the mins' size on weights far smaller.
  }];
  let arguments = (ins VectorOfRankAndType<[1], [F16, BF16]>:$fragment, F32:$scale,
                       Optional<F32>:$bias, UnitAttr:$wide);
  let results = (outs VectorOfRankAndType<[1], [F16, BF16]>:$result);
  let assemblyFormat = "$fragment `,` $scale (`,` $bias^)? attr-dict `:` type($fragment)";
}

def Lb_MmaOp : Lb_Op<"mma", [Pure, AllTypesMatch<["acc", "result"]>]> {
  let summary = "mma.sync.m16n8k16 with f32 accumulation";
  let arguments = (ins VectorOfLengthAndType<[8], [F16, BF16]>:$a,
                       VectorOfLengthAndType<[4], [F16, BF16]>:$b,
                       VectorOfLengthAndType<[4], [F32]>:$acc);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$a `,` $b `,` $acc attr-dict `:` type($a) `,` type($b) `,` type($acc)";
}

def Lb_StoreAccumulatorOp : Lb_Op<"store_accumulator", [MemoryEffects<[MemWrite]>]> {
  let summary = "write an m16n8 accumulator at (m0, n0) of y, rows below M only";
  let description = [{
    Without `transposed` the accumulator is a 16 x 8 block of y at (m0, n0).
    With it, it is a 16 x 8 block of yᵀ (the mma computed W·xᵀ, weights as
    the A operand): its 16 rows are columns n0 .. n0 + 16 of y and its 8
    columns are rows m0 .. m0 + 8.
  }];
  let arguments = (ins VectorOfLengthAndType<[4], [F32]>:$acc, AnyMemRef:$y, Index:$m0,
                       Index:$n0, Index:$rows, UnitAttr:$transposed);
  let assemblyFormat = [{
    $acc `,` $y `[` $m0 `,` $n0 `]` `rows` $rows (`transposed` $transposed^)? attr-dict `:`
    type($acc) `,` type($y)
  }];
}

def Lb_ScaleAccumulateOp : Lb_Op<"scale_accumulate", [Pure, AllTypesMatch<["acc", "partial", "result"]>]> {
  let summary = "acc + scales ⊙ partial for a W·xᵀ accumulator, in f32";
  let description = [{
    `partial` holds a scale period's unscaled products: registers 0, 1 are
    row g of the m16 tile (W column n0 + g, scale `low`), registers 2, 3 row
    g + 8 (scale `high`). Scaling the f32 sums once per period replaces a
    packed multiply per decoded register per k16 step.
  }];
  let arguments = (ins VectorOfLengthAndType<[4], [F32]>:$acc,
                       VectorOfLengthAndType<[4], [F32]>:$partial, F32:$low, F32:$high);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$acc `,` $partial `,` $low `,` $high attr-dict `:` type($acc)";
}

def Lb_PackAFragmentOp : Lb_Op<"pack_a_fragment", [Pure, AllTypesMatch<["low", "high"]>]> {
  let summary = "an m16 x k16 A fragment from the k16 x n8 B fragments of its two row halves";
  let description = [{
    With the weights as the mma's A operand, the decoded B-fragment
    registers of columns g (`low`) and g + 8 (`high`) hold exactly the A
    registers of rows g and g + 8: a0..a3 = low.r0, high.r0, low.r1,
    high.r1. No data moves; the emitted CUDA only names registers.
  }];
  let arguments = (ins VectorOfLengthAndType<[4], [F16, BF16]>:$low,
                       VectorOfLengthAndType<[4], [F16, BF16]>:$high);
  let results = (outs VectorOfLengthAndType<[8], [F16, BF16]>:$fragment);
  let assemblyFormat = "$low `,` $high attr-dict `:` type($low) `->` type($fragment)";
}

def Lb_StorePartialFragmentOp : Lb_Op<"store_partial_fragment", [MemoryEffects<[MemWrite]>]> {
  let summary = "a warp's accumulator fragment for `slot` into a [warps, slots, 128] buffer";
  let arguments = (ins VectorOfLengthAndType<[4], [F32]>:$acc, AnyMemRef:$buffer, Index:$warp,
                       Index:$slot);
  let assemblyFormat = [{
    $acc `,` $buffer `[` $warp `,` $slot `]` attr-dict `:` type($acc) `,` type($buffer)
  }];
}

def Lb_SumPartialFragmentsOp : Lb_Op<"sum_partial_fragments", [MemoryEffects<[MemRead]>]> {
  let summary = "the calling lane's accumulator fragment for `slot`, added over all warps";
  let arguments = (ins AnyMemRef:$buffer, Index:$slot);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$buffer `[` $slot `]` attr-dict `:` type($buffer) `->` type($result)";
}

#endif // LOWBIT_IR_LBMMAOPS_TD

#ifndef LOWBIT_IR_LBWGMMAOPS_TD
#define LOWBIT_IR_LBWGMMAOPS_TD

// Tile-level ops of the `wgmma` family (sm_90a): activation tiles copied by
// a producer warpgroup into a swizzled shared-memory ring whose stages are
// handed to the consumer warpgroups and back by mbarriers, and warpgroup-wide
// wgmma.mma_async with the decoded weights as the register A operand and
// the staged activations as the B operand, read through a descriptor.
// Values: `vector<8xf16>` is a warp's 16 x 16 share of the m64 A operand
// (the mma A fragment's registers), `vector<16xi8>` its 16 x 32 share for
// s8, `vector<Nxf32>` (`vector<Nxsi32>` for s8) a thread's share of an m64 x
// 2N accumulator.

include "ir/LbDialect.td"
include "ir/LbAttrs.td"
include "ir/LbTypes.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Lb_MbarriersOp : Lb_Op<"mbarriers", [MemoryEffects<[MemAlloc, MemWrite]>]> {
  let summary = "`count` shared-memory mbarriers, each completing a phase after `arrivals` arrivals";
  let description = [{
    Thread 0 initializes them and the whole block waits for that (a block
    barrier), so the op must come before the block's threads take different
    roles.
  }];
  let arguments = (ins I64Attr:$count, I64Attr:$arrivals);
  let results = (outs MemRefRankOf<[I64], [1]>:$barriers);
  let assemblyFormat = "$count `arrivals` $arrivals attr-dict `:` type($barriers)";
}

// A wait orders the memory accesses after it against other threads' before
// their arrivals: it must not be erased or moved as a plain read could be.
def Lb_MbarrierWaitOp : Lb_Op<"mbarrier_wait", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "wait until phase parity `parity` of barrier `index` has completed";
  let arguments = (ins MemRefRankOf<[I64], [1]>:$barriers, Index:$index, Index:$parity);
  let assemblyFormat = [{
    $barriers `[` $index `]` `parity` $parity attr-dict `:` type($barriers)
  }];
}

def Lb_MbarrierArriveOp : Lb_Op<"mbarrier_arrive", [MemoryEffects<[MemWrite]>]> {
  let summary = "the calling thread's arrival on barrier `index`";
  let arguments = (ins MemRefRankOf<[I64], [1]>:$barriers, Index:$index);
  let assemblyFormat = "$barriers `[` $index `]` attr-dict `:` type($barriers)";
}

def Lb_CopyPairedActivationsOp : Lb_Op<"copy_paired_activations_async",
    [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the producer copies x[m0 .., k0 .. k0 + cols) into a stage in the paired K order";
  let description = [{
    The stage holds, in each 32-wide block of K, the activations in the
    order the weights' mma_b_paired fragment takes K: for f16 and bf16,
    position 16 j + 8 r + 2 t + h of the block (wgmma step j, the A register
    r, lane t of a quad, half h) holds x at K = 8 t + 4 j + 2 r + h
    (core::pairedSlotOfK); for s8, whose one k32 step is the whole block,
    position 16 j + 4 t + b holds K = 8 t + 4 j + b (core::pairedS8SlotOfK).
    Either way the decoded weight in that slot multiplies it. That is a
    transpose of the block's 4-byte words, finer than TMA's 16-byte boxes,
    so the `threads` threads (threadIdx.x mod `threads`) copy one word each
    with cp.async, a warp a 128-byte row (f16) or two 64-byte rows (s8)
    (coalesced in x, no bank conflicts), into the buffer's `#lb.swizzle`. Rows at or past `rows` (M)
    are zero-filled. Each thread then arrives on barrier `index` when its
    copies have landed (cp.async.mbarrier.arrive.noinc), so the barrier's
    arrivals must be `threads`.
  }];
  let arguments = (ins AnyMemRef:$x, AnyMemRef:$buffer, Index:$stage,
                       MemRefRankOf<[I64], [1]>:$barriers, Index:$index, Index:$m0, Index:$k0,
                       Index:$rows, I64Attr:$threads);
  let assemblyFormat = [{
    $x `[` $m0 `,` $k0 `]` `to` $buffer `[` $stage `]` `barrier` $barriers `[` $index `]`
    `rows` $rows `threads` $threads attr-dict `:` type($x) `,` type($buffer) `,` type($barriers)
  }];
  let hasVerifier = 1;
}

def Lb_FenceAsyncSharedOp : Lb_Op<"fence_async_shared"> {
  let summary = "make shared memory written by ordinary stores visible to wgmma (fence.proxy.async)";
  let assemblyFormat = "attr-dict";
}

def Lb_SetMaxRegistersOp : Lb_Op<"set_max_registers"> {
  let summary = "setmaxnreg: the calling warpgroup's registers per thread become `count`";
  let description = [{
    Warp-specialized kernels launch with the registers an even split gives
    every thread; the producer warpgroup, which only issues copies,
    gives most of its back (`count` below the launch's) and the consumers
    take them (`count` above it). Every warp of a warpgroup executes it.
  }];
  let arguments = (ins I64Attr:$count);
  let assemblyFormat = "$count attr-dict";
  let hasVerifier = 1;
}

def Lb_WgmmaFenceOp : Lb_Op<"wgmma_fence"> {
  let summary = "order earlier register writes before the wgmmas that read them (wgmma.fence)";
  let assemblyFormat = "attr-dict";
}

def Lb_WgmmaCommitOp : Lb_Op<"wgmma_commit"> {
  let summary = "close the group of wgmmas issued so far (wgmma.commit_group)";
  let assemblyFormat = "attr-dict";
}

def Lb_WgmmaWaitOp : Lb_Op<"wgmma_wait"> {
  let summary = "wait until at most `pending` groups of wgmmas are in flight";
  let arguments = (ins I64Attr:$pending);
  let assemblyFormat = "$pending attr-dict";
}

def Lb_WgmmaOp : Lb_Op<"wgmma", [MemoryEffects<[MemRead]>, AllTypesMatch<["acc", "result"]>]> {
  let summary = "warpgroup wgmma.mma_async: registers A, shared-memory B; f16/bf16 k16 into f32, s8 k32 into s32";
  let description = [{
    acc + A·B for the calling warpgroup, where A (64 x k) is the four warps'
    `a` fragments, warp w giving rows 16 w .. 16 w + 15 in the mma A
    fragment's registers, and B (k x N) is step `k_step` (K k k_step ..
    k k_step + k - 1) of stage `stage`: N rows of the buffer, each a K-major
    row of 64 values in the buffer's swizzle. For f16 and bf16 (`a` of 8
    values) k is 16 and the sums are f32; for 8-bit operands (`a` of 16
    bytes, the m16n8k32 A fragment's registers) k is 32 and the staged B's
    type names them: s8 (i8) sums in s32, exactly, e4m3 in f32.
    N is twice the accumulator's length. Asynchronous: the result is valid
    after lb.wgmma_commit and an lb.wgmma_wait that covers it, and `a` must
    not change before that.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32, SI32]>:$acc,
                       VectorOfLengthAndType<[8, 16], [F16, BF16, I8]>:$a, AnyMemRef:$buffer,
                       Index:$stage, I64Attr:$k_step);
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32, SI32]>:$result);
  let assemblyFormat = [{
    $acc `,` $a `,` $buffer `[` $stage `]` `k_step` $k_step attr-dict `:` type($acc) `,`
    type($a) `,` type($buffer)
  }];
  let hasVerifier = 1;
}

def Lb_ScaleWgmmaSumsOp : Lb_Op<"scale_wgmma_sums", [Pure, AllShapesMatch<["sums", "result"]>]> {
  let summary = "a warp's wgmma sums (s32 or f32) as f32, times its rows' weight scales and its tokens' scales";
  let description = [{
    The s8 and e4m3 wgmma's epilogue: the scales left the integer sums (weights per
    channel or per tensor, x per token or per tensor), so they apply here,
    once. Register 4 i + h of `sums` is row g (the lane's groupID) of the
    warp's 16, token m0 + 8 i + 2 t + h (t = lane mod 4), and 4 i + 2 + h
    row g + 8 of the same token (lb.store_wgmma_accumulator's layout):
    they take `row_scale` and `row8_scale`. A token's scale is
    `x_scales[token]`, or `x_scales[0]` for a one-element (per-tensor)
    memref; tokens at or past `rows` (M) get 0.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [SI32, F32]>:$sums, F32:$row_scale,
                       F32:$row8_scale, MemRefRankOf<[F32], [1]>:$x_scales, Index:$m0,
                       Index:$rows);
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$result);
  let assemblyFormat = [{
    $sums `,` $row_scale `,` $row8_scale `,` $x_scales `[` $m0 `]` `rows` $rows attr-dict `:`
    type($sums) `,` type($x_scales) `->` type($result)
  }];
}

def Lb_AccumulateWgmmaGroupOp : Lb_Op<"accumulate_wgmma_group", [Pure, AllShapesMatch<["acc", "sums", "result"]>, AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc + a group's s32 wgmma sums times its rows' group scales, in f32";
  let description = [{
    Group scales with s8 activations on wgmma: a group's integer sums close
    into f32 once the group's K tiles are in, fma(scale, (float)sum, acc),
    register 4 i + h (row g) taking `row_scale` and 4 i + 2 + h (row g + 8)
    `row8_scale`, as lb.scale_wgmma_sums lays them out.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$acc,
                       VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [SI32]>:$sums, F32:$row_scale,
                       F32:$row8_scale);
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$result);
  let assemblyFormat = [{
    $acc `,` $sums `,` $row_scale `,` $row8_scale attr-dict `:` type($sums) `->` type($result)
  }];
}

def Lb_StoreWgmmaAccumulatorOp : Lb_Op<"store_wgmma_accumulator", [MemoryEffects<[MemWrite]>]> {
  let summary = "the calling warp's 16 rows of a W·xᵀ wgmma accumulator into y";
  let description = [{
    The warp's rows of the m64 x N accumulator are columns n0 .. n0 + 16 of
    y (row g of its m16 share is column n0 + g), and the accumulator's N
    columns are rows m0 .. m0 + N of y; rows at or past `rows` (M) are not
    written. In registers, slice i (4 i .. 4 i + 3) is an m16n8 mma
    accumulator for rows m0 + 8 i .. m0 + 8 i + 7. y is f16, bf16 or f32.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$acc,
                       AnyMemRef:$y, Index:$m0, Index:$n0, Index:$rows);
  let assemblyFormat = [{
    $acc `,` $y `[` $m0 `,` $n0 `]` `rows` $rows attr-dict `:` type($acc) `,` type($y)
  }];
}

def Lb_StoreWgmmaPartialsOp : Lb_Op<"store_wgmma_partials", [MemoryEffects<[MemWrite]>]> {
  let summary = "a consumer thread's f32 wgmma accumulator into `slot` of a [slots, N / 8, 128] buffer";
  let description = [{
    For split-K across a cluster (cluster_k): the block's partial sums of
    one m64 x N accumulator, as each warp holds it. Entries 4 i .. 4 i + 3
    of lane l (its m16n8 slice i) are float4 (slot, i, l) of the buffer, so
    a warp writes and reads 512 contiguous bytes a slice and the owner of
    the same slot reads them back in the same order, in every block of the
    cluster (lb.sum_wgmma_cluster_partials). The buffer may instead be
    a stream-K kernel's global workspace (a 1-D f32 memref), in the same
    layout: lb.add_wgmma_partials reads it back.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$acc,
                       AnyMemRef:$buffer, Index:$slot);
  let assemblyFormat = "$acc `,` $buffer `[` $slot `]` attr-dict `:` type($acc) `,` type($buffer)";
  let hasVerifier = 1;
}

def Lb_SumWgmmaClusterPartialsOp : Lb_Op<"sum_wgmma_cluster_partials", [MemoryEffects<[MemRead]>]> {
  let summary = "an accumulator's partial sums for `slot`, added over the `blocks` blocks of the cluster in rank order";
  let description = [{
    Reads the calling lane's entries of `slot` (lb.store_wgmma_partials) in
    the shared memory of each block of the cluster, ranks 0 .. blocks - 1,
    and adds them in that order, so the total does not depend on which
    block reads it or when: split-K across a cluster is deterministic.
    Every block must have written its partials before an
    `lb.cluster_barrier`, and must not exit before another one after the
    last read.
  }];
  let arguments = (ins AnyMemRef:$buffer, Index:$slot, I64Attr:$blocks);
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$result);
  let assemblyFormat = "$buffer `[` $slot `]` `blocks` $blocks attr-dict `:` type($buffer) `->` type($result)";
  let hasVerifier = 1;
}

def Lb_AddWgmmaPartialsOp : Lb_Op<"add_wgmma_partials",
    [MemoryEffects<[MemRead]>, AllTypesMatch<["acc", "result"]>]> {
  let summary = "an accumulator plus the partial sums another block left in `slot` of the global workspace";
  let description = [{
    Stream-K: reads the calling lane's float4s of `slot` of a 1-D f32
    workspace in lb.store_wgmma_partials' layout, through L2 only (another
    SM wrote them during this launch, so L1 may not hold them), and adds
    them to `acc`. The writer's flag must have been waited for
    (lb.wait_flag) first.
  }];
  let arguments = (ins VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$acc, AnyMemRef:$buffer, Index:$slot);
  let results = (outs VectorOfLengthAndType<[4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76, 80, 84, 88, 92, 96, 100, 104, 108, 112, 116, 120, 124, 128], [F32]>:$result);
  let assemblyFormat = "$acc `,` $buffer `[` $slot `]` attr-dict `:` type($acc) `,` type($buffer)";
  let hasVerifier = 1;
}

def Lb_ReleaseFlagOp : Lb_Op<"release_flag", [MemoryEffects<[MemWrite]>]> {
  let summary = "the calling warp sets u32 word `word` of a global workspace, after its writes";
  let description = [{
    Every lane fences its own writes to the GPU's scope, the warp meets, and
    lane 0 stores 1 with release semantics: a warp that sees the flag
    (lb.wait_flag) sees everything the warp wrote before it. The flag must
    be 0 before the launch (the launch clears it on its stream).
  }];
  let arguments = (ins AnyMemRef:$buffer, Index:$word);
  let assemblyFormat = "$buffer `[` $word `]` attr-dict `:` type($buffer)";
}

def Lb_WaitFlagOp : Lb_Op<"wait_flag", [MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "the calling warp waits until u32 word `word` of a global workspace is set";
  let description = [{
    Every lane loads the flag with acquire semantics until it reads non-zero
    (lb.release_flag). The writer must be resident or certain to become so:
    stream-K launches at most a block an SM and its writers set their flags
    before they wait on any.
  }];
  let arguments = (ins AnyMemRef:$buffer, Index:$word);
  let assemblyFormat = "$buffer `[` $word `]` attr-dict `:` type($buffer)";
}

#endif // LOWBIT_IR_LBWGMMAOPS_TD

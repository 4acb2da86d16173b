// RUN: lowbit-opt %s --lb-tile --split-input-file --verify-diagnostics | FileCheck %s

// A gemv schedule becomes a kernel with scf loops over K and one 16-byte code
// load, decode and dot per lane per step; the problem function stays.
// CHECK-LABEL: func.func @w4
// CHECK: lb.qmatmul
// CHECK-LABEL: func.func @w4__gemv_t2x4x2048_w1x4_s1_k1(
// CHECK-SAME: memref<?x2048xf16>, %{{.*}}: memref<256x2048xui4>, %{{.*}}: memref<256x16xf16>, %{{.*}}: memref<?x256xf16>, %{{.*}}: index)
// CHECK-SAME: lb.block_threads = 128
// CHECK-SAME: lb.grid_tile = array<i64: 4, 2, 1>
// CHECK-SAME: lb.kernel
// CHECK: lb.thread_coord lane
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32)
// CHECK: lb.load_codes {{.*}} gemv_row : memref<256x2048xui4> -> vector<4xi32>
// CHECK: lb.decode {{.*}} as ui4 : vector<4xi32> -> vector<32xf16>
// CHECK: arith.divui
// CHECK: lb.load_scalar
// CHECK-COUNT-2: lb.dot
// CHECK: } {lb.unroll = 2 : i64}
// CHECK-COUNT-2: lb.warp_sum
func.func @w4(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [2, 4, 2048], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// K = 1056 is not a whole number of warp steps: the last step is guarded.
// CHECK-LABEL: func.func @partial__gemv
// CHECK: scf.for
// CHECK: arith.cmpi ult
// CHECK: scf.if {{.*}} -> (f32)
// CHECK: lb.decode {{.*}} minus(
// CHECK-NOT: lb.sum {{%}}
func.func @partial(%x: tensor<?x1056xbf16>, %w: tensor<64x1056xsi4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1056xbf16>, tensor<64x1056xsi4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Two rows of W a warp (tile N 8 over 4 warps): each step loads and decodes
// both rows' units, then one activation load per row of X feeds both dots;
// each row's sum is reduced and stored.
// CHECK-LABEL: func.func @two_rows__gemv_t1x8x1024_w1x4_s1_k1(
// CHECK-SAME: lb.block_threads = 128
// CHECK-SAME: lb.grid_tile = array<i64: 8, 1, 1>
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32)
// CHECK-COUNT-2: lb.load_codes
// CHECK: lb.load_activations
// CHECK-NOT: lb.load_activations
// CHECK-COUNT-2: lb.dot
// CHECK: } {lb.unroll = 1 : i64}
// CHECK-COUNT-2: lb.store_output
func.func @two_rows(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 8, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @bad_warps(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv schedule: each warp computes 1, 2, 4 or 8 rows: need warps = [1, W] with tile N = W, 2 W, 4 W or 8 W, got warps [1, 3] for tile N 4}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 3], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @too_many_dots(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv schedule: tile M x rows per warp must be at most 8, got 4 x 4}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [4, 16, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @group_8(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv schedule: group size 8 is not a multiple of 16 (half a lane's 32 codes)}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 8, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// Groups of 16: a lane's unit is two halves of 16 values (registers 0-7 and
// 8-15), each with its own scale (the second at k + 16), zero and dot.
// CHECK-LABEL: func.func @group_16__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: %[[V:.*]] = lb.decode
// CHECK: %[[S0:.*]] = lb.load_scalar %arg2[%{{.*}}, %{{.*}}] : memref<256x128xf16>
// CHECK: %[[K1:.*]] = arith.addi %{{.*}}, %c16{{.*}} : index
// CHECK: arith.divui %[[K1]]
// CHECK: %[[S1:.*]] = lb.load_scalar %arg2[%{{.*}}, %{{.*}}] : memref<256x128xf16>
// CHECK: %[[V0:.*]] = lb.slice_pairs %[[V]][0] : vector<32xf16> -> vector<16xf16>
// CHECK: %[[V1:.*]] = lb.slice_pairs %[[V]][8] : vector<32xf16> -> vector<16xf16>
// CHECK: %[[X:.*]] = lb.load_activations
// CHECK: %[[X0:.*]] = lb.slice_pairs %[[X]][0]
// CHECK: %[[D0:.*]] = lb.dot %[[V0]], %[[X0]]
// CHECK: arith.mulf %[[D0]], %[[S0]]
// CHECK: %[[X1:.*]] = lb.slice_pairs %[[X]][8]
// CHECK: %[[D1:.*]] = lb.dot %[[V1]], %[[X1]]
// CHECK: arith.mulf %[[D1]], %[[S1]]
func.func @group_16(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x128xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x128xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// The mma family: activation and weight tiles stream through a 3-stage ring
// of shared buffers (cp.async, one commit group per tile); B fragments come
// from the staged codes (mma_b_paired), the A fragments of both k16 steps of
// a 32-wide block from one 16-byte shared load per row, sliced per step; 8
// n-subtiles per 64 columns.
// CHECK-LABEL: func.func @mma__mma_t32x128x64_w2x2_s3_k1(
// CHECK-SAME: lb.block_threads = 128
// CHECK-SAME: lb.grid_tile = array<i64: 128, 32, 1>
// CHECK: lb.shared_buffer 3 x 32 x 64 layout <bytes = 128, xor = [5, 2, 4]> : memref<3x32x64xf16, 3>
// CHECK: lb.shared_buffer 3 x 128 x 64 : memref<3x128x64xui4, 3>
// CHECK: lb.copy_tile_async
// CHECK: lb.copy_codes_async
// CHECK: lb.async_commit
// CHECK: scf.for {{.*}} -> (vector<4xf32>
// CHECK: lb.async_wait 1
// CHECK: lb.barrier
// CHECK: lb.load_a_fragment {{.*}} -> vector<16xf16>
// CHECK: lb.slice_pairs {{.*}}[0] : vector<16xf16> -> vector<8xf16>
// CHECK: lb.load_codes {{.*}} stage {{.*}} mma_b_paired
// CHECK: lb.decode
// CHECK: lb.slice_pairs {{.*}}[14]
// CHECK: lb.scale_fragment
// CHECK: lb.mma
// CHECK: lb.store_accumulator
func.func @mma(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// Groups shorter than the K tile: a lane loads its 8 subtiles' scales again
// at each 32-wide block of the tile (both of its k16 steps share them).
func.func @mma_group_32(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x32xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x32xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @mma_group_32__mma_t32x128x64_w2x2_s3_k1
// CHECK: scf.for
// CHECK-COUNT-8: lb.load_scalar
// CHECK: lb.load_a_fragment
// CHECK-NOT: lb.load_scalar
// CHECK-COUNT-16: lb.mma
// CHECK-COUNT-8: lb.load_scalar
// CHECK: lb.load_a_fragment
// CHECK-NOT: lb.load_scalar
// CHECK-COUNT-16: lb.mma
// CHECK: scf.yield

// -----

// Groups of 16: each block's scales are at the lane's half of it (lanes 2
// and 3 of a quad hold the block's second group), once for both k16 steps.
func.func @mma_group_16(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x64xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x64xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @mma_group_16__mma_t32x128x64_w2x2_s3_k1
// CHECK: %[[QUAD:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[UPPER:.*]] = arith.cmpi uge, %[[QUAD]], %c2
// CHECK: scf.for
// CHECK: arith.select %[[UPPER]]
// CHECK-COUNT-8: lb.load_scalar
// CHECK-COUNT-16: lb.mma
// CHECK: arith.select %[[UPPER]]
// CHECK-COUNT-8: lb.load_scalar
// CHECK-COUNT-16: lb.mma
// CHECK: scf.yield

// -----

func.func @tiled_partials_too_big(%x: tensor<?x4096xf16>, %w: tensor<256x4096xui4>, %s: tensor<256x32xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv_tiled schedule: the warps' partial sums need 65536 bytes of shared memory; at most 49152 are supported}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [8, 64, 4096], warps = [1, 1], stages = 1, split_k = 32>
      : (tensor<?x4096xf16>, tensor<256x4096xui4>, tensor<256x32xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// gemv_tiled: warps take 128-wide K chunks; with group 32 a chunk holds four
// scale periods. Each column's four f16 scales of a chunk are one 8-byte
// run, loaded at the chunk's start; each period picks its own from the
// runs, then builds one 32-wide block: two code loads (k16 steps) and one
// 16-byte activation load per row, whose halves pair with the two steps: a
// column's registers of both steps join into one dot of 8 values.
// stages = 2 unrolls the chunk loop twice, so two chunks' loads can be in
// flight.
// CHECK-LABEL: func.func @tiled_chunks__gemv_tiled_t1x64x128_w1x1_s2_k4(
// CHECK-SAME: lb.block_threads = 128
// CHECK: scf.for {{.*}} -> (f32
// CHECK-COUNT-8: lb.load_scale_run {{.*}} {count = 4 : i64} : memref<256x32xf16> -> vector<4xf32>
// CHECK: scf.for {{.*}} -> (f32
// CHECK-COUNT-8: lb.scale_in_run
// CHECK-NOT: lb.load_scalar
// CHECK: scf.for {{.*}} -> (f32
// CHECK: lb.load_codes {{.*}} mma_b_paired
// CHECK: lb.load_codes {{.*}} mma_b_paired
// CHECK: %[[X:.*]] = lb.load_activations {{.*}} -> vector<8xf16>
// CHECK: %[[COLUMN:.*]] = lb.join_pairs %{{.*}}, %{{.*}} : vector<4xf16>, vector<4xf16> -> vector<8xf16>
// CHECK: lb.dot %[[COLUMN]], %[[X]], %{{.*}} : vector<8xf16>
// CHECK: } {lb.unroll = 1 : i64}
// CHECK: } {lb.unroll = 4 : i64}
// CHECK: } {lb.unroll = 2 : i64}
func.func @tiled_chunks(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x32xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 2, split_k = 4>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x32xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @tiled_chunk_vs_group(%x: tensor<?x768xf16>, %w: tensor<256x768xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv_tiled schedule: tile K = 128 and group size 96 must divide one another}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 96, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x768xf16>, tensor<256x768xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// mma with split_k > 1: no staging; each of 4 warps takes 256-wide K chunks
// (two group-128 periods of four 32-wide blocks) and computes W·xᵀ: per
// block two code loads and, per 8 rows of x, one 16-byte activation load
// whose pairs are the two k16 steps' B fragments; the decoded, scaled
// columns g and g + 8 make each A fragment. The warps' accumulators (4
// slices of 16 columns x 2 of 8 rows) meet in shared memory and warp
// (slot mod 4) adds and stores each, transposed.
// CHECK-LABEL: func.func @split__mma_t16x64x256_w1x1_s1_k4(
// CHECK-SAME: lb.block_threads = 128
// CHECK-SAME: lb.grid_tile = array<i64: 64, 16, 1>
// CHECK: lb.shared_buffer 4 x 8 x 128 : memref<4x8x128xf32, 3>
// CHECK: scf.for {{.*}} -> (vector<4xf32>
// CHECK-COUNT-8: lb.load_scale_run {{.*}} {count = 2 : i64}
// CHECK: scf.for {{.*}} -> (vector<4xf32>
// CHECK-COUNT-8: lb.scale_in_run
// CHECK: scf.for {{.*}} -> (vector<4xf32>
// CHECK: lb.load_codes {{.*}} mma_b_paired
// CHECK: lb.load_codes {{.*}} mma_b_paired
// CHECK: lb.load_activations {{.*}} -> vector<8xf16>
// CHECK: lb.load_activations {{.*}} -> vector<8xf16>
// CHECK: lb.slice_pairs {{.*}}[0] : vector<8xf16> -> vector<4xf16>
// CHECK: lb.decode
// CHECK: lb.scale_fragment
// CHECK: lb.pack_a_fragment
// CHECK: lb.mma {{.*}} : vector<8xf16>, vector<4xf16>, vector<4xf32>
// CHECK: lb.slice_pairs {{.*}}[2] : vector<8xf16> -> vector<4xf16>
// CHECK: } {lb.unroll = 4 : i64}
// CHECK: } {lb.unroll = 2 : i64}
// CHECK-COUNT-8: lb.store_partial_fragment
// CHECK: lb.barrier
// CHECK: scf.if
// CHECK: lb.sum_partial_fragments
// CHECK: lb.store_accumulator {{.*}} transposed
func.func @split(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// mma with split_k > 1 and stages = 2: each of 4 warps streams its blocks
// through its own ring of 2 x 128 / 32 = 8 slots in dynamic shared memory
// (per slot 64 x 32 codes and 16 x 32 activations: 4 x 8 x 2048 bytes).
// The prologue puts the warp's first 7 blocks in flight, one group each;
// every block waits until at most 6 groups are pending, reads its slot,
// refills the slot before it with the block 7 ahead (none past K), and
// without zero points scales each period's f32 sums once.
// CHECK-LABEL: func.func @ring__mma_t16x64x128_w1x1_s2_k4(
// CHECK-SAME: lb.dynamic_shared_bytes = 65536 : i64
// CHECK: lb.shared_buffer 32 x 64 x 32 dynamic : memref<32x64x32xui4, 3>
// CHECK: lb.shared_buffer 32 x 16 x 32 dynamic : memref<32x16x32xf16, 3>
// CHECK-COUNT-7: lb.async_commit
// CHECK: scf.for
// CHECK: lb.async_wait 6
// CHECK-NEXT: lb.barrier warp
// CHECK: lb.load_codes {{.*}} stage {{.*}} mma_b_paired
// CHECK: lb.load_staged_activations {{.*}} -> vector<8xf16>
// CHECK: arith.select
// CHECK: scf.if
// CHECK: lb.copy_codes_async {{.*}} threads 32
// CHECK: lb.copy_activations_async
// CHECK: lb.async_commit
// CHECK-NOT: lb.scale_fragment
// CHECK: lb.mma
// CHECK: lb.scale_accumulate
func.func @ring(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 4>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// Per-channel scales without zero points factor out of the whole K sum:
// the mma takes raw codes (no lb.scale_fragment, no period sums), and each
// output is scaled once after the warps' partial sums meet.
// CHECK-LABEL: func.func @channel__mma_t16x64x256_w1x1_s1_k8(
// CHECK-NOT: lb.scale_fragment
// CHECK: lb.mma
// CHECK-NOT: lb.scale_accumulate
// CHECK: lb.barrier
// CHECK: lb.sum_partial_fragments
// CHECK: lb.scale_accumulate
// CHECK: lb.store_accumulator {{.*}} transposed
func.func @channel(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @ring_too_deep(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule with split_k > 1: stages x tile K / 32 = 24 ring slots per warp; at most 16 are supported}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 3, split_k = 2>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @split_staged(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule with split_k > 1: stages (K chunks a warp has in flight) must be 1..4, got 5}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 5, split_k = 4>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @split_wide(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule with split_k > 1: tile N must be 64 or 128 (one or two weight-layout tiles), got 256}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 256, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

func.func @split_partials_too_big(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule with split_k > 1: the warps' partial sums need 65536 bytes of shared memory; at most 49152 are supported}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [32, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

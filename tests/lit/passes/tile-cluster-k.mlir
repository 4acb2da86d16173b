// RUN: lowbit-opt %s --lb-tile --split-input-file --verify-diagnostics | FileCheck %s

// gemv_tiled with cluster_k = 4: the grid's z is the block's rank in its
// cluster, and slice warp + 2 rank of the 8 takes chunks slice, slice + 8,
// ... K = 1152 is 9 chunks of 128, so slice 0 takes two and the others one.
// Each block keeps its slots' totals in the partials' warp-0 row, the
// cluster meets, each slot's owner adds the 4 blocks' totals in rank order
// and stores, and the cluster meets again before any block exits.
// CHECK-LABEL: func.func @cluster_gemv_tiled__gemv_tiled_t1x64x128_w1x1_s1_k2_c4(
// CHECK-SAME: lb.grid_tile = array<i64: 64, 1, 4>
// CHECK: %[[RANK:.*]] = lb.thread_coord block_z
// CHECK: %[[SPAN:.*]] = arith.muli %[[RANK]], %c2
// CHECK: %[[SLICE:.*]] = arith.addi %{{.*}}, %[[SPAN]]
// CHECK: %[[FIRST:.*]] = arith.muli %[[SLICE]], %c128
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %c1152 step %c1024
// CHECK: lb.barrier
// CHECK-NOT: lb.store_output
// CHECK: lb.sum_partials
// CHECK: lb.store_partial %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}]
// CHECK: lb.cluster_barrier
// CHECK: lb.thread_coord block_z
// CHECK: scf.if
// CHECK: lb.sum_cluster_partials %{{.*}}[%{{.*}}] {blocks = 4 : i64} : memref<2x8x8xf32, 3> -> f32
// CHECK-NEXT: lb.store_output
// CHECK-COUNT-7: lb.sum_cluster_partials
// CHECK: lb.cluster_barrier
// CHECK-NEXT: return
func.func @cluster_gemv_tiled(%x: tensor<?x1152xf16>, %w: tensor<128x1152xui4>, %s: tensor<128x9xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 2, cluster_k = 4>
      : (tensor<?x1152xf16>, tensor<128x1152xui4>, tensor<128x9xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// -----

// The split-K mma with a ring: a warp's chunks, its ring slots and its
// prologue follow its slice, and the blocks add accumulator fragments.
// CHECK-LABEL: func.func @cluster_mma__mma_t8x64x128_w1x1_s2_k4_c2(
// CHECK-SAME: lb.grid_tile = array<i64: 64, 8, 2>
// CHECK: lb.thread_coord block_z
// CHECK: lb.sum_partial_fragments
// CHECK: lb.store_partial_fragment
// CHECK: lb.cluster_barrier
// CHECK: lb.sum_cluster_partials %{{.*}} {blocks = 2 : i64} : memref<4x4x128xf32, 3> -> vector<4xf32>
// CHECK: lb.store_accumulator
// CHECK: lb.cluster_barrier
func.func @cluster_mma(%x: tensor<?x2048xf16>, %w: tensor<64x2048xui4>, %s: tensor<64x16xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 2, split_k = 4, cluster_k = 2>
      : (tensor<?x2048xf16>, tensor<64x2048xui4>, tensor<64x16xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

func.func @cluster_without_chunks(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{gemv_tiled schedule: split_k x cluster_k = 32 slices of K, but K = 1024 has only 8 chunks of tile K = 128}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 4>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// Two consumer warpgroups share the block's four layout tiles (tile N 256
// over warps [1, 8]): warpgroup g multiplies slices 2 g and 2 g + 1 of every
// tile by 128 tokens, and both read the block's codes from a weight ring
// that the producer fills with each stage's activations.
func.func @shared(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x1xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [128, 256, 64], warps = [1, 8], stages = 2, split_k = 1>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x1xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// The activation ring (2 x 128 rows of 128 bytes and 1 KiB for its
// alignment), then the weight ring (2 x 256 x 64 four-bit codes).
// CHECK-LABEL: func.func @shared__wgmma_t128x256x64_w1x8_s2_k1
// CHECK-SAME: lb.block_threads = 384
// CHECK-SAME: lb.dynamic_shared_bytes = 50176
// CHECK-SAME: lb.grid_tile = array<i64: 256, 128, 1>
// CHECK: %[[RING:.*]] = lb.shared_buffer 2 x 128 x 64 dynamic layout <bytes = 128, xor = [1, 2, 4]> : memref<2x128x64xf16, 3>
// CHECK: %[[CODES:.*]] = lb.shared_buffer 2 x 256 x 64 dynamic : memref<2x256x64xui4, 3>
// CHECK: %[[FULL:.*]] = lb.mbarriers 2 arrivals 128
// CHECK: %[[EMPTY:.*]] = lb.mbarriers 2 arrivals 256
// The producer copies the stage's codes before its activations, whose
// arrival on `full` covers both.
// CHECK: lb.mbarrier_wait %[[EMPTY]]
// CHECK: lb.copy_codes_async %arg1[{{.*}}] to %[[CODES]][{{.*}}] threads 128
// CHECK-NOT: lb.mbarrier
// CHECK: lb.copy_paired_activations_async %arg0[{{.*}}] to %[[RING]][{{.*}}] barrier %[[FULL]]
// Warpgroup 0 (consumer warps 0-3): its own copy of the loop. Scales come a
// tile ahead; the codes from the stage once it is full.
// CHECK: scf.if
// CHECK: scf.for {{.*}} iter_args
// CHECK: lb.mbarrier_wait %[[FULL]]
// CHECK: lb.load_codes %[[CODES]] stage
// Two m64 x n128 accumulators a warpgroup: two wgmmas a k16 step.
// CHECK-COUNT-2: lb.wgmma {{.*}} k_step 0 : vector<64xf32>
// CHECK-NEXT: lb.wgmma_commit
// CHECK: lb.mbarrier_arrive %[[EMPTY]]
// Slices 0 and 1 of the warp's tile: columns + 0 and + 16.
// CHECK: lb.store_wgmma_accumulator
// CHECK: lb.store_wgmma_accumulator
// Warpgroup 1: slices 2 and 3.
// CHECK: } else {
// CHECK: scf.for {{.*}} iter_args
// CHECK: lb.load_codes %[[CODES]] stage
// CHECK: lb.store_wgmma_accumulator
// CHECK: lb.store_wgmma_accumulator

// Zero points: every subtile of a decoded unit takes a zero, those of the
// slices a warpgroup does not multiply (dead lanes) standing in with one it
// loaded: warpgroup 0 loads subtiles 0-3's, warpgroup 1 subtiles 4-7's.
func.func @zeros(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x1xf16>, %z: tensor<256x1xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<256x1xf16>) quant <granularity = group, group_size = 128, scale = f16, zero = sub_code>
      schedule <family = wgmma, tile = [112, 256, 64], warps = [1, 8], stages = 2, split_k = 1>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x1xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @zeros__wgmma_t112x256x64_w1x8_s2_k1
// CHECK: lb.decode {{.*}} minus(%[[A:arg[0-9]+]], %[[B:arg[0-9]+]], %[[C:arg[0-9]+]], %[[D:arg[0-9]+]], %[[A]], %[[A]], %[[A]], %[[A]])
// CHECK: } else {
// CHECK: lb.decode {{.*}} minus(%[[E:arg[0-9]+]], %[[E]], %[[E]], %[[E]], %[[E]], %{{arg[0-9]+}}, %{{arg[0-9]+}}, %{{arg[0-9]+}})

// K split across a cluster of 4: each warp keeps its two accumulators in
// the partials (8 warps x 2 slots of m64 x 64 floats), and block rank r
// adds up and stores slice r of every layout tile, so the two warpgroups'
// slices go to different ranks (0 and 1 to warpgroup 0, 2 and 3 to 1).
func.func @cluster(%x: tensor<?x256xf16>, %w: tensor<256x256xui4>, %s: tensor<256x2xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [64, 256, 64], warps = [1, 8], stages = 2, split_k = 1, cluster_k = 4>
      : (tensor<?x256xf16>, tensor<256x256xui4>, tensor<256x2xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// The activation ring (17408 bytes), the weight ring (16384), the partials
// (65536).
// CHECK-LABEL: func.func @cluster__wgmma_t64x256x64_w1x8_s2_k1_c4
// CHECK-SAME: lb.dynamic_shared_bytes = 99328
// CHECK-SAME: lb.grid_tile = array<i64: 256, 64, 4>
// CHECK: %[[PARTIALS:.*]] = lb.shared_buffer 16 x 8 x 128 dynamic : memref<16x8x128xf32, 3>
// The producer meets the consumers' two cluster barriers.
// CHECK: lb.cluster_barrier
// CHECK-NEXT: lb.cluster_barrier
// CHECK: } else {
// CHECK-COUNT-2: lb.store_wgmma_partials {{.*}}, %[[PARTIALS]]
// CHECK-NEXT: lb.cluster_barrier
// Rank r sums slice r of the warp's layout tile and stores it at column
// 16 r of the tile: warpgroup 0's slices 0 and 1 (columns + 0, + 16) ...
// CHECK: %[[RANK:.*]] = lb.thread_coord  block_z
// CHECK: arith.cmpi eq, %[[RANK]], %c0
// CHECK: lb.sum_wgmma_cluster_partials %[[PARTIALS]][{{.*}}] blocks 4
// CHECK-NEXT: %[[COL0:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[N0:.*]] = arith.addi %[[WARPN:.*]], %[[COL0]] : index
// CHECK-NEXT: lb.store_wgmma_accumulator %{{.*}}, %arg3[%{{.*}}, %[[N0]]]
// CHECK: arith.cmpi eq, %[[RANK]], %c1
// CHECK: lb.sum_wgmma_cluster_partials %[[PARTIALS]][{{.*}}] blocks 4
// CHECK-NEXT: %[[COL1:.*]] = arith.constant 16 : index
// CHECK-NEXT: %[[N1:.*]] = arith.addi %[[WARPN]], %[[COL1]] : index
// CHECK-NEXT: lb.store_wgmma_accumulator %{{.*}}, %arg3[%{{.*}}, %[[N1]]]
// CHECK: lb.cluster_barrier
// ... and warpgroup 1's slices 2 and 3 (columns + 32, + 48), on ranks 2 and 3.
// CHECK: } else {
// CHECK-COUNT-2: lb.store_wgmma_partials {{.*}}, %[[PARTIALS]]
// CHECK-NEXT: lb.cluster_barrier
// CHECK: %[[RANK1:.*]] = lb.thread_coord  block_z
// CHECK: arith.cmpi eq, %[[RANK1]], %c2
// CHECK: lb.sum_wgmma_cluster_partials %[[PARTIALS]][{{.*}}] blocks 4
// CHECK-NEXT: %[[COL2:.*]] = arith.constant 32 : index
// CHECK-NEXT: %[[N2:.*]] = arith.addi %[[WARPN1:.*]], %[[COL2]] : index
// CHECK-NEXT: lb.store_wgmma_accumulator %{{.*}}, %arg3[%{{.*}}, %[[N2]]]
// CHECK: arith.cmpi eq, %[[RANK1]], %c3
// CHECK: lb.sum_wgmma_cluster_partials %[[PARTIALS]][{{.*}}] blocks 4
// CHECK-NEXT: %[[COL3:.*]] = arith.constant 48 : index
// CHECK-NEXT: %[[N3:.*]] = arith.addi %[[WARPN1]], %[[COL3]] : index
// CHECK-NEXT: lb.store_wgmma_accumulator %{{.*}}, %arg3[%{{.*}}, %[[N3]]]
// CHECK: lb.cluster_barrier

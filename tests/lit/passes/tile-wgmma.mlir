// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// A wgmma kernel with one consumer warpgroup (warps [1, 4]) and a 2-stage
// ring of 32-row x 64-value activation tiles in the 128-byte swizzle.
func.func @wgmma(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x1xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x1xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// The producer warpgroup and the consumer's 128 threads: the ring and 1 KiB
// for aligning it to the swizzle pattern.
// CHECK-LABEL: func.func @wgmma__wgmma_t32x256x64_w1x4_s2_k1
// CHECK-SAME: lb.block_threads = 256
// CHECK-SAME: lb.dynamic_shared_bytes = 9216
// CHECK-SAME: lb.grid_tile = array<i64: 256, 32, 1>
// CHECK: %[[RING:.*]] = lb.shared_buffer 2 x 32 x 64 dynamic layout <bytes = 128, xor = [1, 2, 4]> : memref<2x32x64xf16, 3>
// `full` completes on the producer's 128 copies, `empty` on the consumers'.
// CHECK: %[[FULL:.*]] = lb.mbarriers 2 arrivals 128
// CHECK: %[[EMPTY:.*]] = lb.mbarriers 2 arrivals 128
// The producer waits for a stage to be released before refilling it.
// CHECK: scf.if
// CHECK: scf.for
// CHECK: lb.mbarrier_wait %[[EMPTY]]
// CHECK: lb.copy_paired_activations_async %arg0[{{.*}}] to %[[RING]][{{.*}}] barrier %[[FULL]][{{.*}}] rows %arg4 threads 128
// The consumer loads the next K tile's codes before it waits for this one.
// CHECK: } else {
// CHECK: scf.for {{.*}} iter_args
// CHECK: lb.load_codes
// CHECK: lb.mbarrier_wait %[[FULL]]
// CHECK: lb.fence_async_shared
// Four k16 steps, each four wgmmas (one per 16-row slice) then a commit,
// leaving one step in flight while the next one decodes.
// CHECK: lb.decode
// CHECK: lb.wgmma_fence
// CHECK-COUNT-4: lb.wgmma {{.*}} k_step 0 : vector<16xf32>, vector<8xf16>, memref<2x32x64xf16, 3>
// CHECK: lb.wgmma_commit
// CHECK: lb.wgmma_wait 1
// Once step 0 is the only one in flight, the previous K tile's wgmmas have
// all read their stage, and it goes back to the producer; the pipe does
// not drain between K tiles.
// CHECK: %[[LATER:.*]] = arith.cmpi uge, %{{.*}}, %c1
// CHECK: scf.if %[[LATER]]
// CHECK: %[[PREVIOUS:.*]] = arith.remui
// CHECK: lb.mbarrier_arrive %[[EMPTY]][%[[PREVIOUS]]]
// CHECK: lb.decode
// CHECK-COUNT-4: lb.wgmma {{.*}} k_step 1
// CHECK-COUNT-4: lb.wgmma {{.*}} k_step 2
// CHECK-COUNT-4: lb.wgmma {{.*}} k_step 3
// CHECK-NOT: lb.wgmma_wait 0
// CHECK: scf.yield
// The last tile's stage goes back once the loop has drained.
// CHECK: lb.wgmma_wait 0
// CHECK: lb.mbarrier_arrive %[[EMPTY]]
// CHECK-COUNT-4: lb.store_wgmma_accumulator

// Groups of 16 (NVFP4, the k-quants' sub-blocks): one set of subtile scales
// per 32-wide block of the K tile, each at the lane's half of the block
// (lanes 2 and 3 of a quad hold its second group of 16), so a tile carries
// 16 scales and k16 steps 0-1 use the first set, steps 2-3 the second.
func.func @wgmma_g16(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @wgmma_g16__wgmma_t32x256x64_w1x4_s2_k1
// CHECK: %[[QUAD:.*]] = arith.remui %{{.*}}, %c4
// CHECK: %[[UPPER:.*]] = arith.cmpi uge, %[[QUAD]], %c2
// CHECK: arith.select %[[UPPER]]
// CHECK-COUNT-8: lb.load_scalar
// CHECK: arith.select %[[UPPER]]
// CHECK-COUNT-8: lb.load_scalar
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xi32>, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// The iteration arguments after the accumulators and codes: the first
// set's 8 scales (%arg14 ..), then the second's (%arg22 ..).
// CHECK: lb.scale_fragment %{{.*}}, %arg14
// CHECK: lb.wgmma {{.*}} k_step 0
// CHECK: lb.scale_fragment %{{.*}}, %arg14
// CHECK: lb.wgmma {{.*}} k_step 1
// CHECK: lb.scale_fragment %{{.*}}, %arg22
// CHECK: lb.wgmma {{.*}} k_step 2
// CHECK: lb.scale_fragment %{{.*}}, %arg22
// CHECK: lb.wgmma {{.*}} k_step 3
// Two sets of scales leave no registers for running on into the next K
// tile (core::wgmmaOverlapsKTiles): the tile drains, then gives its stage
// back.
// CHECK: lb.wgmma_wait 0
// CHECK-NEXT: lb.mbarrier_arrive
// CHECK-NEXT: scf.yield

// Groups of 32 (MXFP4): the same two sets, each at its block's start for
// every lane (no select).
func.func @wgmma_g32(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x4xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x4xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @wgmma_g32__wgmma_t32x256x64_w1x4_s2_k1
// CHECK-NOT: arith.select
// CHECK: scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<4xi32>, vector<4xi32>, vector<4xi32>, vector<4xi32>, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK: lb.scale_fragment %{{.*}}, %arg14
// CHECK: lb.wgmma {{.*}} k_step 1
// CHECK: lb.scale_fragment %{{.*}}, %arg22
// CHECK: lb.wgmma {{.*}} k_step 2

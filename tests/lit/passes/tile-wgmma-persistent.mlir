// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// scheduler = persistent: a block an SM walks the output tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... Producer and consumers each loop over the
// same tiles, and the ring's stage and barrier phase count K tiles through
// the block, not through the tile, so they go on across its tiles.
func.func @wgmma(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x1xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = persistent>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x1xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @wgmma__wgmma_t32x256x64_w1x4_s2_k1_persistent
// CHECK-SAME: lb.grid_tile = array<i64: 256, 32, 1>
// CHECK-SAME: lb.schedule = #lb.schedule<family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = persistent>
// CHECK: %[[FULL:.*]] = lb.mbarriers 2 arrivals 128
// CHECK: %[[EMPTY:.*]] = lb.mbarriers 2 arrivals 128
// The producer: tiles = ceil(M / 32) row tiles x one column tile.
// CHECK: scf.if
// CHECK: %[[ROWS:.*]] = arith.addi %arg4, %c31
// CHECK: %[[ROWTILES:.*]] = arith.divui %[[ROWS]], %c32
// CHECK: %[[TILES:.*]] = arith.muli %[[ROWTILES]], %c1
// CHECK: %[[FIRST:.*]] = lb.thread_coord block_x
// CHECK: %[[STEP:.*]] = lb.thread_coord grid_x
// CHECK: scf.for %[[TILE:.*]] = %[[FIRST]] to %[[TILES]] step %[[STEP]] {
// Each tile's 2 K tiles fill the 2-stage ring once, so the tiles walked
// before this one are the ring's rounds before it: K tile u takes stage
// u mod 2 (as with a block a tile) and has seen rounds + u / 2 uses.
// CHECK: %[[UNIFORM:.*]] = lb.warp_uniform %[[TILE]]
// CHECK: %[[GONE:.*]] = arith.subi %[[UNIFORM]], %[[FIRST]]
// CHECK: %[[WALKED:.*]] = arith.divui %[[GONE]], %[[STEP]]
// CHECK: %[[ROUNDS:.*]] = arith.muli %[[WALKED]], %c1
// CHECK: scf.for %[[U:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[STAGE:.*]] = arith.remui %[[U]], %{{.*}}
// CHECK: %[[ROUND:.*]] = arith.divui %[[U]], %{{.*}}
// CHECK: %[[USES:.*]] = arith.addi %[[ROUNDS]], %[[ROUND]]
// CHECK: %[[REFILL:.*]] = arith.cmpi uge, %[[USES]]
// CHECK: scf.if %[[REFILL]] {
// CHECK: lb.mbarrier_wait %[[EMPTY]][%[[STAGE]]]
// CHECK: lb.copy_paired_activations_async
// The consumers walk the same tiles and store each one's sums before the next.
// CHECK: } else {
// CHECK: scf.for %[[CTILE:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: scf.for {{.*}} iter_args
// CHECK: lb.mbarrier_wait %[[FULL]]
// CHECK: lb.mbarrier_arrive %[[EMPTY]]
// CHECK: scf.yield
// CHECK-COUNT-4: lb.store_wgmma_accumulator
// CHECK-NEXT: }


// 3 K tiles a tile over 2 stages: the ring's position runs on from K tile
// 3 i of the block's i-th tile, and the stage is that position mod 2.
func.func @uneven(%x: tensor<?x192xf16>, %w: tensor<256x192xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = persistent>
      : (tensor<?x192xf16>, tensor<256x192xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK-LABEL: func.func @uneven__wgmma_t32x256x64_w1x4_s2_k1_persistent
// CHECK: scf.for %[[UTILE:.*]] = %[[UFIRST:.*]] to %{{.*}} step %[[USTEP:.*]] {
// CHECK: %[[UUNIFORM:.*]] = lb.warp_uniform %[[UTILE]]
// CHECK: %[[UGONE:.*]] = arith.subi %[[UUNIFORM]], %[[UFIRST]]
// CHECK: %[[UWALKED:.*]] = arith.divui %[[UGONE]], %[[USTEP]]
// CHECK: %[[BASE:.*]] = arith.muli %[[UWALKED]], %c3
// CHECK: scf.for %[[UU:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[THROUGH:.*]] = arith.addi %[[BASE]], %[[UU]]
// CHECK: %[[USTAGE:.*]] = arith.remui %[[THROUGH]], %{{.*}}
// CHECK: lb.mbarrier_wait %{{.*}}[%[[USTAGE]]]

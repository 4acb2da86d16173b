// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// Two-level scales: a group's scale is its ui8 code times its super-block's
// step, and a min (sub_value) its code times its own step. A 128-wide chunk
// lies in one 256-wide super-block, so a split-K warp loads each column's
// codes of the chunk as one run and their step once, for the scales and the
// mins alike, then picks each group's code from the run.
// CHECK-LABEL: func.func @compact__mma_t16x64x128_w1x1_s1_k8(
// CHECK-SAME: %[[S:arg2]]: memref<128x8xui8>, %[[Z:arg3]]: memref<128x8xui8>
// CHECK: lb.load_scale_run %[[S]][%[[N:.*]], %{{.*}}] {count = 4 : i64} : memref<128x8xui8> -> vector<4xf32>
// CHECK: %[[D:.*]] = lb.load_super_step %[[S]][%[[N]], {{.*}}] {step_type = f16, steps_per_row = 1 : i64} : memref<128x8xui8>
// CHECK: lb.load_scale_run %[[Z]][%[[N]], %{{.*}}] {count = 4 : i64} : memref<128x8xui8> -> vector<4xf32>
// CHECK: %[[E:.*]] = lb.load_super_step %[[Z]][%[[N]], {{.*}}] {step_type = f16, steps_per_row = 1 : i64} : memref<128x8xui8>
// CHECK-NOT: lb.load_scalar
// CHECK: %[[C:.*]] = lb.scale_in_run
// CHECK: arith.mulf %[[C]], %[[D]] : f32
// CHECK: %[[M:.*]] = lb.scale_in_run
// CHECK: arith.mulf %[[M]], %[[E]] : f32
func.func @compact(%x: tensor<?x256xf16>, %w: tensor<128x256xui4>, %s: tensor<128x8xui8>, %z: tensor<128x8xui8>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128x8xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x256xf16>, tensor<128x256xui4>, tensor<128x8xui8>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// gemv with two rows of W a warp (rows w and w + 4 of the block's 8): each
// row reads its own codes, its halves' sub-scale codes (groups of 16: at k
// and k + 16) and their super-blocks' steps, all with its own n; one
// activation load then feeds both rows' dots.
// CHECK-LABEL: func.func @q6k_two_rows__gemv_t1x8x1024_w1x4_s1_k1(
// CHECK: %[[WARP:.*]] = lb.thread_coord warp
// CHECK: %[[FIRST:.*]] = arith.muli %{{.*}}, %c8
// CHECK: %[[R0:.*]] = arith.addi %[[FIRST]], %c0
// CHECK: %[[N0:.*]] = arith.addi %[[R0]], %[[WARP]]
// CHECK: %[[R1:.*]] = arith.addi %[[FIRST]], %c4
// CHECK: %[[N1:.*]] = arith.addi %[[R1]], %[[WARP]]
// CHECK: scf.for
// CHECK: %[[K:.*]] = arith.addi
// CHECK: lb.load_codes %{{.*}}[%[[N0]], %[[K]]] gemv_row
// CHECK: %[[G0:.*]] = arith.divui %[[K]], %c16
// CHECK: lb.load_scalar %{{.*}}[%[[N0]], %[[G0]]]
// CHECK: %[[B0:.*]] = arith.divui %[[K]], %c256
// CHECK: lb.load_super_step %{{.*}}[%[[N0]], %[[B0]]]
// CHECK: %[[K16:.*]] = arith.addi %[[K]], %c16
// CHECK: %[[G1:.*]] = arith.divui %[[K16]], %c16
// CHECK: lb.load_scalar %{{.*}}[%[[N0]], %[[G1]]]
// CHECK: lb.load_codes %{{.*}}[%[[N1]], %[[K]]] gemv_row
// CHECK: lb.load_scalar %{{.*}}[%[[N1]], %{{.*}}]
// CHECK: lb.load_super_step %{{.*}}[%[[N1]], %{{.*}}]
// CHECK: lb.load_activations
// CHECK-NOT: lb.load_activations
// CHECK-COUNT-4: lb.dot
func.func @q6k_two_rows(%x: tensor<?x2048xf16>, %w: tensor<64x2048xsi6>, %s: tensor<64x128xsi8>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = si8, super_block = 256, super_step = f16>
      schedule <family = gemv, tile = [1, 8, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<64x2048xsi6>, tensor<64x128xsi8>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// gemv_tiled with mins and f16 activations: the same runs and steps, and no
// f32 q·s - z per register: each row's Σx over the lane's 8 K values (one
// lb.sum) takes the min once per column and block, after the packed q·x dot
// of both k16 steps.
// CHECK-LABEL: func.func @mins_tiled__gemv_tiled_t1x64x128_w1x1_s1_k8(
// CHECK-COUNT-8: lb.load_super_step
// CHECK-NOT: lb.scale_fragment
// CHECK: lb.load_activations {{.*}} -> vector<8xf16>
// CHECK: %[[SX:.*]] = lb.sum %{{.*}} : vector<8xf16>
// CHECK: lb.join_pairs %{{.*}}, %{{.*}} : vector<4xf16>, vector<4xf16> -> vector<8xf16>
// CHECK: %[[DOT:.*]] = lb.dot
// CHECK: arith.mulf %[[DOT]]
// CHECK: arith.mulf %{{.*}}, %[[SX]] : f32
func.func @mins_tiled(%x: tensor<?x256xf16>, %w: tensor<128x256xui4>, %s: tensor<128x8xui8>, %z: tensor<128x8xui8>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128x8xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x256xf16>, tensor<128x256xui4>, tensor<128x8xui8>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// With bf16 activations the mins stay in the registers (f32 q·s - z, wide):
// bf16's q·x products keep 8 bits, too few for s·Σqx - z·Σx to cancel.
// CHECK-LABEL: func.func @mins_tiled_bf16__gemv_tiled_t1x64x128_w1x1_s1_k8(
// CHECK-NOT: lb.sum %{{.*}} : vector
// CHECK: lb.scale_fragment {{.*}} {wide}
// CHECK-NOT: lb.sum %{{.*}} : vector
// CHECK: return
func.func @mins_tiled_bf16(%x: tensor<?x256xbf16>, %w: tensor<128x256xui4>, %s: tensor<128x8xui8>, %z: tensor<128x8xui8>) -> tensor<?x128xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128x8xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = bf16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x256xbf16>, tensor<128x256xui4>, tensor<128x8xui8>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// The row gemv with mins and f16 activations, two rows of W a warp: one Σx
// of the unit's 32 activations per row of x (lb.sum), shared by both rows of
// W, takes each row's min after its packed q·x dot: no f32 q·s - z per
// register.
// CHECK-LABEL: func.func @mins_gemv__gemv_t1x8x1024_w1x4_s1_k1(
// CHECK-NOT: lb.scale_fragment
// CHECK: lb.load_activations {{.*}} -> vector<32xf16>
// CHECK: %[[SX:.*]] = lb.sum %{{.*}} : vector<32xf16>
// CHECK: %[[DOT0:.*]] = lb.dot
// CHECK: arith.mulf %[[DOT0]]
// CHECK: arith.mulf %{{.*}}, %[[SX]] : f32
// CHECK: %[[DOT1:.*]] = lb.dot
// CHECK: arith.mulf %[[DOT1]]
// CHECK: arith.mulf %{{.*}}, %[[SX]] : f32
// CHECK-NOT: lb.sum
// CHECK: scf.yield
func.func @mins_gemv(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64x32xui8>, %z: tensor<64x32xui8>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64x32xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
      schedule <family = gemv, tile = [1, 8, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64x32xui8>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// Groups of 16 (Q2_K's mins): one Σx per half unit.
// CHECK-LABEL: func.func @mins_gemv_g16__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: lb.sum %{{.*}} : vector<16xf16>
// CHECK: lb.sum %{{.*}} : vector<16xf16>
// CHECK-NOT: lb.scale_fragment
// CHECK: scf.yield
func.func @mins_gemv_g16(%x: tensor<?x1024xf16>, %w: tensor<32x1024xui2>, %s: tensor<32x64xui8>, %z: tensor<32x64xui8>) -> tensor<?x32xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<32x64xui8>) quant <granularity = group, group_size = 16, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<32x1024xui2>, tensor<32x64xui8>) -> tensor<?x32xf16>
  return %y : tensor<?x32xf16>
}

// bf16 keeps the f32 q·s - z in the row gemv too.
// CHECK-LABEL: func.func @mins_gemv_bf16__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-NOT: lb.sum %{{.*}} : vector
// CHECK: lb.scale_fragment {{.*}} {wide}
// CHECK-NOT: lb.sum %{{.*}} : vector
// CHECK: return
func.func @mins_gemv_bf16(%x: tensor<?x1024xbf16>, %w: tensor<32x1024xui4>, %s: tensor<32x32xui8>, %z: tensor<32x32xui8>) -> tensor<?x32xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<32x32xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<32x1024xui4>, tensor<32x32xui8>) -> tensor<?x32xbf16>
  return %y : tensor<?x32xbf16>
}

// The mma family reads a lane's super-block steps once per super-block, not
// with each group's codes. A 64-wide K tile is a quarter of a 256-wide
// super-block: the steps (the scales' and the mins', one a column of each of
// the lane's 8 subtiles) ride the loop's iter_args, reloaded by an scf.if
// only in the tiles that start a super-block; the groups read codes alone.
// CHECK-LABEL: func.func @mma_carried_steps__mma_t16x64x64_w1x1_s2_k1(
// CHECK: scf.for {{.*}} iter_args(
// CHECK: %[[START:.*]] = arith.cmpi eq
// CHECK: scf.if %[[START]] -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-16: lb.load_super_step
// CHECK: } else {
// CHECK-NOT: lb.load_super_step
// CHECK: lb.load_scalar
// CHECK-NOT: lb.load_super_step
// CHECK: lb.mma
// CHECK-NOT: lb.load_super_step
// CHECK: scf.yield
func.func @mma_carried_steps(%x: tensor<?x1024xf16>, %w: tensor<128x1024xui4>, %s: tensor<128x32xui8>, %z: tensor<128x32xui8>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128x32xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
      schedule <family = mma, tile = [16, 64, 64], warps = [1, 1], stages = 2, split_k = 1>
      : (tensor<?x1024xf16>, tensor<128x1024xui4>, tensor<128x32xui8>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// A 256-wide K tile is one super-block: its steps load once, where it
// starts, and its eight groups read their codes alone (no iter_args beyond
// the accumulators, no scf.if).
// CHECK-LABEL: func.func @mma_tile_steps__mma_t16x64x256_w1x1_s2_k1(
// CHECK: scf.for
// CHECK-NOT: scf.if {{.*}} -> (f32
// CHECK-COUNT-8: lb.load_super_step
// CHECK-NOT: lb.load_super_step
// CHECK: scf.yield
func.func @mma_tile_steps(%x: tensor<?x1024xf16>, %w: tensor<128x1024xui4>, %s: tensor<128x32xui8>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = ui8, super_block = 256, super_step = f16>
      schedule <family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 2, split_k = 1>
      : (tensor<?x1024xf16>, tensor<128x1024xui4>, tensor<128x32xui8>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

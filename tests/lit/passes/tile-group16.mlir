// RUN: lowbit-opt %s --lb-tile --split-input-file --verify-diagnostics | FileCheck %s

// NVFP4 (groups of 16) in the split-K mma: a scale period is one 32-wide
// block. Lane t of a quad holds K values 8 t .. 8 t + 8 of it in both k16
// steps (core::pairedKOf), so its group is the block's (t / 2)-th: each
// column's e4m3fn scale is picked from the chunk's 8-byte run (128 / 16
// scales of one byte) at the block's group, or the next where t >= 2 (the
// stored bits of both, at constant positions, selected before the one
// widening: a lane-dependent position would put the run in local memory),
// then multiplied by the tensor scale; both steps' registers are scaled by
// it before the mma.
// CHECK-LABEL: func.func @nv__mma_t8x64x128_w1x1_s1_k4(
// CHECK: %[[T:.*]] = lb.load_tensor_scale
// CHECK: %[[UPPER:.*]] = arith.cmpi uge, %{{.*}}, %c2
// CHECK: scf.for
// CHECK-COUNT-8: lb.load_scale_run {{.*}} {count = 8 : i64} : memref<128x64xf8E4M3FN> -> vector<8xf32>
// CHECK: scf.for
// CHECK: %[[S:.*]] = lb.scale_in_run %{{[0-9]+}}[%{{.*}}] next if %[[UPPER]] : vector<8xf32>
// CHECK-NOT: arith.select
// CHECK: arith.mulf %[[S]], %[[T]]
// CHECK-NOT: lb.load_scalar
// CHECK: lb.scale_fragment
// CHECK: } {lb.unroll = 4 : i64}
func.func @nv(%x: tensor<?x1024xf16>, %w: tensor<128x1024x!lb.float<e2m1, finite>>, %s: tensor<128x64xf8E4M3FN>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f32>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<128x1024x!lb.float<e2m1, finite>>, tensor<128x64xf8E4M3FN>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// -----

func.func @nv_sixteen_warps(%x: tensor<?x4096xf16>, %w: tensor<128x4096x!lb.float<e2m1, finite>>, %s: tensor<128x256xf8E4M3FN>) -> tensor<?x128xf16> {
  // expected-error @+1 {{groups of 16 with split_k >= 16 need more than the 128 registers}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f32>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 16>
      : (tensor<?x4096xf16>, tensor<128x4096x!lb.float<e2m1, finite>>, tensor<128x256xf8E4M3FN>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// -----

// gemv_tiled: the same fact; each lane's dot is its own 8 K values', scaled
// by its own group's scale (the block's group, or the next where t >= 2)
// after the dot.
// CHECK-LABEL: func.func @nv_tiled__gemv_tiled_t1x64x128_w1x1_s1_k4(
// CHECK: %[[UPPER:.*]] = arith.cmpi uge, %{{.*}}, %c2
// CHECK-COUNT-8: lb.load_scale_run {{.*}} {count = 8 : i64}
// CHECK: lb.scale_in_run %{{[0-9]+}}[%{{.*}}] next if %[[UPPER]] : vector<8xf32>
// CHECK: lb.dot
// CHECK: arith.mulf
func.func @nv_tiled(%x: tensor<?x1024xf16>, %w: tensor<128x1024x!lb.float<e2m1, finite>>, %s: tensor<128x64xf8E4M3FN>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f32>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<128x1024x!lb.float<e2m1, finite>>, tensor<128x64xf8E4M3FN>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

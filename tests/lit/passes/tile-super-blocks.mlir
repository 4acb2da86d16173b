// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// Two-level scales: a group's scale is its ui8 code times its super-block's
// step, and a min (sub_value) its code times its own step; the split-K mma
// takes them through loadColumnQuant, not a chunk's scale run.
// CHECK-LABEL: func.func @compact__mma_t16x64x128_w1x1_s1_k8(
// CHECK-SAME: %[[S:arg2]]: memref<128x8xui8>, %[[Z:arg3]]: memref<128x8xui8>
// CHECK-NOT: lb.load_scale_run
// CHECK: %[[C:.*]] = lb.load_scalar %[[S]][
// CHECK: %[[D:.*]] = lb.load_super_step %[[S]][{{.*}}] {step_type = f16, steps_per_row = 1 : i64} : memref<128x8xui8>
// CHECK: arith.mulf %[[C]], %[[D]] : f32
// CHECK: %[[M:.*]] = lb.load_scalar %[[Z]][
// CHECK: %[[E:.*]] = lb.load_super_step %[[Z]][{{.*}}] {step_type = f16, steps_per_row = 1 : i64} : memref<128x8xui8>
// CHECK: arith.mulf %[[M]], %[[E]] : f32
func.func @compact(%x: tensor<?x256xf16>, %w: tensor<128x256xui4>, %s: tensor<128x8xui8>, %z: tensor<128x8xui8>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128x8xui8>) quant <granularity = group, group_size = 32, scale = ui8, zero = sub_value, super_block = 256, super_step = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x256xf16>, tensor<128x256xui4>, tensor<128x8xui8>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

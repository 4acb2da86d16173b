// RUN: lowbit-opt %s --lb-tile | FileCheck %s

// NVFP4's tensor scale: loaded once at the kernel's entry, before any loop,
// and every block scale multiplied by it where it is picked (the split-K mma
// here, from a chunk's run; every family's scales pass loadColumnQuant).
// CHECK-LABEL: func.func @nv__mma_t16x64x128_w1x1_s1_k8(
// CHECK-SAME: %[[S:arg2]]: memref<128x8xf8E4M3FN>
// CHECK-NEXT: %[[T:.*]] = lb.load_tensor_scale %[[S]] : memref<128x8xf8E4M3FN>
// CHECK: %[[R:.*]] = lb.load_scale_run %[[S]][
// CHECK: %[[B:.*]] = lb.scale_in_run %[[R]][
// CHECK: arith.mulf %[[B]], %[[T]] : f32
// CHECK-NOT: lb.load_tensor_scale
func.func @nv(%x: tensor<?x256xf16>, %w: tensor<128x256xsi4>, %s: tensor<128x8xf8E4M3FN>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f8E4M3FN, tensor_scale = f32>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x256xf16>, tensor<128x256xsi4>, tensor<128x8xf8E4M3FN>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

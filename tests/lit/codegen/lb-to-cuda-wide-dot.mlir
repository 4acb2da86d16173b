// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// e5m2 codes reach 57344: four packed f16 products of them overflow once
// |x| passes 0.3, so the gemv families' dots of f16 e5m2 are wide, every
// product and sum in f32 (core::needsWideDot). e4m3fn's 448 keeps the
// packed dot, and so does bf16, which has f32's range.
// CHECK-LABEL: e5m2__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-NOT: fma_f16x2(
// CHECK: f16x2_to_f32x2({{.*}}, a0, a1); f16x2_to_f32x2({{.*}}, b0, b1); [[D:v[0-9]+]] = fmaf(a0, b0, {{v[0-9]+}}); [[D]] = fmaf(a1, b1, [[D]]);
// CHECK-LABEL: e5m2_tiled__gemv_tiled_t1x64x128_w1x1_s1_k4(
// CHECK: fmaf(a0, b0,
// CHECK-LABEL: e4m3__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-NOT: fmaf(a0, b0,
// CHECK: fma_f16x2(
// CHECK-LABEL: e5m2_bf16__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-NOT: fmaf(a0, b0,
// CHECK: fma_bf16x2(
func.func @e5m2(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.float<e5m2, ieee>>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.float<e5m2, ieee>>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
func.func @e5m2_tiled(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.float<e5m2, ieee>>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.float<e5m2, ieee>>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
func.func @e4m3(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.float<e4m3, fn>>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.float<e4m3, fn>>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
func.func @e5m2_bf16(%x: tensor<?x1024xbf16>, %w: tensor<64x1024x!lb.float<e5m2, ieee>>, %s: tensor<64x8xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024x!lb.float<e5m2, ieee>>, tensor<64x8xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Groups of 16 in gemv: the unit's halves are 8-register arrays (no fragment
// struct has that length), each dotted with its half of the activations and
// scaled by its own scale; with q·s - z the halves are dequantized first.
// CHECK-LABEL: g16__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const float [[S0:v[0-9]+]] = f16_to_f32(arg2[
// CHECK: const float [[S1:v[0-9]+]] = f16_to_f32(arg2[
// CHECK: u32 [[H0:v[0-9]+]][8];
// CHECK: [[H0]][7] = {{v[0-9]+}}[7];
// CHECK: u32 [[H1:v[0-9]+]][8];
// CHECK: [[H1]][0] = {{v[0-9]+}}[8];
// CHECK: [[H1]][7] = {{v[0-9]+}}[15];
// CHECK: mul_f16x2([[H0]][0],
// CHECK: = {{v[0-9]+}} * [[S0]];
// CHECK: mul_f16x2([[H1]][0],
// CHECK: = {{v[0-9]+}} * [[S1]];
// CHECK-LABEL: g16value__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: u32 [[H:v[0-9]+]][8];
// CHECK: u32 [[W0:v[0-9]+]][8];
// CHECK: [[W0]][0] = fma_bf16x2([[H]][0], {{s[0-9]+}}, {{b[0-9]+}});
func.func @g16(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64x64xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64x64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
func.func @g16value(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64x64xbf16>, %z: tensor<64x64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64x64xbf16>) quant <granularity = group, group_size = 16, scale = bf16, zero = sub_value>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64x64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

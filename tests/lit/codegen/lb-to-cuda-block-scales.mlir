// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Block scales are one byte each, widened by the exact integer conversions of
// codegen/device/scale.cuh (no sm_89 cvt, nothing that flushes).
// CHECK-LABEL: mx__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-SAME: const unsigned char *__restrict__ arg2
// CHECK: const float {{v[0-9]+}} = e8m0_to_f32(arg2[

// NVFP4's second level: the f32 after the 64 x 64 e4m3fn block scales (4096
// bytes, already a multiple of 4), loaded once at the kernel's entry, and
// every block scale multiplied by it before it scales a half of 16 values.
// CHECK-LABEL: nv__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-SAME: const unsigned char *__restrict__ arg2
// CHECK: const float [[T:v[0-9]+]] = *reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>(arg2) + 4096LL);
// CHECK: const float [[B0:v[0-9]+]] = e4m3fn_to_f32(arg2[
// CHECK: const float [[S0:v[0-9]+]] = [[B0]] * [[T]];
// CHECK: const float [[B1:v[0-9]+]] = e4m3fn_to_f32(arg2[
// CHECK: const float [[S1:v[0-9]+]] = [[B1]] * [[T]];
// CHECK: = {{v[0-9]+}} * [[S0]];
// CHECK: = {{v[0-9]+}} * [[S1]];

// The offset rounds the block scales' bytes up to 4: 5 x 1 scales -> 8.
// CHECK-LABEL: nv_odd__gemv_t1x1x1024_w1x1_s1_k1(
// CHECK: reinterpret_cast<const unsigned char *>(arg2) + 8LL);
func.func @mx(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64x32x!lb.float<ue8m0, fn>>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64x32x!lb.float<ue8m0, fn>>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @nv(%x: tensor<?x1024xf16>, %w: tensor<64x1024xsi4>, %s: tensor<64x64xf8E4M3FN>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f32>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xsi4>, tensor<64x64xf8E4M3FN>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
func.func @nv_odd(%x: tensor<?x1024xf16>, %w: tensor<5x1024xsi4>, %s: tensor<5x1xf8E4M3FN>) -> tensor<?x5xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 1024, scale = f8E4M3FN, tensor_scale = f32>
      schedule <family = gemv, tile = [1, 1, 1024], warps = [1, 1], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<5x1024xsi4>, tensor<5x1xf8E4M3FN>) -> tensor<?x5xf16>
  return %y : tensor<?x5xf16>
}

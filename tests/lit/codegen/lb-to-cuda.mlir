// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// CHECK: #include "lowbit/device/lop3.cuh"
// CHECK: extern "C" __global__ void __launch_bounds__(128, 8)
// CHECK-NEXT: w4__gemv_t1x4x1024_w1x4_s1_k1(const u16 *__restrict__ arg0, const unsigned char *__restrict__ arg1, const u16 *__restrict__ arg2, u16 *__restrict__ arg3, long long arg4)
// CHECK: #pragma unroll 1
// CHECK: for (long long
// The lane's 16 codes come in one 16-byte load at its tile.
// CHECK: const U32x4 [[W:v[0-9]+]] = ld_global_nc_na_v4(arg1 + (({{.*}} / 1LL) * 64LL + {{.*}} / 32LL) * 16LL);
// CHECK: lop3<0x6a>(
// CHECK: sub_f16x2(
// CHECK: fma_f16x2(
// CHECK: mul_f16x2(
// CHECK: warp_sum(
// CHECK: (u16)f32x2_to_f16x2(
func.func @w4(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

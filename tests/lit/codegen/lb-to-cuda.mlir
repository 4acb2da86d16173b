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
// CHECK: warp_sum<32>(
// CHECK: (u16)f32x2_to_f16x2(
func.func @w4(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// gemv_tiled reads the mma family's 64 x 32 tiles (two steps each) from
// global memory and each row's 8 activations of a 32-wide block with one
// 16-byte load, adds the lanes of each group with two shuffles and the warps
// in shared memory.
// CHECK-LABEL: g__gemv_tiled_t2x64x512_w1x1_s1_k8(
// CHECK: ld_global_nc_na_v4(arg1 + ({{.*}} / 64LL) * 16LL + {{.*}} / 32LL) * 1024LL + (({{.*}}) % 32LL) * 32LL + 16LL * (threadIdx.x & 31));
// CHECK: FragA_f16 [[X:v[0-9]+]];
// CHECK: const U32x4 w = ld_global_v4(p + 8 * q);
// CHECK: [[X]].r[4 * q] = w.r[0];
// CHECK: warp_sum<4>(
// CHECK: ((threadIdx.x & 31) >> 2)] =
// CHECK: __syncthreads();
func.func @g(%x: tensor<?x512xf16>, %w: tensor<128x512xui4>, %s: tensor<128x4xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [2, 64, 512], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x512xf16>, tensor<128x512xui4>, tensor<128x4xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// CHECK: extern "C" __global__ void __launch_bounds__(128, 2)
// CHECK: __shared__ __align__(128) unsigned char [[X:smem[0-9]+]][12288];
// CHECK: __shared__ __align__(128) unsigned char [[W:smem[0-9]+]][12288];
// Activation rows are copied with their 16-byte chunks swizzled by the row.
// CHECK: cp_async16_zfill(base + (u32)(r * 128 + ((chunk) ^ ((r) & 6) ^ ((((r) >> 0) & 1) * 5)) * 16), source, inside);
// CHECK: cp_async16(base + (u32)(group * 2048 + chunk * 16), source);
// CHECK: cp_async_commit();
// CHECK: cp_async_wait<1>();
// CHECK: __syncthreads();
// The A fragments of a 32-wide block: chunk k0 / 8 + tig of rows g and
// g + 8, read back through the same swizzle.
// CHECK: const int chunk = (int)({{.*}}) / 8 + (threadIdx.x & 3);
// CHECK: const uint4 lo = *reinterpret_cast<const uint4 *>(stage + (r) * 128 + ((chunk) ^ ((r) & 6) ^ ((((r) >> 0) & 1) * 5)) * 16)
// Each lane's B fragments: one 16-byte shared load per 64 x 16 step of a
// 64 x 32 tile.
// CHECK: ld_shared_v4([[W]] + {{.*}} * 1024LL + (({{.*}}) % 32LL) * 32LL + 16 * (threadIdx.x & 31));
// CHECK: lop3<0x6a>(
// CHECK: mul_f16x2(
// CHECK: mma_m16n8k16(
// CHECK: f32x2_to_f16x2(
func.func @m(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

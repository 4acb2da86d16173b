// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Split-K mma with 8 warps: no staging ring, only the warps' partial sums
// (8 warps x 8 accumulators x 32 lanes x 4 floats). One chunk in flight and
// 8 accumulators fit in 128 registers: two blocks per SM.
// CHECK: extern "C" __global__ void __launch_bounds__(256, 2)
// Blocks are numbered row tile fastest (blockIdx.x + gridDim.x * blockIdx.y,
// split by gridDim.y), so the row tiles of a column tile share its weights
// in L2.
// CHECK-DAG: = (long long)(gridDim.x);
// CHECK-DAG: = (long long)(gridDim.y);
// CHECK: __shared__ __align__(128) unsigned char [[P:smem[0-9]+]][32768];
// The codes of a period: 16-byte loads straight into registers, all
// unrolled, four 32-wide blocks of two k16 steps; step 1 of a block reads the
// tile's second 512 bytes.
// CHECK: #pragma unroll 4
// CHECK: ld_global_nc_na_v4(arg1 + {{.*}} * 1024LL + (({{.*}}) % 32LL) * 32LL + 16LL * (threadIdx.x & 31));
// The activations of a block: one 16-byte load of row g at k0 + 8 tig per
// 8 rows of x; rows past M read as zero.
// CHECK: if ([[ROW:v[0-9]+]] < arg4) {
// CHECK: const u16 *p = arg0 + ([[ROW]]) * 1024LL + {{v[0-9]+}};
// CHECK: const U32x4 w = ld_global_v4(p + 8 * q);
// CHECK: lop3<0x6a>(
// CHECK: mul_f16x2(
// The decoded columns g and g + 8 are an A fragment's rows, by name only.
// CHECK: [[A:v[0-9]+]].r[0] = [[LO:v[0-9]+]].r[0]; [[A]].r[1] = [[HI:v[0-9]+]].r[0]; [[A]].r[2] = [[LO]].r[1]; [[A]].r[3] = [[HI]].r[1];
// CHECK: mma_m16n8k16(
// Each lane's accumulators go out as one float4, and come back summed.
// CHECK: reinterpret_cast<float4 *>([[P]])
// CHECK: __syncthreads();
// CHECK: const float4 part = reinterpret_cast<const float4 *>([[P]])
// The sum is a block of yᵀ: lane (g, t) writes rows 2 t and 2 t + 1 of
// columns g and g + 8.
// CHECK: const long long row = {{.*}} + 2 * (threadIdx.x & 3);
// CHECK: const long long col = {{.*}} + (threadIdx.x & 31) / 4;
// CHECK: if (row + 1 < arg4) arg3[(row + 1) * 256LL + col + 8] = (u16)f32x2_to_f16x2(
func.func @m(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

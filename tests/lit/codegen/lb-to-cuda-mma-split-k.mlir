// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Split-K mma with 8 warps: no staging ring, only the warps' partial sums
// (8 warps x 8 subtiles x 32 lanes x 4 floats).
// CHECK: extern "C" __global__ void __launch_bounds__(256, 1)
// CHECK: __shared__ __align__(128) unsigned char [[P:smem[0-9]+]][32768];
// The codes of a period: 16-byte loads straight into registers, all
// unrolled, four 32-wide blocks of two k16 steps; step 1 of a block reads the
// tile's second 512 bytes.
// CHECK: #pragma unroll 4
// CHECK: ld_global_nc_na_v4(arg1 + {{.*}} * 1024LL + (({{.*}}) % 32LL) * 32LL + 16LL * (threadIdx.x & 31));
// A fragments straight from global memory: one 16-byte load for each of rows
// g and g + 8 serves both steps; rows past M read as zero.
// CHECK: + 8 * (threadIdx.x & 3);
// CHECK: const uint4 lo = row < arg4 ? *reinterpret_cast<const uint4 *>(p) : zero;
// CHECK: const uint4 hi = row + 8 < arg4 ? *reinterpret_cast<const uint4 *>(p + 8 * 1024LL) : zero;
// CHECK: [0] = lo.x; {{.*}}[1] = hi.x; {{.*}}[2] = lo.y; {{.*}}[3] = hi.y;
// CHECK: [4] = lo.z; {{.*}}[5] = hi.z; {{.*}}[6] = lo.w; {{.*}}[7] = hi.w;
// CHECK: lop3<0x6a>(
// CHECK: mul_f16x2(
// CHECK: mma_m16n8k16(
// Each lane's accumulators go out as one float4, and come back summed.
// CHECK: reinterpret_cast<float4 *>([[P]])
// CHECK: __syncthreads();
// CHECK: const float4 part = reinterpret_cast<const float4 *>([[P]])
// CHECK: f32x2_to_f16x2(
func.func @m(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

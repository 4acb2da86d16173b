// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// cluster_k = 4: the kernel declares its cluster, so a plain cuLaunchKernel
// with grid z = 4 launches one cluster per 64 columns; the block's rank is
// blockIdx.z. The cluster barriers are outside every branch (.aligned), and
// each owner lane reads its group's float of every block's warp-0 row
// through distributed shared memory, ranks in order.
// CHECK: #include "lowbit/device/cluster.cuh"
// CHECK: extern "C" __global__ void __launch_bounds__({{[0-9, ]+}}) __cluster_dims__(1, 1, 4)
// CHECK-NEXT: w4__gemv_tiled_t1x64x128_w1x1_s1_k8_c4(
// CHECK: = (long long)(blockIdx.z);
// CHECK: __syncthreads();
// CHECK: {{^  }}cluster_barrier();
// CHECK: const float *mine = reinterpret_cast<const float *>([[P:smem[0-9]+]]) + ({{.*}}) * 8 + ((threadIdx.x & 31) >> 2);
// CHECK-NEXT: #pragma unroll
// CHECK-NEXT: for (u32 rank = 0; rank < 4; ++rank) [[T:v[0-9]+]] += cluster_load_f32(mine, rank);
// CHECK: arg3[{{.*}}] = (u16)f32x2_to_f16x2([[T]], 0.f);
// CHECK: {{^  }}cluster_barrier();
// CHECK-NEXT: return;
// CHECK-NEXT: }
func.func @w4(%x: tensor<?x8192xf16>, %w: tensor<128x8192xui4>, %s: tensor<128x64xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 4>
      : (tensor<?x8192xf16>, tensor<128x8192xui4>, tensor<128x64xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}



// The split-K mma adds whole accumulator fragments, a float4 a lane.
// CHECK: __cluster_dims__(1, 1, 2)
// CHECK: const float4 *mine = reinterpret_cast<const float4 *>({{smem[0-9]+}}) + ({{.*}}) * 32 + (threadIdx.x & 31);
// CHECK: for (u32 rank = 0; rank < 2; ++rank) {
// CHECK-NEXT: const float4 part = cluster_load_f32x4(mine, rank);
// CHECK: const long long row = {{.*}} + 2 * (threadIdx.x & 3);
func.func @w4_mma(%x: tensor<?x4096xf16>, %w: tensor<128x4096xui4>, %s: tensor<128x32xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4, cluster_k = 2>
      : (tensor<?x4096xf16>, tensor<128x4096xui4>, tensor<128x32xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

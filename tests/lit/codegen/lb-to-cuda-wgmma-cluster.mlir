// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// K split across a cluster of two blocks: each takes half of the 4 K tiles,
// keeps its partial sums after the ring, and adds half of the slices over
// the cluster in rank order.
func.func @wgmma_cluster(%x: tensor<?x256xf16>, %w: tensor<256x256xui4>, %s: tensor<256x2xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [64, 256, 64], warps = [1, 4], stages = 2, split_k = 1, cluster_k = 2>
      : (tensor<?x256xf16>, tensor<256x256xui4>, tensor<256x2xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK: __launch_bounds__(256, 1) __cluster_dims__(1, 1, 2)
// The ring (2 stages of 64 rows of 128 bytes, 1 KiB aligned), then the
// partials: 4 warps x 4 slices x 8 float4 a lane.
// CHECK: unsigned char *const [[RING:smem[0-9]+]] = lb_dynamic_smem + 0 +
// CHECK: unsigned char *const [[PARTIALS:smem[0-9]+]] = lb_dynamic_smem + 17408;
// Block rank r of the cluster starts at K tile 2 r.
// CHECK: const long long [[RANK:v[0-9]+]] = (long long)(blockIdx.z);
// The producer waits at both of the consumers' cluster barriers.
// CHECK: cp_async_mbarrier_arrive_noinc(
// CHECK: cluster_barrier();
// CHECK-NEXT: cluster_barrier();
// CHECK: wgmma_wait<0>();
// Every slice's partials, 512 contiguous bytes a warp for each m16n8 slice.
// CHECK: float4 *slot = reinterpret_cast<float4 *>([[PARTIALS]]) + ({{v[0-9]+}}) * 256 + (threadIdx.x & 31);
// CHECK: slot[32 * i] = make_float4(
// CHECK: cluster_barrier();
// Rank 0 adds slices 0 and 2, rank 1 slices 1 and 3, ranks in order.
// CHECK: const float4 *slot = reinterpret_cast<const float4 *>([[PARTIALS]])
// CHECK: for (u32 rank = 0; rank < 2; ++rank)
// CHECK: const float4 part = cluster_load_f32x4(slot + 32 * i, rank);
// CHECK: if (row + 8 * i + h < arg4) {
// CHECK: cluster_barrier();

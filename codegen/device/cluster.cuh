// Thread-block clusters (sm_90 and up): the split-K families' blocks of one
// cluster add their sums through distributed shared memory (PTX ISA,
// "Distributed Shared Memory" and "barrier.cluster").
//
// Every function is a template, as in wgmma.cuh, so the header compiles for
// older archs as long as no kernel calls them.
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// Every thread of every block of the cluster arrives (release: its shared
// memory writes before this are visible to the cluster) and waits for all
// (acquire). Also a block barrier. `.aligned`: all threads of a warp execute
// it together, so callers keep it out of divergent code.
template <int kUnused = 0>
__device__ __forceinline__ void cluster_barrier() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n"
               "barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The address, in the cluster's shared window, of the variable at `local`
// (this block's shared memory) in the block of cluster rank `rank`: every
// block of a kernel lays out its shared memory alike.
template <int kUnused = 0>
__device__ __forceinline__ u32 cluster_address(const void *local, u32 rank) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(remote)
               : "r"(static_cast<u32>(__cvta_generic_to_shared(local))), "r"(rank));
  return remote;
}

template <int kUnused = 0>
__device__ __forceinline__ float cluster_load_f32(const float *local, u32 rank) {
  float v;
  asm volatile("ld.shared::cluster.f32 %0, [%1];\n"
               : "=f"(v)
               : "r"(cluster_address(local, rank))
               : "memory");
  return v;
}

template <int kUnused = 0>
__device__ __forceinline__ float4 cluster_load_f32x4(const float4 *local, u32 rank) {
  float4 v;
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "r"(cluster_address(local, rank))
               : "memory");
  return v;
}

} // namespace device
} // namespace lowbit

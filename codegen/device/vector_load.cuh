// 16-byte global loads and stores into 4 x 32-bit registers.
//
// 16 bytes is the widest load a thread can issue (one LDG.128): a warp then
// moves 512 contiguous bytes per instruction, the fewest instructions and
// memory transactions per byte. Pre-permuted weights are laid out so that
// every thread's 16 bytes are exactly the words it decodes (docs/architecture.md,
// "How a weight layout is derived").
//
// Which flavour, and why:
//  * ld_global_nc_na_v4 -- ld.global.nc.L1::no_allocate: for weights (the
//    gemv family). .nc reads through the read-only (texture) path, legal
//    because the weights never change during the kernel; L1::no_allocate keeps
//    these use-once lines from evicting the activations, scales and zeros that
//    ARE re-read from L1. The asm is not volatile, so the compiler may hoist and
//    batch these loads to keep several in flight per thread.
//  * ld_global_cs_v4 -- ld.global.cs ("cache streaming", evict-first in L1 and
//    L2): for data read once by the whole GPU when L2 pollution matters more
//    than the .nc path.
//  * ld_global_nc_hint_v4 -- .nc + an L2 cache-policy (cp_async.cuh) when the
//    weights should also be evict-first in L2.
//  * ld_global_v4 / st_global_v4 -- plain, for activations and outputs.
// All addresses must be aligned to the access (16 bytes for the v4 forms).
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

struct U32x4 {
  u32 r[4];
};
static_assert(sizeof(U32x4) == 16, "one 128-bit vector");

__device__ __forceinline__ U32x4 ld_global_nc_na_v4(const void *p) {
  U32x4 v;
  asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
      : "=r"(v.r[0]), "=r"(v.r[1]), "=r"(v.r[2]), "=r"(v.r[3])
      : "l"(__cvta_generic_to_global(p)));
  return v;
}

__device__ __forceinline__ U32x4 ld_global_nc_hint_v4(const void *p, u64 policy) {
  U32x4 v;
  asm("ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;\n"
      : "=r"(v.r[0]), "=r"(v.r[1]), "=r"(v.r[2]), "=r"(v.r[3])
      : "l"(__cvta_generic_to_global(p)), "l"(policy));
  return v;
}

// A lane's unit of 32 weight codes is `bits` words (core/FragmentFacts.h):
// 32 bytes for 8-bit codes (two 16-byte loads), 8 for 2-bit, 4 for 1-bit.
// Aligned like the access, so a shared-memory unit is one LDS of its width.
struct alignas(4) U32x1 {
  u32 r[1];
};
struct alignas(8) U32x2 {
  u32 r[2];
};
struct alignas(16) U32x8 {
  u32 r[8];
};
// A unit of two-plane codes (3, 5 and 6 bits; 3-bit mma units in pairs): its
// low-plane words, then its high-plane words, assembled from one load of
// each plane, so never accessed whole.
struct U32x3 {
  u32 r[3];
};
struct U32x5 {
  u32 r[5];
};
struct U32x6 {
  u32 r[6];
};

__device__ __forceinline__ U32x1 ld_global_nc_na_v1(const void *p) {
  U32x1 v;
  asm("ld.global.nc.L1::no_allocate.u32 %0, [%1];\n"
      : "=r"(v.r[0])
      : "l"(__cvta_generic_to_global(p)));
  return v;
}

__device__ __forceinline__ U32x2 ld_global_nc_na_v2(const void *p) {
  U32x2 v;
  asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];\n"
      : "=r"(v.r[0]), "=r"(v.r[1])
      : "l"(__cvta_generic_to_global(p)));
  return v;
}

__device__ __forceinline__ U32x8 ld_global_nc_na_v8(const void *p) {
  const U32x4 lo = ld_global_nc_na_v4(p);
  const U32x4 hi = ld_global_nc_na_v4(static_cast<const unsigned char *>(p) + 16);
  U32x8 v;
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    v.r[i] = lo.r[i];
    v.r[4 + i] = hi.r[i];
  }
  return v;
}

// Volatile with a "memory" clobber: unlike the .nc loads, this data may be
// written by the same kernel, and the compiler cannot see that the asm reads
// memory, so it must not move the load across stores.
__device__ __forceinline__ U32x4 ld_global_cs_v4(const void *p) {
  U32x4 v;
  asm volatile("ld.global.cs.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.r[0]), "=r"(v.r[1]), "=r"(v.r[2]), "=r"(v.r[3])
               : "l"(__cvta_generic_to_global(p)) : "memory");
  return v;
}

// Plain 16-byte load / store through ordinary C++ (the compiler emits
// LDG.128 / STG.128 and knows the aliasing).
__device__ __forceinline__ U32x4 ld_global_v4(const void *p) {
  const uint4 w = *static_cast<const uint4 *>(p);
  U32x4 v;
  v.r[0] = w.x; v.r[1] = w.y; v.r[2] = w.z; v.r[3] = w.w;
  return v;
}
// 16 bytes of shared memory (a lane's staged unit of codes). Through uint4,
// so the compiler knows the access is 16-byte aligned and issues one LDS.128
// (U32x4 itself is only 4-byte aligned).
__device__ __forceinline__ U32x4 ld_shared_v4(const void *p) {
  const uint4 w = *static_cast<const uint4 *>(p);
  U32x4 v;
  v.r[0] = w.x; v.r[1] = w.y; v.r[2] = w.z; v.r[3] = w.w;
  return v;
}
// Plain 8-byte load: a lane's 8 s8 activations (an m16n8k32 B fragment).
__device__ __forceinline__ U32x2 ld_global_v2(const void *p) {
  const uint2 w = *static_cast<const uint2 *>(p);
  U32x2 v;
  v.r[0] = w.x; v.r[1] = w.y;
  return v;
}
__device__ __forceinline__ void st_global_v4(void *p, const U32x4 &v) {
  uint4 w;
  w.x = v.r[0]; w.y = v.r[1]; w.z = v.r[2]; w.w = v.r[3];
  *static_cast<uint4 *>(p) = w;
}

} // namespace device
} // namespace lowbit

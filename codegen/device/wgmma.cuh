// The wgmma family's primitives (sm_90a): mbarriers, the producer's 4-byte
// cp.async with barrier completion, setmaxnreg, and the wgmma shared-memory
// descriptor. The wgmma instruction itself is emitted inline by lb-to-cuda,
// because its accumulator list grows with N.
//
// Every function that names an sm_90a-only instruction is a template, so the
// header still compiles for older archs as long as no kernel calls them.
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// --- mbarriers (PTX ISA, "Parallel Synchronization and Communication
// Instructions: mbarrier"). A phase completes after `arrivals` arrivals; its
// parity alternates 0, 1, 0, ... and a waiter names the parity it waits for.

__device__ __forceinline__ void mbarrier_init(u32 barrier, u32 arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(barrier), "r"(arrivals)
               : "memory");
}

// Makes the initialization visible to the other threads (and to cp.async's
// arrivals) before the block barrier that follows it.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Spins on try_wait (which itself blocks for a while) until the phase of
// `parity` has completed. The labels are local to the braces.
__device__ __forceinline__ void mbarrier_wait(u32 barrier, u32 parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "LB_MBARRIER_WAIT:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra LB_MBARRIER_WAIT;\n"
      "}\n" ::"r"(barrier),
      "r"(parity)
      : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(u32 barrier) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(barrier) : "memory");
}

// --- the producer's copies.

// One 4-byte cp.async; src_bytes 0 fills the destination with zeros (rows
// past M) without reading `source`.
__device__ __forceinline__ void cp_async4_zfill(u32 destination, const void *source,
                                                bool inside) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(destination),
               "l"(source), "r"(inside ? 4 : 0)
               : "memory");
}

// The calling thread's arrival on `barrier` once all its earlier cp.asyncs
// have landed. noinc: the arrival is one of the barrier's `arrivals`.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(u32 barrier) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(barrier)
               : "memory");
}

// Shared memory written through the generic proxy (cp.async, st.shared)
// becomes visible to wgmma's async-proxy reads.
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// --- warpgroup registers and wgmma ordering (sm_90a).

template <int kRegisters> __device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(kRegisters >= 24 && kRegisters <= 256 && kRegisters % 8 == 0,
                "setmaxnreg takes 24 .. 256 in steps of 8");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

template <int kRegisters> __device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(kRegisters >= 24 && kRegisters <= 256 && kRegisters % 8 == 0,
                "setmaxnreg takes 24 .. 256 in steps of 8");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegisters));
}

template <int kUnused = 0> __device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

// --- stream-K's flags in global memory. A warp that wrote partial sums
// fences each lane's writes to the GPU's scope, meets, and sets its flag
// with a release store; a waiting warp loads the flag with acquire until it
// is set, so its loads that follow see the partials (PTX ISA, "Memory
// Consistency Model": release/acquire patterns at .gpu scope).

template <int kUnused = 0> __device__ __forceinline__ void release_flag(u32 *flag) {
  __threadfence();
  __syncwarp();
  if ((threadIdx.x & 31) == 0)
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" ::"l"(flag), "r"(1u) : "memory");
}

template <int kUnused = 0> __device__ __forceinline__ void wait_flag(const u32 *flag) {
  u32 value = 0;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(value) : "l"(flag) : "memory");
  } while (value == 0);
  __syncwarp();
}

template <int kUnused = 0> __device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int kPending> __device__ __forceinline__ void wgmma_wait() {
  static_assert(kPending >= 0 && kPending <= 7, "wgmma.wait_group takes 0 .. 7");
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(kPending) : "memory");
}

// The descriptor of a K-major operand in a buffer of kRowBytes-byte rows in
// the hardware's swizzle of that span (PTX ISA, "Matrix Descriptor
// Format"): bits 0-13 the start address / 16, 16-29 the leading byte offset
// / 16 (unused for swizzled K-major layouts: 1), 32-45 the stride byte
// offset / 16 (8 rows: from one 8-row group to the next), 49-51 the base
// offset (0: stages start on whole 8-row patterns), 62-63 the swizzle mode
// (1: 128 bytes, 2: 64, 3: 32). A k step's 32 bytes of a row start 32 j
// bytes in: the hardware applies the swizzle to the address it forms, as
// the writers did.
template <int kRowBytes> __device__ __forceinline__ u64 wgmma_descriptor_swizzled(u32 address) {
  static_assert(kRowBytes == 128 || kRowBytes == 64 || kRowBytes == 32,
                "wgmma swizzles rows of 32, 64 or 128 bytes");
  constexpr u64 kMode = kRowBytes == 128 ? 1 : kRowBytes == 64 ? 2 : 3;
  u64 descriptor = static_cast<u64>((address & 0x3FFFF) >> 4);
  descriptor |= static_cast<u64>(1) << 16;
  descriptor |= static_cast<u64>(8 * kRowBytes >> 4) << 32;
  descriptor |= kMode << 62;
  return descriptor;
}

// A thread's share of an m64 x 2N f32 wgmma accumulator, and of an s32 one
// (s8 operands).
template <int N> struct F32x {
  float r[N];
};
template <int N> struct S32x {
  s32 r[N];
};

} // namespace device
} // namespace lowbit

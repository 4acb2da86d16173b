// cp.async: asynchronous 16-byte global -> shared copies (sm_80+).
//
// A thread issues copies, groups them with cp_async_commit(), and later waits
// with cp_async_wait<N>() until at most N of ITS OWN most recent groups are
// still in flight. The data is visible to other threads only after the wait
// AND a barrier (__syncthreads()). That is the multi-stage pipeline: with S
// stages, wait<S - 2> keeps S - 2 tiles in flight while one is consumed.
//
// All copies use .cg (cache at L2 only, bypass L1): the tile goes to shared
// memory anyway, so an L1 copy would only evict useful lines. .cg requires a
// copy size of exactly 16 bytes; both addresses must be 16-byte aligned.
//
// Zero fill: the optional src-size operand says how many source bytes to read;
// the rest of the 16 are written as zero. src-size = 0 reads nothing, so an
// out-of-bounds row can be predicated off without a branch while its shared
// slot still gets defined (zero) contents.
//
// L2 evict-first: streamed weights are read exactly once per kernel; marking
// them evict_first keeps them from displacing the activations / scales that
// other CTAs re-read from L2. The policy is a 64-bit opaque value created once
// per thread (createpolicy) and passed to each copy (.L2::cache_hint).
//
// The asm is volatile with a "memory" clobber: these write shared memory
// behind the compiler's back, and commit/wait order against everything else.
//
// KNOWN PTXAS PROBLEM (CUDA 13.0.88, seen on H200 / sm_90a): a cache-hinted
// copy (the *_hint forms) placed under a divergent branch, e.g.
//     if (lane < 16) cp_async16_hint(...);
// was if-converted by ptxas into a predicated LDGSTS whose policy descriptor
// is read from uniform registers that were never written (SASS showed
// `@!P0 LDGSTS... desc[UR1]` while the policy lived in UR4:UR5): the kernel
// died with CUDA_ERROR_ILLEGAL_INSTRUCTION. The same copy executed by all
// lanes is fine. So never branch around the hinted copies: predicate them with
// cp_async16_zfill_hint(..., pred, policy) (lanes that must not copy then
// write 16 zero bytes, so give them a harmless destination). Unhinted copies
// under branches were not affected. tests/gpu/codegen/device covers the
// supported pattern.
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// Generic -> .global address (cvta.to.global; an identity on current GPUs,
// but the PTX for a .global operand is only defined for global addresses).
__device__ __forceinline__ u64 global_addr(const void *p) {
  return static_cast<u64>(__cvta_generic_to_global(p));
}

// Copies 16 bytes gmem -> smem.
__device__ __forceinline__ void cp_async16(u32 smem, const void *gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
               :: "r"(smem), "l"(global_addr(gmem)) : "memory");
}

// Copies 16 bytes if `pred`, else writes 16 zero bytes and reads nothing
// (gmem may then be any pointer, e.g. the tensor base; it is not dereferenced).
__device__ __forceinline__ void cp_async16_zfill(u32 smem, const void *gmem, bool pred) {
  const u32 src_size = pred ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :: "r"(smem), "l"(global_addr(gmem)), "r"(src_size) : "memory");
}

// An L2 policy making the lines it is used with the first to be evicted. Pure
// (not volatile): the compiler may hoist it out of loops and share it.
__device__ __forceinline__ u64 make_l2_evict_first_policy() {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// An L2 policy keeping lines longer (e.g. re-read activations / scales).
__device__ __forceinline__ u64 make_l2_evict_last_policy() {
  u64 policy;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}

// cp_async16 with an L2 cache-policy hint (from make_l2_*_policy()).
__device__ __forceinline__ void cp_async16_hint(u32 smem, const void *gmem, u64 policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2;\n"
               :: "r"(smem), "l"(global_addr(gmem)), "l"(policy) : "memory");
}
// cp_async16_zfill with an L2 cache-policy hint.
__device__ __forceinline__ void cp_async16_zfill_hint(u32 smem, const void *gmem,
                                                      bool pred, u64 policy) {
  const u32 src_size = pred ? 16u : 0u;
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n"
               :: "r"(smem), "l"(global_addr(gmem)), "r"(src_size), "l"(policy)
               : "memory");
}

// Closes the current group of this thread's cp.async operations.
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}

// Waits until at most kPending of this thread's committed groups are pending.
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  // ptxas takes any immediate here (a per-warp ring of up to 16 slots waits
  // with 14 pending); the bound only catches a nonsense count.
  static_assert(kPending >= 0 && kPending <= 30,
                "cp.async.wait_group takes a small non-negative immediate");
  asm volatile("cp.async.wait_group %0;\n" :: "n"(kPending) : "memory");
}

// Waits for all of this thread's cp.async operations (committed or not).
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}

} // namespace device
} // namespace lowbit

// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}{,.trans}.shared.b16 (sm_75+).
//
// One ldmatrix loads 1, 2 or 4 8x8 matrices of 16-bit elements from shared
// memory, cooperatively over the warp (all 32 lanes must execute it).
//
// Addresses: each 8x8 matrix is given as 8 row addresses, each row being 8
// contiguous b16 = 16 bytes, 16-byte aligned. Lanes 8i .. 8i+7 supply the rows
// 0..7 of matrix i (so .x1 reads lanes 0..7's addresses, .x2 lanes 0..15,
// .x4 all 32; the other lanes' addresses are ignored but must still be passed).
//
// Result (lane = %laneid, g = lane / 4, t = lane % 4), for matrix i in r[i]:
//   non-trans:  r[i] = { M_i[g][2t], M_i[g][2t+1] }          (low half first)
//   .trans:     r[i] = { M_i[2t][g], M_i[2t+1][g] }
// which is exactly one register of an mma fragment (see mma.cuh), e.g.
//   * A fragment (16x16, row-major in smem) with .x4: lane l passes the
//     address of row (l % 16), column 8 * (l / 16); then r[0..3] = A.r[0..3]
//     (matrices: rows 0-7/k 0-7, rows 8-15/k 0-7, rows 0-7/k 8-15, rows 8-15/k 8-15).
//   * B fragment from a weight tile stored W[n][k] (n-major, k contiguous) with
//     .x2, non-trans: lane l < 16 passes &W[l % 8][8 * (l / 8)]; r[0..1] = B.r[0..1].
//   * B fragment from B stored [k][n] (k-major) with .x2.trans: lane l < 16
//     passes &B[l][0] (rows k = 0..15); r[0..1] = B.r[0..1].
//
// `smem` is a 32-bit .shared address (types.cuh: shared_addr()). The asm is
// volatile with a "memory" clobber: it reads memory written by other threads,
// so it must not be moved across the __syncthreads() / cp.async waits that
// make that memory valid.
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

__device__ __forceinline__ void ldmatrix_x1(u32 &r0, u32 smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r0) : "r"(smem) : "memory");
}
__device__ __forceinline__ void ldmatrix_x2(u32 (&r)[2], u32 smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], u32 smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem) : "memory");
}
__device__ __forceinline__ void ldmatrix_x1_trans(u32 &r0, u32 smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r0) : "r"(smem) : "memory");
}
__device__ __forceinline__ void ldmatrix_x2_trans(u32 (&r)[2], u32 smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1]) : "r"(smem) : "memory");
}
__device__ __forceinline__ void ldmatrix_x4_trans(u32 (&r)[4], u32 smem) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(smem) : "memory");
}

// Fragment-typed forms (16-bit element types only: ldmatrix is .b16).
template <class T>
__device__ __forceinline__ void ldmatrix_frag_a(FragA<T> &a, u32 smem) {
  static_assert(ElemBits<T>::value == 16, "ldmatrix fragments are 16-bit");
  ldmatrix_x4(a.r, smem);
}
template <class T>
__device__ __forceinline__ void ldmatrix_frag_b(FragB<T> &b, u32 smem) {
  static_assert(ElemBits<T>::value == 16, "ldmatrix fragments are 16-bit");
  ldmatrix_x2(b.r, smem);
}
template <class T>
__device__ __forceinline__ void ldmatrix_frag_b_trans(FragB<T> &b, u32 smem) {
  static_assert(ElemBits<T>::value == 16, "ldmatrix fragments are 16-bit");
  ldmatrix_x2_trans(b.r, smem);
}

} // namespace device
} // namespace lowbit

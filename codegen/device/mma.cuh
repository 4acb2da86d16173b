// Warp-level tensor-core mma.sync wrappers (sm_80+; e4m3 sm_89+).
//
// All four compute D = A * B + C in place on the accumulator `c`, for one
// 16 x 8 output tile per warp. Every lane of the warp must call them
// (.sync.aligned). A is "row" (row-major M x K), B is "col" (K x N stored so
// that a column of B -- one weight row W[n, :] -- is contiguous in k), which is
// what lets a pre-permuted weight row decode straight into a B fragment.
//
// Fragment tables (PTX ISA, "Matrix Fragments for mma.m16n8k16" and
// "mma.m16n8k32"). lane = %laneid, g = lane >> 2 (groupID),
// t = lane & 3 (threadID_in_group). Within a 32-bit register, the element
// with the smaller index is in the lower bits.
//
// m16n8k16, .f16 / .bf16 (2 elements per register):
//   A (16 x 16): r[0] = A[g    ][2t, 2t+1]      r[1] = A[g + 8][2t, 2t+1]
//                r[2] = A[g    ][2t+8, 2t+9]    r[3] = A[g + 8][2t+8, 2t+9]
//     (PTX a0..a7: row g for a0,a1,a4,a5 else g+8; col 2t + (i&1), +8 for i>=4)
//   B (16 x 8):  r[0] = B[2t, 2t+1  ][g]        r[1] = B[2t+8, 2t+9][g]
//     (PTX b0..b3: k = 2t + (i&1), +8 for i>=2; n = g)
//   C/D (16 x 8, f32): r[0], r[1] = C[g][2t, 2t+1];  r[2], r[3] = C[g+8][2t, 2t+1]
//     (f16 accumulator: r[0] = C[g][2t, 2t+1] as f16x2, r[1] = C[g+8][2t, 2t+1])
//
// m16n8k32, .s8 / .e4m3 (4 elements per register, byte j = element +j):
//   A (16 x 32): r[0] = A[g    ][4t .. 4t+3]    r[1] = A[g + 8][4t .. 4t+3]
//                r[2] = A[g    ][4t+16 .. +19]  r[3] = A[g + 8][4t+16 .. +19]
//   B (32 x 8):  r[0] = B[4t .. 4t+3][g]        r[1] = B[4t+16 .. 4t+19][g]
//   C/D (16 x 8, s32 or f32): same as m16n8k16's f32 accumulator.
//
// Note the shared pattern: per lane, a B register always holds consecutive k
// of ONE column n = g, and the two B registers are k and k + K/2. A weight row
// W[n, k0 .. k0+K) therefore feeds lanes 4n .. 4n+3, and lane t takes the
// 32-bit chunks t and t + 4 of it.
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

// mma is a pure register operation, so the asm is not volatile: the compiler
// may schedule it freely (and drop it if the result is unused).

// D = A * B + D, f16 inputs, f32 accumulate.
__device__ __forceinline__ void mma_m16n8k16(FragC_f32 &c, const FragA_f16 &a,
                                             const FragB_f16 &b) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c.r[0]), "+f"(c.r[1]), "+f"(c.r[2]), "+f"(c.r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]),
        "r"(b.r[1]));
}

// D = A * B + D, bf16 inputs, f32 accumulate.
__device__ __forceinline__ void mma_m16n8k16(FragC_f32 &c, const FragA_bf16 &a,
                                             const FragB_bf16 &b) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c.r[0]), "+f"(c.r[1]), "+f"(c.r[2]), "+f"(c.r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]),
        "r"(b.r[1]));
}

// D = A * B + D, f16 inputs, f16 accumulate (2x the f32-accumulate rate on
// sm_86/sm_89 consumer parts; less accurate, opt-in by the schedule).
__device__ __forceinline__ void mma_m16n8k16(FragC_f16 &c, const FragA_f16 &a,
                                             const FragB_f16 &b) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
      "{%0, %1}, {%2, %3, %4, %5}, {%6, %7}, {%0, %1};\n"
      : "+r"(c.r[0]), "+r"(c.r[1])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]),
        "r"(b.r[1]));
}

// D = A * B + D, s8 inputs, s32 accumulate (wrapping, no .satfinite).
__device__ __forceinline__ void mma_m16n8k32(FragC_s32 &c, const FragA_s8 &a,
                                             const FragB_s8 &b) {
  asm(
      "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+r"(c.r[0]), "+r"(c.r[1]), "+r"(c.r[2]), "+r"(c.r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]),
        "r"(b.r[1]));
}

// D = A * B + D, e4m3 inputs, f32 accumulate. sm_89+ only: the template
// parameter makes the static_assert fire only if a kernel for an older arch
// actually calls it (the header itself still compiles everywhere).
template <int kUnused = 0>
__device__ __forceinline__ void mma_m16n8k32(FragC_f32 &c, const FragA_e4m3 &a,
                                             const FragB_e4m3 &b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
  asm(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 "
      "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(c.r[0]), "+f"(c.r[1]), "+f"(c.r[2]), "+f"(c.r[3])
      : "r"(a.r[0]), "r"(a.r[1]), "r"(a.r[2]), "r"(a.r[3]), "r"(b.r[0]),
        "r"(b.r[1]));
#else
  static_assert(kUnused != kUnused, "e4m3 mma.sync needs sm_89 or newer");
  (void)c; (void)a; (void)b;
#endif
}

// Whether this compilation target has the e4m3 mma (for `if constexpr`).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
constexpr bool kHasMmaE4M3 = true;
#else
constexpr bool kHasMmaE4M3 = false;
#endif

} // namespace device
} // namespace lowbit

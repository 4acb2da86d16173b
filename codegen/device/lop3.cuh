// lop3.b32 (any 3-input bitwise function in one instruction) and prmt.b32.
//
// How the `lut` immediate is computed: lop3 evaluates, for every bit position
// independently, f(a_bit, b_bit, c_bit) by looking the bit up in the 8-bit
// table `lut` at index (a_bit << 2) | (b_bit << 1) | c_bit. So the table of an
// expression is the expression itself evaluated on the three "column" bytes
//     A = 0xF0 (1 exactly at indices with a_bit = 1: 4,5,6,7)
//     B = 0xCC (indices with b_bit = 1: 2,3,6,7)
//     C = 0xAA (indices with c_bit = 1: 1,3,5,7)
// with the same operators. E.g. (a & b) | c  ->  (0xF0 & 0xCC) | 0xAA = 0xEA,
// and (a & b) ^ c -> (0xF0 & 0xCC) ^ 0xAA = 0x6A. Write luts that way, with
// the constants below, never as bare hex.
#pragma once

#include "lowbit/device/types.cuh"

namespace lowbit {
namespace device {

constexpr int kLop3A = 0xF0;
constexpr int kLop3B = 0xCC;
constexpr int kLop3C = 0xAA;

// (a & b) | c : insert the bits of `a` selected by mask `b` into a constant `c`
// whose bits are disjoint from the mask (the magic-number decode).
constexpr int kLutAndOr = (kLop3A & kLop3B) | kLop3C;
// (a & b) ^ c : the same, but also flips the selected bits that are set in c
// (used to fold a two's-complement -> offset-binary XOR into the decode).
constexpr int kLutAndXor = (kLop3A & kLop3B) ^ kLop3C;
static_assert(kLutAndOr == 0xEA && kLutAndXor == 0x6A, "lop3 lut arithmetic");

// d = f(a, b, c) bitwise, where f is given by `kLut` (see above).
template <int kLut>
__device__ __forceinline__ u32 lop3(u32 a, u32 b, u32 c) {
  static_assert(kLut >= 0 && kLut <= 0xFF, "lop3 lut is an 8-bit immediate");
  u32 d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}

// prmt.b32 (byte permute): the 8 bytes {b, a} are numbered 0..3 (a) and 4..7
// (b); nibble i of `selector` (i = 0..3) picks the source byte of result byte
// i. (The msb of each selector nibble, "sign replicate", is not used here.)
__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 selector) {
  u32 d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

} // namespace device
} // namespace lowbit

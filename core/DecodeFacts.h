// How a code becomes the bits of an f16 or bf16 value, for the code types
// that are not integers. The decode pass (passes/DecodeStrategy.cpp) emits
// these sequences and the schedule rules ask whether one exists, so both
// read this one description.
//
// Minifloats float<e, m, bias> move bits. A code of c = [1 +] e + m bits is
// placed at the top of a 16-bit half (its sign, when it has one, is then the
// half's sign bit 15); its e + m magnitude bits shifted right by
// `magnitudeShift` land at the wide type's mantissa top, exponent above:
// f16 (5 exponent, 10 mantissa bits) and bf16 (8, 7) then hold
//   2^(E - wideBias) (1 + M / 2^m)     for E > 0
//   2^(1 - wideBias) (M / 2^m)         for E = 0 (a wide subnormal)
// which is the code's value times 2^(bias - wideBias) in both cases, so one
// multiply by 2^scaleExponent (scaleExponent = wideBias - bias) finishes
// normals and subnormals alike. Every finite code is simulated when the
// decode is derived; a format whose values the wide type cannot hold
// exactly (e8m0 in f16, say) has no decode, with the reason. NaN and Inf
// codes are not weights (the packer refuses them), so the sequence need not
// map them.
//
// Lookup tables lut<4, table> decode by lookup in the table's entries
// rounded to the activation type (their bits are the constants of a
// register-resident prmt lookup).
#pragma once

#include "core/Problem.h"

#include <cstdint>
#include <vector>

namespace lowbit::core {

struct MinifloatDecode {
  int codeBits = 4;
  bool hasSign = true;
  // Right shift of the half holding the code at its top; 0 when the code's
  // magnitude already sits where the wide type needs it (e5m2 in f16).
  int magnitudeShift = 0;
  // The magnitude's bits in a half after the shift.
  uint32_t magnitudeMask = 0;
  // The wide bits' value times 2^scaleExponent is the code's value.
  int scaleExponent = 0;
};

Expected<MinifloatDecode> minifloatDecode(const formats::DataFormat &code, Activation activation);

// The 2^bits entries of a lookup table as f16 / bf16 bits (rounded to
// nearest even; a table entry the type cannot hold finitely is an error).
Expected<std::vector<uint16_t>> lookupTableBits(const formats::DataFormat &code,
                                                Activation activation);

// Raw decodes (lb.decode raw, f16 only) skip the step that normalizes a
// value: unsigned integers stay the subnormal code x 2^(p - 24) (p the
// field's bit, core::rawSubtileBitOffset), minifloats skip the fma by
// 2^scaleExponent. Kernels that scale their f32 sums fold the factor into
// the scale. Whether `code` has one, and the exponent subtile s carries.
bool decodesRaw(const formats::DataFormat &code, Activation activation);
int rawScaleExponent(const formats::DataFormat &code, int subtile);

// lb.dot sums up to four pair products in packed halves before it widens
// to f32. In f16 that overflows once 4 |q| |x| passes 65504: with codes up to
// kPackedDotCodeLimit (e4m3fn's 448, uint8's 255) that needs activations
// past 36, but e5m2's 57344 overflows at |x| = 0.3. Such codes need the
// wide dot (products and sums in f32). bf16 has f32's range.
constexpr double kPackedDotCodeLimit = 448;
bool needsWideDot(const formats::DataFormat &code, Activation activation);

// Whether the compiler can decode `code` to `activation` in registers; the
// reason when it cannot.
Status checkDecodable(const formats::DataFormat &code, Activation activation);

// The decode of integer codes to s8 bytes, for the integer tensor cores:
// each code's field moved to the top of a byte, unsigned codes re-centred by
// flipping the byte's top bit, so byte d = 2^shift · (v − centre) for the
// code's value v. Then Σ v·x = 2^−shift · Σ d·x + centre · Σ x: the kernel
// folds 2^−shift into the weight scale, and a centre other than 0 (or a zero
// point z, as (centre − z)) costs one Σx per token. Zero points never enter
// the bytes: 16·(q − z) leaves one. 8-bit codes are the byte itself (a
// signed one) or one xor (unsigned); 4-bit codes are two lop3 and a shift per
// 8 codes, 2-bit ones (ternary among them) four lop3 and three shifts per 16.
// Other codes get the reason.
struct S8Decode {
  int shift = 0;
  int centre = 0;
};
Expected<S8Decode> s8Decode(const formats::DataFormat &code);

// Codes that decode to NaN or Inf are not weights: a matmul with one has no
// meaningful output. The packer refuses them with this message.
bool isWeightCode(const formats::DataFormat &code, uint32_t value);

} // namespace lowbit::core

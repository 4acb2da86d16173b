// GGUF block formats Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (ggml's
// QK_K = 256 build).
//
// Block layouts (little-endian, no padding; ggml_half = IEEE f16):
//   Q4_0  18 bytes / 32 weights:  half d; u8 qs[16]
//         w[j] = d * ((qs[j] & 15) - 8), w[j + 16] = d * ((qs[j] >> 4) - 8)
//   Q8_0  34 bytes / 32 weights:  half d; i8 qs[32];  w[j] = d * qs[j]
//   Q2_K  84 bytes / 256 weights: u8 scales[16]; u8 qs[64]; half d; half dmin
//         sixteen sub-blocks of 16, each byte a 4-bit scale (low nibble) and
//         a 4-bit min (high); w = (d * sc_j) * q - (dmin * m_j), q 2 bits
//   Q3_K 110 bytes / 256 weights: u8 hmask[32]; u8 qs[64]; u8 scales[12]; half d
//         sixteen sub-blocks of 16 with 6-bit scales stored as s + 32;
//         w = (d * sc_j) * (q - 4), q 3 bits (2 in qs, 1 in hmask)
//   Q4_K 144 bytes / 256 weights: half d; half dmin; u8 scales[12]; u8 qs[128]
//         eight sub-blocks of 32 with 6-bit scale sc_j and 6-bit min m_j;
//         w = (d * sc_j) * q - (dmin * m_j)
//   Q5_K 176 bytes / 256 weights: half d; half dmin; u8 scales[12]; u8 qh[32];
//         u8 qs[128]; Q4_K's sub-blocks, scales and mins, with 5-bit codes
//   Q6_K 210 bytes / 256 weights: u8 ql[128]; u8 qh[64]; i8 scales[16]; half d
//         sixteen sub-blocks of 16 with int8 scale; w = (d * sc_j) * (q - 32)
// The bit-level placement of each field is documented in Gguf.cpp.
#pragma once

#include "core/formats/Quantize.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::formats {

// The ggml_type ids GGUF files store.
enum class GgufType : int {
  Q4_0 = 2,
  Q8_0 = 8,
  Q2_K = 10,
  Q3_K = 11,
  Q4_K = 12,
  Q5_K = 13,
  Q6_K = 14
};
// Every type above, the one list that names and error messages walk.
inline constexpr GgufType kGgufTypes[] = {GgufType::Q4_0, GgufType::Q8_0, GgufType::Q2_K,
                                          GgufType::Q3_K, GgufType::Q4_K, GgufType::Q5_K,
                                          GgufType::Q6_K};

struct GgufBlockShape {
  int weights; // per block
  int bytes;   // per block
};

const char *ggufTypeName(GgufType type);
Expected<GgufBlockShape> ggufBlockShape(GgufType type);
// Accepts the ggml_type id read from a file; other ids are an error that names them.
Expected<GgufType> ggufTypeFromId(int id);

// The shape, the buffer and the blocks' fields come from an untrusted file.
// Both functions check them before allocating anything: a shape whose size
// overflows int64, a buffer of another size than the shape needs, or a block
// whose d or dmin is Inf or NaN (its weights would be NaN) is an error that
// names the tensor and, for a field, the block; nothing throws.

// Decodes `count` weights in f32 exactly as llama.cpp's reference
// dequantize_row_* does: the same f16 conversion and the same order of f32
// operations, so every output is bit-identical.
Expected<std::vector<float>> dequantizeGgufF32(GgufType type, const uint8_t *data, size_t bytes,
                                               int64_t count);

// The same data as W[rows][cols] in our representation (a GGUF tensor's
// rows are contiguous along K = ne0). Its f64 dequantize, rounded to f32,
// equals dequantizeGgufF32: in llama.cpp's f32 sequence every step but the
// last is exact (f16 * 6- or 8-bit integer * 4- or 6-bit code fits in 24
// bits), and f64 holds the exact value. The one exception is a Q4_K block
// whose d and dmin are so far apart (beyond ~2^28) that the final
// subtraction needs more than f64's 53 bits; no real checkpoint has those.
// `tensorName`, the tensor's name in the file, only labels the messages.
Expected<QuantizedMatrix> importGguf(GgufType type, const uint8_t *data, size_t bytes,
                                     int64_t rows, int64_t cols,
                                     const std::string &tensorName = {});

} // namespace lowbit::formats

#include "core/formats/Gguf.h"

#include "core/support/CheckedMath.h"

#include <cctype>
#include <cmath>
#include <cstdio>

namespace lowbit::formats {

namespace {

constexpr int kSuperBlock = 256; // ggml's QK_K

uint16_t readHalf(const uint8_t *p) { return uint16_t(p[0] | (p[1] << 8)); }

float halfToFloat(uint16_t bits) { return float(DataFormat::f16().decode(bits)); }

// Q4_K's 12 scale bytes hold eight 6-bit scales sc_j and eight 6-bit mins m_j:
//   bytes 0..3:  bits 0-5 = sc_0..sc_3,  bits 6-7 = bits 4-5 of sc_4..sc_7
//   bytes 4..7:  bits 0-5 = m_0..m_3,    bits 6-7 = bits 4-5 of m_4..m_7
//   bytes 8..11: bits 0-3 = bits 0-3 of sc_4..sc_7, bits 4-7 = bits 0-3 of m_4..m_7
void q4kScaleAndMin(const uint8_t *scales, int j, uint8_t &scale, uint8_t &min) {
  if (j < 4) {
    scale = scales[j] & 0x3F;
    min = scales[j + 4] & 0x3F;
  } else {
    scale = uint8_t((scales[j + 4] & 0x0F) | ((scales[j - 4] >> 6) << 4));
    min = uint8_t((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
  }
}

// Q4_K's 128 qs bytes: the super-block is four chunks of 64 weights; chunk c
// uses bytes 32c..32c+31, whose low nibbles are weights 64c..64c+31 (sub-block
// 2c) and high nibbles weights 64c+32..64c+63 (sub-block 2c+1).
uint8_t q4kCode(const uint8_t *qs, int i) {
  int chunk = i / 64, within = i % 64;
  uint8_t byte = qs[32 * chunk + within % 32];
  return within < 32 ? byte & 0x0F : byte >> 4;
}

// Q5_K's codes: Q4_K's nibbles (its 128 qs bytes, laid out the same) are the
// low 4 bits; qh[l] bit 2c (first half of chunk c) or 2c + 1 (second half)
// is bit 4 of weight 64c + 32 half + l.
uint8_t q5kCode(const uint8_t *qh, const uint8_t *qs, int i) {
  int chunk = i / 64, half = (i % 64) / 32, l = i % 32;
  return uint8_t(q4kCode(qs, i) | (((qh[l] >> (2 * chunk + half)) & 1) << 4));
}

// Q6_K: each weight is a 6-bit code q (the stored value minus 32 is the
// signed weight). The super-block is two halves of 128; in half h, for
// l = 0..31 and quarter t = 0..3 the weight 128h + 32t + l takes
//   low 4 bits  from ql[64h + l + 32*(t & 1)], low nibble for t < 2, high for t >= 2
//   high 2 bits from qh[32h + l] bits 2t..2t+1.
uint8_t q6kCode(const uint8_t *ql, const uint8_t *qh, int i) {
  int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
  uint8_t low = ql[64 * half + l + 32 * (quarter & 1)];
  low = quarter < 2 ? low & 0x0F : low >> 4;
  uint8_t high = (qh[32 * half + l] >> (2 * quarter)) & 3;
  return uint8_t(low | (high << 4));
}

// Q2_K's 64 qs bytes and Q3_K's low two bits: the super-block is two halves
// of 128; weight 128h + 32t + l (quarter t = 0..3, l = 0..31) is bits 2t..2t+1
// of qs[32h + l].
uint8_t lowTwoBits(const uint8_t *qs, int i) {
  const int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
  return (qs[32 * half + l] >> (2 * quarter)) & 3;
}

// Q3_K's third bit: weight 128h + 32t + l takes bit 4h + t of hmask[l]. A set
// bit means the code is q (its two low bits), a clear one q - 4: with the
// bit as bit 2 of a 3-bit code c, every weight is c - 4.
uint8_t q3kCode(const uint8_t *hmask, const uint8_t *qs, int i) {
  const int half = i / 128, quarter = (i % 128) / 32, l = i % 32;
  return uint8_t(lowTwoBits(qs, i) | (((hmask[l] >> (4 * half + quarter)) & 1) << 2));
}

// Q3_K's 12 scale bytes hold sixteen 6-bit scales stored as s + 32:
//   low 4 bits of s_j:  bytes 0..7, low nibble for j < 8, high for j - 8
//   high 2 bits of s_j: byte 8 + j % 4, bits 2 (j / 4)..2 (j / 4) + 1
uint8_t q3kScale(const uint8_t *scales, int j) {
  const uint8_t low = j < 8 ? scales[j] & 0x0F : scales[j - 8] >> 4;
  const uint8_t high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return uint8_t(low | (high << 4));
}

} // namespace

const char *ggufTypeName(GgufType type) {
  switch (type) {
  case GgufType::Q4_0:
    return "Q4_0";
  case GgufType::Q8_0:
    return "Q8_0";
  case GgufType::Q2_K:
    return "Q2_K";
  case GgufType::Q3_K:
    return "Q3_K";
  case GgufType::Q4_K:
    return "Q4_K";
  case GgufType::Q5_K:
    return "Q5_K";
  case GgufType::Q6_K:
    return "Q6_K";
  }
  return "?";
}

Expected<GgufBlockShape> ggufBlockShape(GgufType type) {
  switch (type) {
  case GgufType::Q4_0:
    return GgufBlockShape{32, 2 + 16};
  case GgufType::Q8_0:
    return GgufBlockShape{32, 2 + 32};
  case GgufType::Q2_K:
    return GgufBlockShape{kSuperBlock, 16 + 64 + 2 + 2};
  case GgufType::Q3_K:
    return GgufBlockShape{kSuperBlock, 32 + 64 + 12 + 2};
  case GgufType::Q4_K:
    return GgufBlockShape{kSuperBlock, 2 + 2 + 12 + 128};
  case GgufType::Q5_K:
    return GgufBlockShape{kSuperBlock, 2 + 2 + 12 + 32 + 128};
  case GgufType::Q6_K:
    return GgufBlockShape{kSuperBlock, 128 + 64 + 16 + 2};
  }
  return makeError("unknown GGUF type " + std::to_string(int(type)));
}

Expected<GgufType> ggufTypeFromId(int id) {
  std::string known;
  for (GgufType type : kGgufTypes) {
    if (int(type) == id)
      return type;
    known += (known.empty() ? "" : ", ") + std::string(ggufTypeName(type)) + " = " +
             std::to_string(int(type));
  }
  return makeError("GGUF tensor type " + std::to_string(id) + " is not supported (" + known +
                   " are)");
}

namespace {

// Names the tensor in every message: its GGUF name when the caller knows it,
// else its type and shape.
std::string tensorLabel(GgufType type, int64_t rows, int64_t cols, const std::string &name) {
  const std::string shape = std::to_string(rows) + " x " + std::to_string(cols);
  if (name.empty())
    return std::string("GGUF ") + ggufTypeName(type) + " tensor " + shape;
  return "GGUF tensor '" + name + "' (" + ggufTypeName(type) + ", " + shape + ")";
}

// The number of blocks that `count` weights take, once the buffer holds
// exactly that many blocks. The count and the buffer size come from a file:
// blocks * bytes is checked, since a product that wrapped would match a small
// buffer and let the decode loop over the real, huge block count run past it.
// Nothing is allocated before this check, so a shape that promises more
// bytes than the file has is refused without allocating for it.
Expected<int64_t> checkBuffer(GgufType type, size_t bytes, int64_t count,
                              const GgufBlockShape &shape, const std::string &label) {
  if (count < 0 || count % shape.weights != 0)
    return makeError(label + ": " + ggufTypeName(type) + " holds blocks of " +
                     std::to_string(shape.weights) + " weights; " + std::to_string(count) +
                     " is not a multiple");
  const int64_t blocks = count / shape.weights;
  Expected<int64_t> expected =
      checkedMul(blocks, shape.bytes, label + ": data size (blocks * bytes per block)");
  if (!expected)
    return makeError(expected.error());
  if (uint64_t(bytes) != uint64_t(*expected))
    return makeError(label + ": " + ggufTypeName(type) + " data has " + std::to_string(bytes) +
                     " bytes; " + std::to_string(count) + " weights need " +
                     std::to_string(*expected));
  return blocks;
}

// The f16 fields of a block that multiply its weights (llama.cpp's d and
// dmin) and their byte offsets; the count is returned.
struct HalfField {
  const char *name;
  int offset;
};

int scaleFields(GgufType type, HalfField fields[2]) {
  switch (type) {
  case GgufType::Q4_0:
  case GgufType::Q8_0:
    fields[0] = {"d", 0};
    return 1;
  case GgufType::Q2_K:
    fields[0] = {"d", 80};
    fields[1] = {"dmin", 82};
    return 2;
  case GgufType::Q3_K:
    fields[0] = {"d", 108};
    return 1;
  case GgufType::Q4_K:
  case GgufType::Q5_K:
    fields[0] = {"d", 0};
    fields[1] = {"dmin", 2};
    return 2;
  case GgufType::Q6_K:
    fields[0] = {"d", 208};
    return 1;
  }
  return 0;
}

// An Inf or NaN d or dmin makes NaN weights (Inf * 0, Inf - Inf) or infinite
// ones, and Quantize.h promises an error instead of a silent NaN. `cols` is
// the row length for the message's (row, columns), 0 when there are no rows.
Status checkBlockScales(GgufType type, const uint8_t *data, int64_t blocks,
                        const GgufBlockShape &shape, int64_t cols, const std::string &label) {
  HalfField fields[2];
  const int count = scaleFields(type, fields);
  for (int64_t b = 0; b < blocks; ++b)
    for (int f = 0; f < count; ++f) {
      const uint16_t bits = readHalf(data + b * shape.bytes + fields[f].offset);
      if ((bits & 0x7C00) != 0x7C00)
        continue;
      const int64_t first = b * shape.weights;
      const std::string weights =
          cols > 0 ? "row " + std::to_string(first / cols) + ", columns " +
                         std::to_string(first % cols) + ".." +
                         std::to_string(first % cols + shape.weights - 1)
                   : "weights " + std::to_string(first) + ".." +
                         std::to_string(first + shape.weights - 1);
      const char *value = (bits & 0x03FF) ? "NaN" : (bits & 0x8000) ? "-Inf" : "+Inf";
      char hex[8];
      std::snprintf(hex, sizeof hex, "%04x", unsigned(bits));
      return makeError(label + ": block " + std::to_string(b) + " (" + weights + ") has " +
                       fields[f].name + " = " + value + " (f16 0x" + hex +
                       "); a block's scales must be finite, or its weights dequantize to NaN "
                       "or Inf");
    }
  return Status::success();
}

Expected<std::vector<float>> decodeF32(GgufType type, const uint8_t *data, size_t bytes,
                                       int64_t count, const std::string &label) {
  Expected<GgufBlockShape> shape = ggufBlockShape(type);
  if (!shape)
    return makeError(shape.error());
  Expected<int64_t> blocks = checkBuffer(type, bytes, count, *shape, label);
  if (!blocks)
    return makeError(blocks.error());
  if (Status s = checkBlockScales(type, data, *blocks, *shape, 0, label); !s)
    return makeError(s.error());
  std::vector<float> out(static_cast<size_t>(count));
  // Each line below keeps llama.cpp's f32 operation order; -ffp-contract=off
  // (set for this library) keeps the compiler from fusing them into FMAs.
  for (int64_t b = 0; b < *blocks; ++b) {
    const uint8_t *block = data + b * shape->bytes;
    float *y = out.data() + b * shape->weights;
    switch (type) {
    case GgufType::Q4_0: {
      const float d = halfToFloat(readHalf(block));
      const uint8_t *qs = block + 2;
      for (int j = 0; j < 16; ++j) {
        y[j] = float((qs[j] & 0x0F) - 8) * d;
        y[j + 16] = float((qs[j] >> 4) - 8) * d;
      }
      break;
    }
    case GgufType::Q8_0: {
      const float d = halfToFloat(readHalf(block));
      for (int j = 0; j < 32; ++j)
        y[j] = float(int8_t(block[2 + j])) * d;
      break;
    }
    case GgufType::Q2_K: {
      const uint8_t *scales = block, *qs = block + 16;
      const float d = halfToFloat(readHalf(block + 80));
      const float dmin = halfToFloat(readHalf(block + 82));
      for (int i = 0; i < kSuperBlock; ++i) {
        const uint8_t packed = scales[i / 16];
        const float subScale = d * float(packed & 0x0F);
        const float subMin = dmin * float(packed >> 4);
        const float product = subScale * float(lowTwoBits(qs, i));
        y[i] = product - subMin;
      }
      break;
    }
    case GgufType::Q3_K: {
      const uint8_t *hmask = block, *qs = block + 32, *scales = block + 96;
      const float d = halfToFloat(readHalf(block + 108));
      for (int i = 0; i < kSuperBlock; ++i) {
        const float subScale = d * float(int(q3kScale(scales, i / 16)) - 32);
        y[i] = subScale * float(int(q3kCode(hmask, qs, i)) - 4);
      }
      break;
    }
    case GgufType::Q4_K: {
      const float d = halfToFloat(readHalf(block));
      const float dmin = halfToFloat(readHalf(block + 2));
      const uint8_t *scales = block + 4, *qs = block + 16;
      for (int i = 0; i < kSuperBlock; ++i) {
        uint8_t scale, min;
        q4kScaleAndMin(scales, i / 32, scale, min);
        const float subScale = d * float(scale);
        const float subMin = dmin * float(min);
        const float product = subScale * float(q4kCode(qs, i));
        y[i] = product - subMin;
      }
      break;
    }
    case GgufType::Q5_K: {
      const float d = halfToFloat(readHalf(block));
      const float dmin = halfToFloat(readHalf(block + 2));
      const uint8_t *scales = block + 4, *qh = block + 16, *qs = block + 48;
      for (int i = 0; i < kSuperBlock; ++i) {
        uint8_t scale, min;
        q4kScaleAndMin(scales, i / 32, scale, min);
        const float subScale = d * float(scale);
        const float subMin = dmin * float(min);
        const float product = subScale * float(q5kCode(qh, qs, i));
        y[i] = product - subMin;
      }
      break;
    }
    case GgufType::Q6_K: {
      const uint8_t *ql = block, *qh = block + 128;
      const int8_t *scales = reinterpret_cast<const int8_t *>(block + 192);
      const float d = halfToFloat(readHalf(block + 208));
      for (int i = 0; i < kSuperBlock; ++i) {
        const float subScale = d * float(scales[i / 16]);
        y[i] = subScale * float(int(q6kCode(ql, qh, i)) - 32);
      }
      break;
    }
    }
  }
  return out;
}

Expected<QuantizedMatrix> importChecked(GgufType type, const uint8_t *data, size_t bytes,
                                        int64_t rows, int64_t cols, const std::string &label) {
  Expected<GgufBlockShape> shape = ggufBlockShape(type);
  if (!shape)
    return makeError(shape.error());
  if (rows < 1 || cols < 1)
    return makeError(label + ": the shape is empty");
  if (cols % shape->weights != 0)
    return makeError(label + ": " + ggufTypeName(type) + " rows hold whole blocks of " +
                     std::to_string(shape->weights) + " weights; K = " + std::to_string(cols) +
                     " is not a multiple");
  Expected<int64_t> count = checkedMul(rows, cols, label + ": element count rows * cols");
  if (!count)
    return makeError(count.error());
  Expected<int64_t> checkedBlocks = checkBuffer(type, bytes, *count, *shape, label);
  if (!checkedBlocks)
    return makeError(checkedBlocks.error());
  if (Status s = checkBlockScales(type, data, *checkedBlocks, *shape, cols, label); !s)
    return makeError(s.error());
  std::string name = std::string("gguf-") + ggufTypeName(type);
  for (char &c : name)
    c = char(std::tolower(static_cast<unsigned char>(c)));
  Expected<QuantScheme> scheme = findScheme(name);
  if (!scheme)
    return makeError(scheme.error());
  QuantizedMatrix m;
  m.scheme = *scheme;
  m.rows = rows;
  m.cols = cols;
  m.codes.resize(size_t(*count));
  const int64_t blocks = *checkedBlocks;
  const int groupsPerBlock = shape->weights / m.scheme.groupSize;
  m.scales.resize(size_t(blocks * groupsPerBlock));
  const bool withMins = m.scheme.zeroMode == ZeroMode::SubtractScaled;
  if (withMins) {
    m.zeros.resize(m.scales.size());
    m.superMins.resize(size_t(blocks));
  }
  if (m.scheme.superBlock)
    m.superScales.resize(size_t(blocks));
  // Blocks follow each other along K and rows follow each other, so block b
  // covers weights [b * weights, (b + 1) * weights) of the row-major matrix
  // and its groups are slots b * groupsPerBlock + j.
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t *block = data + b * shape->bytes;
    uint8_t *codes = m.codes.data() + b * shape->weights;
    uint32_t *scales = m.scales.data() + b * groupsPerBlock;
    switch (type) {
    case GgufType::Q4_0:
      scales[0] = readHalf(block);
      for (int j = 0; j < 16; ++j) {
        codes[j] = block[2 + j] & 0x0F;
        codes[j + 16] = block[2 + j] >> 4;
      }
      break;
    case GgufType::Q8_0:
      scales[0] = readHalf(block);
      for (int j = 0; j < 32; ++j)
        codes[j] = block[2 + j];
      break;
    case GgufType::Q2_K:
      m.superScales[size_t(b)] = readHalf(block + 80);
      m.superMins[size_t(b)] = readHalf(block + 82);
      for (int j = 0; j < 16; ++j) {
        scales[j] = block[j] & 0x0F;
        m.zeros[size_t(b * groupsPerBlock + j)] = block[j] >> 4;
      }
      for (int i = 0; i < kSuperBlock; ++i)
        codes[i] = lowTwoBits(block + 16, i);
      break;
    case GgufType::Q3_K:
      m.superScales[size_t(b)] = readHalf(block + 108);
      for (int j = 0; j < 16; ++j)
        scales[j] = q3kScale(block + 96, j); // s + 32: the scheme's excess-32 code
      for (int i = 0; i < kSuperBlock; ++i)
        codes[i] = q3kCode(block, block + 32, i);
      break;
    case GgufType::Q4_K:
    case GgufType::Q5_K:
      m.superScales[size_t(b)] = readHalf(block);
      m.superMins[size_t(b)] = readHalf(block + 2);
      for (int j = 0; j < 8; ++j) {
        uint8_t scale, min;
        q4kScaleAndMin(block + 4, j, scale, min);
        scales[j] = scale;
        m.zeros[size_t(b * groupsPerBlock + j)] = min;
      }
      for (int i = 0; i < kSuperBlock; ++i)
        codes[i] = type == GgufType::Q4_K ? q4kCode(block + 16, i)
                                          : q5kCode(block + 16, block + 48, i);
      break;
    case GgufType::Q6_K:
      m.superScales[size_t(b)] = readHalf(block + 208);
      for (int j = 0; j < 16; ++j)
        scales[j] = block[192 + j]; // int8 two's complement code
      for (int i = 0; i < kSuperBlock; ++i)
        codes[i] = q6kCode(block, block + 128, i);
      break;
    }
  }
  if (Status s = validateQuantizedMatrix(m); !s)
    return makeError(label + ": " + s.error());
  return m;
}

} // namespace

Expected<std::vector<float>> dequantizeGgufF32(GgufType type, const uint8_t *data, size_t bytes,
                                               int64_t count) {
  const std::string label =
      std::string("GGUF ") + ggufTypeName(type) + " data of " + std::to_string(count) + " weights";
  return catchingBadAlloc(label, [&] { return decodeF32(type, data, bytes, count, label); });
}

Expected<QuantizedMatrix> importGguf(GgufType type, const uint8_t *data, size_t bytes,
                                     int64_t rows, int64_t cols, const std::string &tensorName) {
  const std::string label = tensorLabel(type, rows, cols, tensorName);
  return catchingBadAlloc(label,
                          [&] { return importChecked(type, data, bytes, rows, cols, label); });
}

} // namespace lowbit::formats

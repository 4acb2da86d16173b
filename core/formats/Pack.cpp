#include "core/formats/Pack.h"

#include "core/support/CheckedMath.h"

#include <algorithm>

namespace lowbit::formats {

int containerBits(Container container) { return container == Container::U8 ? 8 : 32; }

uint32_t PackedCodes::container(int64_t index) const {
  int width = containerBits(layout.container) / 8;
  uint32_t value = 0;
  for (int byte = 0; byte < width; ++byte)
    value |= uint32_t(bytes[size_t(index * width + byte)]) << (8 * byte);
  return value;
}

Status validatePackLayout(const PackLayout &layout) {
  const int bits = layout.bitsPerCode;
  const int width = containerBits(layout.container);
  if (bits < 1 || bits > 8)
    return makeError("codes to pack have 1..8 bits; got " + std::to_string(bits));
  if (layout.straddle && !layout.slotPermutation.empty())
    return makeError("a slot permutation needs whole codes per container; it cannot be "
                     "combined with straddling");
  if (!layout.slotPermutation.empty()) {
    size_t perContainer = size_t(width / bits);
    if (layout.slotPermutation.size() != perContainer)
      return makeError("slot permutation has " + std::to_string(layout.slotPermutation.size()) +
                       " entries; a " + std::to_string(width) + "-bit container holds " +
                       std::to_string(perContainer) + " " + std::to_string(bits) + "-bit codes");
    std::vector<int> sorted = layout.slotPermutation;
    std::sort(sorted.begin(), sorted.end());
    for (size_t i = 0; i < sorted.size(); ++i)
      if (sorted[i] != int(i))
        return makeError("slot permutation is not a permutation of 0.." +
                         std::to_string(perContainer - 1));
  }
  return Status::success();
}

int64_t containersPerRow(const PackLayout &layout, int64_t cols) {
  const int64_t width = containerBits(layout.container);
  if (cols < 0 || layout.bitsPerCode < 1)
    return -1;
  // Rounding up as cols / per + (cols % per != 0) cannot overflow, unlike
  // (cols + per - 1) / per.
  if (layout.straddle) {
    int64_t bits = 0;
    if (mulOverflows(cols, layout.bitsPerCode, &bits))
      return -1;
    return bits / width + (bits % width != 0);
  }
  const int64_t perContainer = width / layout.bitsPerCode;
  return cols / perContainer + (cols % perContainer != 0);
}

namespace {

// The packed buffer's bytes for a rows x cols matrix (the caller's shape),
// checked so that neither it nor rows * cols, the codes' count, wraps.
Expected<int64_t> packedByteCount(const PackLayout &layout, int64_t rows, int64_t cols) {
  const std::string shape = std::to_string(rows) + " x " + std::to_string(cols) + " codes";
  if (rows < 0 || cols < 0)
    return makeError("shape " + shape + " has a negative dimension");
  if (Expected<int64_t> count = checkedMul(rows, cols, shape + ": rows * cols"); !count)
    return makeError(count.error());
  const int64_t containers = containersPerRow(layout, cols);
  if (containers < 0)
    return makeError(shape + ": a row's " + std::to_string(layout.bitsPerCode) +
                     "-bit codes overflow a 64-bit bit count");
  return checkedProduct({rows, containers, containerBits(layout.container) / 8},
                        shape + ": packed bytes rows * containers per row * container bytes");
}

} // namespace

namespace {

// Where code `col` of a row lives: the absolute bit position of its least
// significant bit within the row's bit stream, in LSB-first numbering of each
// container. MsbFirst mirrors the position inside the container.
struct BitPlace {
  int64_t container;
  int bit; // shift of the code's lowest bit inside the container
};

BitPlace placeOf(const PackLayout &layout, int64_t col) {
  const int bits = layout.bitsPerCode;
  const int width = containerBits(layout.container);
  int64_t container;
  int slotBit;
  if (layout.straddle) {
    int64_t start = col * bits;
    container = start / width;
    slotBit = int(start % width);
  } else {
    const int perContainer = width / bits;
    container = col / perContainer;
    int codeInGroup = int(col % perContainer);
    int slot = codeInGroup;
    if (!layout.slotPermutation.empty())
      slot = int(std::find(layout.slotPermutation.begin(), layout.slotPermutation.end(),
                           codeInGroup) -
                 layout.slotPermutation.begin());
    slotBit = slot * bits;
  }
  if (layout.bitOrder == BitOrder::MsbFirst)
    slotBit = width - slotBit - bits;
  return {container, slotBit};
}

// Visits each bit of code `col` with its container and shift, so straddling
// codes need no special case.
template <typename Visit> void forEachBit(const PackLayout &layout, int64_t col, Visit visit) {
  const int bits = layout.bitsPerCode;
  const int width = containerBits(layout.container);
  if (!layout.straddle) {
    BitPlace place = placeOf(layout, col);
    for (int b = 0; b < bits; ++b)
      visit(place.container, place.bit + b, b);
    return;
  }
  for (int b = 0; b < bits; ++b) {
    // Stream bit s of the row: LsbFirst numbers bits of a container from its
    // LSB, MsbFirst from its MSB. A code's bit b sits at stream position
    // start + b (LsbFirst) or, reading the stream MSB-first, the code's MSB
    // comes first, so bit b sits at start + (bits - 1 - b).
    int64_t stream = col * bits + (layout.bitOrder == BitOrder::LsbFirst ? b : bits - 1 - b);
    int64_t container = stream / width;
    int within = int(stream % width);
    int shift = layout.bitOrder == BitOrder::LsbFirst ? within : width - 1 - within;
    visit(container, shift, b);
  }
}

} // namespace

Expected<PackedCodes> pack(const uint8_t *codes, int64_t rows, int64_t cols,
                           const PackLayout &layout) {
  if (Status status = validatePackLayout(layout); !status)
    return makeError(status.error());
  Expected<int64_t> bytes = packedByteCount(layout, rows, cols);
  if (!bytes)
    return makeError("pack: " + bytes.error());
  PackedCodes packed;
  packed.layout = layout;
  packed.rows = rows;
  packed.cols = cols;
  packed.containersPerRow = containersPerRow(layout, cols);
  const int width = containerBits(layout.container) / 8;
  packed.bytes.assign(size_t(*bytes), 0);
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t *row = packed.bytes.data() + r * packed.containersPerRow * width;
    for (int64_t c = 0; c < cols; ++c) {
      uint8_t code = codes[r * cols + c];
      if (code >> layout.bitsPerCode)
        return makeError("code " + std::to_string(code) + " at (" + std::to_string(r) + ", " +
                         std::to_string(c) + ") does not fit in " +
                         std::to_string(layout.bitsPerCode) + " bits");
      forEachBit(layout, c, [&](int64_t container, int shift, int b) {
        if ((code >> b) & 1u)
          row[container * width + shift / 8] |= uint8_t(1u << (shift % 8));
      });
    }
  }
  return packed;
}

Expected<std::vector<uint8_t>> unpack(const PackedCodes &packed) {
  const PackLayout &layout = packed.layout;
  if (Status status = validatePackLayout(layout); !status)
    return makeError(status.error());
  const int width = containerBits(layout.container) / 8;
  Expected<int64_t> bytes = packedByteCount(layout, packed.rows, packed.cols);
  if (!bytes)
    return makeError("unpack: " + bytes.error());
  if (packed.containersPerRow != containersPerRow(layout, packed.cols) ||
      int64_t(packed.bytes.size()) != *bytes)
    return makeError("packed buffer has " + std::to_string(packed.bytes.size()) +
                     " bytes; the layout needs " + std::to_string(*bytes));
  // No rows: nothing to read, and the per-row table below would be sized by
  // an unchecked cols alone.
  if (packed.rows == 0)
    return std::vector<uint8_t>();
  std::vector<uint8_t> codes(size_t(packed.rows * packed.cols), 0);
  // Every bit a code uses is marked, so any other set bit is bad padding.
  std::vector<uint8_t> used(size_t(packed.containersPerRow * width), 0);
  for (int64_t c = 0; c < packed.cols; ++c)
    forEachBit(layout, c, [&](int64_t container, int shift, int) {
      used[size_t(container * width + shift / 8)] |= uint8_t(1u << (shift % 8));
    });
  for (int64_t r = 0; r < packed.rows; ++r) {
    const uint8_t *row = packed.bytes.data() + r * packed.containersPerRow * width;
    for (size_t i = 0; i < used.size(); ++i)
      if (row[i] & ~used[i])
        return makeError("padding bits in row " + std::to_string(r) + " byte " +
                         std::to_string(i) + " are not zero");
    for (int64_t c = 0; c < packed.cols; ++c) {
      uint8_t code = 0;
      forEachBit(layout, c, [&](int64_t container, int shift, int b) {
        if ((row[container * width + shift / 8] >> (shift % 8)) & 1u)
          code |= uint8_t(1u << b);
      });
      codes[size_t(r * packed.cols + c)] = code;
    }
  }
  return codes;
}

} // namespace lowbit::formats

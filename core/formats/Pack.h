// Packing of element codes along K into containers, and its exact inverse.
//
// Each row of `cols` codes is packed on its own, starting at a fresh
// container, and the last container of a row is padded with zero bits.
// Containers are stored little-endian in a byte vector, so a u32 container is
// exactly what a kernel reads with a 32-bit load.
//
// Within a container, slot i occupies bits [i*b, (i+1)*b) counted from the
// least significant bit (LsbFirst) or from the most significant bit
// (MsbFirst). Without straddling, a container holds floor(C / b) codes and
// the leftover high (LsbFirst) or low (MsbFirst) bits stay zero; with
// straddling the row is one continuous bit stream and a code may span two
// containers (3-bit codes in u32, for instance).
//
// An optional slot permutation interleaves codes inside a container: slot i
// holds code slotPermutation[i] of the container's group. AWQ's 4-bit order is
// {0, 2, 4, 6, 1, 3, 5, 7}: the even codes fill the low nibbles.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <vector>

namespace lowbit::formats {

enum class Container { U8, U32 };
enum class BitOrder { LsbFirst, MsbFirst };

struct PackLayout {
  int bitsPerCode = 4;
  Container container = Container::U32;
  BitOrder bitOrder = BitOrder::LsbFirst;
  bool straddle = false;
  std::vector<int> slotPermutation; // empty: identity
};

int containerBits(Container container);

struct PackedCodes {
  PackLayout layout;
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t containersPerRow = 0;
  std::vector<uint8_t> bytes; // rows * containersPerRow containers, little-endian

  // Container i as an integer (u8 or u32).
  uint32_t container(int64_t index) const;
};

Status validatePackLayout(const PackLayout &layout);
// -1 when cols is negative or its bits overflow int64.
int64_t containersPerRow(const PackLayout &layout, int64_t cols);
// Codes must fit in bitsPerCode bits; a wider code is an error, never
// truncated. A shape whose codes or packed bytes overflow int64 is an error.
Expected<PackedCodes> pack(const uint8_t *codes, int64_t rows, int64_t cols,
                           const PackLayout &layout);
// Rejects padding bits that are not zero, so unpack(pack(x)) == x and a
// corrupted buffer is noticed.
Expected<std::vector<uint8_t>> unpack(const PackedCodes &packed);

} // namespace lowbit::formats

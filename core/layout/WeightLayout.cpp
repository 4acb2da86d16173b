#include "core/layout/WeightLayout.h"

#include "core/support/CheckedMath.h"

#include <cstring>
#include <limits>

namespace lowbit::layout {

namespace {

// A tile is the unit of one CTA's or warp's weight load; 2^24 codes is far
// beyond any real tile, and the cap keeps the packer's per-tile tables small.
constexpr int kMaxTileBits = 24;

bool isPowerOfTwo(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

int log2Of(int64_t powerOfTwo) {
  int bits = 0;
  while ((int64_t(1) << bits) < powerOfTwo)
    ++bits;
  return bits;
}

// "n[0]" / "k[2]": the name of basis entry `index` for messages.
std::string basisName(const WeightLayout &layout, size_t index) {
  const size_t nBits = size_t(log2Of(layout.tileN));
  return index < nBits ? "n[" + std::to_string(index) + "]"
                       : "k[" + std::to_string(index - nBits) + "]";
}

// Finds a set of basis entries whose XOR is 0 (a witness that the basis is
// not a bijection), as a list of entry indices; empty if independent. Plain
// elimination with combination masks; the basis has at most 24 entries.
std::vector<size_t> dependentEntries(const std::vector<uint32_t> &basis) {
  uint32_t pivotValue[32] = {};
  uint32_t pivotCombo[32] = {};
  bool hasPivot[32] = {};
  for (size_t i = 0; i < basis.size(); ++i) {
    uint32_t value = basis[i];
    uint32_t combo = uint32_t(1) << i;
    for (int bit = 31; bit >= 0 && value; --bit) {
      if (!((value >> bit) & 1))
        continue;
      if (!hasPivot[bit]) {
        hasPivot[bit] = true;
        pivotValue[bit] = value;
        pivotCombo[bit] = combo;
        value = 0;
        combo = 0;
        break;
      }
      value ^= pivotValue[bit];
      combo ^= pivotCombo[bit];
    }
    if (combo) {
      std::vector<size_t> entries;
      for (size_t j = 0; j <= i; ++j)
        if ((combo >> j) & 1)
          entries.push_back(j);
      return entries;
    }
  }
  return {};
}

// Canonical unsigned decimal: digits only, no leading zeros, fits uint32_t.
bool parseUnsigned(const std::string &text, uint32_t &value) {
  if (text.empty() || text.size() > 10 || (text.size() > 1 && text[0] == '0'))
    return false;
  uint64_t result = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    result = result * 10 + uint64_t(c - '0');
  }
  if (result > std::numeric_limits<uint32_t>::max())
    return false;
  value = uint32_t(result);
  return true;
}

std::vector<std::string> split(const std::string &text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos)
      return parts;
    start = end + 1;
  }
}

// Messages quote the input, but a huge or binary string should not flood
// the log.
std::string quoted(const std::string &text) {
  std::string shown = text.size() > 80 ? text.substr(0, 77) + "..." : text;
  for (char &c : shown)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e)
      c = '?';
  return "'" + shown + "'";
}

// The per-tile tables the packer XORs: the code offset of each n_local and of
// each k_local, from the basis entries of their bits.
struct TileTables {
  std::vector<uint32_t> nOffset;
  std::vector<uint32_t> kOffset;
  int64_t tileBytes = 0;
};

TileTables tablesFor(const WeightLayout &layout) {
  TileTables tables;
  const size_t nBits = size_t(log2Of(layout.tileN));
  tables.nOffset.assign(size_t(layout.tileN), 0);
  tables.kOffset.assign(size_t(layout.tileK), 0);
  // offset(x) for x with highest bit b is offset(x without b) ^ basis[b].
  for (size_t x = 1; x < tables.nOffset.size(); ++x) {
    size_t bit = size_t(log2Of(int64_t(x) + 1) - 1);
    tables.nOffset[x] = tables.nOffset[x ^ (size_t(1) << bit)] ^ layout.basis[bit];
  }
  for (size_t x = 1; x < tables.kOffset.size(); ++x) {
    size_t bit = size_t(log2Of(int64_t(x) + 1) - 1);
    tables.kOffset[x] = tables.kOffset[x ^ (size_t(1) << bit)] ^ layout.basis[nBits + bit];
  }
  tables.tileBytes = int64_t(layout.tileN) * layout.tileK * layout.codeBits / 8;
  return tables;
}

// Shared argument checks of pack and unpack; `needed` gets the packed size.
Status checkBuffers(const char *what, const WeightLayout &layout, int64_t n, int64_t k,
                    const void *codes, const void *packed, size_t bytes, int64_t &needed) {
  if (Status status = checkShape(layout, n, k); !status.ok())
    return makeError(std::string(what) + ": " + status.error());
  needed = packedBytes(layout, n, k);
  if (needed < 0)
    return makeError(std::string(what) + ": " + std::to_string(n) + " x " + std::to_string(k) +
                     " codes of " + std::to_string(layout.codeBits) +
                     " bits overflow a 64-bit byte count");
  if (uint64_t(needed) > uint64_t(bytes))
    return makeError(std::string(what) + ": the packed buffer has " + std::to_string(bytes) +
                     " bytes; " + std::to_string(n) + " x " + std::to_string(k) + " codes of " +
                     std::to_string(layout.codeBits) + " bits need " + std::to_string(needed));
  if (needed > 0 && (codes == nullptr || packed == nullptr))
    return makeError(std::string(what) + ": null " + (codes ? "packed" : "codes") + " pointer");
  return Status::success();
}

// Bits is a template parameter so the byte/shift arithmetic is constant.
template <int Bits>
void packTiles(const TileTables &tables, int64_t n, int64_t k, int tileN, int tileK,
               const uint8_t *codes, uint8_t *packed) {
  constexpr int kShift = Bits == 1 ? 0 : Bits == 2 ? 1 : Bits == 4 ? 2 : 3; // log2(Bits)
  const int64_t tilesK = k / tileK;
  for (int64_t tn = 0; tn < n / tileN; ++tn)
    for (int64_t tk = 0; tk < tilesK; ++tk) {
      uint8_t *tile = packed + (tn * tilesK + tk) * tables.tileBytes;
      for (int nl = 0; nl < tileN; ++nl) {
        const uint8_t *row = codes + (tn * tileN + nl) * k + tk * tileK;
        const uint32_t nOffset = tables.nOffset[size_t(nl)];
        for (int kl = 0; kl < tileK; ++kl) {
          const uint32_t bit = (nOffset ^ tables.kOffset[size_t(kl)]) << kShift;
          if (Bits == 8)
            tile[bit >> 3] = row[kl];
          else
            tile[bit >> 3] |= uint8_t(row[kl] << (bit & 7));
        }
      }
    }
}

template <int Bits>
void unpackTiles(const TileTables &tables, int64_t n, int64_t k, int tileN, int tileK,
                 const uint8_t *packed, uint8_t *codes) {
  constexpr int kShift = Bits == 1 ? 0 : Bits == 2 ? 1 : Bits == 4 ? 2 : 3;
  constexpr uint8_t kMask = uint8_t((1u << Bits) - 1);
  const int64_t tilesK = k / tileK;
  for (int64_t tn = 0; tn < n / tileN; ++tn)
    for (int64_t tk = 0; tk < tilesK; ++tk) {
      const uint8_t *tile = packed + (tn * tilesK + tk) * tables.tileBytes;
      for (int nl = 0; nl < tileN; ++nl) {
        uint8_t *row = codes + (tn * tileN + nl) * k + tk * tileK;
        const uint32_t nOffset = tables.nOffset[size_t(nl)];
        for (int kl = 0; kl < tileK; ++kl) {
          const uint32_t bit = (nOffset ^ tables.kOffset[size_t(kl)]) << kShift;
          row[kl] = uint8_t(tile[bit >> 3] >> (bit & 7)) & kMask;
        }
      }
    }
}

// Two-plane codes (see the header): visits every code with its low-plane bit
// (the bit a lowBits-wide code at its offset has) and its high-plane bit
// (highPlaneBitOfCode).
template <class Visit>
void forEachPlaneBit(const WeightLayout &layout, int64_t n, int64_t k, Visit visit) {
  const CodePlanes planes = codePlanes(layout.codeBits);
  WeightLayout low = layout;
  low.codeBits = planes.lowBits;
  const TileTables tables = tablesFor(low);
  const int64_t tileCodes = int64_t(layout.tileN) * layout.tileK;
  const int64_t tilesK = k / layout.tileK;
  for (int64_t tn = 0; tn < n / layout.tileN; ++tn)
    for (int64_t tk = 0; tk < tilesK; ++tk) {
      const int64_t tile = tn * tilesK + tk;
      for (int nl = 0; nl < layout.tileN; ++nl) {
        const int64_t row = tn * layout.tileN + nl;
        const uint32_t nOffset = tables.nOffset[size_t(nl)];
        for (int kl = 0; kl < layout.tileK; ++kl) {
          const int64_t offset = tile * tileCodes + (nOffset ^ tables.kOffset[size_t(kl)]);
          visit(row * k + tk * layout.tileK + kl, offset * planes.lowBits,
                highPlaneBitOfCode(layout.codeBits, n * k, offset), planes);
        }
      }
    }
}

// A plane field never straddles a byte: lowBits divides 8, and a unit's
// high parts of highBits sit at multiples of highBits.
void packPlanes(const WeightLayout &layout, int64_t n, int64_t k, const uint8_t *codes,
                uint8_t *packed) {
  forEachPlaneBit(layout, n, k,
                  [&](int64_t code, int64_t lowBit, int64_t highBit, const CodePlanes &planes) {
                    const uint8_t value = codes[code];
                    packed[lowBit >> 3] |=
                        uint8_t((value & ((1u << planes.lowBits) - 1)) << (lowBit & 7));
                    packed[highBit >> 3] |= uint8_t((value >> planes.lowBits) << (highBit & 7));
                  });
}

void unpackPlanes(const WeightLayout &layout, int64_t n, int64_t k, const uint8_t *packed,
                  uint8_t *codes) {
  forEachPlaneBit(layout, n, k,
                  [&](int64_t code, int64_t lowBit, int64_t highBit, const CodePlanes &planes) {
                    const uint32_t low =
                        (packed[lowBit >> 3] >> (lowBit & 7)) & ((1u << planes.lowBits) - 1);
                    const uint32_t high =
                        (packed[highBit >> 3] >> (highBit & 7)) & ((1u << planes.highBits) - 1);
                    codes[code] = uint8_t(low | high << planes.lowBits);
                  });
}

} // namespace

namespace {
// `what` starts every message, so parse can name the text it parsed.
Status validateAs(const WeightLayout &layout, const std::string &what) {
  if (layout.codeBits < 1 || layout.codeBits > 8)
    return makeError(what + ": codeBits is " + std::to_string(layout.codeBits) +
                     "; codes have 1..8 bits");
  const CodePlanes planes = codePlanes(layout.codeBits);
  if (32 % planes.lowBits != 0)
    return makeError(what + ": codeBits " + std::to_string(layout.codeBits) +
                     " is not supported: it neither divides 32 nor splits into two planes "
                     "that do; supported are 1, 2, 4 and 8, and 3, 5 and 6 in planes");
  if (!isPowerOfTwo(layout.tileN) || !isPowerOfTwo(layout.tileK))
    return makeError(what + ": tile " + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + " must be powers of two in both dims");
  const int nBits = log2Of(layout.tileN);
  const int kBits = log2Of(layout.tileK);
  if (nBits + kBits > kMaxTileBits)
    return makeError(what + ": tile " + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + " has more than 2^" +
                     std::to_string(kMaxTileBits) + " codes");
  if ((int64_t(layout.tileN) * layout.tileK * layout.codeBits) % 8 != 0)
    return makeError(what + ": tile " + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + " of " + std::to_string(layout.codeBits) +
                     "-bit codes is not a whole number of bytes, so tiles could not be "
                     "stored one after another");
  if (planes.highBits && nBits + kBits < 5)
    return makeError(what + ": tile " + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + " of " + std::to_string(layout.codeBits) +
                     "-bit codes holds fewer than the 32 codes of a unit, whose high plane "
                     "bits are placed together");
  if (layout.basis.size() != size_t(nBits + kBits))
    return makeError(what + ": basis has " + std::to_string(layout.basis.size()) +
                     " entries; a " + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + " tile needs " +
                     std::to_string(nBits + kBits) + " (" + std::to_string(nBits) +
                     " for n, then " + std::to_string(kBits) + " for k)");
  const uint32_t tileCodes = uint32_t(1) << (nBits + kBits);
  for (size_t i = 0; i < layout.basis.size(); ++i)
    if (layout.basis[i] >= tileCodes)
      return makeError(what + ": basis entry " + basisName(layout, i) + " = " +
                       std::to_string(layout.basis[i]) + " is not a code offset of a " +
                       std::to_string(tileCodes) + "-code tile");
  std::vector<size_t> dependent = dependentEntries(layout.basis);
  if (dependent.size() == 1)
    return makeError(what + ": basis entry " + basisName(layout, dependent[0]) +
                     " is 0, so the layout is not a bijection");
  if (dependent.size() == 2)
    return makeError(what + ": basis entries " + basisName(layout, dependent[0]) + " and " +
                     basisName(layout, dependent[1]) + " are both " +
                     std::to_string(layout.basis[dependent[0]]) +
                     " (duplicated offset), so the layout is not a bijection");
  if (!dependent.empty()) {
    std::string names;
    for (size_t index : dependent)
      names += (names.empty() ? "" : ", ") + basisName(layout, index);
    return makeError(what + ": basis entries {" + names +
                     "} XOR to 0, so the layout is not a bijection");
  }
  return Status::success();
}
} // namespace

Status validateWeightLayout(const WeightLayout &layout) {
  return validateAs(layout, "weight layout");
}

std::string serialize(const WeightLayout &layout) {
  std::string text = "lbwl1;bits=" + std::to_string(layout.codeBits) +
                     ";tile=" + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + ";basis=";
  for (size_t i = 0; i < layout.basis.size(); ++i)
    text += (i ? "," : "") + std::to_string(layout.basis[i]);
  return text;
}

Expected<WeightLayout> parseWeightLayout(const std::string &text) {
  const std::string what = "weight layout " + quoted(text);
  const std::vector<std::string> fields = split(text, ';');
  if (fields[0] != "lbwl1")
    return makeError(what + ": starts with " + quoted(fields[0]) +
                     ", expected the version tag 'lbwl1'");
  if (fields.size() != 4)
    return makeError(what + ": has " + std::to_string(fields.size()) +
                     " ';'-separated fields, expected 4: lbwl1;bits=B;tile=NxK;basis=...");
  auto valueOf = [&](size_t index, const std::string &key, std::string &value) -> Status {
    const std::string prefix = key + "=";
    if (fields[index].compare(0, prefix.size(), prefix) != 0)
      return makeError(what + ": field " + std::to_string(index + 1) + " is " +
                       quoted(fields[index]) + ", expected '" + prefix + "...'");
    value = fields[index].substr(prefix.size());
    return Status::success();
  };
  WeightLayout layout;
  std::string value;
  uint32_t number = 0;

  if (Status status = valueOf(1, "bits", value); !status.ok())
    return makeError(status.error());
  if (!parseUnsigned(value, number) || number > 8)
    return makeError(what + ": bits=" + quoted(value) + " is not a code width in 1..8");
  layout.codeBits = int(number);

  if (Status status = valueOf(2, "tile", value); !status.ok())
    return makeError(status.error());
  const std::vector<std::string> tile = split(value, 'x');
  uint32_t tileN = 0, tileK = 0;
  if (tile.size() != 2 || !parseUnsigned(tile[0], tileN) || !parseUnsigned(tile[1], tileK) ||
      tileN > (uint32_t(1) << kMaxTileBits) || tileK > (uint32_t(1) << kMaxTileBits))
    return makeError(what + ": tile=" + quoted(value) +
                     " is not <tileN>x<tileK> with decimal sizes up to 2^" +
                     std::to_string(kMaxTileBits));
  layout.tileN = int(tileN);
  layout.tileK = int(tileK);

  if (Status status = valueOf(3, "basis", value); !status.ok())
    return makeError(status.error());
  if (!value.empty())
    for (const std::string &entry : split(value, ',')) {
      if (!parseUnsigned(entry, number))
        return makeError(what + ": basis entry " + quoted(entry) +
                         " is not a canonical unsigned decimal number");
      layout.basis.push_back(number);
    }

  if (Status status = validateAs(layout, what); !status.ok())
    return makeError(status.error());
  return layout;
}

std::string layoutId(const WeightLayout &layout) {
  uint64_t hash = 0xcbf29ce484222325ull; // FNV-1a 64 offset basis
  for (char c : serialize(layout)) {
    hash ^= uint64_t(static_cast<unsigned char>(c));
    hash *= 0x100000001b3ull; // FNV-1a 64 prime
  }
  static const char kHex[] = "0123456789abcdef";
  std::string id(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4)
    id[size_t(i)] = kHex[hash & 15];
  return id;
}

Expected<WeightLayout> weightLayoutFromLinear(const LinearLayout &codeOffsetOf, int codeBits) {
  const std::string what = "weightLayoutFromLinear";
  const std::vector<Dim> &ins = codeOffsetOf.inDims();
  const std::vector<Dim> &outs = codeOffsetOf.outDims();
  const bool namesOk = ins.size() == 2 && ((ins[0].name == "n" && ins[1].name == "k") ||
                                           (ins[0].name == "k" && ins[1].name == "n"));
  if (!namesOk || outs.size() != 1 || outs[0].name != "offset")
    return makeError(what + ": expected a layout {n, k} -> {offset}, got " +
                     codeOffsetOf.toString().substr(0, codeOffsetOf.toString().find('\n')));
  // Basis order is n's bits then k's, which reorderIns({n, k}) gives flat.
  Expected<LinearLayout> ordered = codeOffsetOf.reorderIns({"n", "k"});
  if (!ordered)
    return makeError(what + ": " + ordered.error());
  if (Expected<LinearLayout> inverse = ordered->invert(); !inverse)
    return makeError(what + ": " + inverse.error());
  WeightLayout layout;
  layout.codeBits = codeBits;
  const int nBits = ordered->inDims()[0].bits;
  const int kBits = ordered->inDims()[1].bits;
  if (nBits > 30 || kBits > 30 || nBits + kBits > kMaxTileBits)
    return makeError(what + ": a " + std::to_string(nBits) + "+" + std::to_string(kBits) +
                     "-bit tile has more than 2^" + std::to_string(kMaxTileBits) + " codes");
  layout.tileN = 1 << nBits;
  layout.tileK = 1 << kBits;
  for (int bit = 0; bit < nBits + kBits; ++bit)
    layout.basis.push_back(uint32_t(ordered->applyFlat(uint64_t(1) << bit)));
  if (Status status = validateWeightLayout(layout); !status.ok())
    return makeError(what + ": " + status.error());
  return layout;
}

Expected<LinearLayout> linearFromWeightLayout(const WeightLayout &layout) {
  if (Status status = validateWeightLayout(layout); !status.ok())
    return makeError("linearFromWeightLayout: " + status.error());
  const int nBits = log2Of(layout.tileN);
  const int kBits = log2Of(layout.tileK);
  std::vector<std::vector<std::vector<uint32_t>>> basis(2);
  for (int bit = 0; bit < nBits + kBits; ++bit)
    basis[bit < nBits ? 0 : 1].push_back({layout.basis[size_t(bit)]});
  return LinearLayout::create({Dim{"n", nBits}, Dim{"k", kBits}},
                              {Dim{"offset", nBits + kBits}}, std::move(basis));
}

Status checkShape(const WeightLayout &layout, int64_t n, int64_t k) {
  if (Status status = validateWeightLayout(layout); !status.ok())
    return status;
  if (n < 0 || k < 0)
    return makeError("weight shape " + std::to_string(n) + " x " + std::to_string(k) +
                     " has a negative dimension");
  if (n % layout.tileN != 0 || k % layout.tileK != 0)
    return makeError("weight shape N=" + std::to_string(n) + " x K=" + std::to_string(k) +
                     " is not a multiple of the layout's " + std::to_string(layout.tileN) + "x" +
                     std::to_string(layout.tileK) + " tile (" +
                     (n % layout.tileN ? "N" : "K") + " is not); pad the weights");
  return Status::success();
}

int64_t packedBytes(const WeightLayout &layout, int64_t n, int64_t k) {
  if (!checkShape(layout, n, k).ok())
    return -1;
  // N and K are the caller's: N * K * codeBits must not wrap.
  int64_t codes = 0, bits = 0;
  if (mulOverflows(n, k, &codes) || mulOverflows(codes, layout.codeBits, &bits))
    return -1;
  return bits / 8;
}

Status packWeights(const WeightLayout &layout, int64_t n, int64_t k, const uint8_t *codes,
                   uint8_t *packed, size_t packedBytesAvailable) {
  int64_t needed = 0;
  if (Status status = checkBuffers("packWeights", layout, n, k, codes, packed,
                                   packedBytesAvailable, needed);
      !status.ok())
    return status;
  if (needed == 0)
    return Status::success();
  // Check every code before writing anything, so a bad input leaves `packed`
  // untouched. A row's OR vectorizes; the exact position is only searched
  // for once a row is known to be bad.
  const uint8_t mask = uint8_t((1u << layout.codeBits) - 1);
  for (int64_t row = 0; row < n; ++row) {
    const uint8_t *rowCodes = codes + row * k;
    uint8_t any = 0;
    for (int64_t col = 0; col < k; ++col)
      any |= rowCodes[col];
    if (any & ~mask)
      for (int64_t col = 0; col < k; ++col)
        if (rowCodes[col] & ~mask)
          return makeError("packWeights: code " + std::to_string(rowCodes[col]) + " at (n=" +
                           std::to_string(row) + ", k=" + std::to_string(col) +
                           ") does not fit in " + std::to_string(layout.codeBits) +
                           " bits; codes are never masked");
  }
  std::memset(packed, 0, size_t(needed)); // sub-byte codes are ORed in
  if (codePlanes(layout.codeBits).highBits) {
    packPlanes(layout, n, k, codes, packed);
    return Status::success();
  }
  const TileTables tables = tablesFor(layout);
  switch (layout.codeBits) {
  case 1: packTiles<1>(tables, n, k, layout.tileN, layout.tileK, codes, packed); break;
  case 2: packTiles<2>(tables, n, k, layout.tileN, layout.tileK, codes, packed); break;
  case 4: packTiles<4>(tables, n, k, layout.tileN, layout.tileK, codes, packed); break;
  default: packTiles<8>(tables, n, k, layout.tileN, layout.tileK, codes, packed); break;
  }
  return Status::success();
}

Status unpackWeights(const WeightLayout &layout, int64_t n, int64_t k, const uint8_t *packed,
                     size_t packedBytesAvailable, uint8_t *codes) {
  int64_t needed = 0;
  if (Status status = checkBuffers("unpackWeights", layout, n, k, codes, packed,
                                   packedBytesAvailable, needed);
      !status.ok())
    return status;
  if (needed == 0)
    return Status::success();
  // The layout is a bijection onto whole-byte tiles, so every packed bit is a
  // code bit: there is no padding to check.
  if (codePlanes(layout.codeBits).highBits) {
    unpackPlanes(layout, n, k, packed, codes);
    return Status::success();
  }
  const TileTables tables = tablesFor(layout);
  switch (layout.codeBits) {
  case 1: unpackTiles<1>(tables, n, k, layout.tileN, layout.tileK, packed, codes); break;
  case 2: unpackTiles<2>(tables, n, k, layout.tileN, layout.tileK, packed, codes); break;
  case 4: unpackTiles<4>(tables, n, k, layout.tileN, layout.tileK, packed, codes); break;
  default: unpackTiles<8>(tables, n, k, layout.tileN, layout.tileK, packed, codes); break;
  }
  return Status::success();
}

} // namespace lowbit::layout

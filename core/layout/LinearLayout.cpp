#include "core/layout/LinearLayout.h"

#include <algorithm>

namespace lowbit::layout {

bool operator==(const Dim &a, const Dim &b) { return a.name == b.name && a.bits == b.bits; }
bool operator!=(const Dim &a, const Dim &b) { return !(a == b); }

namespace {

constexpr int kMaxDimBits = 32;
constexpr int kMaxSideBits = 64;

uint64_t lowMask(int bits) { return bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1; }

int totalBits(const std::vector<Dim> &dims) {
  int total = 0;
  for (const Dim &dim : dims)
    total += dim.bits;
  return total;
}

// Flat position of each dim's bit 0: the first dim is least significant.
std::vector<int> offsetsOf(const std::vector<Dim> &dims) {
  std::vector<int> offsets;
  int offset = 0;
  for (const Dim &dim : dims) {
    offsets.push_back(offset);
    offset += dim.bits;
  }
  return offsets;
}

int findDim(const std::vector<Dim> &dims, const std::string &name) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name == name)
      return int(i);
  return -1;
}

std::string dimsToString(const std::vector<Dim> &dims) {
  std::string text = "{";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + dims[i].name + ":" + std::to_string(dims[i].bits);
  return text + "}";
}

// "lane[3]" for flat bit 3 of {lane:5, ...}.
std::string bitName(const std::vector<Dim> &dims, int flatBit) {
  for (const Dim &dim : dims) {
    if (flatBit < dim.bits)
      return dim.name + "[" + std::to_string(flatBit) + "]";
    flatBit -= dim.bits;
  }
  return "?[" + std::to_string(flatBit) + "]";
}

// Every check a dim list must pass, whichever side it is on. `what` names the
// operation and the side, e.g. "LinearLayout::create: in dims".
Status validateDims(const std::vector<Dim> &dims, const std::string &what) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].name.empty())
      return makeError(what + ": dim " + std::to_string(i) + " has an empty name");
    if (dims[i].bits < 0 || dims[i].bits > kMaxDimBits)
      return makeError(what + ": dim '" + dims[i].name + "' has " +
                       std::to_string(dims[i].bits) + " bits; a dim has 0.." +
                       std::to_string(kMaxDimBits) + " bits (values are uint32_t)");
    for (size_t j = 0; j < i; ++j)
      if (dims[j].name == dims[i].name)
        return makeError(what + ": dim name '" + dims[i].name + "' appears twice");
  }
  if (totalBits(dims) > kMaxSideBits)
    return makeError(what + ": " + dimsToString(dims) + " has " +
                     std::to_string(totalBits(dims)) + " bits in total; at most " +
                     std::to_string(kMaxSideBits) + " are supported");
  return Status::success();
}

// Moves each dim's field of a flat value from its place under `from` to
// flat position dstPos[d]. Used by reorder and product.
uint64_t relocate(uint64_t value, const std::vector<Dim> &from, const std::vector<int> &dstPos) {
  uint64_t result = 0;
  int src = 0;
  for (size_t d = 0; d < from.size(); ++d) {
    uint64_t field = (value >> src) & lowMask(from[d].bits);
    result |= field << dstPos[d];
    src += from[d].bits;
  }
  return result;
}

// Incremental Gaussian elimination over GF(2). Each inserted vector carries
// the set of original vectors (a bit mask of their indices) that XOR to its
// reduced form, so a dependency can be reported by name and a full-rank
// square system can be back-substituted into an inverse.
class XorBasis {
public:
  // Returns the combination that reduced to zero, or 0 if `value` was
  // independent and has been added.
  uint64_t insert(uint64_t value, uint64_t combo) {
    for (int bit = 63; bit >= 0; --bit) {
      if (!((value >> bit) & 1))
        continue;
      if (!hasPivot_[bit]) {
        hasPivot_[bit] = true;
        value_[bit] = value;
        combo_[bit] = combo;
        ++rank_;
        return 0;
      }
      value ^= value_[bit];
      combo ^= combo_[bit];
    }
    return combo;
  }
  int rank() const { return rank_; }

  // With a pivot on every bit below `bits`, reduces each pivot row to a unit
  // vector and returns, per bit p, the combination of originals whose XOR is
  // exactly 1 << p. Rows are processed upwards, so every lower row a row
  // refers to is already a unit vector.
  std::vector<uint64_t> unitPreimages(int bits) {
    std::vector<uint64_t> result(size_t(bits), 0);
    for (int p = 0; p < bits; ++p) {
      for (int q = 0; q < p; ++q)
        if ((value_[p] >> q) & 1) {
          value_[p] ^= value_[q];
          combo_[p] ^= combo_[q];
        }
      result[size_t(p)] = combo_[p];
    }
    return result;
  }

private:
  bool hasPivot_[64] = {};
  uint64_t value_[64] = {};
  uint64_t combo_[64] = {};
  int rank_ = 0;
};

std::string comboToString(const std::vector<Dim> &dims, uint64_t combo) {
  std::string text;
  for (int bit = 0; bit < 64; ++bit)
    if ((combo >> bit) & 1)
      text += (text.empty() ? "" : ", ") + bitName(dims, bit);
  return text;
}

// Shared by flatten/reshape on either side: the flat vector stays, only the
// split into dims changes.
Status checkReshape(const std::vector<Dim> &from, const std::vector<Dim> &to,
                    const std::string &what) {
  if (Status status = validateDims(to, what); !status.ok())
    return status;
  if (totalBits(to) != totalBits(from))
    return makeError(what + ": " + dimsToString(to) + " has " + std::to_string(totalBits(to)) +
                     " bits but " + dimsToString(from) + " has " +
                     std::to_string(totalBits(from)));
  return Status::success();
}

// Flat positions, under the current order, of the dims listed in `names`
// once laid out in that order; i.e. dstPos for relocate(value, dims, ...).
Expected<std::vector<int>> reorderPositions(const std::vector<Dim> &dims,
                                            const std::vector<std::string> &names,
                                            const std::string &what,
                                            std::vector<Dim> &reordered) {
  if (names.size() != dims.size())
    return makeError(what + ": got " + std::to_string(names.size()) + " names for the " +
                     std::to_string(dims.size()) + " dims " + dimsToString(dims));
  reordered.clear();
  for (const std::string &name : names) {
    int index = findDim(dims, name);
    if (index < 0)
      return makeError(what + ": no dim named '" + name + "' in " + dimsToString(dims));
    if (findDim(reordered, name) >= 0)
      return makeError(what + ": dim '" + name + "' is listed twice");
    reordered.push_back(dims[size_t(index)]);
  }
  std::vector<int> newOffsets = offsetsOf(reordered);
  std::vector<int> dstPos(dims.size());
  for (size_t d = 0; d < dims.size(); ++d)
    dstPos[d] = newOffsets[size_t(findDim(reordered, dims[d].name))];
  return dstPos;
}

} // namespace

int LinearLayout::totalOutBits() const { return totalBits(outDims_); }

Expected<LinearLayout>
LinearLayout::create(std::vector<Dim> inDims, std::vector<Dim> outDims,
                     std::vector<std::vector<std::vector<uint32_t>>> basis) {
  const std::string what = "LinearLayout::create";
  if (Status status = validateDims(inDims, what + ": in dims"); !status.ok())
    return makeError(status.error());
  if (Status status = validateDims(outDims, what + ": out dims"); !status.ok())
    return makeError(status.error());
  if (basis.size() != inDims.size())
    return makeError(what + ": basis has entries for " + std::to_string(basis.size()) +
                     " in dims; there are " + std::to_string(inDims.size()) + " " +
                     dimsToString(inDims));
  const std::vector<int> outOffsets = offsetsOf(outDims);
  std::vector<uint64_t> columns;
  for (size_t d = 0; d < inDims.size(); ++d) {
    if (basis[d].size() != size_t(inDims[d].bits))
      return makeError(what + ": in dim '" + inDims[d].name + "' has " +
                       std::to_string(inDims[d].bits) + " bits but its basis has " +
                       std::to_string(basis[d].size()) + " entries");
    for (size_t bit = 0; bit < basis[d].size(); ++bit) {
      const std::vector<uint32_t> &image = basis[d][bit];
      const std::string where = what + ": basis of " + inDims[d].name + "[" +
                                std::to_string(bit) + "]";
      if (image.size() != outDims.size())
        return makeError(where + " has " + std::to_string(image.size()) +
                         " values; there are " + std::to_string(outDims.size()) +
                         " out dims " + dimsToString(outDims));
      uint64_t column = 0;
      for (size_t o = 0; o < outDims.size(); ++o) {
        if (uint64_t(image[o]) > lowMask(outDims[o].bits))
          return makeError(where + " gives out dim '" + outDims[o].name + "' the value " +
                           std::to_string(image[o]) + ", which does not fit in " +
                           std::to_string(outDims[o].bits) + " bits");
        column |= uint64_t(image[o]) << outOffsets[o];
      }
      columns.push_back(column);
    }
  }
  return LinearLayout(std::move(inDims), std::move(outDims), std::move(columns));
}

LinearLayout LinearLayout::identity(const std::vector<Dim> &dims) {
  if (!validateDims(dims, "LinearLayout::identity").ok())
    return LinearLayout();
  std::vector<uint64_t> columns;
  for (int bit = 0; bit < totalBits(dims); ++bit)
    columns.push_back(uint64_t(1) << bit);
  return LinearLayout(dims, dims, std::move(columns));
}

Expected<LinearLayout>
LinearLayout::fromBitPermutation(std::vector<Dim> inDims, std::vector<Dim> outDims,
                                 std::vector<std::vector<BitTarget>> targets) {
  const std::string what = "LinearLayout::fromBitPermutation";
  if (Status status = validateDims(inDims, what + ": in dims"); !status.ok())
    return makeError(status.error());
  if (Status status = validateDims(outDims, what + ": out dims"); !status.ok())
    return makeError(status.error());
  if (targets.size() != inDims.size())
    return makeError(what + ": targets given for " + std::to_string(targets.size()) +
                     " in dims; there are " + std::to_string(inDims.size()));
  const std::vector<int> outOffsets = offsetsOf(outDims);
  std::vector<uint64_t> columns;
  uint64_t used = 0;
  for (size_t d = 0; d < inDims.size(); ++d) {
    if (targets[d].size() != size_t(inDims[d].bits))
      return makeError(what + ": in dim '" + inDims[d].name + "' has " +
                       std::to_string(inDims[d].bits) + " bits but " +
                       std::to_string(targets[d].size()) + " targets");
    for (size_t bit = 0; bit < targets[d].size(); ++bit) {
      const BitTarget &target = targets[d][bit];
      const std::string where = what + ": " + inDims[d].name + "[" + std::to_string(bit) + "]";
      int o = findDim(outDims, target.dim);
      if (o < 0)
        return makeError(where + " targets unknown out dim '" + target.dim + "'");
      if (target.bit < 0 || target.bit >= outDims[size_t(o)].bits)
        return makeError(where + " targets " + target.dim + "[" + std::to_string(target.bit) +
                         "], but '" + target.dim + "' has " +
                         std::to_string(outDims[size_t(o)].bits) + " bits");
      uint64_t column = uint64_t(1) << (outOffsets[size_t(o)] + target.bit);
      if (used & column)
        return makeError(where + " targets " + target.dim + "[" + std::to_string(target.bit) +
                         "], which another in bit already targets");
      used |= column;
      columns.push_back(column);
    }
  }
  return LinearLayout(std::move(inDims), std::move(outDims), std::move(columns));
}

Expected<LinearLayout> LinearLayout::product(const LinearLayout &a, const LinearLayout &b) {
  // Merge one side: a's dims in order, widened by b's bits of the same name,
  // then b's remaining dims. aPos/bPos give where each source dim's bit 0
  // lands in the merged flat vector.
  auto merge = [](const std::vector<Dim> &aDims, const std::vector<Dim> &bDims,
                  std::vector<int> &aPos, std::vector<int> &bPos) {
    std::vector<Dim> merged = aDims;
    for (const Dim &dim : bDims) {
      int index = findDim(merged, dim.name);
      if (index >= 0)
        merged[size_t(index)].bits += dim.bits;
      else
        merged.push_back(dim);
    }
    std::vector<int> offsets = offsetsOf(merged);
    aPos.clear();
    bPos.clear();
    for (const Dim &dim : aDims)
      aPos.push_back(offsets[size_t(findDim(merged, dim.name))]);
    for (const Dim &dim : bDims) {
      int index = findDim(merged, dim.name);
      int inA = findDim(aDims, dim.name);
      bPos.push_back(offsets[size_t(index)] + (inA >= 0 ? aDims[size_t(inA)].bits : 0));
    }
    return merged;
  };
  std::vector<int> aInPos, bInPos, aOutPos, bOutPos;
  std::vector<Dim> inDims = merge(a.inDims_, b.inDims_, aInPos, bInPos);
  std::vector<Dim> outDims = merge(a.outDims_, b.outDims_, aOutPos, bOutPos);
  if (Status status = validateDims(inDims, "LinearLayout::product: in dims"); !status.ok())
    return makeError(status.error());
  if (Status status = validateDims(outDims, "LinearLayout::product: out dims"); !status.ok())
    return makeError(status.error());

  std::vector<uint64_t> columns(size_t(totalBits(inDims)), 0);
  auto place = [&](const LinearLayout &src, const std::vector<int> &inPos,
                   const std::vector<int> &outPos) {
    int flat = 0;
    for (size_t d = 0; d < src.inDims_.size(); ++d)
      for (int bit = 0; bit < src.inDims_[d].bits; ++bit, ++flat)
        columns[size_t(inPos[d] + bit)] = relocate(src.columns_[size_t(flat)], src.outDims_, outPos);
  };
  place(a, aInPos, aOutPos);
  place(b, bInPos, bOutPos);
  return LinearLayout(std::move(inDims), std::move(outDims), std::move(columns));
}

std::vector<std::vector<std::vector<uint32_t>>> LinearLayout::basis() const {
  const std::vector<int> outOffsets = offsetsOf(outDims_);
  std::vector<std::vector<std::vector<uint32_t>>> result;
  size_t flat = 0;
  for (const Dim &in : inDims_) {
    std::vector<std::vector<uint32_t>> bits;
    for (int bit = 0; bit < in.bits; ++bit, ++flat) {
      std::vector<uint32_t> image;
      for (size_t o = 0; o < outDims_.size(); ++o)
        image.push_back(uint32_t((columns_[flat] >> outOffsets[o]) & lowMask(outDims_[o].bits)));
      bits.push_back(std::move(image));
    }
    result.push_back(std::move(bits));
  }
  return result;
}

uint64_t LinearLayout::applyFlat(uint64_t in) const {
  uint64_t out = 0;
  for (size_t bit = 0; bit < columns_.size(); ++bit)
    if ((in >> bit) & 1)
      out ^= columns_[bit];
  return out;
}

std::vector<uint32_t> LinearLayout::apply(const std::vector<uint32_t> &in) const {
  if (in.size() != inDims_.size())
    return {};
  uint64_t flat = 0;
  int offset = 0;
  for (size_t d = 0; d < inDims_.size(); ++d) {
    if (uint64_t(in[d]) > lowMask(inDims_[d].bits))
      return {};
    flat |= uint64_t(in[d]) << offset;
    offset += inDims_[d].bits;
  }
  const uint64_t out = applyFlat(flat);
  std::vector<uint32_t> result;
  offset = 0;
  for (const Dim &dim : outDims_) {
    result.push_back(uint32_t((out >> offset) & lowMask(dim.bits)));
    offset += dim.bits;
  }
  return result;
}

Expected<LinearLayout> LinearLayout::compose(const LinearLayout &inner) const {
  if (inner.outDims_ != inDims_)
    return makeError("LinearLayout::compose: the inner layout's out dims " +
                     dimsToString(inner.outDims_) + " must equal the outer layout's in dims " +
                     dimsToString(inDims_) + " (names, bits and order)");
  std::vector<uint64_t> columns;
  for (uint64_t column : inner.columns_)
    columns.push_back(applyFlat(column));
  return LinearLayout(inner.inDims_, outDims_, std::move(columns));
}

int LinearLayout::rank() const {
  XorBasis basis;
  for (uint64_t column : columns_)
    (void)basis.insert(column, 0);
  return basis.rank();
}

bool LinearLayout::isInjective() const { return rank() == totalInBits(); }
bool LinearLayout::isSurjective() const { return rank() == totalOutBits(); }

Expected<LinearLayout> LinearLayout::invert() const {
  const std::string what = "LinearLayout::invert: " + dimsToString(inDims_) + " -> " +
                           dimsToString(outDims_);
  if (totalInBits() != totalOutBits())
    return makeError(what + " maps " + std::to_string(totalInBits()) + " in bits to " +
                     std::to_string(totalOutBits()) +
                     " out bits, so it is not a bijection and has no inverse");
  XorBasis basis;
  for (size_t bit = 0; bit < columns_.size(); ++bit)
    if (uint64_t dependent = basis.insert(columns_[bit], uint64_t(1) << bit))
      return makeError(what + " is not a bijection: the XOR of the images of {" +
                       comboToString(inDims_, dependent) +
                       "} is 0, so distinct inputs share an output");
  return LinearLayout(outDims_, inDims_, basis.unitPreimages(totalOutBits()));
}

Expected<LinearLayout> LinearLayout::reshapeOuts(std::vector<Dim> dims) const {
  if (Status status = checkReshape(outDims_, dims, "LinearLayout::reshapeOuts"); !status.ok())
    return makeError(status.error());
  return LinearLayout(inDims_, std::move(dims), columns_);
}

Expected<LinearLayout> LinearLayout::reshapeIns(std::vector<Dim> dims) const {
  if (Status status = checkReshape(inDims_, dims, "LinearLayout::reshapeIns"); !status.ok())
    return makeError(status.error());
  return LinearLayout(std::move(dims), outDims_, columns_);
}

Expected<LinearLayout> LinearLayout::flattenOuts(const std::string &name) const {
  return reshapeOuts({Dim{name, totalOutBits()}});
}

Expected<LinearLayout> LinearLayout::flattenIns(const std::string &name) const {
  return reshapeIns({Dim{name, totalInBits()}});
}

Expected<LinearLayout> LinearLayout::reorderOuts(const std::vector<std::string> &names) const {
  std::vector<Dim> reordered;
  Expected<std::vector<int>> dstPos =
      reorderPositions(outDims_, names, "LinearLayout::reorderOuts", reordered);
  if (!dstPos)
    return std::move(dstPos).takeError();
  std::vector<uint64_t> columns;
  for (uint64_t column : columns_)
    columns.push_back(relocate(column, outDims_, *dstPos));
  return LinearLayout(inDims_, std::move(reordered), std::move(columns));
}

Expected<LinearLayout> LinearLayout::reorderIns(const std::vector<std::string> &names) const {
  std::vector<Dim> reordered;
  Expected<std::vector<int>> dstPos =
      reorderPositions(inDims_, names, "LinearLayout::reorderIns", reordered);
  if (!dstPos)
    return std::move(dstPos).takeError();
  // Moving in bits permutes the columns.
  std::vector<uint64_t> columns(columns_.size(), 0);
  size_t flat = 0;
  for (size_t d = 0; d < inDims_.size(); ++d)
    for (int bit = 0; bit < inDims_[d].bits; ++bit, ++flat)
      columns[size_t((*dstPos)[d] + bit)] = columns_[flat];
  return LinearLayout(std::move(reordered), outDims_, std::move(columns));
}

namespace {
Expected<std::vector<Dim>> renamed(const std::vector<Dim> &dims, const std::string &from,
                                   const std::string &to, const std::string &what) {
  int index = findDim(dims, from);
  if (index < 0)
    return makeError(what + ": no dim named '" + from + "' in " + dimsToString(dims));
  if (to != from && findDim(dims, to) >= 0)
    return makeError(what + ": cannot rename '" + from + "' to '" + to + "': " +
                     dimsToString(dims) + " already has a dim named '" + to + "'");
  if (to.empty())
    return makeError(what + ": cannot rename '" + from + "' to an empty name");
  std::vector<Dim> result = dims;
  result[size_t(index)].name = to;
  return result;
}
} // namespace

Expected<LinearLayout> LinearLayout::renameIn(const std::string &from,
                                              const std::string &to) const {
  Expected<std::vector<Dim>> dims = renamed(inDims_, from, to, "LinearLayout::renameIn");
  if (!dims)
    return std::move(dims).takeError();
  return LinearLayout(std::move(*dims), outDims_, columns_);
}

Expected<LinearLayout> LinearLayout::renameOut(const std::string &from,
                                               const std::string &to) const {
  Expected<std::vector<Dim>> dims = renamed(outDims_, from, to, "LinearLayout::renameOut");
  if (!dims)
    return std::move(dims).takeError();
  return LinearLayout(inDims_, std::move(*dims), columns_);
}

bool LinearLayout::operator==(const LinearLayout &other) const {
  return inDims_ == other.inDims_ && outDims_ == other.outDims_ && columns_ == other.columns_;
}

std::string LinearLayout::toString() const {
  std::string text = dimsToString(inDims_) + " -> " + dimsToString(outDims_);
  const std::vector<std::vector<std::vector<uint32_t>>> images = basis();
  for (size_t d = 0; d < inDims_.size(); ++d)
    for (size_t bit = 0; bit < images[d].size(); ++bit) {
      text += "\n  " + inDims_[d].name + "[" + std::to_string(bit) + "] -> (";
      for (size_t o = 0; o < outDims_.size(); ++o)
        text += (o ? ", " : "") + outDims_[o].name + "=" + std::to_string(images[d][bit][o]);
      text += ")";
    }
  return text;
}

} // namespace lowbit::layout

// F2-linear layouts: linear maps over GF(2) from the bits of named input
// dimensions to the bits of named output dimensions, as in Triton's
// LinearLayout.
//
//   L(x) = XOR of basis[d][i] over every set bit i of every input value x[d]
//
// One representation covers tensor-core fragments (lane/register -> row/col),
// ldmatrix, shared-memory swizzles and the bit interleave inside a 32-bit
// register, and layouts chain by composition. The compiler derives a weight
// layout this way (layout propagation) and records it in serialized form
// (WeightLayout.h) for the runtime packer.
//
// Bit numbering. The dimensions of one side are laid side by side in a
// single "flat" bit vector, the first dimension in the least significant
// bits. So for out dims {k:4, n:3}, flat value = k | n << 4. flatten/reshape
// keep the flat vector and only change how it is split into named dims.
//
// Limits: a dimension has 0..32 bits (values are uint32_t) and each side has
// at most 64 bits in total (one uint64_t). Layouts of tiles, fragments and
// whole weight matrices are far below that.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace lowbit::layout {

struct Dim {
  std::string name;
  int bits = 0; // size = 1 << bits
};

bool operator==(const Dim &a, const Dim &b);
bool operator!=(const Dim &a, const Dim &b);

// Where one input bit goes in a bit-permutation layout.
struct BitTarget {
  std::string dim; // an out dim name
  int bit = 0;     // a bit of that out dim
};

class LinearLayout {
public:
  // The empty layout: no dims, maps the single point to the single point.
  LinearLayout() = default;

  // basis[inDim][bit] is the image of that input bit, one value per out dim
  // (so basis[inDim][bit].size() == outDims.size()). Checks names (non-empty,
  // unique per side), dim sizes, basis shape and that every value fits its
  // out dim.
  static Expected<LinearLayout> create(std::vector<Dim> inDims, std::vector<Dim> outDims,
                                       std::vector<std::vector<std::vector<uint32_t>>> basis);
  // in == out, every bit to itself. Dims must be valid (as for create); an
  // invalid list gives the empty layout, so prefer create for untrusted input.
  static LinearLayout identity(const std::vector<Dim> &dims);
  // A layout that only moves bits: in bit (d, i) goes to targets[d][i]. The
  // targets must be distinct out bits. With as many in bits as out bits this
  // is a permutation (a bijection); with fewer it is an injective embedding
  // and the untargeted out bits are always 0.
  static Expected<LinearLayout> fromBitPermutation(std::vector<Dim> inDims,
                                                   std::vector<Dim> outDims,
                                                   std::vector<std::vector<BitTarget>> targets);
  // Direct sum, like Triton's operator*: a's dims and b's dims side by side.
  // A dim name present in both becomes one dim with a's bits low and b's bits
  // high (on the in side and on the out side), so for disjoint names this is
  // the block-diagonal layout. Fails only if a merged dim exceeds 32 bits or
  // a side exceeds 64 bits, which is why it returns Expected.
  static Expected<LinearLayout> product(const LinearLayout &a, const LinearLayout &b);

  const std::vector<Dim> &inDims() const { return inDims_; }
  const std::vector<Dim> &outDims() const { return outDims_; }
  int totalInBits() const { return int(columns_.size()); }
  int totalOutBits() const;

  // The basis in create()'s form.
  std::vector<std::vector<std::vector<uint32_t>>> basis() const;

  // One value per in dim -> one value per out dim. A wrong number of values
  // or a value that does not fit its in dim gives an empty vector (so a valid
  // call on a layout with at least one out dim is never empty).
  std::vector<uint32_t> apply(const std::vector<uint32_t> &in) const;
  // The same on flat bit vectors (see "Bit numbering"); bits at or above
  // totalInBits() are ignored. This is the hot-loop form.
  uint64_t applyFlat(uint64_t in) const;

  // this ∘ inner: inner's outDims must equal this's inDims, names, bits and
  // order. The result maps inner's inDims to this's outDims.
  Expected<LinearLayout> compose(const LinearLayout &inner) const;
  // The inverse of a bijection (as many in bits as out bits, full rank),
  // by Gauss-Jordan elimination over GF(2). Maps outDims back to inDims.
  Expected<LinearLayout> invert() const;
  bool isInjective() const;  // rank == totalInBits
  bool isSurjective() const; // rank == totalOutBits
  int rank() const;

  // Reshaping keeps the flat bit vectors; only the split into dims changes.
  Expected<LinearLayout> flattenOuts(const std::string &name) const; // needs <= 32 bits
  Expected<LinearLayout> flattenIns(const std::string &name) const;
  Expected<LinearLayout> reshapeOuts(std::vector<Dim> dims) const; // same total bits
  Expected<LinearLayout> reshapeIns(std::vector<Dim> dims) const;
  // Reordering moves bits: the listed order becomes the new least-to-most
  // significant order of the flat vector. `names` must be a permutation of
  // the current dim names. Use before flatten to choose which dim is fastest.
  Expected<LinearLayout> reorderOuts(const std::vector<std::string> &names) const;
  Expected<LinearLayout> reorderIns(const std::vector<std::string> &names) const;
  Expected<LinearLayout> renameIn(const std::string &from, const std::string &to) const;
  Expected<LinearLayout> renameOut(const std::string &from, const std::string &to) const;

  bool operator==(const LinearLayout &other) const;
  bool operator!=(const LinearLayout &other) const { return !(*this == other); }

  // Deterministic and line-oriented for diagnostics and FileCheck:
  //   {lane:5, reg:1} -> {k:4, n:3}
  //     lane[0] -> (k=2, n=0)
  //     ...
  std::string toString() const;

private:
  LinearLayout(std::vector<Dim> inDims, std::vector<Dim> outDims, std::vector<uint64_t> columns)
      : inDims_(std::move(inDims)), outDims_(std::move(outDims)), columns_(std::move(columns)) {}

  std::vector<Dim> inDims_;
  std::vector<Dim> outDims_;
  // columns_[j] is the flat out value of flat in bit j.
  std::vector<uint64_t> columns_;
};

} // namespace lowbit::layout

#include "core/FragmentFacts.h"

namespace lowbit::core {

Expected<CodeFragment> codeFragment(const formats::DataFormat &code) {
  const formats::IntFormat *integer = code.asInt();
  if (!integer)
    return makeError("no register decode for " + code.name() +
                     " codes yet (integer codes of 1, 2, 4 or 8 bits are implemented)");
  if (integer->fractionBits != 0)
    return makeError("no register decode for fixed-point codes (" + code.name() + ")");
  int bits = integer->bits;
  if (bits != 1 && bits != 2 && bits != 4 && bits != 8)
    return makeError("no register decode for " + std::to_string(bits) +
                     "-bit codes: a code must not straddle a 32-bit word (1, 2, 4 or 8 bits)");
  return CodeFragment{bits};
}

int rawSubtileBitOffset(const CodeFragment &fragment, int subtile) {
  // A unit's registers are its words' registers in word order.
  int registersPerWord = fragment.codesPerWord() / 2;
  return f16FieldBitOffset(fragment.codeBits,
                           (subtile * kRegistersPerSubtile) % registersPerWord);
}

} // namespace lowbit::core

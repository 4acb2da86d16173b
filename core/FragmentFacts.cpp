#include "core/FragmentFacts.h"

namespace lowbit::core {

Expected<CodeFragment> codeFragment(const formats::DataFormat &code) {
  const int bits = code.bits();
  if (const formats::LutFormat *lut = code.asLut()) {
    if (lut->bits != 4)
      return makeError("no register decode for " + code.name() + ": lookup tables have 4-bit "
                       "codes (16 entries: a prmt lookup)");
    return CodeFragment{bits};
  }
  if (code.asFloat()) {
    // Widths that divide a half decode a word at a time; 3, 5 and 6 bits
    // come in two planes, whose parts the decode joins in each half.
    if (bits > 8 || (16 % bits != 0 && !layout::codePlanes(bits).highBits))
      return makeError("no register decode for " + std::to_string(bits) + "-bit " + code.name() +
                       " codes: a minifloat code must not straddle a 16-bit half (2, 4 or 8 "
                       "bits, or 3, 5 and 6 in two planes)");
    return CodeFragment{bits};
  }
  const formats::IntFormat *integer = code.asInt();
  if (integer->fractionBits != 0)
    return makeError("no register decode for fixed-point codes (" + code.name() + ")");
  if (bits == 7)
    return makeError("no register decode for 7-bit codes: a code must not straddle a 32-bit "
                     "word (1, 2, 4 or 8 bits), and two planes store only 3, 5 and 6 bits");
  return CodeFragment{bits};
}

int rawSubtileBitOffset(const CodeFragment &fragment, int subtile) {
  // A unit's registers are its (low plane) words' registers in word order;
  // a two-plane code's field starts where its low plane's does.
  int registersPerWord = fragment.codesPerWord() / 2;
  return f16FieldBitOffset(fragment.planes().lowBits,
                           (subtile * kRegistersPerSubtile) % registersPerWord);
}

} // namespace lowbit::core

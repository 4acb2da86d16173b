// Minifloat and lookup-table codes to f16x2 / bf16x2 registers: the bit
// moves and the fma a minifloat's parameters give (core/DecodeFacts.h), and
// the register-resident prmt lookup of a 16-entry table. Each sequence is
// described at its emitter; integers are in passes/DecodeStrategy.cpp.
#include "passes/DecodeEmit.h"

#include "core/DecodeFacts.h"
#include "ir/CoreConversion.h"

using namespace mlir;

namespace lowbit::passes::decode {
namespace {

// The pair a minifloat register makes once each half's code sits at the
// top of the half (bits 16 - c .. 15), so the code's sign is the half's
// sign. The magnitude shifts right onto the wide mantissa's top, one mask
// keeps it and one lop3 puts the sign back: (x & 0x80008000) | (y & M).
// One fma by 2^scaleExponent (with -0 as the addend, which keeps the sign
// of zero) makes the value, normals and subnormals alike. With zeros below
// the codes and nothing to move (e5m2 to f16 is its top byte), x is the
// value already. Raw: no fma; the kernel folds 2^scaleExponent into its f32
// scales.
Value minifloatValue(EmitContext &c, const core::MinifloatDecode &decode, Value x,
                     bool zerosBelow, bool raw) {
  OpBuilder &b = c.b;
  const uint32_t sign = decode.hasSign ? 0x80008000u : 0u;
  const uint32_t magnitude = splat(decode.magnitudeMask);
  const uint32_t wholeCode = splat(((1u << decode.codeBits) - 1) << (16 - decode.codeBits));
  Value v;
  if (decode.magnitudeShift == 0) {
    v = zerosBelow && (sign | magnitude) == wholeCode
            ? x
            : b.create<arith::AndIOp>(c.loc, x, c.i32(sign | magnitude)).getResult();
  } else {
    Value y = b.create<arith::ShRUIOp>(c.loc, x, c.i32(decode.magnitudeShift));
    v = b.create<arith::AndIOp>(c.loc, y, c.i32(magnitude));
    if (sign) // (x & sign) | v
      v = b.create<lb::Lop3Op>(c.loc, b.getI32Type(), x, c.i32(sign), v,
                               b.getI32IntegerAttr(kLutAndOr));
  }
  if (decode.scaleExponent != 0 && !raw)
    v = c.pair(lb::PairOp::fma, v, splat(halfBits(std::ldexp(1.0, decode.scaleExponent), c.bf16)),
               0x80008000u);
  return v;
}

// Minifloats of 3, 5 and 6 bits in two planes (fp6: e2m3, e3m2). Each
// register's code is joined at the top of both halves, as MinifloatEmitter
// leaves a one-plane code: the low word shifted so its field ends where the
// high part begins (16 - high bits), and one lop3 select (mask ? high :
// low) takes the high part from the high word, shifted as for integers
// (highPlaneBit keeps both halves' high parts 16 bits apart). Bits below
// the code are left as they are: minifloatValue masks them. The fields
// follow f16's windows for both activations, since no magic number bounds
// where a field may sit.
struct PlaneMinifloatEmitter {
  core::MinifloatDecode decode;
  bool bf16;
  bool raw;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, ArrayRef<Value> unitWords) const {
    EmitContext c{b, loc, bf16};
    const int bits = decode.codeBits;
    const layout::CodePlanes planes = layout::codePlanes(bits);
    const int low = planes.lowBits, lowWords = core::kValuesPerUnit * low / 32;
    const int perWord = 32 / low, highAt = 16 - planes.highBits;
    const uint32_t highMask = splat(((1u << planes.highBits) - 1) << highAt);
    HighPlaneWords highWord{c, unitWords.drop_front(lowWords), {}};
    SmallVector<Value> registers;
    for (int w = 0; w < lowWords; ++w)
      for (int r = 0; r < perWord / 2; ++r) {
        FieldSlot slot = fieldOfRegister(low, /*bf16=*/false, r);
        const int fieldAt = slot.window * 8 + slot.p;
        const int source = layout::highPlaneBit(bits, w * perWord + slot.field);
        Value lowPart = HighPlaneWords::shiftRight(c, unitWords[w], fieldAt - (highAt - low));
        Value joined = b.create<lb::Lop3Op>(loc, b.getI32Type(), highWord(source / 32,
                                                                          source % 32 - highAt),
                                            lowPart, c.i32(highMask),
                                            b.getI32IntegerAttr(kLutSelect));
        registers.push_back(minifloatValue(c, decode, joined, /*zerosBelow=*/false, raw));
      }
    return registers;
  }
};

// Minifloats (core/DecodeFacts.h): register j takes field j of each half,
// moved to the top of its half (a shift left, or for bytes one prmt that
// also zeroes the low bytes), so the code's sign is the half's sign; then
// minifloatValue makes the pair.
struct MinifloatEmitter {
  core::MinifloatDecode decode;
  bool bf16;
  // Raw: no fma; the kernel folds 2^scaleExponent into its f32 scales.
  bool raw;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, Value word) const {
    EmitContext c{b, loc, bf16};
    const int bits = decode.codeBits, registers = 16 / bits;
    SmallVector<Value> out;
    for (int j = 0; j < registers; ++j) {
      Value x;
      if (bits == 8) { // bytes j and j + 2 into bytes 1 and 3, zeros below
        uint32_t selector = 4u | uint32_t(j) << 4 | 4u << 8 | uint32_t(j + 2) << 12;
        x = b.create<lb::PrmtOp>(loc, b.getI32Type(), word, c.i32(0),
                                 b.getI32IntegerAttr(static_cast<int32_t>(selector)));
      } else {
        int shift = 16 - bits * (j + 1);
        x = shift == 0 ? word : b.create<arith::ShLIOp>(loc, word, c.i32(shift)).getResult();
      }
      out.push_back(minifloatValue(c, decode, x, /*zerosBelow=*/bits == 8, raw));
    }
    return out;
  }
};

// 4-bit lookup tables, register-resident: the 16 entries' low bytes are
// four constant words (entries 0-7 in two, 8-15 in two), their high bytes
// four more. A word's codes c0..c7 (nibble i holds c_i) are looked up four
// at a time: with the nibbles' low 3 bits as the selector (w & 0x7777 and
// (w >> 16) & 0x7777), prmt_lookup picks byte c & 7 of each 8-byte table,
// for the entries below 8 and those from 8. Bit 3 of each code chooses
// between the two: prmt's sign mode spreads a byte's top bit over a byte, and
// bit 3 of nibble i is the top bit of byte i / 2 of w (i odd) or of w << 4
// (i even), so one prmt over {w, w << 4} makes the four byte masks and one
// lop3 a select. Two prmts then pair low and high bytes into the halves of
// two registers. Register r holds codes 2 r and 2 r + 1: the identity
// interleave. 22 instructions for 8 values, no memory access.
struct TableLookupEmitter {
  std::vector<uint16_t> table;
  bool bf16;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, Value word) const {
    EmitContext c{b, loc, bf16};
    // byteTable(hi, from): the selected byte of entries from .. from + 3.
    auto byteTable = [&](bool high, int from) {
      uint32_t v = 0;
      for (int i = 0; i < 4; ++i)
        v |= uint32_t((table[from + i] >> (high ? 8 : 0)) & 0xFF) << (8 * i);
      return c.i32(v);
    };
    Value tables[2][2][2]; // [high byte][entries from 8][word]
    for (int high = 0; high < 2; ++high)
      for (int upper = 0; upper < 2; ++upper)
        for (int half = 0; half < 2; ++half)
          tables[high][upper][half] = byteTable(high, 8 * upper + 4 * half);
    auto prmt = [&](Value x, Value y, uint32_t selector) -> Value {
      return b.create<lb::PrmtOp>(loc, b.getI32Type(), x, y,
                                  b.getI32IntegerAttr(static_cast<int32_t>(selector)));
    };
    Value shifted = b.create<arith::ShLIOp>(loc, word, c.i32(4));
    Value highCodes = b.create<arith::ShRUIOp>(loc, word, c.i32(16));
    // Nibbles 0-3 and 4-7: their selectors and the masks of their bit 3.
    Value selectors[2] = {b.create<arith::AndIOp>(loc, word, c.i32(0x7777)),
                          b.create<arith::AndIOp>(loc, highCodes, c.i32(0x7777))};
    Value masks[2] = {prmt(word, shifted, 0x9D8C), prmt(word, shifted, 0xBFAE)};
    SmallVector<Value> out;
    for (int g = 0; g < 2; ++g) {
      Value bytes[2];
      for (int high = 0; high < 2; ++high) {
        Value below = b.create<lb::PrmtLookupOp>(loc, b.getI32Type(), tables[high][0][0],
                                                 tables[high][0][1], selectors[g]);
        Value above = b.create<lb::PrmtLookupOp>(loc, b.getI32Type(), tables[high][1][0],
                                                 tables[high][1][1], selectors[g]);
        bytes[high] = b.create<lb::Lop3Op>(loc, b.getI32Type(), above, below, masks[g],
                                           b.getI32IntegerAttr(kLutSelect));
      }
      out.push_back(prmt(bytes[0], bytes[1], 0x5140));
      out.push_back(prmt(bytes[0], bytes[1], 0x7362));
    }
    return out;
  }
};

} // namespace

FailureOr<DecodeStrategy>
selectNonIntegerStrategy(Type codeType, Type value, bool raw,
                         function_ref<InFlightDiagnostic()> emitError) {
  if (!value.isF16() && !value.isBF16())
    return emitError() << codeType << " codes decode to f16 or bf16, not " << value;
  Expected<formats::DataFormat> format = lb::dataFormat(codeType);
  if (!format)
    return emitError() << format.error();
  const core::Activation activation =
      value.isBF16() ? core::Activation::BF16 : core::Activation::F16;
  if (Status decodable = core::checkDecodable(*format, activation); !decodable)
    return emitError() << decodable.error();
  if (raw && !core::decodesRaw(*format, activation))
    return emitError() << "a raw decode takes unsigned integer codes or minifloats to f16, not "
                       << codeType << " to " << value;
  const int bits = format->bits();
  const layout::CodePlanes planes = layout::codePlanes(bits);
  if (planes.highBits) {
    // A two-plane minifloat's fields, and so its interleave, are its low
    // plane's, in f16's windows (PlaneMinifloatEmitter).
    Expected<layout::LinearLayout> interleave = wordInterleave(planes.lowBits, /*bf16=*/false);
    if (!interleave.ok())
      return emitError() << "internal: " << interleave.error();
    DecodeStrategy strategy;
    strategy.codesPerWord = 32 / planes.lowBits;
    strategy.interleave = *interleave;
    strategy.emitUnit =
        PlaneMinifloatEmitter{*core::minifloatDecode(*format, activation), value.isBF16(), raw};
    return strategy;
  }
  const int fields = 32 / bits;
  DecodeStrategy strategy;
  strategy.codesPerWord = fields;
  std::vector<int> elementOf(fields);
  if (format->asLut()) {
    for (int f = 0; f < fields; ++f)
      elementOf[f] = f;
    strategy.emit = TableLookupEmitter{*core::lookupTableBits(*format, activation), value.isBF16()};
  } else {
    for (int f = 0; f < fields / 2; ++f)
      elementOf[f] = 2 * f, elementOf[f + fields / 2] = 2 * f + 1;
    strategy.emit =
        MinifloatEmitter{*core::minifloatDecode(*format, activation), value.isBF16(), raw};
  }
  Expected<layout::LinearLayout> interleave = fieldInterleave(elementOf);
  if (!interleave.ok())
    return emitError() << "internal: " << interleave.error();
  strategy.interleave = *interleave;
  return strategy;
}

} // namespace lowbit::passes::decode

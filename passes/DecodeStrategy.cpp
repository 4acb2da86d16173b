// Codes to f16x2 / bf16x2 registers with lop3, prmt and magic numbers: one
// sequence per word, derived from the code's width, signedness and offset,
// or from a minifloat's fields or a table's entries (core/DecodeFacts.h);
// no sequence is written per format name. Minifloats and tables are
// described at their emitters below; integers here.
//
// 1, 2 and 4 bits: in-place magic. A 16-bit half holding 0x6400 (f16 1024.0,
// whose mantissa counts in units of 1) or 0x4300 (bf16 128.0) with a code n
// OR-ed into its mantissa at bit p is exactly M + 2^p n, as long as the field
// stays inside the mantissa's low window (8 of f16's 10 bits, the low byte;
// all 7 of bf16's: bit 7 is already bf16's exponent). So one lop3 with the
// mask of the field at bit p (in both halves) yields two codes at once, and
// fma(v, 2^-p, -M 2^-p) - or sub(v, M) when p = 0, f16 - leaves the pair
// {n_lo, n_hi} exactly. The word shifted right by the window's start gives
// the next window's fields the same way: f16 takes the fields of each byte
// (shifts 0 and 8), bf16 as many as fit in 7 bits (4-bit codes: one field a
// shift, 0, 4, 8, 12). Register r (0 .. 16 / bits) holds, in its low half,
// one field of the word's low half and, in its high half, the field 16 / bits
// places later. bf16 takes the fields in order (register r: field r). f16
// alternates windows (register r: window r % 2, offset p = (r / 2) bits), so
// the two registers of a subtile share p (core::f16FieldBitOffset). Either
// order is a permutation of the field index's bits, the interleave this
// strategy reports, which lb-propagate-layouts folds into the weight layout.
//
// Raw (f16, unsigned codes): the lop3 becomes a plain mask with no magic, and
// nothing is undone. A half with a zero exponent and the code at bit p is the
// subnormal n 2^(p - 24), exact, and the mma multiplies subnormals exactly;
// a kernel that scales its f32 sums folds 2^(24 - p) into the scale.
//
// 8 bits: prmt. prmt(word, 0x64646464, 0x4240) places bytes 0 and 2 under
// f16's 1024 (bytes {q0, 0x64, q2, 0x64}), and 0x4341 bytes 1 and 3; one sub
// each. bf16 has 7 mantissa bits, too few for a byte: prmt(word, 0x4B000000,
// 0x744j) makes the f32 2^23 + q_j, an f32 subtract leaves q_j, and one
// cvt.rn.bf16x2.f32 packs two (exact: |q| < 256 fits bf16's 8 significant
// bits). Registers hold bytes (0, 2) and (1, 3): a rotation. Raw f16: the
// same prmt with zero high bytes, the subnormal q 2^-24, and nothing more.
//
// 3, 5 and 6 bits: two planes (core/layout/WeightLayout.h). Each low-plane
// word decodes as its low width's in-place magic does, with the code's full
// width in the flip and the bias; between the two, one more lop3 places the
// register's high parts above its low fields. highPlaneBit put the high
// parts of a register's two fields at the same bit of both halves of one
// high word, so that word shifted by (that bit - (p + low bits)) lines both
// up at once; the shift's spill across the halves lands outside the mask.
// The whole field stays in the mantissa: p + bits <= 10 in f16 (p <= 4 with
// a 4-bit low plane, <= 6 with a 2-bit one) and <= 7 in bf16 (p = 0, and
// p <= 4 with 3 bits).
//
// Signed codes are two's complement: flipping each code's top bit maps them
// to offset binary (n + 2^(bits-1)), and the bias subtracts that too. For
// lop3 the flip is folded in: ((q ^ X) & m) | M == (q & m) ^ (M | X) for X
// inside m and M disjoint from m, i.e. lut (a & b) ^ c with c = M | X. For
// prmt the word is flipped first (one xor for four codes). A constant offset
// (ternary is 2-bit unsigned with offset -1) folds into the same bias.
#include "passes/DecodeStrategy.h"

#include "core/DecodeFacts.h"
#include "core/FragmentFacts.h"
#include "ir/CoreConversion.h"
#include "ir/LbOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>
#include <map>

using namespace mlir;

namespace lowbit::passes {
namespace {

// (a & b) ^ c evaluated on the lop3 selector bytes a = 0xF0, b = 0xCC, c = 0xAA.
constexpr uint32_t kLutAndXor = (0xF0 & 0xCC) ^ 0xAA;
static_assert(kLutAndXor == 0x6A, "lop3 truth table of (a & b) ^ c");
// (a & b) | c, and c ? a : b.
constexpr uint32_t kLutAndOr = (0xF0 & 0xCC) | 0xAA;
constexpr uint32_t kLutSelect = (0xF0 & 0xAA) | (0xCC & ~0xAA & 0xFF);
static_assert(kLutAndOr == 0xEA && kLutSelect == 0xE4, "lop3 truth tables");

// Bit pattern of a small integer or power of two, exact in both formats.
uint32_t halfBits(double value, bool bf16) {
  if (value == 0)
    return 0;
  uint32_t sign = value < 0 ? 1 : 0;
  double magnitude = std::fabs(value);
  int exponent = static_cast<int>(std::floor(std::log2(magnitude)));
  double fraction = magnitude / std::ldexp(1.0, exponent) - 1.0;
  int mantissaBits = bf16 ? 7 : 10, bias = bf16 ? 127 : 15;
  auto mantissa = static_cast<uint32_t>(std::lround(std::ldexp(fraction, mantissaBits)));
  return (sign << 15) | (static_cast<uint32_t>(exponent + bias) << mantissaBits) | mantissa;
}

uint32_t splat(uint32_t half) { return half | (half << 16); }

// What an integer code's value is: value = raw (offset binary once the sign
// bit is flipped) - bias.
struct IntegerCode {
  int bits = 4;
  bool isSigned = false;
  int offset = 0;
  // Subtracted from the offset-binary raw code to give the value.
  int bias() const { return (isSigned ? 1 << (bits - 1) : 0) - offset; }
};

struct EmitContext {
  OpBuilder &b;
  Location loc;
  bool bf16;

  Value i32(uint32_t v) {
    return b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
  }
  Type element() { return bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type()); }
  Value pair(lb::PairOp op, Value x, uint32_t c1, std::optional<uint32_t> c2) {
    return b.create<lb::PairArithOp>(loc, b.getI32Type(), op, element(), x, i32(c1),
                                     c2 ? i32(*c2) : Value());
  }
  // The two values of a register whose halves hold magic | code << p (see
  // the file comment): one sub.f16x2 when p = 0 (bf16 has only the fma on
  // sm_80), else one fma by 2^-p, removing the magic and the code's bias.
  Value unbias(Value biased, int p, const IntegerCode &code) {
    const double magic = bf16 ? 128 : 1024, scale = std::ldexp(1.0, -p);
    const double bias = magic * scale + code.bias();
    if (p == 0 && !bf16)
      return pair(lb::PairOp::sub, biased, splat(halfBits(bias, bf16)), std::nullopt);
    return pair(lb::PairOp::fma, biased, splat(halfBits(scale, bf16)),
                splat(halfBits(-bias, bf16)));
  }
  Value lop3(Value q, uint32_t mask, uint32_t orXor) { return lop3(q, mask, i32(orXor)); }
  Value lop3(Value q, uint32_t mask, Value orXor) {
    return b.create<lb::Lop3Op>(loc, b.getI32Type(), q, i32(mask), orXor,
                                b.getI32IntegerAttr(kLutAndXor));
  }
};

// Where register r of a word finds its field: the field's index within a
// 16-bit half, the window (the word shifted right by window x the window's
// bits) and the field's bit p in it. bf16 takes fields in order, as many a
// window as fit in 7 bits. f16 alternates its two 8-bit windows, so that a
// subtile's two registers share p (core::f16FieldBitOffset).
struct FieldSlot {
  int field = 0, window = 0, p = 0;
};

FieldSlot fieldOfRegister(int bits, bool bf16, int r) {
  if (bf16) {
    int perWindow = 7 / bits;
    return {r, r / perWindow, (r % perWindow) * bits};
  }
  int perWindow = 8 / bits, window = r % core::kF16Windows;
  int p = core::f16FieldBitOffset(bits, r);
  return {window * perWindow + p / bits, window, p};
}

// 1, 2 or 4 bits (see the file comment).
struct InPlaceMagicEmitter {
  IntegerCode code;
  bool bf16;
  bool raw;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, Value word) const {
    EmitContext c{b, loc, bf16};
    double magic = bf16 ? 128 : 1024;
    uint32_t magicBits = splat(halfBits(magic, bf16));
    uint32_t fieldMask = (1u << code.bits) - 1;
    SmallVector<Value> registers;
    const int registersPerWord = 16 / code.bits;
    const int windowBits = bf16 ? 7 / code.bits * code.bits : 8;
    // The word shifted to each window's start. The order the shifts are made
    // in only changes the emitted text: f16 makes them up front and bf16 at
    // first use, which keeps the 4-bit kernels' CUDA as it was measured.
    SmallVector<Value> shifted;
    auto windowWord = [&](int windowIndex) {
      while (static_cast<int>(shifted.size()) <= windowIndex) {
        int start = static_cast<int>(shifted.size()) * windowBits;
        shifted.push_back(start == 0
                              ? word
                              : b.create<arith::ShRUIOp>(loc, word, c.i32(start)).getResult());
      }
      return shifted[windowIndex];
    };
    if (!bf16)
      windowWord(core::kF16Windows - 1);
    for (int r = 0; r < registersPerWord; ++r) {
      FieldSlot slot = fieldOfRegister(code.bits, bf16, r);
      Value q = windowWord(slot.window);
      uint32_t mask = splat(fieldMask << slot.p);
      if (raw) { // the subnormal code x 2^(p - 24): nothing to undo
        registers.push_back(b.create<arith::AndIOp>(loc, q, c.i32(mask)));
        continue;
      }
      uint32_t flip = code.isSigned ? splat(1u << (slot.p + code.bits - 1)) : 0;
      registers.push_back(c.unbias(c.lop3(q, mask, magicBits | flip), slot.p, code));
    }
    return registers;
  }
};

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

// A unit's high-plane words, each shifted as a register needs it; a shift
// is made once and shared by the registers that need it.
struct HighPlaneWords {
  EmitContext &c;
  ArrayRef<Value> words;
  std::map<std::pair<int, int>, Value> shifted;

  // High word `word` shifted right by `shift` (left when negative).
  Value operator()(int word, int shift) {
    Value &at = shifted[{word, shift}];
    if (!at)
      at = shiftRight(c, words[word], shift);
    return at;
  }
  static Value shiftRight(EmitContext &c, Value source, int shift) {
    if (shift > 0)
      return c.b.create<arith::ShRUIOp>(c.loc, source, c.i32(shift));
    if (shift < 0)
      return c.b.create<arith::ShLIOp>(c.loc, source, c.i32(-shift));
    return source;
  }
};

// 3, 5 and 6 bits in two planes (see the file comment).
struct PlaneMagicEmitter {
  IntegerCode code; // the full width
  bool bf16;
  bool raw;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, ArrayRef<Value> unitWords) const {
    EmitContext c{b, loc, bf16};
    const layout::CodePlanes planes = layout::codePlanes(code.bits);
    const int low = planes.lowBits, lowWords = core::kValuesPerUnit * low / 32;
    const int perWord = 32 / low;
    const uint32_t magicBits = splat(halfBits(bf16 ? 128 : 1024, bf16));
    const int windowBits = bf16 ? 7 / low * low : 8;
    HighPlaneWords highWord{c, unitWords.drop_front(lowWords), {}};
    SmallVector<Value> registers;
    for (int w = 0; w < lowWords; ++w) {
      SmallVector<Value> windows;
      auto windowWord = [&](int index) {
        while (static_cast<int>(windows.size()) <= index) {
          int start = static_cast<int>(windows.size()) * windowBits;
          windows.push_back(start == 0 ? unitWords[w]
                                       : b.create<arith::ShRUIOp>(loc, unitWords[w], c.i32(start))
                                             .getResult());
        }
        return windows[index];
      };
      for (int r = 0; r < perWord / 2; ++r) {
        FieldSlot slot = fieldOfRegister(low, bf16, r);
        const int target = slot.p + low;
        const int source = layout::highPlaneBit(code.bits, w * perWord + slot.field);
        Value high = highWord(source / 32, source % 32 - target);
        const uint32_t lowMask = splat(((1u << low) - 1) << slot.p);
        const uint32_t highMask = splat(((1u << planes.highBits) - 1) << target);
        if (raw) {
          Value lowField = b.create<arith::AndIOp>(loc, windowWord(slot.window), c.i32(lowMask));
          registers.push_back(c.lop3(high, highMask, lowField));
          continue;
        }
        // The flip is the code's top bit, in the high part: set here, the
        // second lop3's xor flips it back where the code has it.
        const uint32_t flip = code.isSigned ? splat(1u << (slot.p + code.bits - 1)) : 0;
        Value lowField = c.lop3(windowWord(slot.window), lowMask, magicBits | flip);
        registers.push_back(c.unbias(c.lop3(high, highMask, lowField), slot.p, code));
      }
    }
    return registers;
  }
};

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

// 8 bits (see the file comment).
struct BytePermuteEmitter {
  IntegerCode code;
  bool bf16;
  bool raw;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, Value word) const {
    EmitContext c{b, loc, bf16};
    Value q = code.isSigned ? b.create<arith::XOrIOp>(loc, word, c.i32(0x80808080u)).getResult()
                            : word;
    // Registers hold bytes (0, 2) and (1, 3).
    constexpr int kBytes[2][2] = {{0, 2}, {1, 3}};
    SmallVector<Value> registers;
    if (!bf16) {
      // Raw: zero high bytes make each half the subnormal code x 2^-24.
      for (const auto &bytes : kBytes) {
        uint32_t selector = bytes[0] | 4u << 4 | bytes[1] << 8 | 4u << 12;
        Value biased =
            b.create<lb::PrmtOp>(loc, b.getI32Type(), q, c.i32(raw ? 0u : 0x64646464u),
                                 b.getI32IntegerAttr(static_cast<int32_t>(selector)));
        registers.push_back(raw ? biased
                                : c.pair(lb::PairOp::sub, biased,
                                         splat(halfBits(1024 + code.bias(), false)),
                                         std::nullopt));
      }
      return registers;
    }
    auto valueOf = [&](int byte) -> Value {
      uint32_t selector = static_cast<uint32_t>(byte) | 4u << 4 | 4u << 8 | 7u << 12;
      Value bits = b.create<lb::PrmtOp>(loc, b.getI32Type(), q, c.i32(0x4B000000u),
                                        b.getI32IntegerAttr(static_cast<int32_t>(selector)));
      Value asFloat = b.create<arith::BitcastOp>(loc, b.getF32Type(), bits);
      Value bias = b.create<arith::ConstantOp>(
          loc, b.getF32FloatAttr(static_cast<float>(8388608.0 + code.bias())));
      return b.create<arith::SubFOp>(loc, asFloat, bias);
    };
    for (const auto &bytes : kBytes) {
      Value lo = valueOf(bytes[0]);
      Value hi = valueOf(bytes[1]);
      registers.push_back(b.create<lb::PackF32PairOp>(loc, b.getI32Type(), lo, hi,
                                                      TypeAttr::get(b.getBF16Type())));
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

// The interleave of a word: elementOf[f] is the element (register e / 2,
// half e % 2) that decodes field f. It must be a bit permutation of the field
// index (checked), which lb-propagate-layouts folds into the weight layout.
Expected<layout::LinearLayout> fieldInterleave(const std::vector<int> &elementOf) {
  int fields = static_cast<int>(elementOf.size());
  int fieldBits = static_cast<int>(std::log2(fields));
  std::vector<std::vector<layout::BitTarget>> targets(1);
  for (int t = 0; t < fieldBits; ++t) {
    int image = elementOf[1 << t];
    if (image == 0 || (image & (image - 1)))
      return makeError("the decode's register order is not a bit permutation");
    targets[0].push_back({"element", static_cast<int>(std::log2(image))});
  }
  for (int f = 0; f < fields; ++f) {
    int linear = 0;
    for (int t = 0; t < fieldBits; ++t)
      if (f >> t & 1)
        linear ^= elementOf[1 << t];
    if (linear != elementOf[f])
      return makeError("the decode's register order is not a bit permutation");
  }
  return layout::LinearLayout::fromBitPermutation({{"field", fieldBits}},
                                                  {{"element", fieldBits}}, targets);
}

// Register r of the integer decodes holds, in its low half, field f of the
// word's low half (element 2 r) and, in its high half, the same field of
// the high half (element 2 r + 1): for bf16 and for 8-bit codes a rotation
// (field bit t -> element bit t + 1, the top field bit -> element bit 0);
// f16's alternating windows also move the window bit below the offset bits.
Expected<layout::LinearLayout> wordInterleave(int bits, bool bf16) {
  int fields = 32 / bits, registers = fields / 2;
  std::vector<int> elementOf(fields);
  for (int r = 0; r < registers; ++r) {
    int field = bits == 8 ? r : fieldOfRegister(bits, bf16, r).field;
    elementOf[field] = 2 * r;
    elementOf[field + registers] = 2 * r + 1;
  }
  return fieldInterleave(elementOf);
}

} // namespace

SmallVector<Value> subtractZeros(OpBuilder &b, Location loc, Type value, ArrayRef<Value> registers,
                                 ValueRange zeros, bool residual) {
  SmallVector<Value> out(registers.begin(), registers.end());
  if (zeros.empty())
    return out;
  size_t perZero = registers.size() / zeros.size();
  for (size_t z = 0; z < zeros.size(); ++z) {
    Value zero = zeros[z];
    SmallVector<Value> pairs = {
        b.create<lb::PackF32PairOp>(loc, b.getI32Type(), zero, zero, TypeAttr::get(value))};
    if (residual) {
      Value rounded = b.create<lb::RoundToOp>(loc, b.getF32Type(), zero, TypeAttr::get(value));
      Value remainder = b.create<arith::SubFOp>(loc, zero, rounded);
      pairs.push_back(b.create<lb::PackF32PairOp>(loc, b.getI32Type(), remainder, remainder,
                                                  TypeAttr::get(value)));
    }
    for (size_t r = z * perZero; r < (z + 1) * perZero; ++r)
      for (Value pair : pairs)
        out[r] = b.create<lb::PairArithOp>(loc, b.getI32Type(), lb::PairOp::sub, value, out[r],
                                           pair, Value());
  }
  return out;
}

// Minifloats and lookup tables: what core/DecodeFacts.h derives from the
// format, or its reason.
static FailureOr<DecodeStrategy>
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

FailureOr<DecodeStrategy>
selectDecodeStrategy(Type codeType, Type value, bool raw,
                     function_ref<InFlightDiagnostic()> emitError) {
  if (isa<lb::MiniFloatType, lb::LutType, Float8E4M3FNType, Float8E5M2Type>(codeType))
    return selectNonIntegerStrategy(codeType, value, raw, emitError);
  IntegerCode code;
  if (auto offsetInt = dyn_cast<lb::OffsetIntType>(codeType)) {
    code = {static_cast<int>(offsetInt.getBits()), false, static_cast<int>(offsetInt.getOffset())};
  } else if (auto integer = dyn_cast<IntegerType>(codeType); integer && !integer.isSignless()) {
    code = {static_cast<int>(integer.getWidth()), integer.isSigned(), 0};
  } else {
    return emitError() << "no decode for " << codeType
                       << " yet (signed, unsigned and offset integers of 1, 2, 4 and 8 bits "
                          "are implemented)";
  }
  const layout::CodePlanes planes = layout::codePlanes(code.bits);
  if (32 % planes.lowBits != 0)
    return emitError() << "no decode for " << codeType
                       << ": a code must not straddle a 32-bit word (1, 2, 4 or 8 bits, or 3, "
                          "5 and 6 in two planes)";
  if (code.isSigned && code.bits == 1)
    return emitError() << "no decode for " << codeType << ": a signed code needs 2 bits";
  if (!value.isF16() && !value.isBF16())
    return emitError() << "integer codes decode to f16 or bf16, not " << value;

  if (raw && (!value.isF16() || code.isSigned || code.offset != 0))
    return emitError() << "a raw decode takes unsigned codes without an offset to f16, not "
                       << codeType << " to " << value;
  // A two-plane code's fields, and so its interleave, are its low plane's.
  Expected<layout::LinearLayout> interleave = wordInterleave(planes.lowBits, value.isBF16());
  if (!interleave.ok())
    return emitError() << "internal: " << interleave.error();
  DecodeStrategy strategy;
  strategy.codesPerWord = 32 / planes.lowBits;
  strategy.interleave = *interleave;
  if (planes.highBits) {
    strategy.emitUnit = PlaneMagicEmitter{code, value.isBF16(), raw};
    return strategy;
  }
  if (code.bits == 8)
    strategy.emit = BytePermuteEmitter{code, value.isBF16(), raw};
  else
    strategy.emit = InPlaceMagicEmitter{code, value.isBF16(), raw};
  return strategy;
}

} // namespace lowbit::passes

// What the decode sequences of passes/DecodeStrategy.cpp (integers) and
// passes/DecodeFloats.cpp (minifloats and tables) share: lop3 truth tables,
// constants in f16/bf16 bits, the builder context, where a register finds
// its field, and a unit's high-plane words. Private to those two files.
#pragma once

#include "passes/DecodeStrategy.h"

#include "core/FragmentFacts.h"
#include "ir/LbOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace lowbit::passes::decode {

using mlir::ArrayRef;
using mlir::Location;
using mlir::OpBuilder;
using mlir::Type;
using mlir::Value;
namespace arith = mlir::arith;

// (a & b) ^ c evaluated on the lop3 selector bytes a = 0xF0, b = 0xCC, c = 0xAA.
constexpr uint32_t kLutAndXor = (0xF0 & 0xCC) ^ 0xAA;
static_assert(kLutAndXor == 0x6A, "lop3 truth table of (a & b) ^ c");
// (a & b) | c, and c ? a : b.
constexpr uint32_t kLutAndOr = (0xF0 & 0xCC) | 0xAA;
constexpr uint32_t kLutSelect = (0xF0 & 0xAA) | (0xCC & ~0xAA & 0xFF);
static_assert(kLutAndOr == 0xEA && kLutSelect == 0xE4, "lop3 truth tables");

// Bit pattern of a small integer or power of two, exact in both formats.
inline uint32_t halfBits(double value, bool bf16) {
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

inline uint32_t splat(uint32_t half) { return half | (half << 16); }

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

inline FieldSlot fieldOfRegister(int bits, bool bf16, int r) {
  if (bf16) {
    int perWindow = 7 / bits;
    return {r, r / perWindow, (r % perWindow) * bits};
  }
  int perWindow = 8 / bits, window = r % core::kF16Windows;
  int p = core::f16FieldBitOffset(bits, r);
  return {window * perWindow + p / bits, window, p};
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

// The interleave of a word: elementOf[f] is the element (register e / 2,
// half e % 2) that decodes field f. It must be a bit permutation of the field
// index (checked), which lb-propagate-layouts folds into the weight layout.
Expected<layout::LinearLayout> fieldInterleave(const std::vector<int> &elementOf);

// The integer decodes' interleave of a word of `bits`-bit fields
// (DecodeStrategy.cpp).
Expected<layout::LinearLayout> wordInterleave(int bits, bool bf16);

// Minifloats and lookup tables: what core/DecodeFacts.h derives from the
// format, or its reason (DecodeFloats.cpp).
mlir::FailureOr<DecodeStrategy>
selectNonIntegerStrategy(Type codeType, Type value, bool raw,
                         llvm::function_ref<mlir::InFlightDiagnostic()> emitError);

} // namespace lowbit::passes::decode

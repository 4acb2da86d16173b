// 4-bit integers to f16x2 / bf16x2 with lop3 and magic numbers.
//
// f16: 0x6400 is 1024.0, whose mantissa counts in units of 1, so OR-ing a
// code n into the low mantissa bits gives exactly 1024 + n. One lop3 with the
// mask 0x000F000F does this for the codes in bits [0, 4) and [16, 20) at once,
// one per half; subtracting 1024 (sub.f16x2) leaves the pair {n0, n4}. The
// codes in bits [4, 8) and [20, 24) are used in place (mask 0x00F000F0):
// they are worth 16 each, so fma(v, 1/16, -64) recovers them. The word shifted
// right by 8 gives the other four codes the same way: 4 lop3, 1 shift, 2 sub,
// 2 fma for 8 codes. Register j thus holds the codes of fields j and j + 4,
// which is the interleave this strategy reports: field i holds element
// 2 (i mod 4) + i / 4.
//
// bf16 has 7 mantissa bits, so only the low field of each half fits under
// 0x4300 (128.0): each register comes from the word shifted by 4j, and
// fma.rn.bf16x2(v, 1, -128) removes the magic (sub.bf16x2 needs sm_90; the
// fma is legal on sm_80). Same interleave.
//
// Signed codes are two's complement: flipping each code's top bit maps them
// to offset binary (n + 8), so the decode subtracts 8 more, and the flip is
// folded into the lop3: ((q ^ X) & m) | M == (q & m) ^ (M | X) for X inside
// m and M disjoint from m, i.e. lut (a & b) ^ c with c = M | X.
#include "passes/DecodeStrategy.h"

#include "ir/LbOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <cmath>

using namespace mlir;

namespace lowbit::passes {
namespace {

// (a & b) ^ c evaluated on the lop3 selector bytes a = 0xF0, b = 0xCC, c = 0xAA.
constexpr uint32_t kLutAndXor = (0xF0 & 0xCC) ^ 0xAA;
static_assert(kLutAndXor == 0x6A, "lop3 truth table of (a & b) ^ c");

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

struct Int4Emitter {
  bool bf16;
  bool isSigned;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, Value word) const {
    auto i32 = [&](uint32_t v) -> Value {
      return b.create<arith::ConstantOp>(loc, b.getI32IntegerAttr(static_cast<int32_t>(v)));
    };
    Type element = bf16 ? Type(b.getBF16Type()) : Type(b.getF16Type());
    auto pair = [&](lb::PairOp op, Value x, uint32_t c1, std::optional<uint32_t> c2) {
      return b.create<lb::PairArithOp>(loc, b.getI32Type(), op, element, x, i32(c1),
                                       c2 ? i32(*c2) : Value());
    };
    auto lop3 = [&](Value q, uint32_t mask, uint32_t orXor) {
      return b.create<lb::Lop3Op>(loc, b.getI32Type(), q, i32(mask), i32(orXor),
                                  b.getI32IntegerAttr(kLutAndXor));
    };
    int bias = isSigned ? 8 : 0;
    uint32_t flipLow = isSigned ? 0x00080008u : 0, flipHigh = isSigned ? 0x00800080u : 0;
    SmallVector<Value> registers;
    if (!bf16) {
      uint32_t magic = splat(halfBits(1024, false));
      Value high = b.create<arith::ShRUIOp>(loc, word, i32(8));
      for (Value q : {word, high}) {
        registers.push_back(pair(lb::PairOp::sub, lop3(q, 0x000F000Fu, magic | flipLow),
                                 splat(halfBits(1024 + bias, false)), std::nullopt));
        registers.push_back(pair(lb::PairOp::fma, lop3(q, 0x00F000F0u, magic | flipHigh),
                                 splat(halfBits(1.0 / 16, false)),
                                 splat(halfBits(-(64 + bias), false))));
      }
      // Order: fields (0,4), (1,5), (2,6), (3,7).
      return {registers[0], registers[1], registers[2], registers[3]};
    }
    uint32_t magic = splat(halfBits(128, true));
    for (int j = 0; j < 4; ++j) {
      Value q = j == 0 ? word : b.create<arith::ShRUIOp>(loc, word, i32(4 * j)).getResult();
      registers.push_back(pair(lb::PairOp::fma, lop3(q, 0x000F000Fu, magic | flipLow),
                               splat(halfBits(1, true)), splat(halfBits(-(128 + bias), true))));
    }
    return registers;
  }
};

} // namespace

FailureOr<DecodeStrategy>
selectDecodeStrategy(Type code, Type value, function_ref<InFlightDiagnostic()> emitError) {
  auto integer = dyn_cast<IntegerType>(code);
  if (!integer || integer.getWidth() != 4 || integer.isSignless())
    return emitError() << "no decode for " << code
                       << " yet (ui4 and si4 are implemented)";
  if (!value.isF16() && !value.isBF16())
    return emitError() << "4-bit codes decode to f16 or bf16, not " << value;

  // field i -> element 2 (i mod 4) + i / 4: bit 0 -> bit 1, bit 1 -> bit 2,
  // bit 2 -> bit 0 (a rotation of the 3-bit index).
  Expected<layout::LinearLayout> interleave = layout::LinearLayout::fromBitPermutation(
      {{"field", 3}}, {{"element", 3}},
      {{{"element", 1}, {"element", 2}, {"element", 0}}});
  if (!interleave.ok())
    return emitError() << "internal: " << interleave.error();
  DecodeStrategy strategy;
  strategy.codesPerWord = 8;
  strategy.interleave = *interleave;
  strategy.emit = Int4Emitter{value.isBF16(), integer.isSigned()};
  return strategy;
}

} // namespace lowbit::passes

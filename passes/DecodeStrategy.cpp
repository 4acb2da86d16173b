// Integer codes to f16x2 / bf16x2 registers with lop3, prmt and magic
// numbers: one sequence per word, derived from the code's width, signedness
// and offset; no sequence is written per format name. Minifloats and tables
// are in passes/DecodeFloats.cpp.
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
//
// To s8 (i8 values, the integer tensor cores): no float at all. Each code's
// field goes to the top of a byte and unsigned codes flip the byte's top bit
// (IntegerToS8Emitter below; the scale and centre are core::s8Decode's).
#include "passes/DecodeEmit.h"

#include "core/DecodeFacts.h"
#include "ir/CoreConversion.h"

using namespace mlir;

namespace lowbit::passes {
namespace decode {
namespace {

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

// Integer codes to s8 bytes (core::s8Decode): 8-bit codes are the bytes
// themselves, unsigned ones re-centred by flipping each byte's top bit (one
// xor). 4-bit codes: masking the word with 0xF0F0F0F0 leaves the odd nibbles
// at the tops of the bytes (16·n as s8 for a signed n), and the word shifted
// left by 4 under the same mask the even ones; unsigned codes fold the top-bit
// flip into the same lop3, (a & b) ^ c. Register 0 holds the even fields, so
// field f is element 4·(f & 1) + f / 2: a bit rotation of the field index.
// 2-bit codes: byte b holds fields 4b .. 4b + 3, so the word shifted left by
// 6 - 2j under 0xC0C0C0C0 leaves field 4b + j at the top of byte b: register
// j byte b, element 4j + b, swapping the field index's two 2-bit halves.
// 1-bit codes likewise: shifted left by 7 - j under 0x80808080, field 8b + j
// is register j byte b, element 4j + b (a rotation of the field index).
struct IntegerToS8Emitter {
  IntegerCode code;

  SmallVector<Value> operator()(OpBuilder &b, Location loc, Value word) const {
    EmitContext c{b, loc, false};
    const uint32_t flip = code.isSigned ? 0u : 0x80808080u;
    if (code.bits == 8)
      return {code.isSigned ? word : b.create<arith::XOrIOp>(loc, word, c.i32(flip)).getResult()};
    const uint32_t fieldTops = code.bits == 4   ? 0xF0F0F0F0u
                               : code.bits == 2 ? 0xC0C0C0C0u
                                                : 0x80808080u;
    auto top = [&](Value source) -> Value {
      return b.create<lb::Lop3Op>(loc, b.getI32Type(), source, c.i32(fieldTops), c.i32(flip),
                                  b.getI32IntegerAttr(kLutAndXor));
    };
    auto shifted = [&](int by) -> Value {
      return by ? b.create<arith::ShLIOp>(loc, word, c.i32(by)).getResult() : word;
    };
    if (code.bits == 4)
      return {top(shifted(4)), top(word)};
    SmallVector<Value> registers;
    const int fieldsPerByte = 8 / code.bits;
    for (int j = 0; j < fieldsPerByte; ++j)
      registers.push_back(top(shifted(8 - code.bits * (j + 1))));
    return registers;
  }
};

} // namespace

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


} // namespace decode

using namespace decode;

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

namespace {

// The bytes IntegerToS8Emitter makes of `code`'s fields, in its order.
FailureOr<DecodeStrategy> byteStrategy(const IntegerCode &code,
                                       function_ref<InFlightDiagnostic()> emitError) {
  const int fields = 32 / code.bits;
  std::vector<int> elementOf(fields);
  for (int f = 0; f < fields; ++f)
    elementOf[f] = code.bits == 8   ? f
                   : code.bits == 4 ? 4 * (f & 1) + f / 2
                   : code.bits == 2 ? 4 * (f % 4) + f / 4
                                    : 4 * (f % 8) + f / 8;
  Expected<layout::LinearLayout> interleave = fieldInterleave(elementOf);
  if (!interleave)
    return emitError() << "internal: " << interleave.error();
  DecodeStrategy strategy;
  strategy.codesPerWord = fields;
  strategy.interleave = *interleave;
  strategy.emit = IntegerToS8Emitter{code};
  return strategy;
}

// The s8 bytes of 8-, 4-, 2- and 1-bit integer codes; which codes qualify is core's
// answer (core::s8Decode), asked of the code type's format.
FailureOr<DecodeStrategy> selectS8Strategy(Type codeType, const IntegerCode &code, bool raw,
                                           function_ref<InFlightDiagnostic()> emitError) {
  if (raw)
    return emitError() << "a raw decode is to f16, not to s8";
  Expected<formats::DataFormat> format = lb::dataFormat(codeType);
  if (!format)
    return emitError() << format.error();
  if (Expected<core::S8Decode> s8 = core::s8Decode(*format); !s8)
    return emitError() << s8.error();
  return byteStrategy(code, emitError);
}

} // namespace

FailureOr<DecodeStrategy>
selectDecodeStrategy(Type codeType, Type value, bool raw,
                     function_ref<InFlightDiagnostic()> emitError) {
  // e4m3fn codes meet e4m3 activations as the bytes they are (the fp8 mma
  // takes both operands as e4m3): each word is its own register, as int8's.
  if (Expected<formats::DataFormat> format = lb::dataFormat(codeType);
      value.isInteger(8) && format && *format == formats::DataFormat::e4m3fn()) {
    if (raw)
      return emitError() << "a raw decode is to f16, not to e4m3 bytes";
    return byteStrategy(IntegerCode{8, /*isSigned=*/true, 0}, emitError);
  }
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
  if (value.isInteger(8))
    return selectS8Strategy(codeType, code, raw, emitError);
  if (!value.isF16() && !value.isBF16())
    return emitError() << "integer codes decode to f16, bf16 or s8 (i8), not " << value;

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


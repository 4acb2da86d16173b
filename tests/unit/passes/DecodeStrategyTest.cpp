// Exhaustive decode of every code of every integer width, minifloat and
// lookup table, on the CPU: the
// bit-level sequence lb-lower-decode emits (passes/DecodeStrategy.cpp) is
// interpreted op by op, with f16x2/bf16x2 arithmetic modelled exactly
// (HostHalf.h), on words that put every code in every field, and each decoded
// element is compared with the formats library's decode of the code in the
// field the strategy's interleave names. Raw decodes (unsigned codes to f16)
// must leave the code times 2^(p - 24), p the offset core's fragment facts
// give the register's subtile, which the kernels fold into their scales.
#include "passes/DecodeStrategy.h"

#include "core/DecodeFacts.h"
#include "core/FragmentFacts.h"
#include "core/layout/WeightLayout.h"
#include "ir/CoreConversion.h"
#include "core/formats/DataFormat.h"
#include "ir/LbDialect.h"
#include "ir/LbOps.h"
#include "tests/unit/codegen/device/HostHalf.h"
#include "tests/unit/passes/PairInterpreter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <map>

namespace lowbit {
namespace {

using testing::Interpreter;
using testing::half::Fp16Kind;

struct Case {
  const char *format; // formats library name
  int bits;
  bool isSigned;
  bool bf16;
  bool raw = false;
};

std::string caseName(const ::testing::TestParamInfo<Case> &info) {
  std::string name = info.param.format;
  for (char &ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)))
      ch = '_';
  return name + (info.param.bf16 ? "_bf16" : "_f16") + (info.param.raw ? "_raw" : "");
}

// A function of one i32 (the loaded word) with the builder at its start.
// The module is owned, so that every return (an ASSERT's too) erases it: a
// bare ModuleOp leaked its operations (LeakSanitizer, scripts/sanitize.sh).
struct DecodeFunction {
  DecodeFunction() : b(&context), loc(mlir::UnknownLoc::get(&context)) {
    context.loadDialect<lb::LbDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect>();
    module = mlir::ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    func = b.create<mlir::func::FuncOp>(loc, "decode", b.getFunctionType({b.getI32Type()}, {}));
    entry = func.addEntryBlock();
    b.setInsertionPointToStart(entry);
  }
  mlir::MLIRContext context;
  mlir::OpBuilder b;
  mlir::Location loc;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp func;
  mlir::Block *entry = nullptr;
};

class DecodeStrategy : public ::testing::TestWithParam<Case> {};

TEST_P(DecodeStrategy, EveryCodeInEveryFieldDecodesExactly) {
  const Case c = GetParam();
  DecodeFunction f;
  mlir::MLIRContext &context = f.context;
  mlir::OpBuilder &b = f.b;
  mlir::Location loc = f.loc;
  mlir::func::FuncOp func = f.func;
  mlir::Block *entry = f.entry;

  Expected<formats::DataFormat> format = formats::parseFormat(c.format);
  ASSERT_TRUE(format.ok()) << format.error();
  ASSERT_EQ(format->bits(), c.bits);
  Expected<mlir::Type> code = lb::codeType(context, *format);
  ASSERT_TRUE(code.ok()) << code.error();
  mlir::Type value = c.bf16 ? mlir::Type(b.getBF16Type()) : mlir::Type(b.getF16Type());
  mlir::FailureOr<passes::DecodeStrategy> strategy =
      passes::selectDecodeStrategy(*code, value, c.raw, [&] { return func.emitError(); });
  ASSERT_TRUE(mlir::succeeded(strategy));
  ASSERT_EQ(strategy->codesPerWord, 32 / c.bits);
  llvm::SmallVector<mlir::Value> registers = strategy->emit(b, loc, entry->getArgument(0));
  ASSERT_EQ(static_cast<int>(registers.size()), strategy->codesPerWord / 2);

  Fp16Kind kind = c.bf16 ? Fp16Kind::BF16 : Fp16Kind::F16;
  const int perWord = strategy->codesPerWord, codes = 1 << c.bits;
  // Word w holds code (w + field) mod 2^bits in each field, so over 2^bits
  // words every code visits every field.
  for (int w = 0; w < codes; ++w) {
    uint32_t word = 0;
    for (int field = 0; field < perWord; ++field)
      word |= static_cast<uint32_t>((w + field) % codes) << (c.bits * field);
    Interpreter interpreter(kind);
    interpreter.bind(entry->getArgument(0), word);
    for (mlir::Operation &op : entry->getOperations())
      interpreter.run(op);
    for (int field = 0; field < perWord; ++field) {
      // The interleave names the element (register 2 j + half) of each field.
      std::vector<uint32_t> at = strategy->interleave.apply({static_cast<uint32_t>(field)});
      ASSERT_EQ(at.size(), 1u);
      uint32_t element = at[0];
      uint32_t reg = interpreter.get(registers[element / 2]);
      double decoded = testing::half::toDouble(kind, (reg >> (16 * (element % 2))) & 0xFFFF);
      uint32_t q = static_cast<uint32_t>((w + field) % codes);
      if (!core::isWeightCode(*format, q)) // ternary's 3, NaN and Inf are never stored
        continue;
      double expected = format->decode(q);
      if (format->asLut()) // the table's entries rounded to the activation type
        expected = testing::half::toDouble(kind, testing::half::fromDouble(kind, expected));
      if (c.raw && format->asFloat())
        expected = std::ldexp(expected, -core::minifloatDecode(*format, core::Activation::F16)
                                             ->scaleExponent);
      else if (c.raw)
        expected = std::ldexp(expected, core::f16FieldBitOffset(c.bits, element / 2) - 24);
      ASSERT_EQ(decoded, expected)
          << c.format << " code " << q << " in field " << field << " (element " << element << ")";
      ASSERT_EQ(std::signbit(decoded), std::signbit(expected))
          << c.format << " code " << q << " in field " << field << " (element " << element << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Widths, DecodeStrategy,
    ::testing::Values(Case{"uint1", 1, false, false}, Case{"uint1", 1, false, true},
                      Case{"uint2", 2, false, false}, Case{"uint2", 2, false, true},
                      Case{"int2", 2, true, false}, Case{"int2", 2, true, true},
                      Case{"uint4", 4, false, false}, Case{"uint4", 4, false, true},
                      Case{"int4", 4, true, false}, Case{"int4", 4, true, true},
                      Case{"uint8", 8, false, false}, Case{"uint8", 8, false, true},
                      Case{"int8", 8, true, false}, Case{"int8", 8, true, true},
                      Case{"ternary", 2, false, false}, Case{"ternary", 2, false, true},
                      Case{"int<4,unsigned,-8>", 4, false, false},
                      Case{"int<4,unsigned,-8>", 4, false, true},
                      Case{"uint1", 1, false, false, true}, Case{"uint2", 2, false, false, true},
                      Case{"uint4", 4, false, false, true},
                      Case{"uint8", 8, false, false, true}),
    caseName);

// Minifloats and lookup tables, from their parameters: every finite code in
// every field, to f16 and bf16.
INSTANTIATE_TEST_SUITE_P(
    Floats, DecodeStrategy,
    ::testing::Values(Case{"e2m1", 4, true, false}, Case{"e2m1", 4, true, true},
                      Case{"e4m3fn", 8, true, false}, Case{"e4m3fn", 8, true, true},
                      Case{"e5m2", 8, true, false}, Case{"e5m2", 8, true, true},
                      Case{"float<3,0,3>", 4, true, false}, Case{"float<2,2,1,unsigned>", 4,
                                                                         false, true},
                      Case{"float<4,4,7,unsigned>", 8, false, false},
                      Case{"float<1,0,0>", 2, true, false}, Case{"nf4", 4, true, false},
                      Case{"nf4", 4, true, true}, Case{"fp4", 4, true, false},
                      Case{"e2m1", 4, true, false, true}, Case{"e4m3fn", 8, true, false, true},
                      Case{"e5m2", 8, true, false, true},
                      Case{"lut<4,[-7,-6,-5,-4,-3,-2,-1,0,1,2,3,4,5,6,7,0.1]>", 4, true, true}),
    caseName);

// To s8 bytes: every code in every field becomes 2^shift · (v − centre), the
// byte the interleave names, with core::s8Decode's shift and centre.
class S8Decode : public ::testing::TestWithParam<const char *> {};

TEST_P(S8Decode, EveryCodeInEveryFieldIsItsCentredByte) {
  DecodeFunction f;

  Expected<formats::DataFormat> format = formats::parseFormat(GetParam());
  ASSERT_TRUE(format.ok()) << format.error();
  Expected<core::S8Decode> s8 = core::s8Decode(*format);
  ASSERT_TRUE(s8.ok()) << s8.error();
  Expected<mlir::Type> code = lb::codeType(f.context, *format);
  ASSERT_TRUE(code.ok()) << code.error();
  mlir::FailureOr<passes::DecodeStrategy> strategy = passes::selectDecodeStrategy(
      *code, f.b.getIntegerType(8), false, [&] { return f.func.emitError(); });
  ASSERT_TRUE(mlir::succeeded(strategy));
  const int bits = format->bits(), perWord = 32 / bits, codes = 1 << bits;
  ASSERT_EQ(strategy->codesPerWord, perWord);
  llvm::SmallVector<mlir::Value> registers = strategy->emit(f.b, f.loc, f.entry->getArgument(0));
  ASSERT_EQ(static_cast<int>(registers.size()), perWord / 4);
  for (int w = 0; w < codes; ++w) {
    uint32_t word = 0;
    for (int field = 0; field < perWord; ++field)
      word |= static_cast<uint32_t>((w + field) % codes) << (bits * field);
    Interpreter interpreter(Fp16Kind::F16);
    interpreter.bind(f.entry->getArgument(0), word);
    for (mlir::Operation &op : f.entry->getOperations())
      interpreter.run(op);
    for (int field = 0; field < perWord; ++field) {
      uint32_t element = strategy->interleave.apply({static_cast<uint32_t>(field)})[0];
      uint32_t reg = interpreter.get(registers[element / 4]);
      int byte = static_cast<int8_t>((reg >> (8 * (element % 4))) & 0xFF);
      uint32_t q = static_cast<uint32_t>((w + field) % codes);
      // Ternary's code 3 is no weight (core::isWeightCode).
      if (!core::isWeightCode(*format, q))
        continue;
      double expected = std::ldexp(format->decode(q) - s8->centre, s8->shift);
      ASSERT_EQ(byte, expected) << GetParam() << " code " << q << " in field " << field;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Widths, S8Decode,
                         ::testing::Values("int8", "uint8", "int4", "uint4",
                                           "int<4,unsigned,-8>", "int<8,unsigned,-128>", "int2",
                                           "uint2", "ternary", "uint1"),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           std::string name = info.param;
                           for (char &ch : name)
                             if (!std::isalnum(static_cast<unsigned char>(ch)))
                               ch = '_';
                           return name;
                         });

// Two-plane codes (3, 5 and 6 bits) decode a unit at a time: its low-plane
// words and its high-plane words, every code in every position of the unit
// (code (w + o) mod 2^bits at unit offset o in round w), its low part in the
// low word's field and its high part where layout::highPlaneBit puts it.
class PlaneDecode : public ::testing::TestWithParam<Case> {};

TEST_P(PlaneDecode, EveryCodeInEveryPositionDecodesExactly) {
  const Case c = GetParam();
  mlir::MLIRContext context;
  context.loadDialect<lb::LbDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect>();
  mlir::OpBuilder b(&context);
  mlir::Location loc = b.getUnknownLoc();
  mlir::OwningOpRef<mlir::ModuleOp> module = mlir::ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Expected<formats::DataFormat> format = formats::parseFormat(c.format);
  ASSERT_TRUE(format.ok()) << format.error();
  ASSERT_EQ(format->bits(), c.bits);
  const layout::CodePlanes planes = layout::codePlanes(c.bits);
  ASSERT_GT(planes.highBits, 0);
  const int lowWords = planes.lowBits, words = c.bits, perWord = 32 / planes.lowBits;
  auto func = b.create<mlir::func::FuncOp>(
      loc, "decode",
      b.getFunctionType(llvm::SmallVector<mlir::Type>(words, b.getI32Type()), {}));
  mlir::Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Expected<mlir::Type> code = lb::codeType(context, *format);
  ASSERT_TRUE(code.ok()) << code.error();
  mlir::Type value = c.bf16 ? mlir::Type(b.getBF16Type()) : mlir::Type(b.getF16Type());
  mlir::FailureOr<passes::DecodeStrategy> strategy =
      passes::selectDecodeStrategy(*code, value, c.raw, [&] { return func.emitError(); });
  ASSERT_TRUE(mlir::succeeded(strategy));
  ASSERT_FALSE(strategy->emit) << "two-plane words do not decode alone";
  ASSERT_EQ(strategy->codesPerWord, perWord);
  llvm::SmallVector<mlir::Value> unitWords(entry->getArguments().begin(),
                                           entry->getArguments().end());
  llvm::SmallVector<mlir::Value> registers = strategy->emitUnit(b, loc, unitWords);
  ASSERT_EQ(static_cast<int>(registers.size()), core::kValuesPerUnit / 2);

  Fp16Kind kind = c.bf16 ? Fp16Kind::BF16 : Fp16Kind::F16;
  const int codes = 1 << c.bits;
  for (int round = 0; round < codes; ++round) {
    std::vector<uint32_t> unit(static_cast<size_t>(words), 0);
    for (int o = 0; o < core::kValuesPerUnit; ++o) {
      uint32_t q = static_cast<uint32_t>((round + o) % codes);
      unit[static_cast<size_t>(o / perWord)] |=
          (q & ((1u << planes.lowBits) - 1)) << (planes.lowBits * (o % perWord));
      int bit = layout::highPlaneBit(c.bits, o);
      unit[static_cast<size_t>(lowWords + bit / 32)] |= (q >> planes.lowBits) << (bit % 32);
    }
    Interpreter interpreter(kind);
    for (int w = 0; w < words; ++w)
      interpreter.bind(entry->getArgument(static_cast<unsigned>(w)), unit[static_cast<size_t>(w)]);
    for (mlir::Operation &op : entry->getOperations())
      interpreter.run(op);
    for (int o = 0; o < core::kValuesPerUnit; ++o) {
      std::vector<uint32_t> at =
          strategy->interleave.apply({static_cast<uint32_t>(o % perWord)});
      ASSERT_EQ(at.size(), 1u);
      int element = perWord * (o / perWord) + static_cast<int>(at[0]);
      uint32_t reg = interpreter.get(registers[static_cast<size_t>(element / 2)]);
      double decoded = testing::half::toDouble(kind, (reg >> (16 * (element % 2))) & 0xFFFF);
      uint32_t q = static_cast<uint32_t>((round + o) % codes);
      double expected = format->decode(q);
      if (c.raw && format->asFloat())
        expected = std::ldexp(expected, -core::minifloatDecode(*format, core::Activation::F16)
                                             ->scaleExponent);
      else if (c.raw)
        expected = std::ldexp(
            expected, core::f16FieldBitOffset(planes.lowBits, (element % perWord) / 2) - 24);
      ASSERT_EQ(decoded, expected)
          << c.format << " code " << q << " at unit offset " << o << " (element " << element
          << ")";
      ASSERT_EQ(std::signbit(decoded), std::signbit(expected))
          << c.format << " code " << q << " at unit offset " << o << " (element " << element
          << ")";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Planes, PlaneDecode,
    ::testing::Values(Case{"uint3", 3, false, false}, Case{"uint3", 3, false, true},
                      Case{"int3", 3, true, false}, Case{"int3", 3, true, true},
                      Case{"uint5", 5, false, false}, Case{"uint5", 5, false, true},
                      Case{"int5", 5, true, false}, Case{"int5", 5, true, true},
                      Case{"uint6", 6, false, false}, Case{"uint6", 6, false, true},
                      Case{"int6", 6, true, false}, Case{"int6", 6, true, true},
                      Case{"int<6,unsigned,-32>", 6, false, false},
                      Case{"int<6,unsigned,-32>", 6, false, true},
                      Case{"uint3", 3, false, false, true}, Case{"uint5", 5, false, false, true},
                      Case{"uint6", 6, false, false, true}),
    caseName);

// fp6 and other minifloats of 3, 5 and 6 bits, from their parameters, in
// the same two planes: every code (both zeros, subnormals, the extremes) in
// every position.
INSTANTIATE_TEST_SUITE_P(
    FloatPlanes, PlaneDecode,
    ::testing::Values(Case{"e2m3", 6, true, false}, Case{"e2m3", 6, true, true},
                      Case{"e3m2", 6, true, false}, Case{"e3m2", 6, true, true},
                      Case{"e2m3", 6, true, false, true}, Case{"e3m2", 6, true, false, true},
                      Case{"float<2,2,1>", 5, true, false}, Case{"float<2,2,1>", 5, true, true},
                      Case{"float<1,1,0>", 3, true, false},
                      Case{"float<3,2,3,unsigned>", 5, false, true}),
    caseName);

// The builders scale a raw subtile by one factor: both of its registers
// must sit at the offset rawSubtileBitOffset reports, for every width.
TEST(RawDecode, SubtileRegistersShareTheirBitOffset) {
  for (int bits : {1, 2, 3, 4, 5, 6, 8}) {
    core::CodeFragment fragment{bits};
    int registersPerWord = fragment.codesPerWord() / 2;
    for (int s = 0; s < core::kSubtilesPerUnit; ++s)
      for (int r = 0; r < core::kRegistersPerSubtile; ++r) {
        int inWord = (s * core::kRegistersPerSubtile + r) % registersPerWord;
        EXPECT_EQ(core::f16FieldBitOffset(fragment.planes().lowBits, inWord),
                  core::rawSubtileBitOffset(fragment, s))
            << bits << "-bit subtile " << s << " register " << r;
      }
  }
}

// Refusals, with the diagnostic they emitted.
class DecodeStrategyErrors : public ::testing::Test {
protected:
  DecodeStrategyErrors() : b(&context) {
    context.loadDialect<lb::LbDialect>();
    module = mlir::ModuleOp::create(b.getUnknownLoc());
    context.getDiagEngine().registerHandler([&](mlir::Diagnostic &d) { message = d.str(); });
  }
  ~DecodeStrategyErrors() override { module.erase(); }

  // Whether selecting a decode fails, leaving its diagnostic in `message`.
  bool refused(mlir::Type code, mlir::Type value, bool raw) {
    message.clear();
    return mlir::failed(
        passes::selectDecodeStrategy(code, value, raw, [&] { return module.emitError(); }));
  }

  mlir::MLIRContext context;
  mlir::OpBuilder b;
  mlir::ModuleOp module;
  std::string message;
};

TEST_F(DecodeStrategyErrors, RawNeedsUnsignedCodesAndF16) {
  mlir::Type ui4 = mlir::IntegerType::get(&context, 4, mlir::IntegerType::Unsigned);
  mlir::Type si4 = mlir::IntegerType::get(&context, 4, mlir::IntegerType::Signed);
  mlir::Type ternary = lb::OffsetIntType::get(&context, 2, -1, true);
  auto fails = [&](mlir::Type code, mlir::Type value) {
    return refused(code, value, true) && message.find("raw decode") != std::string::npos;
  };
  EXPECT_TRUE(fails(ui4, b.getBF16Type())) << message;
  EXPECT_TRUE(fails(si4, b.getF16Type())) << message;
  EXPECT_TRUE(fails(ternary, b.getF16Type())) << message;
}

TEST_F(DecodeStrategyErrors, MinifloatsWithoutAnExactDecodeSayWhy) {
  auto refusedFormat = [&](const char *text, mlir::Type value) {
    Expected<formats::DataFormat> format = formats::parseFormat(text);
    EXPECT_TRUE(format.ok()) << text;
    Expected<mlir::Type> code = lb::codeType(context, *format);
    EXPECT_TRUE(code.ok()) << text << ": " << (code.ok() ? "" : code.error());
    return code.ok() && refused(*code, value, false);
  };
  // e8m0 has 8 exponent bits (f16 has 5); fp6 comes in two planes, but a
  // 7-bit minifloat has none.
  EXPECT_TRUE(refusedFormat("e8m0", b.getF16Type()));
  EXPECT_NE(message.find("no exact decode of e8m0 to f16"), std::string::npos) << message;
  EXPECT_FALSE(refusedFormat("e3m2", b.getF16Type())) << message;
  EXPECT_TRUE(refusedFormat("float<3,3,3>", b.getF16Type()));
  EXPECT_NE(message.find("straddle"), std::string::npos) << message;
  // Values below f16's subnormals.
  EXPECT_TRUE(refusedFormat("float<5,2,30>", b.getF16Type()));
  EXPECT_NE(message.find("not"), std::string::npos) << message;
  EXPECT_FALSE(refusedFormat("e4m3fn", b.getBF16Type())) << message;
  EXPECT_TRUE(refusedFormat("e2m1", b.getF32Type()));
  EXPECT_TRUE(refusedFormat("nf4", b.getF16Type()) == false) << message;
  // Raw minifloats are f16 only; tables have no raw decode.
  Expected<formats::DataFormat> e2m1 = formats::parseFormat("e2m1");
  EXPECT_TRUE(refused(*lb::codeType(context, *e2m1), b.getBF16Type(), /*raw=*/true));
  EXPECT_NE(message.find("raw decode"), std::string::npos) << message;
  EXPECT_FALSE(refused(*lb::codeType(context, *e2m1), b.getF16Type(), /*raw=*/true)) << message;
  EXPECT_TRUE(refused(*lb::codeType(context, formats::DataFormat::nf4()), b.getF16Type(), true));
  EXPECT_NE(message.find("raw decode"), std::string::npos) << message;
}

TEST_F(DecodeStrategyErrors, TablesGivenAtRunTimeHaveNoDecode) {
  EXPECT_TRUE(refused(lb::LutType::get(&context, 4, nullptr), b.getF16Type(), false));
  EXPECT_NE(message.find("run time"), std::string::npos) << message;
}

TEST_F(DecodeStrategyErrors, S8TakesEightFourTwoAndOneBitIntegersWithoutRaw) {
  mlir::Type i8 = b.getIntegerType(8);
  mlir::Type ui1 = mlir::IntegerType::get(&context, 1, mlir::IntegerType::Unsigned);
  mlir::Type ui2 = mlir::IntegerType::get(&context, 2, mlir::IntegerType::Unsigned);
  mlir::Type ui3 = mlir::IntegerType::get(&context, 3, mlir::IntegerType::Unsigned);
  mlir::Type ui4 = mlir::IntegerType::get(&context, 4, mlir::IntegerType::Unsigned);
  mlir::Type ternary = lb::OffsetIntType::get(&context, 2, -1, true);
  EXPECT_TRUE(refused(ui3, i8, false));
  EXPECT_NE(message.find("8-, 4-, 2- and 1-bit codes decode to s8"), std::string::npos)
      << message;
  EXPECT_TRUE(refused(ui4, i8, true));
  EXPECT_NE(message.find("raw decode is to f16"), std::string::npos) << message;
  for (mlir::Type code : {ui1, ui2, ui4, ternary})
    EXPECT_FALSE(refused(code, i8, false)) << message;
}

TEST_F(DecodeStrategyErrors, WidthsWithoutADecodeSayWhy) {
  mlir::Type ui7 = mlir::IntegerType::get(&context, 7, mlir::IntegerType::Unsigned);
  EXPECT_TRUE(refused(ui7, b.getF16Type(), false));
  EXPECT_NE(message.find("straddle"), std::string::npos) << message;
}

} // namespace
} // namespace lowbit

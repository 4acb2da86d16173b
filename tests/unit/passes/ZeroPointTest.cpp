// Zero points on the CPU: lb-lower-decode's sequence for lb.decode ... minus
// (the strategy's decode, then subtractZeros) is interpreted op by op with
// f16x2 / bf16x2 arithmetic modelled exactly (PairInterpreter.h).
//  * Every code of every width minus integer zeros (uint4 and uint8 zero
//    codes, and the sub_code zeros a quantizer stores) is exact: q - z.
//  * Zeros the value type cannot hold (f32 zeros, `residual`) lose only the
//    rounding of q - z, not the rounding of z.
//  * The H200 failure of bf16.uint4.ch.sub_code.4096x4096 (relative error
//    1.0-1.7e-2 against 1e-2 in every family): with the kernels' weights and
//    the GPU test's activations, the interpreted (q - z) then · s is well
//    inside the tolerance, and the fold it replaced, q·s + (-z·s) with -z·s
//    rounded to bf16, is not.
#include "passes/DecodeStrategy.h"

#include "compiler/measure/ProblemInputs.h"
#include "core/formats/DataFormat.h"
#include "ir/LbDialect.h"
#include "tests/unit/passes/PairInterpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <cmath>
#include <memory>

namespace lowbit {
namespace {

using testing::Interpreter;
using testing::half::Fp16Kind;

double roundTo(Fp16Kind kind, double v) {
  return testing::half::toDouble(kind, testing::half::fromDouble(kind, v));
}

// One word's decode minus one zero, as lb-lower-decode emits it, ready to
// interpret: arguments (word: i32, zero: f32).
class WordMinusZero {
public:
  WordMinusZero(const char *format, bool bf16, bool residual)
      : kind_(bf16 ? Fp16Kind::BF16 : Fp16Kind::F16) {
    context_.loadDialect<lb::LbDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect>();
    mlir::OpBuilder b(&context_);
    mlir::Location loc = b.getUnknownLoc();
    module_ = mlir::ModuleOp::create(loc);
    b.setInsertionPointToEnd(module_->getBody());
    auto func = b.create<mlir::func::FuncOp>(
        loc, "decode", b.getFunctionType({b.getI32Type(), b.getF32Type()}, {}));
    entry_ = func.addEntryBlock();
    b.setInsertionPointToStart(entry_);
    Expected<formats::DataFormat> parsed = formats::parseFormat(format);
    EXPECT_TRUE(parsed.ok()) << parsed.error();
    format_ = *parsed;
    const formats::IntFormat *integer = format_.asInt();
    mlir::Type code = mlir::IntegerType::get(&context_, integer->bits,
                                             integer->isSigned ? mlir::IntegerType::Signed
                                                               : mlir::IntegerType::Unsigned);
    mlir::Type value = bf16 ? mlir::Type(b.getBF16Type()) : mlir::Type(b.getF16Type());
    mlir::FailureOr<passes::DecodeStrategy> strategy =
        passes::selectDecodeStrategy(code, value, false, [&] { return func.emitError(); });
    EXPECT_TRUE(mlir::succeeded(strategy));
    strategy_ = *strategy;
    registers_ =
        passes::subtractZeros(b, loc, value, strategy_.emit(b, loc, entry_->getArgument(0)),
                              entry_->getArguments().drop_front(), residual);
  }

  int codesPerWord() const { return strategy_.codesPerWord; }
  const formats::DataFormat &format() const { return format_; }

  // The decoded values, in element order, of the word whose element e holds
  // codes[e], minus `zero`.
  std::vector<double> run(const std::vector<uint32_t> &codes, float zero) {
    uint32_t word = 0;
    const int bits = 32 / codesPerWord();
    for (int field = 0; field < codesPerWord(); ++field)
      word |= codes[strategy_.interleave.apply({static_cast<uint32_t>(field)})[0]]
              << (bits * field);
    Interpreter interpreter(kind_);
    interpreter.bind(entry_->getArgument(0), word);
    interpreter.bind(entry_->getArgument(1), testing::asBits(zero));
    for (mlir::Operation &op : entry_->getOperations())
      interpreter.run(op);
    std::vector<double> out;
    for (mlir::Value r : registers_)
      for (int half = 0; half < 2; ++half)
        out.push_back(testing::half::toDouble(kind_, (interpreter.get(r) >> (16 * half)) & 0xFFFF));
    return out;
  }

private:
  Fp16Kind kind_;
  mlir::MLIRContext context_;
  mlir::OwningOpRef<mlir::ModuleOp> module_;
  mlir::Block *entry_ = nullptr;
  formats::DataFormat format_;
  passes::DecodeStrategy strategy_;
  llvm::SmallVector<mlir::Value> registers_;
};

// Every valid code of `w` in every element, minus `zero`: `check(q, got)`.
template <typename Check> void everyCode(WordMinusZero &w, float zero, const Check &check) {
  const int codes = 1 << (32 / w.codesPerWord());
  for (int shift = 0; shift < codes; ++shift) {
    std::vector<uint32_t> word(static_cast<size_t>(w.codesPerWord()));
    for (size_t e = 0; e < word.size(); ++e)
      word[e] = static_cast<uint32_t>((shift + static_cast<int>(e)) % codes);
    std::vector<double> got = w.run(word, zero);
    for (size_t e = 0; e < word.size(); ++e)
      if (w.format().isValidCode(word[e]))
        check(w.format().decode(word[e]), got[e]);
  }
}

struct Width {
  const char *format;
  bool bf16;
};

class ZeroPoints : public ::testing::TestWithParam<Width> {};

TEST_P(ZeroPoints, IntegerZerosComeOffExactly) {
  const Fp16Kind kind = GetParam().bf16 ? Fp16Kind::BF16 : Fp16Kind::F16;
  WordMinusZero w(GetParam().format, GetParam().bf16, /*residual=*/false);
  // uint4 and uint8 zero codes, whatever the code width: q - z is exact
  // wherever the value type holds it, which for unsigned codes is always
  // (|q - z| <= 255); a signed code minus a large zero (-2 - 255 in bf16)
  // rounds once.
  for (int z : {0, 1, 7, 8, 15, 16, 100, 127, 128, 200, 255})
    everyCode(w, static_cast<float>(z), [&](double q, double got) {
      ASSERT_EQ(got, roundTo(kind, q - z)) << GetParam().format << " code " << q << " minus " << z;
      if (!w.format().isSigned()) {
        ASSERT_EQ(got, q - z) << GetParam().format << " code " << q << " minus " << z;
      }
    });
}

TEST_P(ZeroPoints, FractionalZerosRoundOnceAfterTheSubtraction) {
  const Fp16Kind kind = GetParam().bf16 ? Fp16Kind::BF16 : Fp16Kind::F16;
  WordMinusZero w(GetParam().format, GetParam().bf16, /*residual=*/false);
  // sub_code zeros as the quantizer stores them: values of the value type.
  for (double raw : {7.84375, 0.013671875, 3.5, 12.1875, 133.5}) {
    const float z = static_cast<float>(roundTo(kind, raw));
    everyCode(w, z, [&](double q, double got) {
      ASSERT_EQ(got, roundTo(kind, q - z)) << GetParam().format << " code " << q << " minus " << z;
    });
  }
}

TEST_P(ZeroPoints, ZerosTheValueTypeCannotHoldLoseOnlyTheLastRounding) {
  const Fp16Kind kind = GetParam().bf16 ? Fp16Kind::BF16 : Fp16Kind::F16;
  WordMinusZero w(GetParam().format, GetParam().bf16, /*residual=*/true);
  for (float z : {7.8312345f, 0.0123456f, 3.3333333f, 200.123456f}) {
    everyCode(w, z, [&](double q, double got) {
      // Two roundings of q - z at most: within one unit in the last place
      // of the exact difference (at the value type's precision), and far
      // from the error of rounding z itself when q - z is small.
      double exact = q - static_cast<double>(z);
      double ulp = std::ldexp(1.0, std::ilogb(std::max(std::fabs(exact), 1e-30)) -
                                       (kind == Fp16Kind::BF16 ? 7 : 10));
      ASSERT_LE(std::fabs(got - exact), ulp)
          << GetParam().format << " code " << q << " minus " << z;
    });
  }
}

std::string widthName(const ::testing::TestParamInfo<Width> &info) {
  return std::string(info.param.format) + (info.param.bf16 ? "_bf16" : "_f16");
}

INSTANTIATE_TEST_SUITE_P(Widths, ZeroPoints,
                         ::testing::Values(Width{"uint1", false}, Width{"uint1", true},
                                           Width{"uint2", false}, Width{"uint2", true},
                                           Width{"int2", false}, Width{"int2", true},
                                           Width{"uint4", false}, Width{"uint4", true},
                                           Width{"int4", false}, Width{"int4", true},
                                           Width{"uint8", false}, Width{"uint8", true},
                                           Width{"int8", false}, Width{"int8", true}),
                         widthName);

// The weights the H200 test failed on (real normal weights, per-channel uint4
// with bf16 scales and zeros, K = 4096) and the GPU test's activations
// (uniform in [-2, 2], bf16). The error of folding z into the scale is
// -z·s's bf16 rounding times Σx, so it is largest on the rows whose |Σx| is
// largest: the check takes the worst of 32 rows.
TEST(ZeroPointAccuracy, Bf16PerChannelSubCodeSubtractsBeforeScaling) {
  core::Problem p;
  p.name = "bf16.uint4.ch.sub_code";
  p.n = 128;
  p.k = 4096;
  p.activation = core::Activation::BF16;
  p.code = formats::DataFormat::unsignedInt(4);
  p.scheme.granularity = formats::Granularity::PerChannel;
  p.scheme.groupSize = 0;
  p.scheme.scale = formats::DataFormat::bf16();
  p.scheme.zero = formats::ZeroMode::SubtractCode;
  measure::ProblemInputOptions options;
  options.referenceStride = 1;
  Expected<measure::ProblemInputs> in = measure::makeProblemInputs(p, options);
  ASSERT_TRUE(in.ok()) << in.error();

  uint64_t state = 20261129;
  std::vector<double> x;
  double largestSum = -1;
  for (int row = 0; row < 32; ++row) {
    std::vector<double> candidate(static_cast<size_t>(p.k));
    double sum = 0;
    for (double &v : candidate) {
      double u = static_cast<double>(measure::randomBits(state) >> 11) * 0x1.0p-53;
      v = measure::activationValue(measure::activationBits(4 * u - 2, p.activation), p.activation);
      sum += v;
    }
    if (std::fabs(sum) > largestSum) {
      largestSum = std::fabs(sum);
      x = candidate;
    }
  }

  WordMinusZero decode("uint4", /*bf16=*/true, /*residual=*/false);
  const Fp16Kind bf16 = Fp16Kind::BF16;
  auto bits16 = [](const std::vector<uint8_t> &bytes, int64_t i) {
    return static_cast<uint16_t>(bytes[2 * i] | bytes[2 * i + 1] << 8);
  };
  double centredError = 0, foldedError = 0, referenceSquared = 0;
  for (int64_t n = 0; n < p.n; ++n) {
    const double s = testing::half::toDouble(bf16, bits16(in->scales, n));
    const double z = testing::half::toDouble(bf16, bits16(in->zeros, n));
    const double negZs = roundTo(bf16, -z * s);
    double centred = 0, folded = 0;
    for (int64_t k0 = 0; k0 < p.k; k0 += decode.codesPerWord()) {
      std::vector<uint32_t> codes(in->codes.begin() + n * p.k + k0,
                                  in->codes.begin() + n * p.k + k0 + decode.codesPerWord());
      std::vector<double> values = decode.run(codes, static_cast<float>(z));
      for (size_t e = 0; e < codes.size(); ++e) {
        double xk = x[static_cast<size_t>(k0) + e];
        centred += roundTo(bf16, values[e] * s) * xk; // mul_bf16x2, f32 sums
        folded += roundTo(bf16, codes[e] * s + negZs) * xk;
      }
    }
    const double ref = in->reference(x.data(), n);
    referenceSquared += ref * ref;
    centredError += std::pow(roundTo(bf16, centred) - ref, 2);
    foldedError += std::pow(roundTo(bf16, folded) - ref, 2);
  }
  const double tolerance = measure::defaultTolerance(p.activation);
  const double centredRelative = std::sqrt(centredError / referenceSquared);
  const double foldedRelative = std::sqrt(foldedError / referenceSquared);
  EXPECT_LT(centredRelative, tolerance / 2) << "|Σx| = " << largestSum;
  EXPECT_GT(foldedRelative, tolerance) << "the data no longer shows the folded error";
}

} // namespace
} // namespace lowbit

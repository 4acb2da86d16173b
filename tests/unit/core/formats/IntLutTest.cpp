// Integer and lookup formats against independent statements: two's
// complement written out, the QLoRA NF4 table and its construction from
// normal quantiles, the OCP FP4 values.
#include "core/formats/DataFormat.h"
#include "core/formats/Scheme.h"

#include <gtest/gtest.h>

#include <sstream>

#include <algorithm>
#include <cmath>

namespace lowbit::formats {
namespace {

TEST(IntFormat, SignedEveryCode) {
  for (int bits = 2; bits <= 8; ++bits) {
    DataFormat format = DataFormat::signedInt(bits);
    ASSERT_EQ(format.codeCount(), 1u << bits);
    for (uint32_t code = 0; code < format.codeCount(); ++code) {
      int expected = code < (1u << (bits - 1)) ? int(code) : int(code) - (1 << bits);
      EXPECT_EQ(format.decode(code), expected) << bits << " " << code;
    }
    EXPECT_EQ(format.minFinite(), -(1 << (bits - 1)));
    EXPECT_EQ(format.maxFinite(), (1 << (bits - 1)) - 1);
    EXPECT_FALSE(format.isValidCode(1u << bits));
  }
}

TEST(IntFormat, UnsignedAndOffsetEveryCode) {
  for (int bits = 1; bits <= 8; ++bits) {
    DataFormat plain = DataFormat::unsignedInt(bits);
    DataFormat excess = DataFormat::unsignedInt(bits, -(1 << (bits - 1)));
    for (uint32_t code = 0; code < (1u << bits); ++code) {
      EXPECT_EQ(plain.decode(code), double(code));
      EXPECT_EQ(excess.decode(code), double(int(code) - (1 << (bits - 1))));
    }
  }
  EXPECT_EQ(DataFormat::unsignedInt(4, -8).name(), "uint4-8");
  EXPECT_EQ(DataFormat::unsignedInt(4, 1).name(), "uint4+1");
  EXPECT_EQ(DataFormat::unsignedInt(4, 1).decode(15), 16.0);
}

TEST(IntFormat, MxInt8IsFixedPointEveryCode) {
  // OCP MX v1.0 INT8: two's complement with an implicit scale of 2^-6.
  DataFormat format = DataFormat::mxInt8();
  for (uint32_t code = 0; code < 256; ++code)
    EXPECT_EQ(format.decode(code), double(int8_t(uint8_t(code))) / 64.0) << code;
  EXPECT_EQ(format.maxFinite(), 127.0 / 64);
  EXPECT_EQ(format.minFinite(), -2.0);
  EXPECT_EQ(*format.encode(0.5), 32u);
  EXPECT_EQ(*format.encode(-1.0 / 128), 0u); // half of 2^-6 ties to even 0
  EXPECT_FALSE(format.encode(2.0).ok());
  EXPECT_EQ(*parseFormat("int<8,signed,0,6>"), format);
  EXPECT_EQ(*parseFormat("mxint8"), format);
  EXPECT_EQ(format.name(), "int8/2^6");
}

TEST(IntFormat, TernaryEveryCode) {
  DataFormat format = DataFormat::ternary();
  EXPECT_EQ(format.bits(), 2);
  EXPECT_EQ(format.decode(0), -1.0);
  EXPECT_EQ(format.decode(1), 0.0);
  EXPECT_EQ(format.decode(2), 1.0);
  EXPECT_FALSE(format.isValidCode(3));
  EXPECT_TRUE(std::isnan(format.decode(3)));
  EXPECT_EQ(*format.encode(-0.7), 0u);
  EXPECT_EQ(*format.encode(0.2), 1u);
  EXPECT_EQ(*format.encode(1.4), 2u);
  Expected<uint32_t> two = format.encode(2.0);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.error().find("outside the range [-1, 1] of ternary"), std::string::npos)
      << two.error();
}

TEST(IntFormat, EncodeRoundsHalfToEvenAndRejectsOutOfRange) {
  DataFormat int4 = DataFormat::signedInt(4);
  EXPECT_EQ(int4.decode(*int4.encode(2.5)), 2.0);
  EXPECT_EQ(int4.decode(*int4.encode(3.5)), 4.0);
  EXPECT_EQ(int4.decode(*int4.encode(-2.5)), -2.0);
  EXPECT_EQ(int4.decode(*int4.encode(-8.4)), -8.0);
  Expected<uint32_t> wrap = int4.encode(8.0);
  ASSERT_FALSE(wrap.ok());
  EXPECT_NE(wrap.error().find("outside the range [-8, 7] of int4"), std::string::npos);
  // Values print with 17 significant digits (core/support/FormatNumber.h).
  EXPECT_EQ(int4.encode(8.6).error(), "value 8.5999999999999996 is outside the range [-8, 7] of int4");
  EXPECT_EQ(*int4.encode(8.0, Rounding::NearestEven, OnOverflow::Saturate), 7u);
  Expected<DataFormat> nine = DataFormat::integer(9, true);
  ASSERT_FALSE(nine.ok());
  EXPECT_NE(nine.error().find("1..8 bits; got 9"), std::string::npos);
}

// Inverse of the standard normal CDF by bisection on erfc: slow and obviously
// correct, which is the point.
double normalQuantile(double p) {
  double lo = -10, hi = 10;
  for (int i = 0; i < 200; ++i) {
    double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

// Every format a scheme stores (elements, scales, zeros) is named by name()
// and read by parseFormat: a spec lowbit import writes names them so. The
// offset codes' names ("uint4-8", GGUF Q4_0's codes) once did not parse.
TEST(IntFormat, EveryStoredFormatsNameParsesBack) {
  std::vector<DataFormat> formats = builtinElementFormats();
  for (const QuantScheme &scheme : builtinSchemes()) {
    formats.push_back(scheme.element);
    formats.push_back(scheme.scaleFormat);
    if (scheme.zeroFormat)
      formats.push_back(*scheme.zeroFormat);
  }
  for (const DataFormat &format : formats) {
    Expected<DataFormat> parsed = parseFormat(format.name());
    ASSERT_TRUE(parsed) << format.name() << ": " << parsed.error();
    EXPECT_EQ(*parsed, format) << format.name();
  }
  EXPECT_EQ(*parseFormat("uint4-8"), DataFormat::unsignedInt(4, -8));
  EXPECT_EQ(*parseFormat("uint4+1"), DataFormat::unsignedInt(4, 1));
  EXPECT_EQ(*parseFormat("int8-3"), *DataFormat::integer(8, true, -3));
  EXPECT_FALSE(parseFormat("uint4-"));
  EXPECT_FALSE(parseFormat("uint4+x"));
}

TEST(LutFormat, Nf4MatchesQloraTableAndConstruction) {
  // Appendix E of the QLoRA paper (Dettmers et al. 2023).
  const double paper[16] = {-1.0,
                            -0.6961928009986877,
                            -0.5250730514526367,
                            -0.39491748809814453,
                            -0.28444138169288635,
                            -0.18477343022823334,
                            -0.09105003625154495,
                            0.0,
                            0.07958029955625534,
                            0.16093020141124725,
                            0.24611230194568634,
                            0.33791524171829224,
                            0.44070982933044434,
                            0.5626170039176941,
                            0.7229568362236023,
                            1.0};
  // The construction the paper describes: 8 positive quantiles of N(0, 1)
  // at linspace(delta, 1/2, 9)[:-1], 7 negative at linspace(delta, 1/2, 8)[:-1],
  // an exact zero, normalized to [-1, 1]; delta = 1 - (1/32 + 1/30) / 2 =
  // 0.9677083, the offset bitsandbytes uses.
  const double delta = 0.9677083;
  std::vector<double> constructed;
  for (int i = 0; i < 8; ++i)
    constructed.push_back(normalQuantile(delta + (0.5 - delta) * i / 8.0));
  for (int i = 0; i < 7; ++i)
    constructed.push_back(-normalQuantile(delta + (0.5 - delta) * i / 7.0));
  constructed.push_back(0.0);
  double top = *std::max_element(constructed.begin(), constructed.end());
  for (double &v : constructed)
    v /= top;
  std::sort(constructed.begin(), constructed.end());

  DataFormat nf4 = DataFormat::nf4();
  ASSERT_EQ(nf4.codeCount(), 16u);
  for (uint32_t code = 0; code < 16; ++code) {
    EXPECT_EQ(float(nf4.decode(code)), float(paper[code])) << code;
    EXPECT_NEAR(nf4.decode(code), constructed[code], 1e-6) << code;
  }
}

TEST(LutFormat, Fp4TableAgreesWithE2m1) {
  DataFormat table = DataFormat::fp4Lut(), minifloat = DataFormat::e2m1();
  for (uint32_t code = 0; code < 16; ++code)
    EXPECT_EQ(table.decode(code), minifloat.decode(code)) << code;
}

TEST(LutFormat, UserCodebook) {
  Expected<DataFormat> book = DataFormat::lut(2, {-1.0, -0.25, 0.25, 1.0}, "mine");
  ASSERT_TRUE(book.ok()) << book.error();
  EXPECT_EQ(book->decode(1), -0.25);
  EXPECT_EQ(*book->encode(0.6), 2u);   // |0.6 - 0.25| < |0.6 - 1|
  EXPECT_EQ(*book->encode(0.625), 2u); // tie goes to the lower code
  EXPECT_EQ(*book->encode(1.3), 3u);   // within half the outer gap
  Expected<uint32_t> far = book->encode(1.5);
  ASSERT_FALSE(far.ok());
  EXPECT_NE(far.error().find("outside the range [-1, 1] of lut 'mine'"), std::string::npos);
  EXPECT_EQ(book->spelling(), "lut<2,mine>");
}

// Tables by their values: the name is the spelling parseFormat reads back,
// every value exact, and a table equal to a built-in one is that format.
TEST(LutFormat, TablesByValueRoundTripThroughTheirName) {
  Expected<DataFormat> book = parseFormat("lut<2,[-1, -0.25, 0.1, 1]>");
  ASSERT_TRUE(book.ok()) << book.error();
  EXPECT_EQ(book->name(), "lut<2,[-1,-0.25,0.10000000000000001,1]>");
  EXPECT_EQ(book->decode(2), 0.1);
  Expected<DataFormat> again = parseFormat(book->name());
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, *book);
  EXPECT_EQ(again->name(), book->name());
  std::string nf4 = "lut<4,[";
  for (size_t i = 0; i < nf4Table().size(); ++i) {
    std::ostringstream v;
    v.precision(17);
    v << nf4Table()[i];
    nf4 += (i ? "," : "") + v.str();
  }
  Expected<DataFormat> named = parseFormat(nf4 + "]>");
  ASSERT_TRUE(named.ok()) << named.error();
  EXPECT_EQ(named->name(), "nf4");
  Expected<DataFormat> builtin = parseFormat("lut<4,nf4>");
  ASSERT_TRUE(builtin.ok()) << builtin.error();
  EXPECT_EQ(*builtin, DataFormat::nf4());
  for (const char *bad : {"lut<2,[1,2,3]>", "lut<2,[1,2,x,4]>", "lut<9,[1]>", "lut<4,e2m1>",
                          "lut<2,[1,2,3,4]", "lut<,[1,2,3,4]>", "lut<2,[1,2,inf,4]>"})
    EXPECT_FALSE(parseFormat(bad).ok()) << bad;
}

TEST(LutFormat, WrongTableSizeIsRejected) {
  Expected<DataFormat> book = DataFormat::lut(2, {-1.0, 0.0, 1.0}, "short");
  ASSERT_FALSE(book.ok());
  EXPECT_NE(book.error().find("table for lut<2> 'short' has 3 entries; expected 4"),
            std::string::npos)
      << book.error();
  Expected<DataFormat> nan = DataFormat::lut(1, {0.0, NAN}, "bad");
  ASSERT_FALSE(nan.ok());
  EXPECT_NE(nan.error().find("not finite"), std::string::npos);
}

bool hasTarget(const DataFormat &format, ComputeType type, bool exact) {
  for (const DecodeTarget &t : format.decodeTargets())
    if (t.type == type)
      return t.exact == exact;
  return false;
}

bool lacksTarget(const DataFormat &format, ComputeType type) {
  for (const DecodeTarget &t : format.decodeTargets())
    if (t.type == type)
      return false;
  return true;
}

TEST(DataFormat, DecodeTargetsFollowFromTheValues) {
  DataFormat int4 = DataFormat::signedInt(4);
  for (ComputeType t : allComputeTypes())
    EXPECT_TRUE(hasTarget(int4, t, true)) << computeTypeName(t);
  DataFormat uint8 = DataFormat::unsignedInt(8);
  EXPECT_TRUE(lacksTarget(uint8, ComputeType::S8));   // 255 does not fit
  EXPECT_TRUE(lacksTarget(uint8, ComputeType::E4M3)); // 17 does not fit
  EXPECT_TRUE(hasTarget(uint8, ComputeType::BF16, true));
  DataFormat e2m1 = DataFormat::e2m1();
  EXPECT_TRUE(hasTarget(e2m1, ComputeType::E4M3, true));
  EXPECT_TRUE(lacksTarget(e2m1, ComputeType::S8)); // 0.5
  DataFormat nf4 = DataFormat::nf4();
  EXPECT_TRUE(hasTarget(nf4, ComputeType::F32, true));
  EXPECT_TRUE(hasTarget(nf4, ComputeType::F16, false));
  EXPECT_TRUE(lacksTarget(nf4, ComputeType::E4M3));
  DataFormat e5m2 = DataFormat::e5m2();
  EXPECT_TRUE(hasTarget(e5m2, ComputeType::F16, true));
  EXPECT_TRUE(lacksTarget(e5m2, ComputeType::E4M3)); // 57344 > 448
  EXPECT_TRUE(hasTarget(DataFormat::e4m3fn(), ComputeType::E4M3, true));
  EXPECT_TRUE(lacksTarget(DataFormat::int8(), ComputeType::E4M3));
  EXPECT_TRUE(hasTarget(DataFormat::int8(), ComputeType::S8, true));
}

TEST(DataFormat, ParseNamesAndGenericSpellings) {
  EXPECT_EQ(*parseFormat("int4"), DataFormat::signedInt(4));
  EXPECT_EQ(*parseFormat("uint3"), DataFormat::unsignedInt(3));
  EXPECT_EQ(*parseFormat("s8"), DataFormat::int8());
  EXPECT_EQ(*parseFormat("e4m3"), DataFormat::e4m3fn());
  EXPECT_EQ(*parseFormat("float<2,1,1>"), DataFormat::e2m1());
  EXPECT_EQ(*parseFormat("float<8,0,127,fn|unsigned|nosub>"), DataFormat::e8m0());
  EXPECT_EQ(*parseFormat("float<5,2,15,ieee>"), DataFormat::e5m2());
  EXPECT_EQ(parseFormat("int<4,unsigned,-8>")->name(), "uint4-8");
  EXPECT_EQ(*parseFormat("ternary"), DataFormat::ternary());
  EXPECT_EQ(*parseFormat("nf4"), DataFormat::nf4());
  for (const DataFormat &format : builtinElementFormats()) {
    Expected<DataFormat> byName = parseFormat(format.name());
    ASSERT_TRUE(byName.ok()) << format.name() << ": " << byName.error();
    EXPECT_EQ(*byName, format) << format.name();
  }
  Expected<DataFormat> bad = parseFormat("int9");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("1..8 bits; got 9"), std::string::npos);
  Expected<DataFormat> args = parseFormat("float<2,1>");
  ASSERT_FALSE(args.ok());
  EXPECT_NE(args.error().find("takes 3 or 4 arguments; got 2"), std::string::npos);
  Expected<DataFormat> flag = parseFormat("float<2,1,1,weird>");
  ASSERT_FALSE(flag.ok());
  EXPECT_NE(flag.error().find("unknown minifloat flag 'weird'"), std::string::npos);
  EXPECT_FALSE(parseFormat("q4_k").ok());
}

} // namespace
} // namespace lowbit::formats

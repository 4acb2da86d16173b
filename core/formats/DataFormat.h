// The descriptor the compiler and the runtime query: one storage encoding
// (integer, minifloat or lookup table) with its decode to a value and the
// compute types it decodes to.
#pragma once

#include "core/formats/IntFormat.h"
#include "core/formats/LutFormat.h"
#include "core/formats/MiniFloat.h"

#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace lowbit::formats {

// The wide types the hardware computes in.
enum class ComputeType { F16, BF16, F32, S8, E4M3 };

const char *computeTypeName(ComputeType type);
const std::vector<ComputeType> &allComputeTypes();

struct DecodeTarget {
  ComputeType type;
  // Every code's value is representable in the type without rounding. s8 and
  // e4m3 are only targets when exact (they feed integer / fp8 MMA); float
  // types are always targets, and inexact ones round the decoded value (nf4
  // in f16, say).
  bool exact;
};

class DataFormat {
public:
  enum class Kind { Int, Float, Lut };

  // f32, so that an unset scale field means something harmless.
  DataFormat();

  static Expected<DataFormat> integer(int bits, bool isSigned, int offset = 0);
  static Expected<DataFormat> minifloat(int exponentBits, int mantissaBits, int bias,
                                        unsigned flags);
  // An empty name names the table by its values (lut<bits,[v0,...]>), the
  // spelling parseFormat reads back.
  static Expected<DataFormat> lut(int bits, std::vector<double> table, std::string name);
  // A table given by its values (a spec's lut<bits,[...]>, the C ABI's
  // LOWBIT_WEIGHT_LUT4): the built-in format under its name when the values
  // are exactly one (nf4, fp4), so both spell one problem one way.
  static Expected<DataFormat> tableOfValues(int bits, std::vector<double> table);
  static Expected<DataFormat> fromInt(const IntFormat &format);
  static Expected<DataFormat> fromFloat(const FloatFormat &format);

  // Formats the library defines, so callers need not unwrap an Expected.
  static DataFormat int8() { return builtin(IntFormat{8, true, 0, false}); }
  static DataFormat signedInt(int bits); // 2..8
  static DataFormat unsignedInt(int bits, int offset = 0);
  static DataFormat ternary() { return builtin(IntFormat{2, false, -1, true}); }
  // OCP MXINT8's element: two's complement int8 read as 1.6 fixed point.
  static DataFormat mxInt8() { return builtin(IntFormat{8, true, 0, false, 6}); }
  static DataFormat e2m1() { return builtin(FloatFormat{2, 1, 1, kFloatFinite}); }
  static DataFormat e2m3() { return builtin(FloatFormat{2, 3, 1, kFloatFinite}); }
  static DataFormat e3m2() { return builtin(FloatFormat{3, 2, 3, kFloatFinite}); }
  static DataFormat e4m3fn() { return builtin(FloatFormat{4, 3, 7, kFloatNanAllOnes}); }
  static DataFormat e5m2() { return builtin(FloatFormat{5, 2, 15, kFloatIeee}); }
  static DataFormat e8m0() {
    return builtin(
        FloatFormat{8, 0, 127, kFloatNanAllOnes | kFloatUnsigned | kFloatNoSubnormals});
  }
  static DataFormat f16() { return builtin(FloatFormat{5, 10, 15, kFloatIeee}); }
  static DataFormat bf16() { return builtin(FloatFormat{8, 7, 127, kFloatIeee}); }
  static DataFormat f32() { return builtin(FloatFormat{8, 23, 127, kFloatIeee}); }
  static DataFormat nf4();
  static DataFormat fp4Lut();
  static DataFormat forComputeType(ComputeType type);

  Kind kind() const;
  const IntFormat *asInt() const { return std::get_if<IntFormat>(&format_); }
  const FloatFormat *asFloat() const { return std::get_if<FloatFormat>(&format_); }
  const LutFormat *asLut() const;

  int bits() const;
  uint32_t codeCount() const { return bits() >= 32 ? 0 : 1u << bits(); }
  // True when some code decodes to a negative value.
  bool isSigned() const;
  // Short name ("int4", "e2m1", "nf4", "f16") and generic spelling
  // ("int<4,signed>", "float<2,1,1,finite>", "lut<4,nf4>").
  std::string name() const;
  std::string spelling() const;

  // Codes past 2^bits and the ternary code 3 are invalid; NaN codes are valid.
  bool isValidCode(uint32_t code) const;
  bool isNanCode(uint32_t code) const;
  // NaN for NaN codes and invalid codes.
  double decode(uint32_t code) const;
  Expected<uint32_t> encode(double value, Rounding rounding = Rounding::NearestEven,
                            OnOverflow onOverflow = OnOverflow::Error) const;
  double maxFinite() const;
  // The most negative finite value (0 for unsigned formats).
  double minFinite() const;

  std::vector<DecodeTarget> decodeTargets() const;

  bool operator==(const DataFormat &other) const;
  bool operator!=(const DataFormat &other) const { return !(*this == other); }

private:
  explicit DataFormat(std::variant<IntFormat, FloatFormat, std::shared_ptr<const LutFormat>> f)
      : format_(std::move(f)) {}
  static DataFormat builtin(const IntFormat &format) { return DataFormat(format); }
  static DataFormat builtin(const FloatFormat &format) { return DataFormat(format); }

  // Tables are shared: descriptors are copied freely and tables can be large.
  std::variant<IntFormat, FloatFormat, std::shared_ptr<const LutFormat>> format_;
};

// Names accepted: int2..int8, s8, uint1..uint8, ternary, e2m1, e2m3, e3m2,
// e4m3 / e4m3fn, e5m2, e8m0, f16, bf16, f32, nf4, fp4, mxint8, lut<bits,[v0,...]>
// (a table by its values), and the generic
// spellings int<bits,signed|unsigned[,offset[,fraction]]> and
// float<e,m,bias[,flag|flag...]> with flags finite, ieee, fn, unsigned, nosub.
Expected<DataFormat> parseFormat(const std::string &text);

// Every named element format, for listings and exhaustive tests.
std::vector<DataFormat> builtinElementFormats();

} // namespace lowbit::formats

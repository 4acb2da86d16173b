#include "ir/LbTypes.h"

#include "ir/LbDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace lowbit::lb;

#include "ir/LbEnums.cpp.inc"
#define GET_TYPEDEF_CLASSES
#include "ir/LbTypes.cpp.inc"

LogicalResult MiniFloatType::verify(function_ref<InFlightDiagnostic()> emitError,
                                unsigned exponent, unsigned mantissa,
                                int64_t bias, bool isSigned,
                                SpecialValues special) {
  (void)bias;
  if (exponent < 1 || exponent > 8)
    return emitError() << "exponent bits must be in [1, 8], got " << exponent;
  unsigned width = (isSigned ? 1 : 0) + exponent + mantissa;
  if (width < 2 || width > 8)
    return emitError() << "a minifloat code must be 2 to 8 bits wide, got "
                       << width << " (sign " << (isSigned ? 1 : 0)
                       << " + exponent " << exponent << " + mantissa "
                       << mantissa << ")";
  // With one exponent bit an all-ones exponent is the only normal binade, so
  // reserving it for Inf/NaN would leave no normal numbers at all.
  if (special == SpecialValues::ieee && exponent < 2)
    return emitError() << "'ieee' special values need at least 2 exponent bits";
  return success();
}

LogicalResult LutType::verify(function_ref<InFlightDiagnostic()> emitError,
                              unsigned bits, DenseF64ArrayAttr tableAttr) {
  ArrayRef<double> table =
      tableAttr ? tableAttr.asArrayRef() : ArrayRef<double>();
  if (bits < 1 || bits > 8)
    return emitError() << "lookup codes must be 1 to 8 bits, got " << bits;
  if (!table.empty() && table.size() != (size_t{1} << bits))
    return emitError() << "a " << bits << "-bit lookup table needs "
                       << (size_t{1} << bits) << " entries, got "
                       << table.size();
  for (auto [index, value] : llvm::enumerate(table))
    if (!std::isfinite(value))
      return emitError() << "lookup table entry " << index << " is not finite";
  return success();
}

static int64_t standardBias(unsigned exponent) {
  return (int64_t{1} << (exponent - 1)) - 1;
}

// !lb.float<[u]e<E>m<M>[, bias = B], finite|fn|ieee>
Type MiniFloatType::parse(AsmParser &parser) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef shape;
  if (parser.parseLess() || parser.parseKeyword(&shape))
    return {};
  bool isSigned = !shape.consume_front("u");
  unsigned exponent = 0, mantissa = 0;
  if (!shape.consume_front("e") || shape.consumeInteger(10, exponent) ||
      !shape.consume_front("m") || shape.consumeInteger(10, mantissa) ||
      !shape.empty()) {
    parser.emitError(loc, "expected a minifloat shape such as 'e2m1' or 'ue8m0'");
    return {};
  }
  int64_t bias = exponent >= 1 ? standardBias(exponent) : 0;
  if (parser.parseComma())
    return {};
  if (succeeded(parser.parseOptionalKeyword("bias"))) {
    if (parser.parseEqual() || parser.parseInteger(bias) || parser.parseComma())
      return {};
  }
  StringRef specialName;
  SMLoc specialLoc = parser.getCurrentLocation();
  if (parser.parseKeyword(&specialName) || parser.parseGreater())
    return {};
  std::optional<SpecialValues> special = symbolizeSpecialValues(specialName);
  if (!special) {
    parser.emitError(specialLoc, "expected 'finite', 'fn' or 'ieee'");
    return {};
  }
  return parser.getChecked<MiniFloatType>(parser.getContext(), exponent,
                                          mantissa, bias, isSigned, *special);
}

void MiniFloatType::print(AsmPrinter &printer) const {
  printer << "<" << (getIsSigned() ? "" : "u") << "e" << getExponent() << "m"
          << getMantissa() << ", ";
  if (getBias() != standardBias(getExponent()))
    printer << "bias = " << getBias() << ", ";
  printer << stringifySpecialValues(getSpecial()) << ">";
}

// !lb.lut<4> or !lb.lut<4, [v0, v1, ...]>
Type LutType::parse(AsmParser &parser) {
  unsigned bits = 0;
  SmallVector<double> table;
  if (parser.parseLess() || parser.parseInteger(bits))
    return {};
  if (succeeded(parser.parseOptionalComma())) {
    auto parseEntry = [&]() -> ParseResult {
      double value = 0;
      if (parser.parseFloat(value))
        return failure();
      table.push_back(value);
      return success();
    };
    if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseEntry))
      return {};
  }
  if (parser.parseGreater())
    return {};
  DenseF64ArrayAttr tableAttr;
  if (!table.empty())
    tableAttr = DenseF64ArrayAttr::get(parser.getContext(), table);
  return parser.getChecked<LutType>(parser.getContext(), bits, tableAttr);
}

void LutType::print(AsmPrinter &printer) const {
  printer << "<" << getBits();
  if (getTable()) {
    printer << ", [";
    llvm::interleaveComma(getTable().asArrayRef(), printer, [&](double value) {
      printer.printFloat(llvm::APFloat(value));
    });
    printer << "]";
  }
  printer << ">";
}

LogicalResult OffsetIntType::verify(function_ref<InFlightDiagnostic()> emitError, unsigned bits,
                                    int64_t offset, bool ternary) {
  if (bits < 1 || bits > 8)
    return emitError() << "offset integer codes have 1..8 bits, got " << bits;
  if (ternary && (bits != 2 || offset != -1))
    return emitError() << "ternary codes are 2 bits with offset -1";
  if (offset < -256 || offset > 256)
    return emitError() << "offset " << offset << " is out of range";
  return success();
}

unsigned lowbit::lb::getCodeBits(Type type) {
  if (auto integer = dyn_cast<IntegerType>(type))
    return integer.getWidth() <= 8 ? integer.getWidth() : 0;
  if (auto offsetInt = dyn_cast<OffsetIntType>(type))
    return offsetInt.getBits();
  if (auto minifloat = dyn_cast<MiniFloatType>(type))
    return minifloat.getWidth();
  if (auto lut = dyn_cast<LutType>(type))
    return lut.getBits();
  if (isa<Float8E4M3FNType, Float8E5M2Type>(type))
    return 8;
  return 0;
}

int64_t lowbit::lb::getScaleBytes(Type type) {
  if (type.isF16() || type.isBF16())
    return 2;
  if (type.isF32())
    return 4;
  if (isa<Float8E4M3FNType, MiniFloatType>(type))
    return 1;
  // Two-level scales' codes (uint8, int8).
  if (auto code = dyn_cast<IntegerType>(type); code && code.getWidth() == 8 && !code.isSignless())
    return 1;
  return 0;
}

void LbDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "ir/LbTypes.cpp.inc"
      >();
}

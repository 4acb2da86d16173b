#include "core/formats/DataFormat.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace lowbit::formats {

const char *computeTypeName(ComputeType type) {
  switch (type) {
  case ComputeType::F16: return "f16";
  case ComputeType::BF16: return "bf16";
  case ComputeType::F32: return "f32";
  case ComputeType::S8: return "s8";
  case ComputeType::E4M3: return "e4m3";
  }
  return "?";
}

const std::vector<ComputeType> &allComputeTypes() {
  static const std::vector<ComputeType> types = {
      ComputeType::F16, ComputeType::BF16, ComputeType::F32, ComputeType::S8, ComputeType::E4M3};
  return types;
}

DataFormat::DataFormat() : format_(FloatFormat{8, 23, 127, kFloatIeee}) {}

Expected<DataFormat> DataFormat::fromInt(const IntFormat &format) {
  if (Status status = validateIntFormat(format); !status)
    return makeError(status.error());
  return DataFormat(format);
}

Expected<DataFormat> DataFormat::fromFloat(const FloatFormat &format) {
  if (Status status = validateFloatFormat(format); !status)
    return makeError(status.error());
  return DataFormat(format);
}

Expected<DataFormat> DataFormat::integer(int bits, bool isSigned, int offset) {
  return fromInt(IntFormat{bits, isSigned, offset, false});
}

Expected<DataFormat> DataFormat::minifloat(int exponentBits, int mantissaBits, int bias,
                                           unsigned flags) {
  return fromFloat(FloatFormat{exponentBits, mantissaBits, bias, flags});
}

Expected<DataFormat> DataFormat::lut(int bits, std::vector<double> table, std::string name) {
  if (name.empty()) { // the spelling parseFormat reads back: every value, exactly
    std::ostringstream spelling;
    spelling.precision(17);
    spelling << "lut<" << bits << ",[";
    for (size_t i = 0; i < table.size(); ++i)
      spelling << (i ? "," : "") << table[i];
    spelling << "]>";
    name = spelling.str();
  }
  auto format = std::make_shared<LutFormat>(LutFormat{bits, std::move(name), std::move(table)});
  if (Status status = validateLutFormat(*format); !status)
    return makeError(status.error());
  return DataFormat(std::shared_ptr<const LutFormat>(std::move(format)));
}

Expected<DataFormat> DataFormat::tableOfValues(int bits, std::vector<double> table) {
  if (bits == 4 && table == nf4Table())
    return nf4();
  if (bits == 4 && table == fp4Table())
    return fp4Lut();
  return lut(bits, std::move(table), "");
}

DataFormat DataFormat::signedInt(int bits) {
  return builtin(IntFormat{bits, true, 0, false});
}

DataFormat DataFormat::unsignedInt(int bits, int offset) {
  return builtin(IntFormat{bits, false, offset, false});
}

DataFormat DataFormat::nf4() {
  static const DataFormat format = std::move(lut(4, nf4Table(), "nf4")).value();
  return format;
}

DataFormat DataFormat::fp4Lut() {
  static const DataFormat format = std::move(lut(4, fp4Table(), "fp4")).value();
  return format;
}

DataFormat DataFormat::forComputeType(ComputeType type) {
  switch (type) {
  case ComputeType::F16: return f16();
  case ComputeType::BF16: return bf16();
  case ComputeType::F32: return f32();
  case ComputeType::S8: return int8();
  case ComputeType::E4M3: return e4m3fn();
  }
  return f32();
}

DataFormat::Kind DataFormat::kind() const {
  switch (format_.index()) {
  case 0: return Kind::Int;
  case 1: return Kind::Float;
  default: return Kind::Lut;
  }
}

const LutFormat *DataFormat::asLut() const {
  auto *table = std::get_if<std::shared_ptr<const LutFormat>>(&format_);
  return table ? table->get() : nullptr;
}

int DataFormat::bits() const {
  if (auto *i = asInt())
    return i->bits;
  if (auto *f = asFloat())
    return f->bits();
  return asLut()->bits;
}

bool DataFormat::isSigned() const {
  return minFinite() < 0;
}

std::string DataFormat::name() const {
  if (auto *i = asInt())
    return intFormatName(*i);
  if (auto *f = asFloat())
    return floatFormatName(*f);
  return asLut()->name;
}

std::string DataFormat::spelling() const {
  if (auto *i = asInt())
    return intFormatSpelling(*i);
  if (auto *f = asFloat())
    return floatFormatSpelling(*f);
  const std::string &name = asLut()->name;
  return name.compare(0, 4, "lut<") == 0
             ? name
             : "lut<" + std::to_string(asLut()->bits) + "," + name + ">";
}

bool DataFormat::isValidCode(uint32_t code) const {
  if (auto *i = asInt())
    return isValidIntCode(*i, code);
  if (bits() < 32 && (code >> bits()))
    return false;
  return true;
}

bool DataFormat::isNanCode(uint32_t code) const {
  if (auto *f = asFloat())
    return isValidCode(code) && formats::isNanCode(*f, code);
  return false;
}

double DataFormat::decode(uint32_t code) const {
  if (!isValidCode(code))
    return std::nan("");
  if (auto *i = asInt())
    return decodeInt(*i, code);
  if (auto *f = asFloat())
    return decodeFloat(*f, code);
  return asLut()->table[code];
}

Expected<uint32_t> DataFormat::encode(double value, Rounding rounding,
                                      OnOverflow onOverflow) const {
  if (auto *i = asInt())
    return encodeInt(*i, value, rounding, onOverflow);
  if (auto *f = asFloat())
    return encodeFloat(*f, value, rounding, onOverflow);
  return encodeLut(*asLut(), value, rounding, onOverflow);
}

double DataFormat::maxFinite() const {
  if (auto *i = asInt())
    return maxIntValue(*i);
  if (auto *f = asFloat())
    return maxFiniteFloat(*f);
  double best = -INFINITY;
  for (double entry : asLut()->table)
    best = std::max(best, entry);
  return best;
}

double DataFormat::minFinite() const {
  if (auto *i = asInt())
    return minIntValue(*i);
  if (auto *f = asFloat())
    return f->hasSign() ? -maxFiniteFloat(*f) : (f->hasZero() ? 0.0 : minPositiveFloat(*f));
  double best = INFINITY;
  for (double entry : asLut()->table)
    best = std::min(best, entry);
  return best;
}

std::vector<DecodeTarget> DataFormat::decodeTargets() const {
  std::vector<DecodeTarget> targets;
  for (ComputeType type : allComputeTypes()) {
    DataFormat wide = forComputeType(type);
    bool exact = true;
    // f32 has 2^32 codes but every format here has at most 32 bits, and the
    // only 32-bit one is f32 itself.
    if (bits() >= 32) {
      exact = type == ComputeType::F32;
    } else {
      for (uint32_t code = 0; code < codeCount() && exact; ++code) {
        if (!isValidCode(code) || isNanCode(code))
          continue;
        double value = decode(code);
        if (std::isinf(value)) {
          exact = wide.asFloat() && wide.asFloat()->hasInf();
          continue;
        }
        Expected<uint32_t> wideCode = wide.encode(value);
        exact = wideCode.ok() && wide.decode(*wideCode) == value;
      }
    }
    bool floatTarget =
        type == ComputeType::F16 || type == ComputeType::BF16 || type == ComputeType::F32;
    if (exact || floatTarget)
      targets.push_back(DecodeTarget{type, exact});
  }
  return targets;
}

bool DataFormat::operator==(const DataFormat &other) const {
  if (kind() != other.kind())
    return false;
  if (auto *i = asInt()) {
    auto *j = other.asInt();
    return i->bits == j->bits && i->isSigned == j->isSigned && i->offset == j->offset &&
           i->ternary == j->ternary && i->fractionBits == j->fractionBits;
  }
  if (auto *f = asFloat()) {
    auto *g = other.asFloat();
    return f->exponentBits == g->exponentBits && f->mantissaBits == g->mantissaBits &&
           f->bias == g->bias && f->flags == g->flags;
  }
  return asLut()->bits == other.asLut()->bits && asLut()->table == other.asLut()->table;
}

namespace {

std::string trim(const std::string &text) {
  size_t begin = text.find_first_not_of(" \t");
  size_t end = text.find_last_not_of(" \t");
  return begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
}

std::vector<std::string> splitArguments(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(trim(text.substr(start, comma - start)));
    if (comma == std::string::npos)
      return parts;
    start = comma + 1;
  }
}

Expected<int> parseInteger(const std::string &text, const std::string &context) {
  if (text.empty())
    return makeError("missing number in " + context);
  size_t i = (text[0] == '-' || text[0] == '+') ? 1 : 0;
  if (i == text.size())
    return makeError("'" + text + "' is not a number in " + context);
  for (size_t j = i; j < text.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(text[j])))
      return makeError("'" + text + "' is not a number in " + context);
  if (text.size() > 6)
    return makeError("'" + text + "' is out of range in " + context);
  return std::stoi(text);
}

// lut<bits,[v0, v1, ...]>: a table given by its values (a spec's codebook).
Expected<DataFormat> parseTableFormat(const std::string &text) {
  const std::string context = "format '" + text + "'";
  size_t comma = text.find(','), open = text.find('['), close = text.rfind(']');
  if (comma != std::string::npos && open == std::string::npos) { // lut<4,nf4>: a built-in table
    Expected<DataFormat> named = parseFormat(text.substr(comma + 1, text.size() - comma - 2));
    if (named && named->asLut() && text.substr(4, comma - 4) == std::to_string(named->bits()))
      return named;
    return makeError("expected lut<bits,[v0, v1, ...]> or lut<4,nf4> in " + context);
  }
  if (comma == std::string::npos || open == std::string::npos || close == std::string::npos ||
      comma > open || close + 2 != text.size() ||
      trim(text.substr(comma + 1, open - comma - 1)) != "")
    return makeError("expected lut<bits,[v0, v1, ...]> in " + context);
  Expected<int> bits = parseInteger(trim(text.substr(4, comma - 4)), context);
  if (!bits)
    return makeError(bits.error());
  if (*bits < 1 || *bits > 8)
    return makeError("a lookup table has 1 to 8 bits, not " + std::to_string(*bits) + " in " +
                     context);
  std::vector<double> table;
  for (const std::string &entry : splitArguments(text.substr(open + 1, close - open - 1))) {
    char *end = nullptr;
    double value = std::strtod(entry.c_str(), &end);
    if (entry.empty() || end != entry.c_str() + entry.size())
      return makeError("table entry '" + entry + "' is not a number in " + context);
    table.push_back(value);
  }
  return DataFormat::tableOfValues(*bits, std::move(table));
}

} // namespace

Expected<DataFormat> parseFormat(const std::string &rawText) {
  std::string text = trim(rawText);
  if (text == "s8")
    return DataFormat::int8();
  if (text == "ternary")
    return DataFormat::ternary();
  if (text == "e2m1")
    return DataFormat::e2m1();
  if (text == "e2m3")
    return DataFormat::e2m3();
  if (text == "e3m2")
    return DataFormat::e3m2();
  if (text == "e4m3" || text == "e4m3fn")
    return DataFormat::e4m3fn();
  if (text == "e5m2")
    return DataFormat::e5m2();
  if (text == "e8m0")
    return DataFormat::e8m0();
  if (text == "f16")
    return DataFormat::f16();
  if (text == "bf16")
    return DataFormat::bf16();
  if (text == "f32")
    return DataFormat::f32();
  if (text == "nf4")
    return DataFormat::nf4();
  if (text == "mxint8")
    return DataFormat::mxInt8();
  if (text == "fp4")
    return DataFormat::fp4Lut();
  for (const char *prefix : {"uint", "int"}) {
    std::string p = prefix;
    if (text.compare(0, p.size(), p) == 0 && text.size() > p.size() &&
        std::isdigit(static_cast<unsigned char>(text[p.size()]))) {
      // The short names of offset and fixed-point codes read back too:
      // "uint4-8" (GGUF Q4_0's codes), "uint4+1" (GPTQ v1's stored zeros),
      // "int8/2^6" (MXINT8's elements).
      const std::string context = "format '" + text + "'";
      const size_t slash = text.find("/2^", p.size());
      const std::string integer = text.substr(0, slash);
      const size_t sign = integer.find_first_of("+-", p.size());
      Expected<int> bits = parseInteger(integer.substr(p.size(), sign - p.size()), context);
      if (!bits)
        return makeError(bits.error());
      int offset = 0, fraction = 0;
      if (sign != std::string::npos) {
        Expected<int> parsed = parseInteger(integer.substr(sign + 1), context);
        if (!parsed)
          return makeError(parsed.error());
        offset = integer[sign] == '-' ? -*parsed : *parsed;
      }
      if (slash != std::string::npos) {
        Expected<int> parsed = parseInteger(text.substr(slash + 3), context);
        if (!parsed)
          return makeError(parsed.error());
        fraction = *parsed;
      }
      return DataFormat::fromInt(IntFormat{*bits, p == "int", offset, false, fraction});
    }
  }
  if (text.compare(0, 4, "lut<") == 0 && text.back() == '>')
    return parseTableFormat(text);
  size_t open = text.find('<');
  if (open != std::string::npos && text.back() == '>') {
    std::string head = trim(text.substr(0, open));
    std::vector<std::string> args = splitArguments(text.substr(open + 1, text.size() - open - 2));
    std::string context = "format '" + text + "'";
    if (head == "int") {
      if (args.size() < 2 || args.size() > 4)
        return makeError(
            "int<bits,signed|unsigned[,offset[,fraction]]> takes 2 to 4 arguments; got " +
            std::to_string(args.size()) + " in " + context);
      Expected<int> bits = parseInteger(args[0], context);
      if (!bits)
        return makeError(bits.error());
      if (args[1] != "signed" && args[1] != "unsigned")
        return makeError("expected 'signed' or 'unsigned', got '" + args[1] + "' in " + context);
      int extra[2] = {0, 0}; // offset, fraction
      for (size_t i = 2; i < args.size(); ++i) {
        Expected<int> parsed = parseInteger(args[i], context);
        if (!parsed)
          return makeError(parsed.error());
        extra[i - 2] = *parsed;
      }
      return DataFormat::fromInt(IntFormat{*bits, args[1] == "signed", extra[0], false, extra[1]});
    }
    if (head == "float") {
      if (args.size() < 3 || args.size() > 4)
        return makeError("float<e,m,bias[,flags]> takes 3 or 4 arguments; got " +
                         std::to_string(args.size()) + " in " + context);
      int numbers[3];
      for (int i = 0; i < 3; ++i) {
        Expected<int> parsed = parseInteger(args[i], context);
        if (!parsed)
          return makeError(parsed.error());
        numbers[i] = *parsed;
      }
      unsigned flags = kFloatFinite;
      if (args.size() == 4) {
        std::string rest = args[3];
        size_t start = 0;
        while (true) {
          size_t bar = rest.find('|', start);
          std::string flag = trim(rest.substr(start, bar - start));
          if (flag == "ieee")
            flags |= kFloatIeee;
          else if (flag == "fn")
            flags |= kFloatNanAllOnes;
          else if (flag == "unsigned")
            flags |= kFloatUnsigned;
          else if (flag == "nosub")
            flags |= kFloatNoSubnormals;
          else if (flag != "finite")
            return makeError("unknown minifloat flag '" + flag + "' in " + context);
          if (bar == std::string::npos)
            break;
          start = bar + 1;
        }
      }
      return DataFormat::minifloat(numbers[0], numbers[1], numbers[2], flags);
    }
  }
  return makeError("unknown format '" + text + "'");
}

std::vector<DataFormat> builtinElementFormats() {
  std::vector<DataFormat> formats;
  for (int bits = 2; bits <= 8; ++bits)
    formats.push_back(DataFormat::signedInt(bits));
  for (int bits = 1; bits <= 8; ++bits)
    formats.push_back(DataFormat::unsignedInt(bits));
  formats.push_back(DataFormat::ternary());
  formats.push_back(DataFormat::e2m1());
  formats.push_back(DataFormat::e2m3());
  formats.push_back(DataFormat::e3m2());
  formats.push_back(DataFormat::e4m3fn());
  formats.push_back(DataFormat::e5m2());
  formats.push_back(DataFormat::e8m0());
  formats.push_back(DataFormat::nf4());
  formats.push_back(DataFormat::fp4Lut());
  return formats;
}

} // namespace lowbit::formats

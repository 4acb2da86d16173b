#include "core/formats/Listing.h"

#include "core/formats/Scheme.h"

#include <cstdio>
#include <sstream>

namespace lowbit::formats {

namespace {

// "f16 bf16 f32 s8 e4m3"; an inexact float target is marked with '~' (the
// decoded value is rounded, as nf4 is in f16).
std::string targetList(const DataFormat &format) {
  std::string list;
  for (const DecodeTarget &target : format.decodeTargets()) {
    if (!list.empty())
      list += " ";
    list += computeTypeName(target.type);
    if (!target.exact)
      list += "~";
  }
  return list;
}

std::string valueRange(const DataFormat &format) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "[%g, %g]", format.minFinite(), format.maxFinite());
  return buffer;
}

std::string pad(const std::string &text, size_t width) {
  return text.size() >= width ? text + " " : text + std::string(width - text.size(), ' ');
}

} // namespace

std::string formatListing() {
  std::ostringstream out;
  out << "Element formats\n";
  out << pad("  name", 12) << pad("bits", 6) << pad("encoding", 34) << pad("range", 28)
      << "decodes to\n";
  for (const DataFormat &format : builtinElementFormats()) {
    out << "  " << pad(format.name(), 10) << pad(std::to_string(format.bits()), 6)
        << pad(format.spelling(), 34) << pad(valueRange(format), 28) << targetList(format)
        << "\n";
  }
  out << "\nScale formats: f16, bf16, f32 (any scheme), e8m0 (MX only), "
         "e4m3fn with an f32 tensor scale (NVFP4)\n";
  out << "\nSchemes (bits per weight include scales, zeros and super-scales; "
         "per-channel metadata is charged at K = 4096)\n";
  out << pad("  name", 25) << pad("bits/w", 10) << pad("decodes to", 26) << "layout\n";
  for (const QuantScheme &scheme : builtinSchemes()) {
    char bits[32];
    std::snprintf(bits, sizeof bits, "%.6g", bitsPerWeight(scheme));
    out << "  " << pad(scheme.name, 23) << pad(bits, 10) << pad(targetList(scheme.element), 26)
        << describeScheme(scheme) << "\n";
  }
  out << "\n'~' marks a compute type that rounds the decoded element.\n";
  return out.str();
}

} // namespace lowbit::formats

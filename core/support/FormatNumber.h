// Numbers in error messages, as iostreams print them at precision 17 (%g),
// without iostreams: the formats library builds these messages inside
// quantization loops (a failed trial encode is how a scale is bumped), where
// a stream per message is slow, and, in a Python extension whose toolchain
// links part of libstdc++ statically, a stream's locale facets crashed.
#pragma once

#include <cstdio>
#include <string>

namespace lowbit {

inline std::string formatDouble(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

} // namespace lowbit

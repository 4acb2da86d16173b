// The spec parser on arbitrary text: any input gets a spec or an error,
// never a crash, an exception or a sanitizer report (issue: a stray
// non-ASCII byte reached toml++'s TOML_UNREACHABLE).
#include "compiler/spec/KernelSetSpec.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  (void)lowbit::spec::parseKernelSetSpec(text, "fuzz.toml");
  return 0;
}

// The kernel-set spec: which problems (formats and shapes) to compile, for
// which archs. Plain C++ (no MLIR), so tools on a GPU host can read specs too.
#pragma once

#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::spec {

// One `Y[M, N] = X[M, K] · dequant(W[N, K])ᵀ` with M dynamic. Type names are
// spelled as in the spec file: activation f16|bf16, weight uint1..8|int1..8,
// scale f16|bf16|f32, granularity tensor|channel|group, zero none|sub_code|
// sub_value.
struct ProblemSpec {
  std::string name;
  int64_t n = 0;
  int64_t k = 0;
  std::string activation = "f16";
  std::string weight = "uint4";
  std::string scale = "f16";
  std::string granularity = "group";
  int64_t groupSize = 128;
  std::string zero = "none";
};

struct KernelSetSpec {
  std::vector<std::string> archs;
  std::vector<ProblemSpec> problems;
};

// Parses and validates a spec; errors name the file, the line and the key.
Expected<KernelSetSpec> parseKernelSetSpec(const std::string &text,
                                           const std::string &sourceName);
Expected<KernelSetSpec> loadKernelSetSpec(const std::string &path);

// The spec `lowbit compile --builtin` uses: examples/specs/llama3-8b-w4a16.toml,
// embedded at build time.
const char *builtinKernelSetSpecText();

} // namespace lowbit::spec

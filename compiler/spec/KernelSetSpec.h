// The kernel-set spec: which problems (formats and shapes) to compile, for
// which archs. Plain C++ (no MLIR), so tools on a GPU host can read specs too.
#pragma once

#include "core/Problem.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::spec {

// Each [[problem]] is one `Y[M, N] = X[M, K] · dequant(W[N, K])ᵀ` with M
// dynamic, in the typed model. Keys (values spelled as core parses them):
// name, n, k, activation (f16 | bf16), weight (a format name: uint1..uint8,
// int2..int8, ...), scale (f16 | bf16 | f32 | e8m0 | e4m3fn), tensor_scale
// (f32: NVFP4's second level over e4m3fn block scales; absent for none),
// granularity (tensor | channel | group), group_size (group only; ignored
// otherwise, so [defaults] may set it), zero (none | sub_code | sub_value |
// quantized) and, with zero = "quantized", zero_codes (uint4 | uint8).
// Defaults: f16, uint4, f16 scales, group 128, no zeros.
struct KernelSetSpec {
  std::vector<std::string> archs;
  std::vector<core::Problem> problems;
};

// A spec's largest size: kernel sets of thousands of problems fit in far
// less, and input from a file or a pipe stays bounded.
constexpr size_t kMaxSpecBytes = size_t{4} << 20;

// Parses and validates a spec; errors name the file, the line and the key.
// Unknown keys (with a suggestion for near misses), values of the wrong TOML
// type, duplicate archs, names longer than core::kMaxProblemNameLength or
// sharing an identifier, and bytes that are not printable ASCII are errors.
Expected<KernelSetSpec> parseKernelSetSpec(const std::string &text,
                                           const std::string &sourceName);
Expected<KernelSetSpec> loadKernelSetSpec(const std::string &path);

// The spec text of `spec`: `comment` first (each line made a TOML comment),
// then archs and one [[problem]] table per problem with every key spelled
// out, so parseKernelSetSpec gives the same problems back. Names must already
// be printable ASCII (the parser's rule); quotes and backslashes are escaped.
std::string printKernelSetSpec(const KernelSetSpec &spec, const std::string &comment = {});

// The spec `lowbit compile --builtin` uses: examples/specs/llama3-8b-w4a16.toml,
// embedded at build time.
const char *builtinKernelSetSpecText();

} // namespace lowbit::spec

// The CPU-only planning half of `lowbit tune`: which problems to tune (model
// presets, --shapes, a spec), in which format, and the one-problem spec text
// handed to the compiler plugin with that problem's own schedule list. No
// GPU, no LLVM: unit tests cover all of it.
#pragma once

#include "runtime/kernels/KernelSet.h"
#include "core/support/Expected.h"
#include "tuning_db/Database.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lowbit::tune {

struct Shape {
  std::string layer; // "qo_proj", ... ; empty for --shapes
  int64_t n = 0, k = 0;
};

struct ModelPreset {
  std::string name; // as users spell it: "Llama-3-8B"
  std::string key;  // problem-name prefix: "llama3-8b"
  std::vector<Shape> shapes;
};

// Llama-3-8B, Llama-3-70B, Qwen2.5-7B and Mistral-7B linear layers (N x K of
// Y = X · Wᵀ), with fused q/k/v and gate/up as the spec examples fuse them.
const std::vector<ModelPreset> &modelPresets();

// Case-, '-', '.' and '_'-insensitive: "llama-3-8b", "Llama3_8B" both match.
// The error lists the known names.
Expected<ModelPreset> findModelPreset(const std::string &name);

// "4096x4096,14336x4096": positive N x K pairs ('X' accepted), spaces around
// items ignored, duplicates dropped (first kept).
Expected<std::vector<Shape>> parseShapes(const std::string &text);

// The element formats of a tuned problem.
struct Format {
  std::string name; // "w4a16-g128"
  core::Activation activation = core::Activation::F16;
  formats::DataFormat code = formats::DataFormat::unsignedInt(4);
  core::Scheme scheme; // f16 scales per 128 weights along K, no zeros
};

// "w<bits>a16" or "w<bits>bf16" (bf16 activations and scales), then '-'
// separated options: "g<N>" (group size N; the default is g128), "ch"
// (per-channel scales), "int" (signed codes). "w4a16-g128" is f16
// activations, uint4 codes, f16 scales per 128 weights along K. Or a
// scheme `lowbit formats` lists, by name ("mxfp4", "nvfp4", "gguf-q4_k",
// "w4-g128-asym", ...) with f16 activations, or with ":bf16" for bf16
// activations (named "<scheme>-bf16"): the formats library's scheme through
// core::kernelScheme, so every format a kernel reads can be tuned by name.
Expected<Format> parseFormat(const std::string &text);

// The problem a shape becomes in a format; `name` is the problem's name.
kernels::ProblemDesc problemFor(const std::string &name, const Shape &shape, const Format &format);

// Problem names: "<model key>.<layer>" for presets, "<format>.<N>x<K>" for
// --shapes.
std::string problemName(const std::string &prefix, const Shape &shape);

// A kernel-set spec (compiler/spec/KernelSetSpec.h syntax) with one problem
// for one arch, what the tune command writes to a temporary file for the
// compiler plugin.
std::string oneProblemSpecText(const kernels::ProblemDesc &problem, const std::string &arch);

// The id the kernel database gives the problem (sha256 of its signature).
std::string problemIdOf(const kernels::ProblemDesc &problem);

// lowbit_compile_main's arguments for one problem: the spec, "-o db", and one
// "--schedule" per schedule text.
std::vector<std::string> compileArgs(const std::string &specPath, const std::string &database,
                                     const std::vector<std::string> &schedules);

// `lowbit tune --compile-only --no-ptx`: removes the PTX of the problems'
// `arch` kernels that have a cubin, then compacts the file. PTX is most of a
// kernel row's size; without it the database is small enough to carry to a
// GPU host, but serves that arch only (the runtime cannot JIT for another).
// Returns the number of kernels changed.
Expected<int64_t> dropPtx(db::Database &database, const std::vector<std::string> &problemIds,
                          const std::string &arch);

} // namespace lowbit::tune

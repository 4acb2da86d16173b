// The typed problem model: the one description of
//   Y[M, N] = X[M, K] · dequant(W[N, K])ᵀ   (M chosen at run time)
// that the spec parser, the C ABI, the kernel database's signature, the IR
// builder, the tuner, the benchmark and the GPU tests convert to and from.
// Plain C++17, no MLIR. Every field has one parse and one print here; no code
// elsewhere reads a width or a family out of a string (docs/architecture.md).
#pragma once

#include "core/Activation.h"
#include "core/formats/DataFormat.h"
#include "core/formats/Scheme.h"
#include "core/support/Expected.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::core {

// "tensor" | "channel" | "group" (the spelling of specs and signatures).
const char *granularitySpelling(formats::Granularity granularity);
Expected<formats::Granularity> parseGranularity(const std::string &text);

// How zero points apply, as a kernel reads them:
//   None            w = q·s
//   SubtractCode    w = (q − z)·s   z in the scale dtype ("sub_code")
//   SubtractScaled  w = q·s − z     z in the scale dtype ("sub_value")
// and with Scheme::zeroCodes set, SubtractCode with z stored as integer codes
// ("quantized": GPTQ / AWQ store uint4 zeros).
const char *zeroSpelling(formats::ZeroMode mode, bool quantized);
struct ZeroSpelling {
  formats::ZeroMode mode = formats::ZeroMode::None;
  bool quantized = false;
};
Expected<ZeroSpelling> parseZero(const std::string &text);

// The scheme a kernel reads: which weights share a scale, the scale's dtype,
// and the zero points.
//
// Scale dtypes: f16, bf16 and f32 at any granularity; the block-scale bytes
// e8m0 (OCP MX: a power of two per group of 32) and e4m3fn (NVFP4's block
// scale) per group only and without zero points, as the formats that define
// them have none. NVFP4's second level, one f32 for the whole tensor that
// multiplies every e4m3fn block scale, is `tensorScale`: kernels read it from
// the scales buffer, after the block scales (scaleBytes, tensorScaleOffset).
struct Scheme {
  formats::Granularity granularity = formats::Granularity::PerGroup;
  int64_t groupSize = 128; // PerGroup only; 0 otherwise
  formats::DataFormat scale = formats::DataFormat::f16();
  // The per-tensor second-level scale's dtype (f32), or unset.
  std::optional<formats::DataFormat> tensorScale;
  formats::ZeroMode zero = formats::ZeroMode::None;
  // Quantized zero points: the integer format they are stored in (one code
  // per byte, uint4 or uint8). Unset: zeros have the scale's dtype.
  std::optional<formats::DataFormat> zeroCodes;
  bool actOrder = false;
  // Two-level scales (the compact int4 encoding; GGUF k-quants' shape): with
  // superBlock > 0 each group's `scale` is an integer code, uint8 or int8
  // (one byte a group), times one `superStep` (f16, bf16 or f32) per
  // super-block of superBlock weights along K. With zero = SubtractScaled
  // the zeros (mins) are codes in the same dtype times their own steps:
  //   w = q · (c_s · d_s) − c_z · d_z.
  // Each buffer holds its codes in the scales' order, then its steps
  // [N][K / superBlock] at superStepOffset.
  int64_t superBlock = 0;
  std::optional<formats::DataFormat> superStep;

  bool hasZeros() const { return zero != formats::ZeroMode::None; }
  bool hasSuperBlocks() const { return superBlock > 0; }
  bool operator==(const Scheme &o) const {
    return granularity == o.granularity && groupSize == o.groupSize && scale == o.scale &&
           tensorScale == o.tensorScale && zero == o.zero && zeroCodes == o.zeroCodes &&
           actOrder == o.actOrder && superBlock == o.superBlock && superStep == o.superStep;
  }
  bool operator!=(const Scheme &o) const { return !(*this == o); }
};

struct Problem {
  std::string name; // not part of the problem's identity
  int64_t n = 0, k = 0;
  Activation activation = Activation::F16;
  // Quantized activations only (validate): their scales, and y's type, which
  // they must name. f16 and bf16 activations leave both unset and write y in
  // their own type (outputType).
  ActivationScale activationScale = ActivationScale::None;
  std::optional<Output> output;
  formats::DataFormat code = formats::DataFormat::unsignedInt(4);
  Scheme scheme;

  int codeBits() const { return code.bits(); }
  // Same problem, whatever the name.
  bool sameAs(const Problem &o) const {
    return n == o.n && k == o.k && activation == o.activation &&
           activationScale == o.activationScale && output == o.output && code == o.code &&
           scheme == o.scheme;
  }
};

// y's type: the problem's output, or, for f16 and bf16 activations, theirs.
// (A quantized problem without an output is invalid; this returns f32 for it.)
Output outputType(const Problem &problem);
inline int outputBytes(Output output) { return output == Output::F32 ? 4 : 2; }
// Sets y's type in canonical form: f16 and bf16 activations' own type leaves
// output unset (so the spec and the C ABI may name it, for every problem).
// Call it after the activation is set.
void setOutput(Problem &problem, Output output);

// The identifier a problem's name becomes in IR, kernel names and files:
// every character but letters and digits is '_'. Two names of one kernel
// set must not share it (the spec parser checks), and it is at most
// kMaxProblemNameLength long: a 100,000-character name overflowed a buffer
// inside NVRTC.
constexpr size_t kMaxProblemNameLength = 200;
std::string problemSymbol(const std::string &name);

// Rejects what no kernel can mean (with a message naming the field):
// quantized activations without an activation scale or an output type, f16
// and bf16 activations with either; N and K
// in [1, 2^31 - 1] with scale and zero buffers whose byte sizes fit in int64,
// a group size that is positive and divides K (and is 0 for
// other granularities), a scale dtype of f16, bf16 or f32, or a block scale
// (e8m0 per group of 32, e4m3fn per group) without zero points, a tensor
// scale only as f32 over e4m3fn block scales, zero codes only with
// SubtractCode. Whether kernels exist for a valid problem is the
// schedule rules' question (core/ScheduleRules.h), not this one's.
Status validate(const Problem &problem);

// The canonical signature, whose sha256 is the problem's id in the kernel
// database. One line, the name left out, e.g.
//   lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=f16;
//   granularity=group;group=128;zero=none
// Fields that are at their default and were added later (the tensor scale,
// zero codes, act-order) are printed only when set, so the ids of earlier
// databases stay. They follow the fields every signature has, in the order
// tensor_scale (";tensor_scale=f32"), zero_codes, act_order, act_scale,
// out (";act_scale=token;out=f16", quantized activations only).
std::string signature(const Problem &problem);
// The exact inverse of signature (then validate).
Expected<Problem> parseSignature(const std::string &text);

// The formats library's scheme for the same weights: its quantizers make the
// benchmark's and the tests' inputs and its f64 dequantize is their reference.
Expected<formats::QuantScheme> quantScheme(const Problem &problem);
// The other way: the scheme a kernel would read for the formats library's
// scheme, or why a kernel cannot read it (super-block scales, zeros in a
// dtype that is neither the scale's nor an integer code). MX (e8m0 scales)
// and NVFP4 (e4m3fn scales and an f32 tensor scale) map to kernel schemes;
// whether the element has a kernel decode is the fragment facts' question.
// The result still goes through validate() with a shape.
Expected<Scheme> kernelScheme(const formats::QuantScheme &scheme);

// How many scales (and zeros) the problem has, and the bytes of one scale.
// The sizes below are -1 when the problem's N, K or group size define none
// (negative, a group of 0) or when they overflow int64; validate() rejects
// such problems, so a validated problem's sizes are never -1.
int64_t scaleCount(const Problem &problem);
int scaleElementBytes(const Problem &problem);
// The scales buffer kernels read: scaleCount scales of scaleElementBytes,
// then, with a tensor scale, its f32 at tensorScaleOffset, the next multiple
// of 4 bytes after the scales (so it is aligned without padding every scale).
// scaleBytes is the whole buffer and scaleAlignment the alignment its start
// needs: 16 bytes for group scales (split-K kernels load a row's scales of a
// K chunk as one vector, lb.load_scale_run), else a scale's size.
// tensorScaleOffset is -1 without one.
constexpr int kGroupScaleAlignment = 16;
int64_t scaleBytes(const Problem &problem);
int scaleAlignment(const Problem &problem);
int64_t tensorScaleOffset(const Problem &problem);
// Two-level scales: the byte offset of the steps in the scales buffer (and,
// with zeros, in the zeros buffer, laid out the same way): the codes' bytes
// rounded up to kSuperStepAlignment, so a row's steps can be loaded as
// vectors. -1 without super-blocks. superStepCount is N · K / superBlock.
constexpr int kSuperStepAlignment = 16;
int64_t superStepOffset(const Problem &problem);
int64_t superStepCount(const Problem &problem);
// The same offset from the codes' bytes alone (what lb-to-cuda knows).
int64_t superStepOffsetAfter(int64_t codeBytes);
// The same offset from the block scales' bytes alone (what lb-to-cuda knows).
int64_t tensorScaleOffsetAfter(int64_t blockScaleBytes);
// The bytes of one zero in the scale dtype, and the alignment of the zeros
// buffer: 1 for zero codes (bytes holding one or two codes); 0 without zeros.
int zeroElementBytes(const Problem &problem);
// The bytes of the zeros buffer kernels read (0 without zeros).
int64_t zeroBytes(const Problem &problem);
// The alignment the zeros buffer's start needs: a zero's bytes, or the
// scales' alignment with super-blocks (their steps follow the codes); 1
// without zeros.
int zeroAlignment(const Problem &problem);

// Zero codes as kernels read them: the scales' order ([N][K / group] row
// major, [N] per channel, [1] per tensor), index i = n · (K / group) + g,
// `bits` bits per code packed densely, least significant first: code i is
// bits [bits · (i mod (8 / bits)), ...) of byte i / (8 / bits), so uint8
// zeros are one byte each and uint4 zeros two per byte, the even index in the
// low nibble (GPTQ's qzeros order within a byte). A lane's zero is then one
// byte load, a shift and a mask. `codes` holds one code per byte in that
// order (scaleCount of them); a code that does not fit the zero format is an
// error, never masked; `out` must hold zeroBytes.
Status packZeroCodes(const Problem &problem, const uint8_t *codes, size_t count, uint8_t *out,
                     size_t outBytes);
// The exact inverse: scaleCount codes, one per byte, from `packed`
// (zeroBytes of it are read).
Expected<std::vector<uint8_t>> unpackZeroCodes(const Problem &problem, const uint8_t *packed,
                                               size_t packedBytes);

} // namespace lowbit::core

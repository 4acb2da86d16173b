// lowbit.KernelWeights and where they come from: the formats library's
// quantizer (lowbit.quantize), GPTQ, AWQ and GGUF tensors
// (lowbit.import_gptq / import_awq / import_gguf) and buffers quantized
// elsewhere (lowbit.kernel_weights). All of them end in
// checkpoint::toKernelWeights, the one statement of what a kernel reads.
#include "compiler/spec/KernelSetSpec.h"
#include "core/checkpoint/KernelWeights.h"
#include "core/checkpoint/PackedLayerShapes.h"
#include "core/formats/Gguf.h"
#include "core/formats/Gptq.h"
#include "core/formats/HessianQuantize.h"
#include "Arrays.h"
#include "Bindings.h"
#include "Errors.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/variant.h>
#include <nanobind/stl/vector.h>

#include <variant>

namespace nb = nanobind;
using namespace nb::literals;

namespace lowbit::python {
namespace {

using checkpoint::KernelWeights;

checkpoint::Shape shapeOf(const HostArray &a) {
  checkpoint::Shape shape;
  for (size_t d = 0; d < a.ndim(); ++d)
    shape.push_back(static_cast<int64_t>(a.shape(d)));
  return shape;
}

// The activation side of the problem the weights are for: x's type and,
// for s8 and e4m3, their scales and y's type (as lowbit.Problem spells them).
core::Problem activationSide(const std::string &activation, const std::string &activationScale,
                             const std::optional<std::string> &output) {
  core::Problem side;
  side.activation = unwrap(core::parseActivation(activation));
  side.activationScale = unwrap(core::parseActivationScale(activationScale));
  if (output)
    side.output = unwrap(core::parseOutput(*output));
  return side;
}

KernelWeights kernelWeightsOf(Expected<formats::QuantizedMatrix> matrix,
                              const core::Problem &side, const char *what) {
  if (!matrix)
    throw std::invalid_argument(std::string(what) + ": " + matrix.error());
  Expected<KernelWeights> weights = checkpoint::toKernelWeights(
      std::move(*matrix), side.activation, side.activationScale, side.output);
  if (!weights)
    throw std::invalid_argument(std::string(what) + ": " + weights.error());
  return std::move(*weights);
}

std::vector<double> doublesOf(const HostArray &a) {
  if (hasType(a, kFloat64))
    return copyOf<double>(a);
  std::vector<double> values(a.size());
  const auto *f = static_cast<const float *>(a.data());
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = f[i];
  return values;
}

Expected<formats::QuantizedMatrix>
quantizeWithHessian(const std::vector<double> &values, const core::Problem &target,
                    const formats::QuantScheme &scheme, const HostArray &hessian, double damping,
                    const std::optional<std::vector<double>> &clipRatios, bool descendingOrder) {
  std::vector<size_t> shape = checkArray(hessian, "hessian", {kFloat32, kFloat64}, 2);
  if (static_cast<int64_t>(shape[0]) != target.k || static_cast<int64_t>(shape[1]) != target.k)
    throw std::invalid_argument("hessian is [" + std::to_string(shape[0]) + ", " +
                                std::to_string(shape[1]) + "], it must be K x K = " +
                                std::to_string(target.k) + " x " + std::to_string(target.k));
  formats::HessianQuantizeOptions options;
  options.damping = damping;
  options.descendingActivationOrder = descendingOrder;
  options.clipRatios = clipRatios ? *clipRatios : formats::defaultClipRatios();
  std::vector<double> h = doublesOf(hessian);
  return formats::quantizeWithHessian(values.data(), target.n, target.k, h.data(), scheme,
                                      options);
}

// Round to nearest without a Hessian; GPTQ (formats/HessianQuantize.h) with one.
KernelWeights quantize(const HostArray &weights, const core::Problem &target,
                       const std::optional<HostArray> &hessian, double damping,
                       const std::optional<std::vector<double>> &clipRatios,
                       bool descendingOrder) {
  std::vector<size_t> shape = checkArray(weights, "weights", {kFloat32, kFloat64}, 2);
  if (static_cast<int64_t>(shape[0]) != target.n || static_cast<int64_t>(shape[1]) != target.k)
    throw std::invalid_argument("weights are [" + std::to_string(shape[0]) + ", " +
                                std::to_string(shape[1]) + "], the problem is N x K = " +
                                std::to_string(target.n) + " x " + std::to_string(target.k));
  if (target.scheme.actOrder)
    throw std::invalid_argument("act-order weights come from GPTQ checkpoints "
                                "(lowbit.import_gptq with g_idx), not from quantize");
  std::vector<double> values = doublesOf(weights);
  formats::QuantScheme scheme = unwrap(core::quantScheme(target));
  if (!hessian && clipRatios)
    throw std::invalid_argument("clip_ratios need a hessian (the clip is chosen by the "
                                "input-weighted error)");
  Expected<formats::QuantizedMatrix> matrix =
      hessian ? quantizeWithHessian(values, target, scheme, *hessian, damping, clipRatios,
                                    descendingOrder)
              : formats::quantize(values.data(), target.n, target.k, scheme);
  KernelWeights out = kernelWeightsOf(std::move(matrix), target, "quantize");
  if (!out.problem.sameAs(target))
    throw std::invalid_argument("quantize: the formats library's scheme for " +
                                core::signature(target) + " is read by kernels as " +
                                core::signature(out.problem));
  out.problem.name = target.name;
  return out;
}

KernelWeights importGptq(const HostArray &qweight, const HostArray &qzeros,
                         const HostArray &scales, const std::optional<HostArray> &gIdx, bool v2,
                         const std::string &activation, const std::string &activationScale,
                         const std::optional<std::string> &output) {
  checkArray(qweight, "qweight", {kInt32}, 2);
  checkArray(qzeros, "qzeros", {kInt32}, 2);
  checkArray(scales, "scales", {kFloat16}, 2);
  formats::GptqCheckpoint c = unwrap(
      checkpoint::gptqLayerShape(shapeOf(qweight), shapeOf(qzeros), shapeOf(scales), v2));
  c.qweight = copyOf<int32_t>(qweight);
  c.qzeros = copyOf<int32_t>(qzeros);
  c.scales = copyOf<uint16_t>(scales);
  if (gIdx) {
    checkArray(*gIdx, "g_idx", {kInt32, kInt64}, 1);
    c.gIdx = indicesOf(*gIdx, "g_idx");
  }
  return kernelWeightsOf(formats::importGptq(c),
                         activationSide(activation, activationScale, output), "GPTQ layer");
}

KernelWeights importAwq(const HostArray &qweight, const HostArray &qzeros,
                        const HostArray &scales, const std::string &activation,
                        const std::string &activationScale,
                        const std::optional<std::string> &output) {
  checkArray(qweight, "qweight", {kInt32}, 2);
  checkArray(qzeros, "qzeros", {kInt32}, 2);
  checkArray(scales, "scales", {kFloat16}, 2);
  formats::AwqCheckpoint c =
      unwrap(checkpoint::awqLayerShape(shapeOf(qweight), shapeOf(qzeros), shapeOf(scales)));
  c.qweight = copyOf<int32_t>(qweight);
  c.qzeros = copyOf<int32_t>(qzeros);
  c.scales = copyOf<uint16_t>(scales);
  return kernelWeightsOf(formats::importAwq(c), activationSide(activation, activationScale, output),
                         "AWQ layer");
}

formats::GgufType ggufType(const std::variant<int, std::string> &type) {
  if (const int *id = std::get_if<int>(&type))
    return unwrap(formats::ggufTypeFromId(*id));
  const std::string &name = std::get<std::string>(type);
  std::string known;
  for (formats::GgufType t : formats::kGgufTypes) {
    if (name == formats::ggufTypeName(t))
      return t;
    known += (known.empty() ? "" : ", ") + std::string(formats::ggufTypeName(t));
  }
  throw std::invalid_argument("GGUF type '" + name + "' is not one lowbit imports (" + known +
                              ")");
}

KernelWeights importGguf(const std::variant<int, std::string> &type, const HostArray &data,
                         int64_t n, int64_t k, const std::string &activation,
                         const std::string &activationScale,
                         const std::optional<std::string> &output) {
  checkArray(data, "data", {kUInt8}, 1);
  return kernelWeightsOf(formats::importGguf(ggufType(type),
                                             static_cast<const uint8_t *>(data.data()),
                                             data.size(), n, k),
                         activationSide(activation, activationScale, output), "GGUF tensor");
}

// Buffers already in the C ABI's form: checked by dequantizing them once.
KernelWeights fromBuffers(const core::Problem &problem, const HostArray &codes,
                          const HostArray &scales, const std::optional<HostArray> &zeros,
                          const std::optional<HostArray> &permutation) {
  std::vector<size_t> shape = checkArray(codes, "codes", {kUInt8}, 2);
  if (static_cast<int64_t>(shape[0]) != problem.n || static_cast<int64_t>(shape[1]) != problem.k)
    throw std::invalid_argument("codes must be [N, K] = [" + std::to_string(problem.n) + ", " +
                                std::to_string(problem.k) + "]");
  checkArray(scales, "scales", {kUInt8}, 1);
  KernelWeights w;
  w.problem = problem;
  w.codes = copyOf<uint8_t>(codes);
  w.scales = copyOf<uint8_t>(scales);
  if (zeros) {
    checkArray(*zeros, "zeros", {kUInt8}, 1);
    w.zeros = copyOf<uint8_t>(*zeros);
  }
  if (permutation) {
    checkArray(*permutation, "permutation", {kInt32, kInt64}, 1);
    w.permutation = indicesOf(*permutation, "permutation");
  }
  unwrap(checkpoint::dequantizeKernelWeights(w));
  return w;
}

nb::object bytesOrNone(const std::vector<uint8_t> &bytes) {
  if (bytes.empty())
    return nb::none();
  return toNumpyObject(bytes, {bytes.size()});
}

} // namespace

core::Problem planProblem(const KernelWeights &weights) {
  core::Problem p = weights.problem;
  p.scheme.actOrder = !weights.permutation.empty();
  return p;
}

void bindWeights(nb::module_ &m) {
  nb::class_<KernelWeights>(m, "KernelWeights",
                            "A quantized matrix as lowbit's kernels read it: the problem, codes "
                            "one per byte, scales, zeros and the act-order permutation.")
      .def_prop_ro("problem", &planProblem)
      .def_prop_ro("codes",
                   [](const KernelWeights &w) {
                     return toNumpyObject(w.codes, {size_t(w.problem.n), size_t(w.problem.k)});
                   })
      .def_prop_ro("scales",
                   [](const KernelWeights &w) { return toNumpyObject(w.scales, {w.scales.size()}); })
      .def_prop_ro("zeros", [](const KernelWeights &w) { return bytesOrNone(w.zeros); })
      .def_prop_ro("permutation",
                   [](const KernelWeights &w) -> nb::object {
                     if (w.permutation.empty())
                       return nb::none();
                     return toNumpyObject(w.permutation, {w.permutation.size()});
                   })
      .def_prop_ro("notes", [](const KernelWeights &w) { return w.notes; })
      .def(
          "dequantize",
          [](const KernelWeights &w) {
            std::vector<double> values = unwrap(checkpoint::dequantizeKernelWeights(w));
            return toNumpyObject(std::move(values), {size_t(w.problem.n), size_t(w.problem.k)});
          },
          "The f64 weights [N, K] the buffers describe (columns in the permuted order of an "
          "act-order matrix).");

  m.def("quantize", &quantize, "weights"_a, "problem"_a, "hessian"_a = nb::none(),
        "damping"_a = 0.01, "clip_ratios"_a = nb::none(), "descending_order"_a = true,
        "Quantizes float weights [N, K] to the problem's format with the formats library: "
        "round to nearest, or, given hessian [K, K] (the sum of xᵀx over calibration inputs), "
        "GPTQ with static groups: damping is a fraction of H's mean diagonal, clip_ratios the "
        "per-slot clipping candidates (default 1, 0.98, ..., 0.72), descending_order sweeps "
        "columns by decreasing H[k][k].");
  m.def("import_gptq", &importGptq, "qweight"_a, "qzeros"_a, "scales"_a, "g_idx"_a = nb::none(),
        "v2"_a = false, "activation"_a = "f16", "activation_scale"_a = "none",
        "output"_a = nb::none(),
        "A GPTQ layer's tensors (qweight [K·bits/32, N] int32, qzeros [G, N·bits/32] int32, "
        "scales [G, N] float16, g_idx [K]); v2 for GPTQModel's zero convention.");
  m.def("import_awq", &importAwq, "qweight"_a, "qzeros"_a, "scales"_a, "activation"_a = "f16",
        "activation_scale"_a = "none", "output"_a = nb::none(),
        "An AWQ (GEMM) layer's tensors: qweight [K, N/8], qzeros [K/g, N/8] int32, scales "
        "[K/g, N] float16.");
  m.def("import_gguf", &importGguf, "ggml_type"_a, "data"_a, "n"_a, "k"_a,
        "activation"_a = "f16", "activation_scale"_a = "none", "output"_a = nb::none(),
        "A GGUF tensor's blocks (uint8) of type Q4_0, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K or Q6_K "
        "(name or id) as W[n][k].");
  m.def("kernel_weights", &fromBuffers, "problem"_a, "codes"_a, "scales"_a, "zeros"_a = nb::none(),
        "permutation"_a = nb::none(),
        "Buffers in the C ABI's form (codes [N, K] uint8, scale bytes, zero bytes or codes, "
        "permutation), checked by dequantizing them.");
  m.def(
      "kernel_set_spec",
      [](const std::vector<core::Problem> &problems, const std::vector<std::string> &archs,
         const std::string &comment) {
        spec::KernelSetSpec spec{archs, problems};
        return spec::printKernelSetSpec(spec, comment);
      },
      "problems"_a, "archs"_a = std::vector<std::string>{"sm_90a"}, "comment"_a = "",
      "The kernel-set spec (TOML) `lowbit compile` and `lowbit tune` take for these problems.");
}

} // namespace lowbit::python

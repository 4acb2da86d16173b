// lowbit.Problem: core::Problem, built from the spellings specs use and
// printed as its signature; validate() is the only judge of what is valid.
#include "core/Problem.h"
#include "core/FormatListing.h"
#include "Bindings.h"
#include "Errors.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <functional>

namespace nb = nanobind;
using namespace nb::literals;

namespace lowbit::python {
namespace {

core::Problem makeProblem(int64_t n, int64_t k, const std::string &weight,
                          const std::string &activation, const std::string &scale,
                          const std::string &granularity, int64_t groupSize,
                          const std::string &zero, const std::optional<std::string> &zeroCodes,
                          bool actOrder, const std::optional<std::string> &tensorScale,
                          const std::string &name, int64_t superBlock,
                          const std::optional<std::string> &superStep,
                          const std::string &activationScale,
                          const std::optional<std::string> &output) {
  core::Problem p;
  p.name = name;
  p.n = n;
  p.k = k;
  p.code = unwrap(formats::parseFormat(weight));
  p.activation = unwrap(core::parseActivation(activation));
  p.activationScale = unwrap(core::parseActivationScale(activationScale));
  if (output)
    core::setOutput(p, unwrap(core::parseOutput(*output)));
  p.scheme.scale = unwrap(formats::parseFormat(scale));
  p.scheme.granularity = unwrap(core::parseGranularity(granularity));
  p.scheme.groupSize = p.scheme.granularity == formats::Granularity::PerGroup ? groupSize : 0;
  core::ZeroSpelling zeroMode = unwrap(core::parseZero(zero));
  p.scheme.zero = zeroMode.mode;
  if (zeroMode.quantized != zeroCodes.has_value())
    throw std::invalid_argument("zero = \"quantized\" and zero_codes (uint4 or uint8) go together");
  if (zeroCodes)
    p.scheme.zeroCodes = unwrap(formats::parseFormat(*zeroCodes));
  if (tensorScale)
    p.scheme.tensorScale = unwrap(formats::parseFormat(*tensorScale));
  p.scheme.actOrder = actOrder;
  p.scheme.superBlock = superBlock;
  if (superStep)
    p.scheme.superStep = unwrap(formats::parseFormat(*superStep));
  unwrap(core::validate(p));
  return p;
}

} // namespace

void bindProblem(nb::module_ &m) {
  nb::class_<core::Problem>(m, "Problem",
                            "One matmul problem y[M, N] = x[M, K] · dequant(W)ᵀ: the shape, the "
                            "weight format, the scheme and the activation dtype.")
      .def(nb::new_(&makeProblem), "n"_a, "k"_a, "weight"_a = "uint4", "activation"_a = "f16",
           "scale"_a = "f16", "granularity"_a = "group", "group_size"_a = 128,
           "zero"_a = "none", "zero_codes"_a = nb::none(), "act_order"_a = false,
           "tensor_scale"_a = nb::none(), "name"_a = "", "super_block"_a = 0,
           "super_step"_a = nb::none(), "activation_scale"_a = "none", "output"_a = nb::none())
      .def_static(
          "from_signature",
          [](const std::string &text) { return unwrap(core::parseSignature(text)); }, "text"_a,
          "The problem a signature (Problem.signature) names.")
      .def_prop_ro("signature", [](const core::Problem &p) { return core::signature(p); })
      .def_prop_ro("name", [](const core::Problem &p) { return p.name; })
      .def(
          "with_name",
          [](const core::Problem &p, const std::string &name) {
            core::Problem named = p;
            named.name = name;
            return named;
          },
          "name"_a, "The same problem under another name (names are not part of its identity).")
      .def_prop_ro("n", [](const core::Problem &p) { return p.n; })
      .def_prop_ro("k", [](const core::Problem &p) { return p.k; })
      .def_prop_ro("weight", [](const core::Problem &p) { return p.code.name(); })
      .def_prop_ro("bits", [](const core::Problem &p) { return p.code.bits(); })
      .def_prop_ro("activation",
                   [](const core::Problem &p) { return core::activationName(p.activation); })
      .def_prop_ro("activation_scale",
                   [](const core::Problem &p) {
                     return core::activationScaleSpelling(p.activationScale);
                   })
      .def_prop_ro("output",
                   [](const core::Problem &p) { return core::outputName(core::outputType(p)); })
      .def_prop_ro("scale", [](const core::Problem &p) { return p.scheme.scale.name(); })
      .def_prop_ro("granularity",
                   [](const core::Problem &p) {
                     return core::granularitySpelling(p.scheme.granularity);
                   })
      .def_prop_ro("group_size", [](const core::Problem &p) { return p.scheme.groupSize; })
      .def_prop_ro("zero",
                   [](const core::Problem &p) {
                     return core::zeroSpelling(p.scheme.zero, p.scheme.zeroCodes.has_value());
                   })
      .def_prop_ro("zero_codes",
                   [](const core::Problem &p) -> std::optional<std::string> {
                     if (!p.scheme.zeroCodes)
                       return std::nullopt;
                     return p.scheme.zeroCodes->name();
                   })
      .def_prop_ro("act_order", [](const core::Problem &p) { return p.scheme.actOrder; })
      .def_prop_ro("super_block", [](const core::Problem &p) { return p.scheme.superBlock; })
      .def_prop_ro("super_step",
                   [](const core::Problem &p) -> std::optional<std::string> {
                     if (!p.scheme.superStep)
                       return std::nullopt;
                     return p.scheme.superStep->name();
                   })
      .def_prop_ro("scale_count", [](const core::Problem &p) { return core::scaleCount(p); })
      .def_prop_ro("kernel_archs",
                   [](const core::Problem &p) {
                     // The archs whose default schedules accept the problem:
                     // `lowbit formats`' answer for it. Act-order is the
                     // plan's gather, so the kernels are the plain problem's.
                     core::Problem kernels = p;
                     kernels.scheme.actOrder = false;
                     return core::problemKernels(kernels).archs;
                   })
      .def("__eq__", [](const core::Problem &a, const core::Problem &b) { return a.sameAs(b); })
      .def("__hash__",
           [](const core::Problem &p) { return std::hash<std::string>()(core::signature(p)); })
      .def("__repr__",
           [](const core::Problem &p) { return "lowbit.Problem('" + core::signature(p) + "')"; });
}

} // namespace lowbit::python

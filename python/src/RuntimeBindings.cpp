// lowbit.Context and lowbit.Plan: lowbit.h's context and plan, with the
// packing entry points on host memory and lowbit_matmul (or, given x's
// scales, lowbit_matmul_quantized; from f16 or bf16 x on an s8 plan,
// lowbit_matmul_quantizing) on raw device pointers (the torch op in
// lowbit/ops.py passes tensors' data_ptr and the current stream). matmul
// keeps the GIL: it only enqueues work, and releasing and retaking the lock
// would cost more than the call.
#include "core/AbiFormats.h"
#include "core/checkpoint/KernelWeights.h"
#include "Arrays.h"
#include "Bindings.h"
#include "Errors.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <cstring>
#include <optional>

namespace nb = nanobind;
using namespace nb::literals;

namespace lowbit::python {
namespace {

class Context {
public:
  Context(const std::optional<std::string> &systemDb, const std::optional<std::string> &userDb,
          int device)
      : device_(device) {
    if (!systemDb && !userDb)
      throw std::invalid_argument(
          "a lowbit.Context needs a kernel database: system_db (shipped kernels, from "
          "`lowbit compile`) and/or user_db (from `lowbit tune`)");
    lowbit_context_options options;
    std::memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.system_db_path = systemDb ? systemDb->c_str() : nullptr;
    options.user_db_path = userDb ? userDb->c_str() : nullptr;
    options.device_ordinal = device;
    check(lowbit_context_create(&options, &context_), "lowbit_context_create");
  }
  ~Context() { lowbit_context_destroy(context_); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;

  lowbit_context *get() const { return context_; }
  int device() const { return device_; }

private:
  lowbit_context *context_ = nullptr;
  int device_;
};

class Plan {
public:
  Plan(Context &context, const core::Problem &problem) : problem_(problem) {
    lowbit_problem abi;
    std::vector<double> table;
    unwrap(core::problemToAbi(problem, &abi, &table));
    check(lowbit_plan_create(context.get(), &abi, &plan_), "lowbit_plan_create");
    size_t weights = 0, scales = 0, zeros = 0, workspace = 0;
    check(lowbit_plan_packed_sizes(plan_, &weights, &scales, &zeros, &workspace),
          "lowbit_plan_packed_sizes");
    weightBytes_ = weights, scaleBytes_ = scales, zeroBytes_ = zeros;
    check(lowbit_plan_layout_id(plan_, &layoutId_), "lowbit_plan_layout_id");
    device_ = context.device();
  }
  ~Plan() { lowbit_plan_destroy(plan_); }
  Plan(const Plan &) = delete;
  Plan &operator=(const Plan &) = delete;

  const core::Problem &problem() const { return problem_; }
  size_t weightBytes() const { return weightBytes_; }
  size_t scaleBytes() const { return scaleBytes_; }
  size_t zeroBytes() const { return zeroBytes_; }
  uint64_t layoutId() const { return layoutId_; }
  int device() const { return device_; }

  size_t workspaceBytes(int64_t m) const {
    size_t bytes = 0;
    check(lowbit_plan_workspace_bytes(plan_, m, &bytes), "lowbit_plan_workspace_bytes");
    return bytes;
  }

  nb::dict explain(int64_t m) const {
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof choice);
    choice.struct_size = sizeof choice;
    check(lowbit_plan_explain(plan_, m, &choice), "lowbit_plan_explain");
    nb::dict out;
    out["kernel_name"] = choice.kernel_name;
    out["kernel_id"] = choice.kernel_id;
    out["family"] = choice.family;
    out["arch"] = choice.arch;
    out["m_lo"] = choice.m_lo;
    out["m_hi"] = choice.m_hi;
    out["tier"] = choice.tier;
    out["heuristic"] = choice.heuristic != 0;
    out["jit_from_ptx"] = choice.jit_from_ptx != 0;
    out["database_path"] = choice.database_path;
    out["notes"] = choice.notes;
    return out;
  }

  // The three buffers lowbit_matmul reads, packed on the host.
  nb::tuple pack(const checkpoint::KernelWeights &w) const {
    if (const core::Problem wanted = planProblem(w); !wanted.sameAs(problem_))
      throw std::invalid_argument("the weights are for " + core::signature(wanted) +
                                  ", the plan is for " + core::signature(problem_));
    std::vector<uint8_t> weights(weightBytes_, 0);
    check(lowbit_pack_weights(plan_, w.codes.data(), weights.data(), weights.size(),
                              LOWBIT_MEMORY_HOST, nullptr),
          "lowbit_pack_weights");
    if (problem_.scheme.actOrder)
      check(lowbit_pack_permutation(plan_, w.permutation.data(), weights.data(), weights.size(),
                                    LOWBIT_MEMORY_HOST, nullptr),
            "lowbit_pack_permutation");
    if (w.scales.size() > scaleBytes_)
      throw std::invalid_argument("the weights hold " + std::to_string(w.scales.size()) +
                                  " scale bytes, the plan's buffer " +
                                  std::to_string(scaleBytes_));
    std::vector<uint8_t> scales(scaleBytes_, 0);
    std::copy(w.scales.begin(), w.scales.end(), scales.begin());
    nb::object zeros = nb::none();
    if (problem_.scheme.zeroCodes) {
      std::vector<uint8_t> packed(zeroBytes_, 0);
      check(lowbit_pack_zeros(plan_, w.zeros.data(), w.zeros.size(), packed.data(), packed.size(),
                              LOWBIT_MEMORY_HOST, nullptr),
            "lowbit_pack_zeros");
      zeros = toNumpyObject(std::move(packed), {zeroBytes_});
    } else if (problem_.scheme.hasZeros()) {
      if (w.zeros.size() != zeroBytes_)
        throw std::invalid_argument("the weights hold " + std::to_string(w.zeros.size()) +
                                    " zero bytes, the plan takes " + std::to_string(zeroBytes_));
      zeros = toNumpyObject(w.zeros, {zeroBytes_});
    }
    return nb::make_tuple(toNumpyObject(std::move(weights), {weightBytes_}),
                          toNumpyObject(std::move(scales), {scaleBytes_}), zeros);
  }

  // The packed buffers back as KernelWeights (lowbit_unpack_weights and
  // core::unpackZeroCodes): the CPU reference path and round-trip checks.
  checkpoint::KernelWeights unpack(const HostArray &weights, const HostArray &scales,
                                   const std::optional<HostArray> &zeros) const {
    checkArray(weights, "weights", {kUInt8}, 1);
    checkArray(scales, "scales", {kUInt8}, 1);
    checkpoint::KernelWeights w;
    w.problem = problem_;
    w.problem.scheme.actOrder = false; // the kernels' problem; the permutation says the rest
    w.codes.resize(static_cast<size_t>(problem_.n * problem_.k));
    if (problem_.scheme.actOrder)
      w.permutation.resize(static_cast<size_t>(problem_.k));
    check(lowbit_unpack_weights(plan_, weights.data(), weights.size(), w.codes.data(),
                                w.codes.size(),
                                w.permutation.empty() ? nullptr : w.permutation.data()),
          "lowbit_unpack_weights");
    const size_t scaleBytes = static_cast<size_t>(core::scaleCount(problem_)) *
                              static_cast<size_t>(core::scaleElementBytes(problem_));
    if (scales.size() < scaleBytes)
      throw std::invalid_argument("scales hold " + std::to_string(scales.size()) +
                                  " bytes, the problem's take " + std::to_string(scaleBytes));
    const auto *scaleData = static_cast<const uint8_t *>(scales.data());
    w.scales.assign(scaleData, scaleData + scaleBytes);
    if (problem_.scheme.hasZeros()) {
      if (!zeros)
        throw std::invalid_argument("the problem has zero points (" +
                                    std::string(core::zeroSpelling(
                                        problem_.scheme.zero, problem_.scheme.zeroCodes.has_value())) +
                                    "), zeros is None");
      checkArray(*zeros, "zeros", {kUInt8}, 1);
      const auto *zeroData = static_cast<const uint8_t *>(zeros->data());
      if (problem_.scheme.zeroCodes)
        w.zeros = unwrap(core::unpackZeroCodes(problem_, zeroData, zeros->size()));
      else
        w.zeros.assign(zeroData, zeroData + std::min(zeros->size(), zeroBytes_));
    }
    return w;
  }

  // x_scales given: lowbit_matmul_quantized, which is what a plan for s8 or
  // e4m3 activations takes (lowbit.h refuses either entry point on the
  // other's plans, naming the right one).
  void matmul(int64_t m, uintptr_t x, uintptr_t weights, size_t weightBytes, uintptr_t scales,
              uintptr_t zeros, uintptr_t y, uintptr_t workspace, size_t workspaceBytes,
              uintptr_t stream, std::optional<uintptr_t> xScales) const {
    const lowbit_weights w = packedWeights(weights, weightBytes);
    const void *xPointer = reinterpret_cast<const void *>(x);
    const void *scalePointer = reinterpret_cast<const void *>(scales);
    const void *zeroPointer = reinterpret_cast<const void *>(zeros);
    void *yPointer = reinterpret_cast<void *>(y);
    void *workspacePointer = reinterpret_cast<void *>(workspace);
    void *streamHandle = reinterpret_cast<void *>(stream);
    if (xScales)
      check(lowbit_matmul_quantized(plan_, m, xPointer, reinterpret_cast<const void *>(*xScales),
                                    &w, scalePointer, zeroPointer, yPointer, workspacePointer,
                                    workspaceBytes, streamHandle),
            "lowbit_matmul_quantized");
    else
      check(lowbit_matmul(plan_, m, xPointer, &w, scalePointer, zeroPointer, yPointer,
                          workspacePointer, workspaceBytes, streamHandle),
            "lowbit_matmul");
  }

  // lowbit_matmul_quantizing: f16 or bf16 x (x_dtype) on a plan for s8 or
  // e4m3 activations, quantized into the workspace first.
  void matmulQuantizing(int64_t m, uintptr_t x, const std::string &xDtype, uintptr_t weights,
                        size_t weightBytes, uintptr_t scales, uintptr_t zeros, uintptr_t y,
                        uintptr_t workspace, size_t workspaceBytes, uintptr_t stream) const {
    const core::Activation activation = unwrap(core::parseActivation(xDtype));
    if (activation != core::Activation::F16 && activation != core::Activation::BF16)
      throw std::invalid_argument("x_dtype must be 'f16' or 'bf16', got '" + xDtype + "'");
    const lowbit_weights w = packedWeights(weights, weightBytes);
    check(lowbit_matmul_quantizing(
              plan_, m, reinterpret_cast<const void *>(x),
              activation == core::Activation::BF16 ? LOWBIT_DTYPE_BF16 : LOWBIT_DTYPE_F16, &w,
              reinterpret_cast<const void *>(scales), reinterpret_cast<const void *>(zeros),
              reinterpret_cast<void *>(y), reinterpret_cast<void *>(workspace), workspaceBytes,
              reinterpret_cast<void *>(stream)),
          "lowbit_matmul_quantizing");
  }

private:
  lowbit_weights packedWeights(uintptr_t weights, size_t weightBytes) const {
    lowbit_weights w;
    w.struct_size = sizeof w;
    w.data = reinterpret_cast<const void *>(weights);
    w.bytes = weightBytes;
    w.layout_id = layoutId_;
    return w;
  }

  core::Problem problem_;
  lowbit_plan *plan_ = nullptr;
  size_t weightBytes_ = 0, scaleBytes_ = 0, zeroBytes_ = 0;
  uint64_t layoutId_ = 0;
  int device_ = 0;
};

} // namespace

void bindRuntime(nb::module_ &m) {
  nb::class_<Context>(m, "Context",
                      "The CUDA driver, one device, and the kernel databases plans read.")
      .def(nb::init<const std::optional<std::string> &, const std::optional<std::string> &, int>(),
           "system_db"_a = nb::none(), "user_db"_a = nb::none(), "device"_a = 0)
      .def_prop_ro("device", &Context::device);

  nb::class_<Plan>(m, "Plan", "The kernels that serve one problem at every M, on one device.")
      .def(nb::init<Context &, const core::Problem &>(), "context"_a, "problem"_a)
      .def_prop_ro("problem", &Plan::problem)
      .def_prop_ro("device", &Plan::device)
      .def_prop_ro("layout_id", &Plan::layoutId)
      .def_prop_ro("weight_bytes", &Plan::weightBytes)
      .def_prop_ro("scale_bytes", &Plan::scaleBytes)
      .def_prop_ro("zero_bytes", &Plan::zeroBytes)
      .def("workspace_bytes", &Plan::workspaceBytes, "m"_a)
      .def("explain", &Plan::explain, "m"_a, "Which kernel serves M, and why.")
      .def("pack", &Plan::pack, "weights"_a,
           "(weights, scales, zeros): the packed host buffers lowbit_matmul reads (zeros None "
           "without zero points).")
      .def("unpack", &Plan::unpack, "weights"_a, "scales"_a, "zeros"_a = nb::none(),
           "The packed buffers back as KernelWeights.")
      .def("matmul", &Plan::matmul, "m"_a, "x"_a, "weights"_a, "weight_bytes"_a, "scales"_a,
           "zeros"_a, "y"_a, "workspace"_a, "workspace_bytes"_a, "stream"_a,
           "x_scales"_a = nb::none(),
           "lowbit_matmul on device pointers (ints); asynchronous on `stream`. With x_scales "
           "(x's f32 scales, for s8 or e4m3 activations): lowbit_matmul_quantized.")
      .def("matmul_quantizing", &Plan::matmulQuantizing, "m"_a, "x"_a, "x_dtype"_a, "weights"_a,
           "weight_bytes"_a, "scales"_a, "zeros"_a, "y"_a, "workspace"_a, "workspace_bytes"_a,
           "stream"_a,
           "lowbit_matmul_quantizing on device pointers (ints): f16 or bf16 x ('f16', 'bf16') "
           "on a plan for s8 or e4m3 activations, quantized into the workspace "
           "(workspace_bytes(m)) and then multiplied; asynchronous on `stream`.");
}

} // namespace lowbit::python

// The runtime GPU tests' fixture and helpers (RuntimeGpuTest.cpp,
// RuntimeErrorsGpuTest.cpp): plans on the runtime test database, weights
// quantized by the formats library, and the f64 reference.
#pragma once

#include "compiler/measure/ProblemInputs.h"
#include "core/checkpoint/KernelWeights.h"
#include "core/formats/Gptq.h"
#include "lowbit/lowbit.h"
#include "runtime/api/Problem.h"
#include "tests/gpu/runtime/ApiAssert.h"
#include "tests/gpu/support/GpuTest.h"
#include "tests/gpu/support/HostNumerics.h"
#include "tuning_db/Database.h"
#include "tuning_db/Sqlite.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <random>
#include <thread>

namespace lowbit::testing {

inline std::string mainDatabase() {
  return testKernelsPath("LOWBIT_RUNTIME_TEST_DB", "runtime-tests.db");
}
inline std::string jitDatabase() {
  return testKernelsPath("LOWBIT_RUNTIME_TEST_JIT_DB", "runtime-tests-jit.db");
}

inline lowbit_problem makeProblem(int64_t n, int64_t k, lowbit_dtype activation,
                                  lowbit_weight_format weight, lowbit_granularity granularity,
                                  int64_t groupSize, lowbit_zero_mode zero) {
  lowbit_problem p;
  std::memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  p.n = n;
  p.k = k;
  p.activation = activation;
  p.weight = weight;
  p.scale = activation; // the test set's scales share the activation dtype
  p.granularity = granularity;
  p.group_size = groupSize;
  p.zero = zero;
  return p;
}

inline lowbit_problem hostExampleProblem() {
  return makeProblem(4096, 4096, LOWBIT_DTYPE_F16, LOWBIT_WEIGHT_UINT4, LOWBIT_GRANULARITY_GROUP,
                     128, LOWBIT_ZERO_NONE);
}

// A plan with its weights, scales and zeros packed and uploaded, and the
// reference: real weights quantized by the formats library in the problem's
// format, shared with the bench and the tuner (measure::makeProblemInputs).
struct PreparedProblem {
  lowbit_problem problem{};
  core::Problem model; // the same problem in the typed model
  measure::ProblemInputs inputs;
  lowbit_plan *plan = nullptr;
  std::unique_ptr<DeviceBuffer> packed, scales, zeros;
  lowbit_weights w{};

  ~PreparedProblem() { lowbit_plan_destroy(plan); }
};

// Creates the plan and fills everything with freshly quantized weights.
inline void prepare(const cuda::DriverApi &api, lowbit_context *context,
                    const lowbit_problem &problem, SplitMix &rng, PreparedProblem &out) {
  out.problem = problem;
  api::Result<core::Problem> model = api::problemFromApi(problem);
  ASSERT_TRUE(model.ok()) << model.error().message;
  out.model = *model;
  LOWBIT_OK(lowbit_plan_create(context, &problem, &out.plan));
  size_t weightBytes = 0, scaleBytes = 0, zeroBytes = 0, workspaceBytes = 0;
  LOWBIT_OK(
      lowbit_plan_packed_sizes(out.plan, &weightBytes, &scaleBytes, &zeroBytes, &workspaceBytes));
  EXPECT_EQ(workspaceBytes, 0u);
  measure::ProblemInputOptions options;
  options.seed = rng.next();
  options.referenceStride = 1; // every output is checkable
  Expected<measure::ProblemInputs> inputs = measure::makeProblemInputs(out.model, options);
  ASSERT_TRUE(inputs.ok()) << inputs.error();
  out.inputs = std::move(*inputs);
  const measure::ProblemInputs &in = out.inputs;
  ASSERT_EQ(in.scales.size(), scaleBytes);
  ASSERT_EQ(in.zeros.size(), zeroBytes);
  out.packed = std::make_unique<DeviceBuffer>(api, weightBytes);
  out.scales = std::make_unique<DeviceBuffer>(api, scaleBytes);
  ASSERT_TRUE(out.packed->ok() && out.scales->ok());
  LOWBIT_OK(lowbit_pack_weights(out.plan, in.codes.data(),
                                reinterpret_cast<void *>(out.packed->get()), weightBytes,
                                LOWBIT_MEMORY_DEVICE, nullptr));
  LOWBIT_CU_ASSERT(&api, out.scales->upload(in.scales.data(), scaleBytes));
  if (zeroBytes) {
    out.zeros = std::make_unique<DeviceBuffer>(api, zeroBytes);
    LOWBIT_CU_ASSERT(&api, out.zeros->upload(in.zeros.data(), zeroBytes));
  }
  // Packing on the host must give the same bytes as packing to the device.
  std::vector<uint8_t> hostPacked(weightBytes), devicePacked(weightBytes);
  LOWBIT_OK(lowbit_pack_weights(out.plan, in.codes.data(), hostPacked.data(), weightBytes,
                                LOWBIT_MEMORY_HOST, nullptr));
  LOWBIT_CU_ASSERT(&api, out.packed->download(devicePacked.data(), weightBytes));
  ASSERT_EQ(hostPacked, devicePacked);
  out.w.struct_size = sizeof(out.w);
  out.w.data = reinterpret_cast<const void *>(out.packed->get());
  out.w.bytes = weightBytes;
  LOWBIT_OK(lowbit_plan_layout_id(out.plan, &out.w.layout_id));
}

// Activations for M rows: bits for the device, values for the reference.
struct Activations {
  std::vector<uint16_t> bits;
  std::vector<double> values;
};

inline Activations randomActivations(const PreparedProblem &p, int64_t m, SplitMix &rng) {
  Activations a;
  a.bits.resize(static_cast<size_t>(m * p.problem.k));
  a.values.resize(a.bits.size());
  for (size_t i = 0; i < a.bits.size(); ++i) {
    a.bits[i] = measure::activationBits(4.0 * rng.uniform() - 2.0, p.model.activation);
    a.values[i] = measure::activationValue(a.bits[i], p.model.activation);
  }
  return a;
}

// ‖y − ref‖ / ‖ref‖ over every output (small M) or the first and last rows
// plus random ones; fails the test on an unwritten (NaN) output.
inline double relativeError(const PreparedProblem &p, int64_t m, const Activations &x,
                            const std::vector<uint16_t> &y, SplitMix &rng) {
  const int64_t n = p.problem.n, k = p.problem.k;
  for (uint16_t bits : y)
    if (std::isnan(measure::activationValue(bits, p.model.activation))) {
      ADD_FAILURE() << "an output was left unwritten (NaN)";
      return INFINITY;
    }
  std::vector<std::pair<int64_t, int64_t>> samples;
  if (m * n <= 1 << 16) {
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < n; ++c)
        samples.emplace_back(r, c);
  } else {
    for (int64_t c = 0; c < n; ++c) {
      samples.emplace_back(0, c);
      samples.emplace_back(m - 1, c);
    }
    for (int i = 0; i < 4096; ++i)
      samples.emplace_back(static_cast<int64_t>(rng.next() % static_cast<uint64_t>(m)),
                           static_cast<int64_t>(rng.next() % static_cast<uint64_t>(n)));
  }
  double errorSquared = 0, referenceSquared = 0;
  for (auto [row, col] : samples) {
    double want = p.inputs.reference(&x.values[static_cast<size_t>(row * k)], col);
    double got =
        measure::activationValue(y[static_cast<size_t>(row * n + col)], p.model.activation);
    errorSquared += (got - want) * (got - want);
    referenceSquared += want * want;
  }
  return std::sqrt(errorSquared / referenceSquared);
}

// f16 activations uniform in [-limit, limit]: their bits for the device and
// their values for the reference.
struct F16Activations {
  std::vector<uint16_t> bits;
  std::vector<double> values;
};
inline F16Activations uniformF16(size_t count, double limit, std::mt19937 &rng) {
  F16Activations x{std::vector<uint16_t>(count), std::vector<double>(count)};
  std::uniform_real_distribution<double> uniform(-limit, limit);
  for (size_t i = 0; i < count; ++i) {
    x.bits[i] = measure::activationBits(uniform(rng), core::Activation::F16);
    x.values[i] = measure::activationValue(x.bits[i], core::Activation::F16);
  }
  return x;
}

// ||y - x · Wᵀ|| / ||x · Wᵀ|| for f16 y [m, n], x [m, k] and the reference
// W [n, k] in f64; a NaN in y (an output the kernel did not write: the tests
// poison y first) is a test failure naming it.
template <typename Weight>
double f16RelativeError(const std::vector<uint16_t> &y, const std::vector<double> &x,
                        const std::vector<Weight> &w, int64_t m, int64_t n, int64_t k) {
  double errorSquared = 0, referenceSquared = 0;
  for (int64_t r = 0; r < m; ++r)
    for (int64_t col = 0; col < n; ++col) {
      double want = 0;
      for (int64_t j = 0; j < k; ++j)
        want += x[size_t(r * k + j)] * double(w[size_t(col * k + j)]);
      const double got = measure::activationValue(y[size_t(r * n + col)], core::Activation::F16);
      if (std::isnan(got)) {
        ADD_FAILURE() << "y[" << r << ", " << col << "] unwritten";
        return INFINITY;
      }
      errorSquared += (got - want) * (got - want);
      referenceSquared += want * want;
    }
  return std::sqrt(errorSquared / referenceSquared);
}

inline double tolerance(const PreparedProblem &p) {
  return measure::defaultTolerance(p.model.activation);
}

class RuntimeGpu : public ::testing::Test {
protected:
  void SetUp() override {
    api = gpuOrNull(&whyNot);
    if (!api)
      GTEST_SKIP() << "no GPU: " << whyNot;
    database = mainDatabase();
    ASSERT_TRUE(std::filesystem::exists(database))
        << "no runtime test database at " << database
        << " (built by `lowbit compile` when LOWBIT_BUILD_COMPILER=ON)";
    context = openContext(database);
  }
  void TearDown() override { lowbit_context_destroy(context); }

  lowbit_context *openContext(const std::string &path) {
    lowbit_context_options options;
    std::memset(&options, 0, sizeof(options));
    options.struct_size = sizeof(options);
    options.system_db_path = path.c_str();
    lowbit_context *made = nullptr;
    lowbit_status status = lowbit_context_create(&options, &made);
    EXPECT_EQ(status, LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
    return made;
  }

  // Runs one matmul of M rows on `stream` and checks it against the reference.
  void runAndCheck(PreparedProblem &p, int64_t m, SplitMix &rng, CUstream stream = nullptr) {
    SCOPED_TRACE("M = " + std::to_string(m));
    Activations x = randomActivations(p, m, rng);
    DeviceBuffer xDevice(*api, x.bits.size() * 2),
        yDevice(*api, static_cast<size_t>(m * p.problem.n * 2));
    ASSERT_TRUE(xDevice.ok() && yDevice.ok());
    LOWBIT_CU_ASSERT(api, xDevice.upload(x.bits.data(), x.bits.size() * 2));
    LOWBIT_CU_ASSERT(api, yDevice.poison(0xFF));
    LOWBIT_OK(lowbit_matmul(p.plan, m, reinterpret_cast<void *>(xDevice.get()), &p.w,
                            reinterpret_cast<void *>(p.scales->get()),
                            p.zeros ? reinterpret_cast<void *>(p.zeros->get()) : nullptr,
                            reinterpret_cast<void *>(yDevice.get()), nullptr, 0, stream));
    LOWBIT_CU_ASSERT(api, api->cuStreamSynchronize(stream));
    std::vector<uint16_t> y(static_cast<size_t>(m * p.problem.n));
    LOWBIT_CU_ASSERT(api, yDevice.download(y.data(), y.size() * 2));
    double error = relativeError(p, m, x, y, rng);
    EXPECT_LT(error, tolerance(p));
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof(choice));
    choice.struct_size = sizeof(choice);
    LOWBIT_OK(lowbit_plan_explain(p.plan, m, &choice));
    std::printf("  M = %-5lld %-50s %s%s, tier %s, error %.3g\n", static_cast<long long>(m),
                choice.kernel_name, choice.arch, choice.jit_from_ptx ? " (JIT)" : "", choice.tier,
                error);
  }

  const cuda::DriverApi *api = nullptr;
  std::string whyNot, database;
  lowbit_context *context = nullptr;
};

} // namespace lowbit::testing

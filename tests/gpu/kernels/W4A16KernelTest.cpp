// Every compiled W4A16 kernel of the test sets (tests/gpu/kernels/
// w4a16-gpu-tests.toml, wgmma-, two-level- and cluster-gpu-tests.toml, compiled at
// build time by `lowbit compile`) against
// an f64 reference, at M values on both sides of every tile boundary.
// Weights are real ones quantized by the formats library in each problem's
// format (measure::makeProblemInputs, shared with the bench and the tuner),
// packed with the layout the compiler derived; the reference is the formats
// library's f64 dequantize; activations are fresh random values for every M;
// outputs are poisoned with NaN before each run.
#include "compiler/measure/ProblemInputs.h"
#include "runtime/kernels/KernelSet.h"
#include "core/Schedule.h"
#include "core/formats/DataFormat.h"
#include "core/layout/WeightLayout.h"
#include "tests/gpu/support/HostNumerics.h"
#include "tests/gpu/support/GpuTest.h"
#include "tests/gpu/support/KernelLaunch.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <random>
#include <thread>

namespace lowbit::testing {
namespace {

// Both sides of every tile boundary of the gemv and mma families...
const std::vector<int64_t> kRowCounts = {1,  2,   3,   7,   8,   15,   16,  17,
                                         31, 64, 127, 128, 255, 256, 1000, 4096};
// ...and of the wgmma family's tile M of 32 and 64, up to large M.
const std::vector<int64_t> kWgmmaRowCounts = {1,   7,   64,   65,   127,  128,
                                              255, 256, 1000, 1024, 4095, 4096};

// One problem's quantized weights, scales and zeros on host and device, with
// the f64 reference weights of every column; the problem's kernels (one per
// schedule) share all of it.
struct ProblemData {
  measure::ProblemInputs inputs;
  std::unique_ptr<DeviceBuffer> scalesDevice, zerosDevice;
  // The codes packed for each weight layout the problem's kernels use.
  std::map<std::string, std::unique_ptr<DeviceBuffer>> packed;
};

class ReferenceCheckedKernels : public KernelSetTest {
protected:
  // Every kernel of the set against the f64 reference at each row count.
  void checkEveryKernel(const std::vector<int64_t> &rowCounts);
  // Five runs of each kernel `chosen` picks, at each of `rowCounts`, give
  // the same bits of y.
  void checkSameBitsOnEveryRun(const std::function<bool(const kernels::KernelEntry &)> &chosen,
                               const std::vector<int64_t> &rowCounts);
};

class W4A16Kernels : public ReferenceCheckedKernels {
protected:
  void SetUp() override { loadKernelSet("LOWBIT_GPU_TEST_KERNELS", "gpu-tests"); }
};

// The wgmma family's test set (wgmma-gpu-tests.toml): sm_90a only, so it
// skips on any other GPU.
class WgmmaKernels : public ReferenceCheckedKernels {
protected:
  void SetUp() override { loadKernelSet("LOWBIT_WGMMA_TEST_KERNELS", "wgmma-gpu-tests"); }
};

// Two-level scales (two-level-gpu-tests.toml): the mma family's super-block
// steps carried across K tiles, or loaded once a tile, besides the others.
class TwoLevelKernels : public ReferenceCheckedKernels {
protected:
  void SetUp() override { loadKernelSet("LOWBIT_TWO_LEVEL_TEST_KERNELS", "two-level-gpu-tests"); }
};

// Split-K across thread-block clusters (cluster-gpu-tests.toml): sm_90a.
class ClusterKernels : public ReferenceCheckedKernels {
protected:
  void SetUp() override { loadKernelSet("LOWBIT_CLUSTER_TEST_KERNELS", "cluster-gpu-tests"); }
};

bool isDequant(const kernels::KernelEntry &entry) {
  return entry.family == core::familyName(core::Family::Dequant);
}

void prepareProblem(const cuda::DriverApi &api, const kernels::ProblemDesc &p, ProblemData &data,
                    SplitMix &rng) {
  measure::ProblemInputOptions options;
  options.seed = rng.next();
  options.referenceStride = 1; // every output is checkable
  Expected<measure::ProblemInputs> inputs = measure::makeProblemInputs(p, options);
  ASSERT_TRUE(inputs.ok()) << inputs.error();
  data.inputs = std::move(*inputs);
  const measure::ProblemInputs &in = data.inputs;
  data.scalesDevice = std::make_unique<DeviceBuffer>(api, in.scales.size());
  ASSERT_TRUE(data.scalesDevice->ok());
  LOWBIT_CU_ASSERT(&api, data.scalesDevice->upload(in.scales.data(), in.scales.size()));
  if (!in.zeros.empty()) {
    data.zerosDevice = std::make_unique<DeviceBuffer>(api, in.zeros.size());
    ASSERT_TRUE(data.zerosDevice->ok());
    LOWBIT_CU_ASSERT(&api, data.zerosDevice->upload(in.zeros.data(), in.zeros.size()));
  }
}

void packFor(const cuda::DriverApi &api, const std::string &serializedLayout, ProblemData &data) {
  if (data.packed.count(serializedLayout))
    return;
  Expected<layout::WeightLayout> layout = layout::parseWeightLayout(serializedLayout);
  ASSERT_TRUE(layout.ok()) << layout.error();
  Expected<std::vector<uint8_t>> packed = data.inputs.packed(*layout);
  ASSERT_TRUE(packed.ok()) << packed.error();
  auto buffer = std::make_unique<DeviceBuffer>(api, packed->size());
  ASSERT_TRUE(buffer->ok());
  LOWBIT_CU_ASSERT(&api, buffer->upload(packed->data(), packed->size()));
  data.packed[serializedLayout] = std::move(buffer);
}

// Reference outputs at `samples`, in f64, spread over the host's cores.
std::vector<double> referenceAt(const kernels::ProblemDesc &p, const ProblemData &data,
                                const std::vector<double> &x,
                                const std::vector<std::pair<int64_t, int64_t>> &samples) {
  std::vector<double> out(samples.size());
  unsigned workers = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> threads;
  for (unsigned w = 0; w < workers; ++w)
    threads.emplace_back([&, w] {
      for (size_t i = w; i < samples.size(); i += workers) {
        const double *xs = &x[static_cast<size_t>(samples[i].first * p.k)];
        out[i] = data.inputs.reference(xs, samples[i].second);
      }
    });
  for (std::thread &t : threads)
    t.join();
  return out;
}

void ReferenceCheckedKernels::checkEveryKernel(const std::vector<int64_t> &rowCounts) {
  SplitMix rng{20261129};
  // Activations are drawn from 4096 values rounded once, so drawing the
  // hundreds of millions needed at large M stays cheap.
  std::map<core::Activation, std::vector<std::pair<uint16_t, double>>> table;
  for (core::Activation type : {core::Activation::F16, core::Activation::BF16})
    for (int i = 0; i < 4096; ++i) {
      uint16_t bits = measure::activationBits(4.0 * rng.uniform() - 2.0, type);
      table[type].emplace_back(bits, measure::activationValue(bits, type));
    }

  // Each problem's data and references are made once and shared by all its
  // kernels, whatever their weight layout.
  // The dense path's dequant kernels write W, not y: DequantKernels checks them.
  std::map<std::string, std::vector<const kernels::KernelEntry *>> byProblem;
  for (const kernels::KernelEntry &entry : entries)
    if (!isDequant(entry))
      byProblem[entry.problem.name].push_back(&entry);

  int checked = 0;
  double worst = 0;
  for (auto &[key, group] : byProblem) {
    const kernels::ProblemDesc &p = group.front()->problem;
    SCOPED_TRACE(p.name);
    const auto started = std::chrono::steady_clock::now();
    int failures = 0;
    ProblemData data;
    prepareProblem(*api, p, data, rng);
    if (HasFatalFailure())
      return;
    for (const kernels::KernelEntry *entry : group)
      packFor(*api, entry->weightLayout, data);
    if (HasFatalFailure())
      return;
    std::vector<CompiledKernel> compiled(group.size());
    for (size_t g = 0; g < group.size(); ++g) {
      loadCompiledKernel(*api, *group[g], compiled[g]);
      if (HasFatalFailure())
        return;
    }
    const auto &values = table[p.activation];

    for (int64_t m : rowCounts) {
      SCOPED_TRACE("M = " + std::to_string(m));
      std::vector<uint16_t> xBits(static_cast<size_t>(m * p.k));
      std::vector<double> x(xBits.size());
      // Drawn on all host cores, each from its own stream of the test's
      // generator: at M = 4096 this is tens of millions of values.
      {
        unsigned workers = std::max(1u, std::thread::hardware_concurrency());
        std::vector<uint64_t> seeds(workers);
        for (uint64_t &seed : seeds)
          seed = rng.next();
        std::vector<std::thread> threads;
        for (unsigned w = 0; w < workers; ++w)
          threads.emplace_back([&, w] {
            SplitMix stream{seeds[w]};
            for (size_t i = w; i < xBits.size(); i += workers) {
              const auto &[bits, value] = values[stream.next() & 4095];
              xBits[i] = bits;
              x[i] = value;
            }
          });
        for (std::thread &t : threads)
          t.join();
      }
      std::vector<std::pair<int64_t, int64_t>> samples;
      if (m * p.n <= 1 << 16) {
        for (int64_t r = 0; r < m; ++r)
          for (int64_t c = 0; c < p.n; ++c)
            samples.emplace_back(r, c);
      } else {
        // The first and last rows in full, and 2048 random outputs.
        for (int64_t c = 0; c < p.n; ++c) {
          samples.emplace_back(0, c);
          samples.emplace_back(m - 1, c);
        }
        for (int i = 0; i < 2048; ++i)
          samples.emplace_back(static_cast<int64_t>(rng.next() % static_cast<uint64_t>(m)),
                               static_cast<int64_t>(rng.next() % static_cast<uint64_t>(p.n)));
      }
      std::vector<double> reference = referenceAt(p, data, x, samples);
      double referenceSquared = 0;
      for (double r : reference)
        referenceSquared += r * r;

      DeviceBuffer xDevice(*api, xBits.size() * 2), yDevice(*api, static_cast<size_t>(m * p.n * 2));
      ASSERT_TRUE(xDevice.ok() && yDevice.ok());
      LOWBIT_CU_ASSERT(api, xDevice.upload(xBits.data(), xBits.size() * 2));
      std::vector<uint16_t> y(static_cast<size_t>(m * p.n));
      for (size_t g = 0; g < group.size(); ++g) {
        const kernels::KernelEntry &entry = *group[g];
        SCOPED_TRACE(entry.name);
        LOWBIT_CU_ASSERT(api, yDevice.poison(0xFF)); // 0xFFFF is NaN in f16 and bf16
        KernelOperands operands;
        operands.x = xDevice.get();
        operands.w = data.packed.at(entry.weightLayout)->get();
        operands.scales = data.scalesDevice->get();
        operands.zeros = data.zerosDevice ? data.zerosDevice->get() : 0;
        operands.y = yDevice.get();
        launchCompiledKernel(*api, compiled[g], m, operands);
        if (HasFatalFailure())
          return;
        LOWBIT_CU_ASSERT(api, yDevice.download(y.data(), y.size() * 2));
        // Every element must be written: 0xFFFF (NaN) left means it was not.
        size_t unwritten = 0;
        for (uint16_t bits : y)
          unwritten += !std::isfinite(measure::activationValue(bits, p.activation));
        // Checked, not asserted: the other kernels and problems still run.
        EXPECT_EQ(unwritten, 0u) << "outputs left unwritten or NaN";
        if (unwritten) {
          ++failures;
          continue;
        }
        double errorSquared = 0;
        for (size_t i = 0; i < samples.size(); ++i) {
          double got = measure::activationValue(
              y[static_cast<size_t>(samples[i].first * p.n + samples[i].second)], p.activation);
          errorSquared += (got - reference[i]) * (got - reference[i]);
        }
        double relative = std::sqrt(errorSquared / referenceSquared);
        worst = std::max(worst, relative);
        double tolerance = measure::defaultTolerance(p.activation);
        EXPECT_LT(relative, tolerance) << "relative error over " << samples.size() << " outputs";
        failures += !(relative < tolerance);
        ++checked;
      }
    }
    std::printf("%-40s %zu kernels x %zu M values %s (%.1f s)\n", p.name.c_str(), group.size(),
                rowCounts.size(),
                failures ? ("FAILED " + std::to_string(failures) + " (kernel, M) pairs").c_str()
                         : "ok",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    std::fflush(stdout);
  }
  std::printf("checked %d (kernel, M) pairs on %s; worst relative error %.3g\n", checked,
              arch.c_str(), worst);
}

TEST_F(W4A16Kernels, MatchTheF64ReferenceAtEveryM) { checkEveryKernel(kRowCounts); }

TEST_F(WgmmaKernels, MatchTheF64ReferenceAtEveryM) { checkEveryKernel(kWgmmaRowCounts); }

TEST_F(ClusterKernels, MatchTheF64ReferenceAtEveryM) { checkEveryKernel(kRowCounts); }

TEST_F(TwoLevelKernels, MatchTheF64ReferenceAtEveryM) { checkEveryKernel(kRowCounts); }

void ReferenceCheckedKernels::checkSameBitsOnEveryRun(
    const std::function<bool(const kernels::KernelEntry &)> &chosen,
    const std::vector<int64_t> &rowCounts) {
  SplitMix rng{20261202};
  int compared = 0;
  for (const kernels::KernelEntry &entry : entries) {
    // A dequant kernel writes W, not y (DequantKernelsWriteTheReferenceWeights):
    // launched as a matmul it wrote past y when a set given in
    // LOWBIT_CLUSTER_TEST_KERNELS held one.
    if (isDequant(entry) || !chosen(entry))
      continue;
    SCOPED_TRACE(entry.name);
    ProblemData data;
    prepareProblem(*api, entry.problem, data, rng);
    packFor(*api, entry.weightLayout, data);
    CompiledKernel compiled;
    loadCompiledKernel(*api, entry, compiled);
    if (HasFatalFailure())
      return;
    const kernels::ProblemDesc &p = entry.problem;
    for (int64_t m : rowCounts) {
      SCOPED_TRACE("M = " + std::to_string(m));
      std::vector<uint16_t> xBits(static_cast<size_t>(m * p.k));
      for (uint16_t &bits : xBits)
        bits = measure::activationBits(4.0 * rng.uniform() - 2.0, p.activation);
      DeviceBuffer xDevice(*api, xBits.size() * 2), yDevice(*api, static_cast<size_t>(m * p.n * 2));
      ASSERT_TRUE(xDevice.ok() && yDevice.ok());
      LOWBIT_CU_ASSERT(api, xDevice.upload(xBits.data(), xBits.size() * 2));
      KernelOperands operands;
      operands.x = xDevice.get();
      operands.w = data.packed.at(entry.weightLayout)->get();
      operands.scales = data.scalesDevice->get();
      operands.zeros = data.zerosDevice ? data.zerosDevice->get() : 0;
      operands.y = yDevice.get();
      std::vector<uint16_t> first, again(static_cast<size_t>(m * p.n));
      for (int run = 0; run < 5; ++run) {
        LOWBIT_CU_ASSERT(api, yDevice.poison(0xFF));
        launchCompiledKernel(*api, compiled, m, operands);
        if (HasFatalFailure())
          return;
        LOWBIT_CU_ASSERT(api, yDevice.download(again.data(), again.size() * 2));
        if (run == 0)
          first = again;
        else
          ASSERT_EQ(again, first) << "run " << run << " differs from the first";
      }
      ++compared;
    }
  }
  std::printf("%d (kernel, M) pairs gave the same bits on 5 runs\n", compared);
}

// The blocks of a cluster add their totals in rank order, whichever block
// finishes first: the same inputs give the same bits on every run.
TEST_F(ClusterKernels, GiveTheSameBitsOnEveryRun) {
  checkSameBitsOnEveryRun([](const kernels::KernelEntry &) { return true; }, {1, 16, 100});
}

// Stream-K's finishing block adds the other blocks' partials in block order,
// whenever they arrive. On 8 blocks and N 1536 (6 column tiles): at M = 1
// every tile is split over one or two blocks; at 300 whole waves run before
// a split tail (60, 30 and 18 tiles at tile M 32, 72 and 128); at 1000, 84
// tiles (tile M 72) leave a tail of 20, while 192 and 48 are even waves.
TEST_F(WgmmaKernels, StreamKGivesTheSameBitsOnEveryRun) {
  checkSameBitsOnEveryRun(
      [](const kernels::KernelEntry &entry) {
        Expected<core::Schedule> schedule = core::parseSchedule(entry.schedule);
        return schedule.ok() && schedule->streamK();
      },
      {1, 300, 1000});
}

// The dense path's first half: every dequant kernel of the set writes
// dequant(W)[N, K] in the activation type, whatever M its launch names. Each
// value must be the f64 reference weight rounded to the activation type, up
// to the scale's own rounding to it (the kernel multiplies in the packed
// type): within 2 units in the last place of the value, plus one of its
// row's largest, which a q·s - z zero point rounded to the activation type
// may leave after cancelling; and all of W written.
TEST_F(W4A16Kernels, DequantKernelsWriteTheReferenceWeights) {
  SplitMix rng{20261203};
  int checked = 0;
  double worstUlps = 0;
  for (const kernels::KernelEntry &entry : entries) {
    if (!isDequant(entry))
      continue;
    SCOPED_TRACE(entry.name);
    const kernels::ProblemDesc &p = entry.problem;
    ProblemData data;
    prepareProblem(*api, p, data, rng);
    packFor(*api, entry.weightLayout, data);
    CompiledKernel compiled;
    loadCompiledKernel(*api, entry, compiled);
    if (HasFatalFailure())
      return;
    const size_t count = static_cast<size_t>(p.n * p.k);
    DeviceBuffer dense(*api, count * 2);
    ASSERT_TRUE(dense.ok());
    for (int64_t m : {int64_t{1}, int64_t{300}}) {
      SCOPED_TRACE("M = " + std::to_string(m));
      LOWBIT_CU_ASSERT(api, dense.poison(0xFF));
      KernelOperands operands;
      operands.w = data.packed.at(entry.weightLayout)->get();
      operands.scales = data.scalesDevice->get();
      operands.zeros = data.zerosDevice ? data.zerosDevice->get() : 0;
      operands.y = dense.get();
      launchCompiledKernel(*api, compiled, m, operands);
      if (HasFatalFailure())
        return;
      std::vector<uint16_t> got(count);
      LOWBIT_CU_ASSERT(api, dense.download(got.data(), count * 2));
      // One unit in the last place of the activation type at |w|: f16 has 11
      // significant bits, bf16 8; below f16's normals its subnormal step.
      const int mantissaBits = p.activation == core::Activation::F16 ? 10 : 7;
      const double smallest = p.activation == core::Activation::F16 ? std::ldexp(1.0, -24) : 0;
      auto ulpOf = [&](double v) {
        int exponent = 0;
        std::frexp(v, &exponent);
        return std::max(smallest, std::ldexp(1.0, exponent - 1 - mantissaBits));
      };
      const std::vector<double> &reference = data.inputs.referenceWeights;
      size_t bad = 0;
      double rowMax = 0;
      for (size_t i = 0; i < count && bad < 8; ++i) {
        if (i % static_cast<size_t>(p.k) == 0) {
          rowMax = 0;
          for (size_t j = i; j < i + static_cast<size_t>(p.k); ++j)
            rowMax = std::max(rowMax, std::fabs(reference[j]));
        }
        double value = measure::activationValue(got[i], p.activation);
        double want = reference[i];
        double ulps = std::isfinite(value) ? std::fabs(value - want) / ulpOf(want) : 1e9;
        worstUlps = std::max(worstUlps, ulps);
        if (!(std::fabs(value - want) <= 2 * ulpOf(want) + ulpOf(rowMax))) {
          ++bad;
          ADD_FAILURE() << "W[" << static_cast<int64_t>(i) / p.k << ", "
                        << static_cast<int64_t>(i) % p.k << "] = " << value << ", reference "
                        << want;
        }
      }
      ++checked;
    }
  }
  std::printf("checked %d (dequant kernel, M) pairs; worst %.2f units in the last place\n",
              checked, worstUlps);
}

TEST_F(W4A16Kernels, RejectsRowCountsItCannotServe) {
  const kernels::KernelEntry &entry = entries.front();
  for (int64_t m : {int64_t{0}, int64_t{-3}}) {
    Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m, /*persistentBlocks=*/0);
    ASSERT_FALSE(shape.ok());
    EXPECT_NE(shape.error().find("at least 1"), std::string::npos) << shape.error();
  }
  Expected<kernels::LaunchShape> tooMany =
      kernels::launchShape(entry, entry.gridTile[1] * 70000, /*persistentBlocks=*/0);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_NE(tooMany.error().find("65535"), std::string::npos) << tooMany.error();
}

} // namespace
} // namespace lowbit::testing

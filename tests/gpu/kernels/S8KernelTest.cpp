// The quantized-activation kernels (s8-gpu-tests.toml: the split-K mma and
// wgmma on the integer and fp8 tensor cores) against the host: s8 bit for
// bit where the kernel's roundings can be replayed (per-channel and
// per-tensor scales, no zero points), and against the f64 reference
// otherwise (group scales, zero points, e4m3). With K <= 1024 every s32 sum
// of s8 products, every warp's partial and every total is an integer below
// 2^24, so f32 holds them exactly; the kernel then rounds twice, the weight
// scale (times the decode's 2^-shift) and the token's scale, and once more
// to y's type. The host does the same three roundings on the exact integer
// sum, so any wrong byte, fragment slot, scale or token shows as a mismatch.
// Weights are real ones quantized by the formats library
// (measure::makeProblemInputs) and packed with the derived s8 layout.
#include "compiler/measure/ProblemInputs.h"
#include "core/DecodeFacts.h"
#include "core/layout/WeightLayout.h"
#include "runtime/kernels/KernelSet.h"
#include "tests/gpu/support/GpuTest.h"
#include "tests/gpu/support/HostNumerics.h"
#include "tests/gpu/support/KernelLaunch.h"

#include <cmath>
#include <cstring>

namespace lowbit::testing {
namespace {

// Both sides of the 8-token mma tiles, of tile M 16 and 32, and of the
// wgmma's 64 and 128, up to the large M the s8 tensor cores are for.
const std::vector<int64_t> kRowCounts = {1,  2,  7,   8,   9,   15,  16,  17,  31,
                                         33, 64, 100, 127, 128, 255, 256, 1000};

class S8Kernels : public KernelSetTest {
protected:
  void SetUp() override { loadKernelSet("LOWBIT_S8_TEST_KERNELS", "s8-gpu-tests"); }
};

// The weight scale of column n (with the decode's 2^-shift folded in, as
// the kernel folds it: exact, a power of two).
float columnScale(const measure::ProblemInputs &in, int64_t n, int shift) {
  const core::Problem &p = in.problem;
  const int64_t bytes = p.scheme.scale.bits() / 8;
  const int64_t index = p.scheme.granularity == formats::Granularity::PerTensor ? 0 : n;
  uint32_t bits = 0;
  std::memcpy(&bits, in.scales.data() + index * bytes, static_cast<size_t>(bytes));
  return static_cast<float>(std::ldexp(p.scheme.scale.decode(bits), -shift));
}

// What the kernel writes for Σ d·q_x = `sum` (d the s8 bytes), as y's bits.
std::vector<uint8_t> expectedOutput(float total, float weightScale, float tokenScale,
                                    core::Output output) {
  const float y = std::fmaf(weightScale, total, 0.f) * tokenScale;
  std::vector<uint8_t> bytes(static_cast<size_t>(core::outputBytes(output)));
  if (output == core::Output::F32) {
    std::memcpy(bytes.data(), &y, 4);
  } else {
    uint16_t bits = measure::activationBits(
        y, output == core::Output::BF16 ? core::Activation::BF16 : core::Activation::F16);
    std::memcpy(bytes.data(), &bits, 2);
  }
  return bytes;
}

// Group scales round once per group into f32 and zero points enter as
// (c - z)·Σx in f32: no host replay of those roundings, an f64 check instead.
// e4m3 sums are the fp8 tensor cores' own f32 additions: f64 too.
bool exactOnTheHost(const core::Problem &p) {
  return p.activation == core::Activation::S8 && !p.scheme.hasZeros() &&
         p.scheme.granularity != formats::Granularity::PerGroup;
}

// x's value at a byte: an s8 code, or an e4m3fn one.
double activationCode(const core::Problem &p, int8_t byte) {
  return p.activation == core::Activation::E4M3
             ? formats::DataFormat::e4m3fn().decode(static_cast<uint8_t>(byte))
             : byte;
}

// One kernel's launch at M rows of fresh s8 x, with its y's bytes.
struct S8Run {
  std::vector<int8_t> x;
  std::vector<float> tokenScales;
  std::vector<uint8_t> y;
  float tokenScale(int64_t row) const {
    return tokenScales[tokenScales.size() == 1 ? 0 : static_cast<size_t>(row)];
  }
};

class S8Launcher {
public:
  S8Launcher(const cuda::DriverApi &api, const kernels::KernelEntry &entry,
             const measure::ProblemInputs &inputs)
      : api_(api), entry_(entry), inputs_(inputs) {}
  // Uploads the weights, scales and zeros and loads the kernel: false after
  // a gtest failure.
  bool prepare() {
    Expected<layout::WeightLayout> layout = layout::parseWeightLayout(entry_.weightLayout);
    EXPECT_TRUE(layout.ok()) << layout.error();
    if (!layout.ok())
      return false;
    Expected<std::vector<uint8_t>> packed = inputs_.packed(*layout);
    EXPECT_TRUE(packed.ok()) << packed.error();
    if (!packed.ok())
      return false;
    w_ = upload(packed->data(), packed->size());
    scales_ = upload(inputs_.scales.data(), inputs_.scales.size());
    if (!inputs_.zeros.empty())
      zeros_ = upload(inputs_.zeros.data(), inputs_.zeros.size());
    loadCompiledKernel(api_, entry_, compiled_);
    return !::testing::Test::HasFailure();
  }
  S8Run run(int64_t m, SplitMix &rng) {
    const core::Problem &p = entry_.problem;
    S8Run r;
    r.x.resize(static_cast<size_t>(m * p.k));
    // s8 codes in [-127, 127]; e4m3fn codes any but the NaNs 0x7F, 0xFF.
    const bool fp8 = p.activation == core::Activation::E4M3;
    for (int8_t &q : r.x) {
      const int code = static_cast<int>(rng.next() % (fp8 ? 254 : 255));
      q = static_cast<int8_t>(fp8 ? (code < 127 ? code : code + 1) : code - 127);
    }
    r.tokenScales.resize(p.activationScale == core::ActivationScale::PerTensor ? 1
                                                                               : static_cast<size_t>(m));
    for (float &s : r.tokenScales)
      s = static_cast<float>(0.5 + rng.uniform()) / 64.f;
    const size_t yBytes = static_cast<size_t>(core::outputBytes(core::outputType(p)));
    auto x = upload(r.x.data(), r.x.size());
    auto xScales = upload(r.tokenScales.data(), r.tokenScales.size() * 4);
    DeviceBuffer y(api_, static_cast<size_t>(m * p.n) * yBytes);
    EXPECT_TRUE(y.ok());
    EXPECT_EQ(y.poison(0xFF), CUDA_SUCCESS);
    KernelOperands operands;
    operands.x = x->get();
    operands.xScales = xScales->get();
    operands.w = w_->get();
    operands.scales = scales_->get();
    operands.zeros = zeros_ ? zeros_->get() : 0;
    operands.y = y.get();
    launchCompiledKernel(api_, compiled_, m, operands);
    r.y.resize(static_cast<size_t>(m * p.n) * yBytes);
    EXPECT_EQ(y.download(r.y.data(), r.y.size()), CUDA_SUCCESS);
    return r;
  }

private:
  std::unique_ptr<DeviceBuffer> upload(const void *data, size_t bytes) {
    auto buffer = std::make_unique<DeviceBuffer>(api_, bytes);
    EXPECT_TRUE(buffer->ok());
    EXPECT_EQ(buffer->upload(data, bytes), CUDA_SUCCESS);
    return buffer;
  }
  const cuda::DriverApi &api_;
  const kernels::KernelEntry &entry_;
  const measure::ProblemInputs &inputs_;
  std::unique_ptr<DeviceBuffer> w_, scales_, zeros_;
  CompiledKernel compiled_;
};

Expected<measure::ProblemInputs> inputsFor(const core::Problem &p, SplitMix &rng) {
  measure::ProblemInputOptions options;
  options.seed = rng.next();
  options.referenceStride = 1;
  return measure::makeProblemInputs(p, options);
}

TEST_F(S8Kernels, MatchTheF64ReferenceWithGroupsAndZeroPoints) {
  SplitMix rng{20261207};
  int checked = 0;
  for (const kernels::KernelEntry &entry : entries) {
    const core::Problem &p = entry.problem;
    if (exactOnTheHost(p))
      continue;
    SCOPED_TRACE(entry.name);
    Expected<measure::ProblemInputs> inputs = inputsFor(p, rng);
    ASSERT_TRUE(inputs.ok()) << inputs.error();
    S8Launcher launcher(*api, entry, *inputs);
    if (!launcher.prepare())
      return;
    const core::Output output = core::outputType(p);
    // The fp8 tensor cores add with fewer mantissa bits than f32 has.
    const bool fp8 = p.activation == core::Activation::E4M3;
    const double tolerance = output == core::Output::F32    ? (fp8 ? 2e-3 : 1e-5)
                             : output == core::Output::BF16 ? 1e-2
                                                            : 2e-3;
    for (int64_t m : kRowCounts) {
      SCOPED_TRACE("M = " + std::to_string(m));
      S8Run r = launcher.run(m, rng);
      if (HasFatalFailure())
        return;
      double error = 0, norm = 0;
      std::vector<double> x(static_cast<size_t>(p.k));
      for (int64_t row = 0; row < m; ++row) {
        for (int64_t k = 0; k < p.k; ++k)
          x[static_cast<size_t>(k)] = activationCode(p, r.x[static_cast<size_t>(row * p.k + k)]) *
                                      static_cast<double>(r.tokenScale(row));
        for (int64_t n = 0; n < p.n; ++n) {
          const double want = inputs->reference(x.data(), n);
          const double got = measure::outputValue(r.y, static_cast<size_t>(row * p.n + n), output);
          error += (got - want) * (got - want);
          norm += want * want;
        }
      }
      const double relative = std::sqrt(error / norm);
      EXPECT_LT(relative, tolerance) << "relative error over " << m * p.n << " outputs";
      ++checked;
    }
  }
  std::printf("checked %d (kernel, M) pairs with group scales, zero points or e4m3 against "
              "f64\n",
              checked);
}

TEST_F(S8Kernels, GiveTheHostsBitsAtEveryM) {
  SplitMix rng{20261206};
  int checked = 0;
  for (const kernels::KernelEntry &entry : entries) {
    const kernels::ProblemDesc &p = entry.problem;
    if (!exactOnTheHost(p))
      continue;
    SCOPED_TRACE(entry.name);
    ASSERT_LE(p.k, 1024) << "the exact comparison needs K <= 1024";
    Expected<measure::ProblemInputs> inputs = inputsFor(p, rng);
    ASSERT_TRUE(inputs.ok()) << inputs.error();
    Expected<core::S8Decode> decode = core::s8Decode(p.code);
    ASSERT_TRUE(decode.ok()) << decode.error();
    S8Launcher launcher(*api, entry, *inputs);
    if (!launcher.prepare())
      return;
    // The codes' values, the bytes' 2^-shift apart.
    std::vector<int> codes(inputs->codes.size());
    for (size_t i = 0; i < codes.size(); ++i)
      codes[i] = static_cast<int>(p.code.decode(inputs->codes[i]));
    const core::Output output = core::outputType(p);
    const size_t yBytes = static_cast<size_t>(core::outputBytes(output));

    for (int64_t m : kRowCounts) {
      SCOPED_TRACE("M = " + std::to_string(m));
      S8Run r = launcher.run(m, rng);
      if (HasFatalFailure())
        return;
      int mismatches = 0;
      for (int64_t row = 0; row < m; ++row)
        for (int64_t n = 0; n < p.n; ++n) {
          // Σ v·q_x over K; the kernel's bytes are 2^shift (v - c) and it
          // adds 2^shift c Σx, so its integer sum is Σ 2^shift v q_x, which
          // the scale's 2^-shift undoes.
          int64_t sum = 0;
          for (int64_t k = 0; k < p.k; ++k)
            sum += int64_t{codes[static_cast<size_t>(n * p.k + k)]} *
                   r.x[static_cast<size_t>(row * p.k + k)];
          const float total = static_cast<float>(sum << decode->shift);
          std::vector<uint8_t> want = expectedOutput(
              total, columnScale(*inputs, n, decode->shift), r.tokenScale(row), output);
          const uint8_t *at = r.y.data() + static_cast<size_t>(row * p.n + n) * yBytes;
          if (std::memcmp(at, want.data(), yBytes) != 0 && ++mismatches <= 4)
            ADD_FAILURE() << "y[" << row << ", " << n << "] differs from the host's bits: "
                          << measure::outputValue(r.y, static_cast<size_t>(row * p.n + n), output)
                          << ", not " << measure::outputValue(want, 0, output) << " (Σ "
                          << sum << ", weight scale " << columnScale(*inputs, n, decode->shift)
                          << ", token scale " << r.tokenScale(row) << ")";
        }
      EXPECT_EQ(mismatches, 0) << "outputs that differ from the host's bits";
      ++checked;
    }
  }
  std::printf("checked %d (kernel, M) pairs of s8-activation kernels on %s bit for bit\n",
              checked, arch.c_str());
}

} // namespace
} // namespace lowbit::testing

// The s8-activation kernels (s8-gpu-tests.toml: split-K mma on the integer
// tensor cores) against the host, bit for bit. With K <= 1024 every s32 sum
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

// Both sides of the 8-token mma tiles and of tile M 16 and 32.
const std::vector<int64_t> kRowCounts = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100};

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

TEST_F(S8Kernels, GiveTheHostsBitsAtEveryM) {
  SplitMix rng{20261206};
  int checked = 0;
  for (const kernels::KernelEntry &entry : entries) {
    SCOPED_TRACE(entry.name);
    const kernels::ProblemDesc &p = entry.problem;
    ASSERT_LE(p.k, 1024) << "the exact comparison needs K <= 1024";
    measure::ProblemInputOptions options;
    options.seed = rng.next();
    options.referenceStride = 1;
    Expected<measure::ProblemInputs> inputs = measure::makeProblemInputs(p, options);
    ASSERT_TRUE(inputs.ok()) << inputs.error();
    Expected<core::S8Decode> decode = core::s8Decode(p.code);
    ASSERT_TRUE(decode.ok()) << decode.error();
    Expected<layout::WeightLayout> layout = layout::parseWeightLayout(entry.weightLayout);
    ASSERT_TRUE(layout.ok()) << layout.error();
    Expected<std::vector<uint8_t>> packed = inputs->packed(*layout);
    ASSERT_TRUE(packed.ok()) << packed.error();
    DeviceBuffer w(*api, packed->size()), scales(*api, inputs->scales.size());
    ASSERT_TRUE(w.ok() && scales.ok());
    LOWBIT_CU_ASSERT(api, w.upload(packed->data(), packed->size()));
    LOWBIT_CU_ASSERT(api, scales.upload(inputs->scales.data(), inputs->scales.size()));
    CompiledKernel compiled;
    loadCompiledKernel(*api, entry, compiled);
    if (HasFatalFailure())
      return;
    // The codes' values, the bytes' 2^-shift apart.
    std::vector<int> codes(inputs->codes.size());
    for (size_t i = 0; i < codes.size(); ++i)
      codes[i] = static_cast<int>(p.code.decode(inputs->codes[i]));
    const core::Output output = core::outputType(p);
    const size_t yBytes = static_cast<size_t>(core::outputBytes(output));

    for (int64_t m : kRowCounts) {
      SCOPED_TRACE("M = " + std::to_string(m));
      std::vector<int8_t> x(static_cast<size_t>(m * p.k));
      for (int8_t &q : x)
        q = static_cast<int8_t>(static_cast<int>(rng.next() % 255) - 127);
      const bool perTensor = p.activationScale == core::ActivationScale::PerTensor;
      std::vector<float> tokenScales(perTensor ? 1 : static_cast<size_t>(m));
      for (float &s : tokenScales)
        s = static_cast<float>(0.5 + rng.uniform()) / 64.f;
      DeviceBuffer xDevice(*api, x.size()), xScales(*api, tokenScales.size() * 4),
          y(*api, static_cast<size_t>(m * p.n) * yBytes);
      ASSERT_TRUE(xDevice.ok() && xScales.ok() && y.ok());
      LOWBIT_CU_ASSERT(api, xDevice.upload(x.data(), x.size()));
      LOWBIT_CU_ASSERT(api, xScales.upload(tokenScales.data(), tokenScales.size() * 4));
      LOWBIT_CU_ASSERT(api, y.poison(0xFF));
      KernelOperands operands;
      operands.x = xDevice.get();
      operands.xScales = xScales.get();
      operands.w = w.get();
      operands.scales = scales.get();
      operands.y = y.get();
      launchCompiledKernel(*api, compiled, m, operands);
      if (HasFatalFailure())
        return;
      std::vector<uint8_t> got(static_cast<size_t>(m * p.n) * yBytes);
      LOWBIT_CU_ASSERT(api, y.download(got.data(), got.size()));
      int mismatches = 0;
      for (int64_t row = 0; row < m; ++row)
        for (int64_t n = 0; n < p.n; ++n) {
          // Σ v·q_x over K; the kernel's bytes are 2^shift (v - c) and it
          // adds 2^shift c Σx, so its integer sum is Σ 2^shift v q_x, which
          // the scale's 2^-shift undoes.
          int64_t sum = 0;
          for (int64_t k = 0; k < p.k; ++k)
            sum += int64_t{codes[static_cast<size_t>(n * p.k + k)]} *
                   x[static_cast<size_t>(row * p.k + k)];
          const float total = static_cast<float>(sum << decode->shift);
          std::vector<uint8_t> want =
              expectedOutput(total, columnScale(*inputs, n, decode->shift),
                             tokenScales[perTensor ? 0 : static_cast<size_t>(row)], output);
          const uint8_t *at = got.data() + static_cast<size_t>(row * p.n + n) * yBytes;
          if (std::memcmp(at, want.data(), yBytes) != 0 && ++mismatches <= 4)
            ADD_FAILURE() << "y[" << row << ", " << n << "] differs from the host's bits";
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

// The exhaustive decode on the GPU, through the kernels `lowbit compile`
// built (tests/gpu/kernels/decode-gpu-tests.toml, every code type the
// compiler decodes, f16 and bf16, with schedules of every family): no
// hand-written decode, so what is checked is what ships.
//
// For each kernel the codes are chosen in its packed order: the code at
// position p of the u-th 32-code unit of the packed stream is the
// (u + p)-th valid code, so every code value sits at every position of a
// unit (every field of every word, every word of a lane's load) somewhere in
// the matrix, and the bit interleave the layout derived is exercised whole.
// With scale 1, no zeros, and X the K x K identity (row m is e_m), output
// Y[m, n] is the decoded weight W[n, m] itself: for integer and minifloat
// codes exact in f16 and bf16, so it must equal the formats library's
// dequantize exactly; for lookup tables, its entry rounded to the activation
// type, as the kernel's table holds it.
#include "compiler/measure/ProblemInputs.h"
#include "core/DecodeFacts.h"
#include "core/Schedule.h"
#include "core/formats/DataFormat.h"
#include "core/layout/WeightLayout.h"
#include "runtime/kernels/KernelSet.h"
#include "tests/gpu/support/GpuTest.h"
#include "tests/gpu/support/KernelLaunch.h"

#include <map>
#include <set>
#include <sstream>

namespace lowbit::testing {
namespace {

// Codes per unit: a lane decodes 32 values per unit, whatever the width.
constexpr int64_t kUnitCodes = 32;

// Codes that mean a weight: not ternary's 3, not a minifloat's NaN or Inf
// (the packer refuses them).
std::vector<uint8_t> validCodes(const formats::DataFormat &code) {
  std::vector<uint8_t> out;
  for (uint32_t c = 0; c < code.codeCount(); ++c)
    if (core::isWeightCode(code, c))
      out.push_back(static_cast<uint8_t>(c));
  return out;
}

// Code g of a packed stream of `count` codes (code offset g of the layout's
// storage): LSB first for widths that divide 8; for two-plane widths (3, 5
// and 6 bits) its low part at g in the low plane and its high part at
// layout::highPlaneBitOfCode.
struct CodeBits {
  int64_t low, high; // bit positions; high < 0 without planes
};
CodeBits codeBitsOf(int bits, int64_t count, int64_t g) {
  const layout::CodePlanes planes = layout::codePlanes(bits);
  if (!planes.highBits)
    return {g * bits, -1};
  return {g * planes.lowBits, layout::highPlaneBitOfCode(bits, count, g)};
}
void putCode(std::vector<uint8_t> &packed, int bits, int64_t count, int64_t g, uint8_t value) {
  const layout::CodePlanes planes = layout::codePlanes(bits);
  const CodeBits at = codeBitsOf(bits, count, g);
  const uint8_t low = planes.highBits ? uint8_t(value & ((1u << planes.lowBits) - 1)) : value;
  packed[static_cast<size_t>(at.low / 8)] |= static_cast<uint8_t>(low << (at.low % 8));
  if (at.high >= 0)
    packed[static_cast<size_t>(at.high / 8)] |=
        static_cast<uint8_t>((value >> planes.lowBits) << (at.high % 8));
}
unsigned codeAt(const std::vector<uint8_t> &packed, int bits, int64_t count, int64_t g) {
  const layout::CodePlanes planes = layout::codePlanes(bits);
  const CodeBits at = codeBitsOf(bits, count, g);
  unsigned value = (packed[static_cast<size_t>(at.low / 8)] >> (at.low % 8)) &
                   ((1u << planes.lowBits) - 1);
  if (at.high >= 0)
    value |= ((packed[static_cast<size_t>(at.high / 8)] >> (at.high % 8)) &
              ((1u << planes.highBits) - 1))
             << planes.lowBits;
  return value;
}

// The N x K codes whose packed stream holds valid code (u + p) mod count at
// position p of unit u, made by unpacking that stream with the kernel's
// layout.
Expected<std::vector<uint8_t>> codesAtEveryPosition(const formats::DataFormat &code,
                                                    const layout::WeightLayout &layout,
                                                    int64_t n, int64_t k) {
  const std::vector<uint8_t> valid = validCodes(code);
  const int bits = code.bits();
  std::vector<uint8_t> packed(static_cast<size_t>(n * k * bits / 8));
  for (int64_t g = 0; g < n * k; ++g)
    putCode(packed, bits, n * k, g,
            valid[static_cast<size_t>((g / kUnitCodes + g % kUnitCodes) %
                                      static_cast<int64_t>(valid.size()))]);
  std::vector<uint8_t> codes(static_cast<size_t>(n * k));
  if (Status s = layout::unpackWeights(layout, n, k, packed.data(), packed.size(), codes.data());
      !s)
    return makeError(s.error());
  return codes;
}

// Which (position in unit, code) pairs the packed codes hold: the test's own
// premise, checked so that a shape too small for a width cannot pass vacuously.
size_t positionValuePairs(const std::vector<uint8_t> &packed, int bits) {
  std::set<std::pair<int64_t, unsigned>> seen;
  const int64_t count = static_cast<int64_t>(packed.size()) * 8 / bits;
  for (int64_t g = 0; g < count; ++g)
    seen.insert({g % kUnitCodes, codeAt(packed, bits, count, g)});
  return seen.size();
}

class DecodeKernels : public KernelSetTest {
protected:
  void SetUp() override { loadKernelSet("LOWBIT_GPU_DECODE_TEST_KERNELS", "decode-gpu-tests"); }
};

// The builder a schedule picks: the split-K mma and the staged mma are
// different code (passes/TileMmaSplitK.cpp, passes/TileMma.cpp).
std::string builderOf(const kernels::KernelEntry &entry) {
  Expected<core::Schedule> schedule = core::parseSchedule(entry.schedule);
  if (!schedule)
    return "unparsable schedule: " + schedule.error();
  std::string family = core::familyName(schedule->family);
  if (schedule->family == core::Family::Mma)
    family += schedule->splitK > 1 ? " split-K" : " staged";
  return family;
}

// The set covers what it claims: every code type the compiler decodes, with
// both activations, each through every builder.
TEST_F(DecodeKernels, CoverEveryCodeTypeWithEveryFamily) {
  std::map<std::string, std::set<std::string>> builders;
  for (const kernels::KernelEntry &entry : entries)
    builders[core::activationName(entry.problem.activation) + std::string(" ") +
             entry.problem.code.name()]
        .insert(builderOf(entry));
  const std::set<std::string> every = {"gemv", "gemv_tiled", "mma split-K", "mma staged"};
  for (const char *activation : {"f16", "bf16"})
    for (const char *code : {"uint8", "int8", "uint4", "int4", "uint2", "int2", "uint1", "ternary",
                             "uint3", "int3", "uint5", "int5", "uint6", "int6", "e2m1", "e4m3fn",
                             "e5m2", "e2m3", "e3m2", "nf4"}) {
      std::string key = std::string(activation) + " " + code;
      EXPECT_EQ(builders[key], every) << key;
    }
}

TEST_F(DecodeKernels, EveryCodeAtEveryPositionIsTheFormatsLibrarysValue) {
  int checked = 0;
  for (const kernels::KernelEntry &entry : entries) {
    const core::Problem &p = entry.problem;
    SCOPED_TRACE(entry.name);
    ASSERT_FALSE(p.scheme.hasZeros()) << "the decode test's problems have no zero points";
    ASSERT_EQ(p.n, p.k) << "X is the K x K identity; its output is W's transpose";
    Expected<layout::WeightLayout> layout = layout::parseWeightLayout(entry.weightLayout);
    ASSERT_TRUE(layout.ok()) << layout.error();
    Expected<std::vector<uint8_t>> codes = codesAtEveryPosition(p.code, *layout, p.n, p.k);
    ASSERT_TRUE(codes.ok()) << codes.error();
    Expected<formats::QuantScheme> scheme = core::quantScheme(p);
    ASSERT_TRUE(scheme.ok()) << scheme.error();
    formats::QuantizedMatrix q;
    q.scheme = *scheme;
    q.rows = p.n;
    q.cols = p.k;
    q.codes = std::move(*codes);
    Expected<uint32_t> one = p.scheme.scale.encode(1.0);
    ASSERT_TRUE(one.ok()) << one.error();
    q.scales.assign(static_cast<size_t>(core::scaleCount(p)), *one);
    Expected<measure::ProblemInputs> inputs = measure::problemInputsFromQuantized(p, q);
    ASSERT_TRUE(inputs.ok()) << inputs.error();
    Expected<std::vector<uint8_t>> packed = inputs->packed(*layout);
    ASSERT_TRUE(packed.ok()) << packed.error();
    ASSERT_EQ(positionValuePairs(*packed, p.codeBits()),
              static_cast<size_t>(kUnitCodes) * validCodes(p.code).size())
        << "the matrix is too small to hold every code at every position";

    const int64_t m = p.k;
    std::vector<uint16_t> identity(static_cast<size_t>(m * p.k),
                                   measure::activationBits(0.0, p.activation));
    for (int64_t r = 0; r < m; ++r)
      identity[static_cast<size_t>(r * p.k + r)] = measure::activationBits(1.0, p.activation);
    DeviceBuffer x(*api, identity.size() * 2), w(*api, packed->size()),
        scales(*api, inputs->scales.size()), y(*api, static_cast<size_t>(m * p.n * 2));
    ASSERT_TRUE(x.ok() && w.ok() && scales.ok() && y.ok());
    LOWBIT_CU_ASSERT(api, x.upload(identity.data(), identity.size() * 2));
    LOWBIT_CU_ASSERT(api, w.upload(packed->data(), packed->size()));
    LOWBIT_CU_ASSERT(api, scales.upload(inputs->scales.data(), inputs->scales.size()));
    LOWBIT_CU_ASSERT(api, y.poison(0xFF)); // 0xFFFF is NaN in f16 and bf16

    CompiledKernel kernel;
    loadCompiledKernel(*api, entry, kernel);
    if (HasFatalFailure())
      return;
    KernelOperands operands;
    operands.x = x.get();
    operands.w = w.get();
    operands.scales = scales.get();
    operands.y = y.get();
    launchCompiledKernel(*api, kernel, m, operands);
    if (HasFatalFailure())
      return;
    std::vector<uint16_t> out(static_cast<size_t>(m * p.n));
    LOWBIT_CU_ASSERT(api, y.download(out.data(), out.size() * 2));

    // Exact equality of values: ±0 aside, equal bits.
    int64_t wrong = 0;
    std::ostringstream firstWrong;
    for (int64_t kk = 0; kk < p.k; ++kk)
      for (int64_t nn = 0; nn < p.n; ++nn) {
        // Integer and minifloat values are exact in the activation type; a
        // table's entries are held rounded to it.
        const double want = measure::activationValue(
            measure::activationBits(inputs->referenceWeights[static_cast<size_t>(nn * p.k + kk)],
                                    p.activation),
            p.activation);
        const double got =
            measure::activationValue(out[static_cast<size_t>(kk * p.n + nn)], p.activation);
        if (got == want)
          continue;
        if (wrong++ < 8)
          firstWrong << "\n  W[" << nn << ", " << kk << "] code "
                     << unsigned(q.codes[static_cast<size_t>(nn * p.k + kk)]) << ": want " << want
                     << ", got " << got;
      }
    EXPECT_EQ(wrong, 0) << "of " << p.n * p.k << " decoded weights:" << firstWrong.str();
    ++checked;
  }
  std::printf("checked %d kernels on %s\n", checked, arch.c_str());
}

} // namespace
} // namespace lowbit::testing

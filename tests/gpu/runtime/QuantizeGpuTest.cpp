// lowbit_matmul_quantizing's quantizer of f16 and bf16 x to s8 or e4m3 codes
// on a GPU, against a host reference, so codes and scales must match bit for
// bit. The reference repeats the scale's f32 arithmetic step for step; its
// e4m3 code is the nearest of the 253 finite E4M3FN values found by search
// (not the kernel's bit arithmetic), ties to the even code:
//  - the kernels alone (the runtime's embedded PTX, launched as Matmul.cpp
//    launches them): per token and per tensor, rows of zeros, ties that round
//    to even (e4m3: in the normals and the subnormals, and to 448), K not a
//    multiple of 8, more rows than one grid's 65535 blocks;
//  - end to end on sm_90 through plans of the s8 kernel set
//    (build/kernels/s8-gpu-tests), W8A8 in int8 and in fp8: the workspace
//    holds the reference's codes and scales, and y equals
//    lowbit_matmul_quantized's y on those codes and scales, eagerly and
//    replayed from a CUDA graph.
#include "lowbit/lowbit.h"
#include "runtime/api/QuantizeActivationsPtx.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/gpu/runtime/ApiAssert.h"
#include "tests/gpu/support/GpuTest.h"
#include "tests/gpu/support/HostNumerics.h"
#include "tuning_db/Database.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>

namespace lowbit::testing {
namespace {

// ---- the host reference ----------------------------------------------------

float toFloat(uint16_t bits, bool bf16) {
  if (bf16) {
    const uint32_t word = uint32_t(bits) << 16;
    float value;
    std::memcpy(&value, &word, sizeof value);
    return value;
  }
  const int exponent = (bits >> 10) & 31, mantissa = bits & 1023;
  const float magnitude = exponent == 0 ? std::ldexp(float(mantissa), -24)
                                        : std::ldexp(float(1024 + mantissa), exponent - 25);
  return bits & 0x8000 ? -magnitude : magnitude;
}

// QuantizeActivations.cu's scaleOf and codeOf: f32 throughout, IEEE division,
// rint (round to nearest even in the default rounding mode).
float scaleOf(float absmax, bool e4m3) {
  return absmax > 0.0f ? absmax / (e4m3 ? 448.0f : 127.0f) : 1.0f;
}

// The magnitude of E4M3FN code c (0..0x7e): bias 7, subnormals m · 2^-9.
double e4m3Magnitude(int c) {
  const int exponent = c >> 3, mantissa = c & 7;
  return exponent == 0 ? std::ldexp(double(mantissa), -9)
                       : std::ldexp(double(8 + mantissa), exponent - 10);
}

// The nearest finite e4m3 to v, ties to the even code, by a search of the
// magnitudes (increasing with the code); past 448 the nearest is 448
// (saturation). The sign is v's, zeros included.
uint8_t e4m3Nearest(float v) {
  static const std::vector<double> magnitudes = [] {
    std::vector<double> table;
    for (int c = 0; c <= 0x7e; ++c)
      table.push_back(e4m3Magnitude(c));
    return table;
  }();
  const double a = std::fabs(double(v));
  const int above =
      int(std::lower_bound(magnitudes.begin(), magnitudes.end(), a) - magnitudes.begin());
  int best = std::min(above, 0x7e);
  if (above > 0 && above <= 0x7e) {
    const double below = a - magnitudes[size_t(above - 1)], over = magnitudes[size_t(above)] - a;
    if (below < over || (below == over && (above - 1) % 2 == 0))
      best = above - 1;
  }
  return uint8_t((std::signbit(v) ? 0x80 : 0) | best);
}

int8_t codeOf(float x, float scale, bool e4m3) {
  if (e4m3)
    return static_cast<int8_t>(e4m3Nearest(x / scale));
  return static_cast<int8_t>(std::clamp(std::rint(x / scale), -127.0f, 127.0f));
}

struct Quantized {
  std::vector<int8_t> codes;
  std::vector<float> scales; // M per token, one per tensor
};

Quantized quantizeOnHost(const std::vector<uint16_t> &x, bool bf16, int64_t m, int64_t k,
                         bool perTensor, bool e4m3) {
  std::vector<float> rowMax(static_cast<size_t>(m), 0.0f);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < k; ++j)
      rowMax[size_t(r)] = std::max(rowMax[size_t(r)], std::fabs(toFloat(x[size_t(r * k + j)], bf16)));
  Quantized q;
  q.codes.resize(x.size());
  if (perTensor)
    q.scales = {scaleOf(*std::max_element(rowMax.begin(), rowMax.end()), e4m3)};
  else
    for (float absmax : rowMax)
      q.scales.push_back(scaleOf(absmax, e4m3));
  for (int64_t r = 0; r < m; ++r)
    for (int64_t j = 0; j < k; ++j)
      q.codes[size_t(r * k + j)] =
          codeOf(toFloat(x[size_t(r * k + j)], bf16), q.scales[perTensor ? 0 : size_t(r)], e4m3);
  return q;
}

// Row 1's first eight values where K allows: absmax qmax (scale exactly 1)
// and ties, then the codes they must give.
// s8: 127, -127 and halves: 2.5 -> 2, 3.5 -> 4, -0.5 -> -0, 126.5 -> 126.
constexpr float kS8Ties[8] = {127.0f, -127.0f, 2.5f, 3.5f, -0.5f, 126.5f, -1.5f, 0.5f};
constexpr int8_t kS8TieCodes[8] = {127, -127, 2, 4, 0, 126, -2, 0};
// e4m3: ±448; 1.0625 between 1 (0x38) and 1.125 (0x39) -> 0x38; 1.1875 ->
// 1.25 (0x3a); -2^-10, half the smallest subnormal -> -0 (0x80); 3 · 2^-10
// between subnormals 1 and 2 -> 2; 432 between 416 (0x7d) and 448 -> 0x7e;
// 0.5 (0x30).
constexpr float kE4m3Ties[8] = {448.0f,         -448.0f,       1.0625f, 1.1875f,
                                -0.0009765625f, 0.0029296875f, 432.0f,  0.5f};
constexpr uint8_t kE4m3TieCodes[8] = {0x7e, 0xfe, 0x38, 0x3a, 0x80, 0x02, 0x7e, 0x30};

// Finite f16 or bf16 bits: each row's magnitudes within 2^-8 of its own
// largest binade (so codes span the range), some rows in the subnormals, row
// 0 and every 17th all zeros (with negative zeros), and, where K allows, row 1
// with the ties above and the rest far below them.
std::vector<uint16_t> randomActivations(int64_t m, int64_t k, bool bf16, bool e4m3, SplitMix &rng) {
  std::vector<uint16_t> x(static_cast<size_t>(m * k));
  const int mantissaBits = bf16 ? 7 : 10, maxExponent = bf16 ? 140 : 28;
  for (int64_t r = 0; r < m; ++r) {
    const bool zeros = r == 0 || r % 17 == 0;
    const bool subnormal = r % 11 == 5;
    const int top = subnormal ? 0 : int(rng.next() % uint64_t(maxExponent - 9)) + 9;
    for (int64_t j = 0; j < k; ++j) {
      const uint64_t bits = rng.next();
      const int exponent = subnormal ? 0 : std::max(1, top - int(bits % 9));
      const uint16_t sign = (bits >> 20) & 1 ? uint16_t(0x8000) : uint16_t(0);
      const uint16_t mantissa = uint16_t((bits >> 32) & ((1u << mantissaBits) - 1));
      x[size_t(r * k + j)] =
          zeros ? sign : uint16_t(sign | exponent << mantissaBits | mantissa);
    }
  }
  if (m > 1 && k >= 8) {
    const float *values = e4m3 ? kE4m3Ties : kS8Ties;
    for (int j = 0; j < 8; ++j) {
      uint32_t word;
      std::memcpy(&word, &values[j], sizeof word);
      // Exact in both: bf16 keeps the top half of the f32 (these need at
      // most 8 significant bits), f16 gets its own encoding (all are
      // normal f16s).
      x[size_t(k + j)] = bf16 ? uint16_t(word >> 16) : 0;
      if (!bf16) {
        const float a = std::fabs(values[j]);
        const int e = std::ilogb(a);
        const uint16_t mantissa = uint16_t(std::ldexp(a, 10 - e) - 1024.0f);
        x[size_t(k + j)] =
            uint16_t((values[j] < 0 ? 0x8000 : 0) | (e + 15) << 10 | mantissa);
      }
    }
    for (int64_t j = 8; j < k; ++j) // the rest of row 1 tiny
      x[size_t(k + j)] &= bf16 ? uint16_t(0x80ff) : uint16_t(0x83ff);
  }
  return x;
}

// ---- the kernels alone -----------------------------------------------------

class QuantizeGpu : public ::testing::Test {
protected:
  // Launches the quantizer as Matmul.cpp does and checks its output against
  // the reference.
  void check(const cuda::DriverApi &api, const LoadedModule &module, int64_t m, int64_t k,
             bool bf16, bool perTensor, bool e4m3, SplitMix &rng) {
    SCOPED_TRACE(std::string(bf16 ? "bf16" : "f16") + " to " + (e4m3 ? "e4m3" : "s8") +
                 (perTensor ? " per tensor" : " per token") + ", M = " + std::to_string(m) +
                 ", K = " + std::to_string(k));
    const std::vector<uint16_t> x = randomActivations(m, k, bf16, e4m3, rng);
    const Quantized expected = quantizeOnHost(x, bf16, m, k, perTensor, e4m3);
    if (m > 1 && k >= 8 && !perTensor) { // the reference itself: row 1's ties round to even
      ASSERT_EQ(expected.scales[1], 1.0f);
      for (int j = 0; j < 8; ++j)
        ASSERT_EQ(uint8_t(expected.codes[size_t(k + j)]),
                  e4m3 ? kE4m3TieCodes[j] : uint8_t(kS8TieCodes[j]))
            << j;
    }
    DeviceBuffer xBuffer(api, x.size() * 2), codes(api, x.size()),
        scales(api, expected.scales.size() * 4 + 4);
    ASSERT_TRUE(xBuffer.ok() && codes.ok() && scales.ok());
    LOWBIT_CU_ASSERT(&api, xBuffer.upload(x.data(), x.size() * 2));
    // 0x7f: neither s8 (-127..127) nor e4m3 (NaN) codes the quantizer writes.
    LOWBIT_CU_ASSERT(&api, codes.poison(0x7f));
    LOWBIT_CU_ASSERT(&api, scales.poison(0xFF)); // NaN
    CUdeviceptr xPtr = xBuffer.get(), codePtr = codes.get(), scalePtr = scales.get();
    CUdeviceptr tensorAbsmax = 0;
    int bf16Flag = bf16 ? 1 : 0, e4m3Flag = e4m3 ? 1 : 0;
    long long rows = m, columns = k;
    const unsigned blocks = unsigned(std::min<int64_t>(m, 65535));
    if (perTensor) {
      tensorAbsmax = scalePtr + 4;
      LOWBIT_CU_ASSERT(&api, api.cuMemsetD32Async(tensorAbsmax, 0, 1, nullptr));
      void *params[] = {&xPtr, &bf16Flag, &rows, &columns, &tensorAbsmax};
      LOWBIT_CU_ASSERT(&api, api.cuLaunchKernel(module.function("lowbit_activation_absmax"),
                                                blocks, 1, 1, 256, 1, 1, 0, nullptr, params,
                                                nullptr));
    }
    void *params[] = {&xPtr,    &bf16Flag, &e4m3Flag, &rows,
                      &columns, &codePtr,  &scalePtr, &tensorAbsmax};
    LOWBIT_CU_ASSERT(&api, api.cuLaunchKernel(module.function("lowbit_quantize_activations"),
                                              blocks, 1, 1, 256, 1, 1, 0, nullptr, params,
                                              nullptr));
    LOWBIT_CU_ASSERT(&api, api.cuCtxSynchronize());
    std::vector<int8_t> gotCodes(x.size());
    std::vector<float> gotScales(expected.scales.size());
    LOWBIT_CU_ASSERT(&api, codes.download(gotCodes.data(), gotCodes.size()));
    LOWBIT_CU_ASSERT(&api, scales.download(gotScales.data(), gotScales.size() * 4));
    for (size_t i = 0; i < gotScales.size(); ++i)
      ASSERT_EQ(std::memcmp(&gotScales[i], &expected.scales[i], 4), 0)
          << "scale " << i << ": " << gotScales[i] << ", expected " << expected.scales[i];
    for (size_t i = 0; i < gotCodes.size(); ++i)
      ASSERT_EQ(uint8_t(gotCodes[i]), uint8_t(expected.codes[i]))
          << "row " << i / size_t(k) << ", column " << i % size_t(k)
          << ": x = " << toFloat(x[i], bf16);
  }
};

TEST_F(QuantizeGpu, CodesAndScalesMatchTheHostBitForBit) {
  LOWBIT_REQUIRE_GPU(api);
  LoadedModule module(*api, api::kQuantizeActivationsPtx);
  LOWBIT_CU_ASSERT(api, module.loadResult());
  SplitMix rng{2024};
  const int64_t shapes[][2] = {{1, 64}, {3, 1000}, {37, 4096}, {300, 520}, {5, 7}, {70000, 8}};
  for (bool e4m3 : {false, true})
    for (bool bf16 : {false, true})
      for (bool perTensor : {false, true})
        for (const auto &shape : shapes) {
          check(*api, module, shape[0], shape[1], bf16, perTensor, e4m3, rng);
          if (HasFatalFailure())
            return;
        }
}

// ---- end to end through s8 plans ---------------------------------------------

// The s8 kernel set's problems this test plans, as a caller describes them:
// int8 codes on s8 activations, e4m3fn codes on e4m3 ones.
struct S8Problem {
  const char *name;
  lowbit_dtype activation;
  lowbit_activation_scale activationScale;
  lowbit_granularity granularity;
  lowbit_dtype scale, output;
  int64_t n, k;
  bool e4m3() const { return activation == LOWBIT_DTYPE_E4M3; }
};
constexpr S8Problem kS8Problems[] = {
    {"w8a8.f16", LOWBIT_DTYPE_S8, LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_GRANULARITY_CHANNEL,
     LOWBIT_DTYPE_F16, LOWBIT_DTYPE_F16, 256, 1024},
    {"w8a8.tensor.f32", LOWBIT_DTYPE_S8, LOWBIT_ACTIVATION_SCALE_TENSOR, LOWBIT_GRANULARITY_CHANNEL,
     LOWBIT_DTYPE_BF16, LOWBIT_DTYPE_F32, 128, 512},
    {"fp8.token.bf16", LOWBIT_DTYPE_E4M3, LOWBIT_ACTIVATION_SCALE_TOKEN, LOWBIT_GRANULARITY_CHANNEL,
     LOWBIT_DTYPE_F32, LOWBIT_DTYPE_BF16, 512, 1024},
    {"fp8.tensor.f32", LOWBIT_DTYPE_E4M3, LOWBIT_ACTIVATION_SCALE_TENSOR, LOWBIT_GRANULARITY_TENSOR,
     LOWBIT_DTYPE_F32, LOWBIT_DTYPE_F32, 256, 512},
};

// A kernel database holding the kernel set's kernels of kS8Problems (cubins
// only: sm_90a), as `lowbit compile -o x.db` would store them.
std::string s8Database(const std::string &directory, std::string *whyNot) {
  Expected<std::vector<kernels::KernelEntry>> set =
      kernels::readKernelSet(testKernelsPath("LOWBIT_S8_TEST_KERNELS", "s8-gpu-tests"));
  if (!set) {
    *whyNot = set.error();
    return "";
  }
  const std::string path = directory + "/s8.db";
  Expected<db::Database> database = db::Database::open(path);
  if (!database) {
    *whyNot = database.error();
    return "";
  }
  int added = 0;
  for (const kernels::KernelEntry &entry : *set) {
    if (std::none_of(std::begin(kS8Problems), std::end(kS8Problems),
                     [&](const S8Problem &p) { return entry.problem.name == p.name; }))
      continue;
    Expected<std::vector<char>> cubin = kernels::readCubin(entry);
    Expected<std::string> problem = database->putProblem(core::signature(entry.problem));
    if (!cubin || !problem) {
      *whyNot = !cubin ? cubin.error() : problem.error();
      return "";
    }
    Expected<std::string> id =
        database->putKernel(kernels::kernelRecord(entry, *cubin, "", "s8-gpu-tests", "test"));
    if (!id) {
      *whyNot = id.error();
      return "";
    }
    ++added;
  }
  if (added == 0)
    *whyNot = "the kernel set has none of this test's problems";
  return added ? path : "";
}

lowbit_problem abiProblem(const S8Problem &s) {
  lowbit_problem p;
  std::memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.n = s.n;
  p.k = s.k;
  p.activation = s.activation;
  p.weight = s.e4m3() ? LOWBIT_WEIGHT_E4M3 : LOWBIT_WEIGHT_INT8;
  p.scale = s.scale;
  p.granularity = s.granularity;
  p.zero = LOWBIT_ZERO_NONE;
  p.activation_scale = s.activationScale;
  p.output = s.output;
  return p;
}

// Runs lowbit_matmul_quantizing on `plan` and checks the workspace and y.
void checkEndToEnd(const cuda::DriverApi &api, lowbit_plan *plan, const S8Problem &s,
                   const lowbit_weights &w, CUdeviceptr scales, int64_t m, bool bf16,
                   SplitMix &rng) {
  SCOPED_TRACE(std::string(s.name) + (bf16 ? ", bf16 x" : ", f16 x") +
               ", M = " + std::to_string(m));
  const bool perTensor = s.activationScale == LOWBIT_ACTIVATION_SCALE_TENSOR;
  const std::vector<uint16_t> x = randomActivations(m, s.k, bf16, s.e4m3(), rng);
  const Quantized expected = quantizeOnHost(x, bf16, m, s.k, perTensor, s.e4m3());
  size_t workspaceBytes = 0;
  LOWBIT_OK(lowbit_plan_workspace_bytes(plan, m, &workspaceBytes));
  const size_t codeBytes = size_t(m * s.k + 255) / 256 * 256;
  ASSERT_EQ(workspaceBytes, codeBytes + (perTensor ? 256 : size_t(4 * m + 255) / 256 * 256));
  const size_t yBytes = size_t(m * s.n) * (s.output == LOWBIT_DTYPE_F32 ? 4 : 2);
  DeviceBuffer xBuffer(api, x.size() * 2), workspace(api, workspaceBytes), y(api, yBytes),
      yQuantized(api, yBytes), codes(api, x.size()), xScales(api, expected.scales.size() * 4);
  ASSERT_TRUE(xBuffer.ok() && workspace.ok() && y.ok() && yQuantized.ok() && codes.ok() &&
              xScales.ok());
  LOWBIT_CU_ASSERT(&api, xBuffer.upload(x.data(), x.size() * 2));
  LOWBIT_CU_ASSERT(&api, workspace.poison(0x7f));
  LOWBIT_CU_ASSERT(&api, y.poison(0xFF));
  const lowbit_dtype dtype = bf16 ? LOWBIT_DTYPE_BF16 : LOWBIT_DTYPE_F16;
  auto quantizing = [&](CUstream stream) {
    return lowbit_matmul_quantizing(plan, m, reinterpret_cast<void *>(xBuffer.get()), dtype, &w,
                                    reinterpret_cast<void *>(scales), nullptr,
                                    reinterpret_cast<void *>(y.get()),
                                    reinterpret_cast<void *>(workspace.get()), workspaceBytes,
                                    stream);
  };
  LOWBIT_OK(quantizing(nullptr));
  LOWBIT_CU_ASSERT(&api, api.cuCtxSynchronize());
  std::vector<uint8_t> space(workspaceBytes);
  LOWBIT_CU_ASSERT(&api, workspace.download(space.data(), space.size()));
  ASSERT_EQ(std::memcmp(space.data(), expected.codes.data(), expected.codes.size()), 0)
      << "the workspace's codes";
  ASSERT_EQ(std::memcmp(space.data() + codeBytes, expected.scales.data(),
                        expected.scales.size() * 4),
            0)
      << "the workspace's scales";

  // The same matmul on the reference's codes and scales.
  LOWBIT_CU_ASSERT(&api, codes.upload(expected.codes.data(), expected.codes.size()));
  LOWBIT_CU_ASSERT(&api, xScales.upload(expected.scales.data(), expected.scales.size() * 4));
  LOWBIT_CU_ASSERT(&api, yQuantized.poison(0xFF));
  LOWBIT_OK(lowbit_matmul_quantized(plan, m, reinterpret_cast<void *>(codes.get()),
                                    reinterpret_cast<void *>(xScales.get()), &w,
                                    reinterpret_cast<void *>(scales), nullptr,
                                    reinterpret_cast<void *>(yQuantized.get()), nullptr, 0,
                                    nullptr));
  LOWBIT_CU_ASSERT(&api, api.cuCtxSynchronize());
  std::vector<uint8_t> want(yBytes), got(yBytes);
  LOWBIT_CU_ASSERT(&api, yQuantized.download(want.data(), yBytes));
  LOWBIT_CU_ASSERT(&api, y.download(got.data(), yBytes));
  ASSERT_EQ(got, want) << "y of lowbit_matmul_quantizing vs lowbit_matmul_quantized";

  // Captured (memset, launches and all) and replayed.
  CUstream stream = nullptr;
  LOWBIT_CU_ASSERT(&api, api.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  LOWBIT_CU_ASSERT(&api, api.cuStreamBeginCapture(stream, CU_STREAM_CAPTURE_MODE_GLOBAL));
  const lowbit_status captured = quantizing(stream);
  CUgraph graph = nullptr;
  const CUresult ended = api.cuStreamEndCapture(stream, &graph);
  ASSERT_EQ(captured, LOWBIT_STATUS_SUCCESS) << lowbit_last_error();
  LOWBIT_CU_ASSERT(&api, ended);
  CUgraphExec exec = nullptr;
  LOWBIT_CU_ASSERT(&api, api.cuGraphInstantiate(&exec, graph, 0));
  LOWBIT_CU_ASSERT(&api, y.poison(0xFF));
  LOWBIT_CU_ASSERT(&api, workspace.poison(0x7f));
  LOWBIT_CU_ASSERT(&api, api.cuCtxSynchronize());
  for (int replay = 0; replay < 2; ++replay) // the absmax word starts at 0 each time
    LOWBIT_CU_ASSERT(&api, api.cuGraphLaunch(exec, stream));
  LOWBIT_CU_ASSERT(&api, api.cuStreamSynchronize(stream));
  LOWBIT_CU_ASSERT(&api, y.download(got.data(), yBytes));
  EXPECT_EQ(got, want) << "graph replay";
  api.cuGraphExecDestroy(exec);
  api.cuGraphDestroy(graph);
  api.cuStreamDestroy(stream);
}

TEST(QuantizeGpuEndToEnd, S8AndE4m3PlansQuantizeF16AndBf16X) {
  LOWBIT_REQUIRE_GPU(api);
  if (deviceArchName(*api) != "sm_90a")
    GTEST_SKIP() << "the s8 kernel set is compiled for sm_90a only; this is "
                 << deviceArchName(*api);
  char pattern[] = "/tmp/lowbit-quantize-gpu-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string directory = pattern;
  std::string whyNot;
  const std::string path = s8Database(directory, &whyNot);
  if (path.empty()) {
    std::filesystem::remove_all(directory);
    GTEST_SKIP() << "no s8 kernels (build/kernels/s8-gpu-tests, or LOWBIT_S8_TEST_KERNELS): "
                 << whyNot;
  }
  lowbit_context_options options;
  std::memset(&options, 0, sizeof options);
  options.struct_size = sizeof options;
  options.system_db_path = path.c_str();
  lowbit_context *context = nullptr;
  LOWBIT_OK(lowbit_context_create(&options, &context));
  SplitMix rng{77};
  for (const S8Problem &s : kS8Problems) {
    const lowbit_problem problem = abiProblem(s);
    lowbit_plan *plan = nullptr;
    LOWBIT_OK(lowbit_plan_create(context, &problem, &plan));
    size_t weightBytes = 0, scaleBytes = 0;
    LOWBIT_OK(lowbit_plan_packed_sizes(plan, &weightBytes, &scaleBytes, nullptr, nullptr));
    // Codes of every int8 value, or every e4m3fn value but NaN (0x7f,
    // 0xff); scales near 2^-7 (f16, bf16 or f32 bits), one per channel or
    // one for the tensor.
    std::vector<uint8_t> codes(size_t(s.n * s.k));
    for (uint8_t &code : codes) {
      code = uint8_t(rng.next());
      if (s.e4m3() && (code & 0x7f) == 0x7f)
        code ^= 1;
    }
    const size_t scaleCount = s.granularity == LOWBIT_GRANULARITY_TENSOR ? 1 : size_t(s.n);
    std::vector<uint8_t> scaleBuffer;
    for (size_t i = 0; i < scaleCount; ++i) {
      const uint64_t bits = rng.next();
      uint32_t word = s.scale == LOWBIT_DTYPE_BF16  ? uint32_t(120 << 7 | (bits & 127))
                      : s.scale == LOWBIT_DTYPE_F16 ? uint32_t(8 << 10 | (bits & 1023))
                                                    : uint32_t(120u << 23 | (bits & 0x7fffff));
      const size_t bytes = s.scale == LOWBIT_DTYPE_F32 ? 4 : 2;
      for (size_t b = 0; b < bytes; ++b, word >>= 8)
        scaleBuffer.push_back(uint8_t(word));
    }
    ASSERT_EQ(scaleBytes, scaleBuffer.size());
    DeviceBuffer packed(*api, weightBytes), scales(*api, scaleBytes);
    ASSERT_TRUE(packed.ok() && scales.ok());
    LOWBIT_OK(lowbit_pack_weights(plan, codes.data(), reinterpret_cast<void *>(packed.get()),
                                  weightBytes, LOWBIT_MEMORY_DEVICE, nullptr));
    LOWBIT_CU_ASSERT(api, scales.upload(scaleBuffer.data(), scaleBytes));
    lowbit_weights w{sizeof(lowbit_weights), reinterpret_cast<const void *>(packed.get()),
                     weightBytes, 0};
    LOWBIT_OK(lowbit_plan_layout_id(plan, &w.layout_id));
    for (int64_t m : {1, 5, 33, 130})
      for (bool bf16 : {false, true})
        if (!HasFatalFailure())
          checkEndToEnd(*api, plan, s, w, scales.get(), m, bf16, rng);
    lowbit_plan_destroy(plan);
    if (HasFatalFailure())
      break;
  }
  lowbit_context_destroy(context);
  std::filesystem::remove_all(directory);
}

} // namespace
} // namespace lowbit::testing

// Runs the codegen/device primitives generated kernels call on the GPU: the
// mma.sync wrappers (through the documented fragment tables) against a host
// f64 matmul, and the small helpers. Outputs are poisoned before every
// launch. Skipped (never passed) without a GPU. The decode is checked through
// the compiled kernels themselves (tests/gpu/kernels/DecodeKernelTest.cpp).
#include "codegen/nvrtc/NvrtcCompiler.h"
#include "core/formats/DataFormat.h"
#include "tests/gpu/support/GpuTest.h"
#include "tests/unit/codegen/device/HostHalf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace lowbit::testing {
namespace {

using half::Fp16Kind;

const char *kSource = R"(
#include "lowbit/device/types.cuh"
#include "lowbit/device/arith.cuh"
#include "lowbit/device/mma.cuh"
#include "lowbit/device/cp_async.cuh"
#include "lowbit/device/reduce.cuh"
#include "lowbit/device/vector_load.cuh"
using namespace lowbit::device;

// One warp. A: 16 x 16 row-major, W: 8 x 16 (W[n][k], i.e. B column-major),
// C, D: 16 x 8 row-major f32. Fragments loaded by the tables in mma.cuh.
template <class T>
__device__ void mma16_direct(const u32 *A, const u32 *W, const float *C, float *D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  FragA<T> a; FragB<T> b; FragC_f32 c;
  a.r[0] = A[(g * 16 + 2 * t) / 2];
  a.r[1] = A[((g + 8) * 16 + 2 * t) / 2];
  a.r[2] = A[(g * 16 + 2 * t + 8) / 2];
  a.r[3] = A[((g + 8) * 16 + 2 * t + 8) / 2];
  b.r[0] = W[(g * 16 + 2 * t) / 2];
  b.r[1] = W[(g * 16 + 2 * t + 8) / 2];
  c.r[0] = C[g * 8 + 2 * t]; c.r[1] = C[g * 8 + 2 * t + 1];
  c.r[2] = C[(g + 8) * 8 + 2 * t]; c.r[3] = C[(g + 8) * 8 + 2 * t + 1];
  mma_m16n8k16(c, a, b);
  D[g * 8 + 2 * t] = c.r[0]; D[g * 8 + 2 * t + 1] = c.r[1];
  D[(g + 8) * 8 + 2 * t] = c.r[2]; D[(g + 8) * 8 + 2 * t + 1] = c.r[3];
}
extern "C" __global__ void mma_f16_direct(const u32 *A, const u32 *W, const float *C, float *D) {
  mma16_direct<F16>(A, W, C, D);
}
extern "C" __global__ void mma_bf16_direct(const u32 *A, const u32 *W, const float *C, float *D) {
  mma16_direct<BF16>(A, W, C, D);
}

// 8-bit m16n8k32. A: 16 x 32 bytes row-major, W: 8 x 32 (W[n][k]).
template <class T, class Acc>
__device__ void mma8_direct(const u32 *A, const u32 *W, const Acc *C, Acc *D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  FragA<T> a; FragB<T> b;
  a.r[0] = A[(g * 32 + 4 * t) / 4];
  a.r[1] = A[((g + 8) * 32 + 4 * t) / 4];
  a.r[2] = A[(g * 32 + 4 * t + 16) / 4];
  a.r[3] = A[((g + 8) * 32 + 4 * t + 16) / 4];
  b.r[0] = W[(g * 32 + 4 * t) / 4];
  b.r[1] = W[(g * 32 + 4 * t + 16) / 4];
  Acc c[4] = {C[g * 8 + 2 * t], C[g * 8 + 2 * t + 1], C[(g + 8) * 8 + 2 * t],
              C[(g + 8) * 8 + 2 * t + 1]};
  if constexpr (kIsSame<T, S8>) {
    FragC_s32 f; for (int i = 0; i < 4; ++i) f.r[i] = c[i];
    mma_m16n8k32(f, a, b);
    for (int i = 0; i < 4; ++i) c[i] = f.r[i];
  } else {
    FragC_f32 f; for (int i = 0; i < 4; ++i) f.r[i] = c[i];
    if constexpr (kHasMmaE4M3) mma_m16n8k32(f, a, b);
    for (int i = 0; i < 4; ++i) c[i] = f.r[i];
  }
  D[g * 8 + 2 * t] = c[0]; D[g * 8 + 2 * t + 1] = c[1];
  D[(g + 8) * 8 + 2 * t] = c[2]; D[(g + 8) * 8 + 2 * t + 1] = c[3];
}
extern "C" __global__ void mma_s8_direct(const u32 *A, const u32 *W, const int *C, int *D) {
  mma8_direct<S8, int>(A, W, C, D);
}
extern "C" __global__ void mma_e4m3_direct(const u32 *A, const u32 *W, const float *C, float *D) {
  mma8_direct<E4M3, float>(A, W, C, D);
}

// out[0..31] = warp_sum, out[32..63] = warp_sum<8>; f16/bf16 sums of packed
// pairs; dot2 helpers.
extern "C" __global__ void reduce_kernel(const float *in, const u32 *in16, float *out, u32 *out16) {
  const int lane = threadIdx.x;
  out[lane] = warp_sum(in[lane]);
  out[32 + lane] = warp_sum<8>(in[lane]);
  out[64 + lane] = hsum_f16x2_f32(in16[lane]);
  out[96 + lane] = hsum_bf16x2_f32(in16[32 + lane]);
  out[128 + lane] = dot2_f16x2_f32(in16[lane], in16[64 + lane], in[lane]);
  out[160 + lane] = dot2_bf16x2_f32(in16[32 + lane], in16[96 + lane], in[lane]);
  out16[lane] = warp_sum_f16x2<4>(in16[lane]);
  out16[32 + lane] = warp_sum_bf16x2<4>(in16[32 + lane]);
}

// Zero fill: lane copies 16 bytes if its predicate holds, else must get zeros;
// s[2]: an unconditional evict-first copy.
extern "C" __global__ void zfill_kernel(const u32 *src, u32 *out) {
  __shared__ __align__(16) u32 s[3][32 * 4];
  const int lane = threadIdx.x;
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) s[j][4 * lane + i] = 0xDEADBEEFu;
  __syncthreads();
  cp_async16_hint(shared_addr(&s[2][4 * lane]), src + 4 * lane, make_l2_evict_first_policy());
  cp_async16_zfill(shared_addr(&s[0][4 * lane]), src + 4 * lane, lane % 3 != 0);
  cp_async16_zfill_hint(shared_addr(&s[1][4 * lane]), src + 4 * lane, lane % 2 != 0,
                        make_l2_evict_first_policy());
  cp_async_commit();
  cp_async_wait_all();
  __syncthreads();
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) out[128 * j + 4 * lane + i] = s[j][4 * lane + i];
}

// Each load flavour copies its 512-byte slice of `in` to the same slice of out.
extern "C" __global__ void vector_load_kernel(const u32 *in, u32 *out) {
  const int lane = threadIdx.x;
  st_global_v4(out + 0 * 128 + 4 * lane, ld_global_nc_na_v4(in + 0 * 128 + 4 * lane));
  st_global_v4(out + 1 * 128 + 4 * lane, ld_global_cs_v4(in + 1 * 128 + 4 * lane));
  st_global_v4(out + 2 * 128 + 4 * lane,
               ld_global_nc_hint_v4(in + 2 * 128 + 4 * lane, make_l2_evict_first_policy()));
  st_global_v4(out + 3 * 128 + 4 * lane, ld_global_v4(in + 3 * 128 + 4 * lane));
}

// in: f16 pairs, then bf16 pairs (n each). out: their f32 round trips, then
// the lo-first order of f32x2_to_f16x2.
extern "C" __global__ void conversion_kernel(const u32 *in, u32 *out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float lo, hi;
  f16x2_to_f32x2(in[i], lo, hi);
  out[0 * n + i] = f32x2_to_f16x2(lo, hi);          // exact round trip
  bf16x2_to_f32x2(in[n + i], lo, hi);
  out[1 * n + i] = f32x2_to_bf16x2(lo, hi);
  out[2 * n + i] = f32x2_to_f16x2(1.0f, -2.0f);     // 0xC0003C00: lo first
}

// Every e8m0 and e4m3fn scale byte widened to f32 (scale.cuh), as kernels do.
extern "C" __global__ void scale_kernel(float *out) {
  const unsigned code = threadIdx.x;
  out[code] = e8m0_to_f32(code);
  out[256 + code] = e4m3fn_to_f32(code);
}
)";

// ---------------------------------------------------------------------------

struct Gpu {
  const cuda::DriverApi *api = nullptr;
  std::unique_ptr<LoadedModule> module;
  int computeCapability = 0;
  std::string failure; // compile / load failure, reported by every test
};

// Compiles and loads the test module once per process.
const Gpu &gpu(const cuda::DriverApi *api) {
  static Gpu *instance = [&] {
    Gpu *g = new Gpu;
    g->api = api;
    const std::string archName = deviceArchName(*api);
    Expected<nvrtc::Arch> arch = nvrtc::parseArch(archName);
    if (!arch.ok()) {
      g->failure = "device arch " + archName + " is not a lowbit target: " + arch.error();
      return g;
    }
    g->computeCapability = nvrtc::archComputeCapability(*arch);
    nvrtc::CompileRequest request;
    request.source = kSource;
    request.sourceName = "device_headers_gpu_test.cu";
    request.arch = *arch;
    Expected<nvrtc::CompileResult> result = nvrtc::compile(request);
    if (!result.ok()) {
      g->failure = result.error();
      return g;
    }
    static std::vector<char> cubin;
    cubin = result->cubin;
    g->module = std::make_unique<LoadedModule>(*api, cubin.data());
    if (g->module->loadResult() != CUDA_SUCCESS)
      g->failure = "module load: " + cuda::describe(*api, g->module->loadResult());
    return g;
  }();
  return *instance;
}

#define LOWBIT_DEVICE_TEST_SETUP(g)                                            \
  LOWBIT_REQUIRE_GPU(api);                                                     \
  const Gpu &g = gpu(api);                                                     \
  ASSERT_TRUE(g.failure.empty()) << g.failure

CUresult launch(const Gpu &g, const char *name, unsigned grid, unsigned block,
                std::vector<void *> args) {
  CUfunction f = g.module->function(name);
  if (!f)
    return CUDA_ERROR_NOT_FOUND;
  CUresult r = g.api->cuLaunchKernel(f, grid, 1, 1, block, 1, 1, 0, nullptr, args.data(), nullptr);
  return r == CUDA_SUCCESS ? g.api->cuCtxSynchronize() : r;
}

template <class T> std::vector<T> download(const DeviceBuffer &b, size_t count) {
  std::vector<T> out(count);
  EXPECT_EQ(b.download(out.data(), count * sizeof(T)), CUDA_SUCCESS);
  return out;
}

// ---------------------------------------------------------------------------
// mma.sync against a host f64 matmul.

// Random nonzero value with magnitude in [0.25, 2), rounded to the format.
uint16_t randomHalf(std::mt19937 &rng, Fp16Kind kind) {
  std::uniform_real_distribution<double> magnitude(0.25, 2.0);
  const double v = (rng() & 1) ? magnitude(rng) : -magnitude(rng);
  return half::fromDouble(kind, v);
}

std::vector<uint32_t> packPairs(const std::vector<uint16_t> &h) {
  std::vector<uint32_t> out(h.size() / 2);
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = h[2 * i] | (static_cast<uint32_t>(h[2 * i + 1]) << 16);
  return out;
}

// |got - ref| <= tol * (|C| + sum |a w|) for each of the 16 x 8 outputs.
void expectMatmul(const std::vector<float> &got, const std::vector<double> &ref,
                  const std::vector<double> &magnitude, double tol, const char *what) {
  for (int i = 0; i < 128; ++i)
    EXPECT_LE(std::fabs(got[i] - ref[i]), tol * magnitude[i] + 1e-30)
        << what << " D[" << i / 8 << "][" << i % 8 << "] = " << got[i] << ", ref " << ref[i];
}

void runMma16(const Gpu &g, Fp16Kind kind) {
  std::mt19937 rng(kind == Fp16Kind::F16 ? 16 : 17);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<uint16_t> a(16 * 16), w(8 * 16);
    std::vector<float> c(16 * 8);
    for (auto &x : a) x = randomHalf(rng, kind);
    for (auto &x : w) x = randomHalf(rng, kind);
    std::uniform_real_distribution<float> cdist(-4.0f, 4.0f);
    for (auto &x : c) x = cdist(rng);
    std::vector<double> ref(128), magnitude(128);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        double sum = c[m * 8 + n], mag = std::fabs(c[m * 8 + n]);
        for (int k = 0; k < 16; ++k) {
          const double p = half::toDouble(kind, a[m * 16 + k]) * half::toDouble(kind, w[n * 16 + k]);
          sum += p;
          mag += std::fabs(p);
        }
        ref[m * 8 + n] = sum;
        magnitude[m * 8 + n] = mag;
      }
    const std::vector<uint32_t> a32 = packPairs(a), w32 = packPairs(w);
    DeviceBuffer da(*g.api, 512), dw(*g.api, 256), dc(*g.api, 512), d1(*g.api, 512);
    ASSERT_TRUE(da.ok() && dw.ok() && dc.ok() && d1.ok());
    LOWBIT_CU_ASSERT(g.api, da.upload(a32.data(), 512));
    LOWBIT_CU_ASSERT(g.api, dw.upload(w32.data(), 256));
    LOWBIT_CU_ASSERT(g.api, dc.upload(c.data(), 512));
    CUdeviceptr pa = da.get(), pw = dw.get(), pc = dc.get(), p1 = d1.get();
    const bool f16 = kind == Fp16Kind::F16;
    // f32 accumulation of exact products: a few f32 ulps of the magnitude.
    const double tol = 1e-6;

    LOWBIT_CU_ASSERT(g.api, d1.poison());
    LOWBIT_CU_ASSERT(g.api, launch(g, f16 ? "mma_f16_direct" : "mma_bf16_direct", 1, 32,
                                   {&pa, &pw, &pc, &p1}));
    expectMatmul(download<float>(d1, 128), ref, magnitude, tol, "direct fragments");
    if (::testing::Test::HasFailure())
      return;
  }
}

TEST(DeviceHeadersGpu, MmaF16MatchesF64Reference) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  runMma16(g, Fp16Kind::F16);
}

TEST(DeviceHeadersGpu, MmaBf16MatchesF64Reference) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  runMma16(g, Fp16Kind::BF16);
}

TEST(DeviceHeadersGpu, MmaS8IsExact) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  std::mt19937 rng(8);
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<int8_t> a(16 * 32), w(8 * 32);
    std::vector<int32_t> c(128), ref(128);
    for (auto &x : a) do x = static_cast<int8_t>(rng()); while (x == 0);
    for (auto &x : w) do x = static_cast<int8_t>(rng()); while (x == 0);
    for (auto &x : c) x = static_cast<int32_t>(rng() % 20001) - 10000;
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        int32_t sum = c[m * 8 + n];
        for (int k = 0; k < 32; ++k) sum += a[m * 32 + k] * w[n * 32 + k];
        ref[m * 8 + n] = sum;
      }
    DeviceBuffer da(*g.api, 512), dw(*g.api, 256), dc(*g.api, 512), dd(*g.api, 512);
    LOWBIT_CU_ASSERT(g.api, da.upload(a.data(), 512));
    LOWBIT_CU_ASSERT(g.api, dw.upload(w.data(), 256));
    LOWBIT_CU_ASSERT(g.api, dc.upload(c.data(), 512));
    LOWBIT_CU_ASSERT(g.api, dd.poison());
    CUdeviceptr pa = da.get(), pw = dw.get(), pc = dc.get(), pd = dd.get();
    LOWBIT_CU_ASSERT(g.api, launch(g, "mma_s8_direct", 1, 32, {&pa, &pw, &pc, &pd}));
    const std::vector<int32_t> got = download<int32_t>(dd, 128);
    for (int i = 0; i < 128; ++i)
      ASSERT_EQ(got[i], ref[i]) << "D[" << i / 8 << "][" << i % 8 << "]";
  }
}

double e4m3ToDouble(uint8_t b) {
  const int sign = b >> 7, exponent = (b >> 3) & 0xF, mantissa = b & 7;
  const double magnitude = exponent == 0 ? std::ldexp(mantissa, -9)
                                         : std::ldexp(8 + mantissa, exponent - 10);
  return sign ? -magnitude : magnitude;
}

TEST(DeviceHeadersGpu, MmaE4m3MatchesF64Reference) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  if (g.computeCapability < 89)
    GTEST_SKIP() << "e4m3 mma needs sm_89+";
  std::mt19937 rng(43);
  auto randomCode = [&] {
    uint8_t b;
    do b = static_cast<uint8_t>(rng()); while ((b & 0x7F) == 0x7F || (b & 0x7F) == 0);
    return b;
  };
  for (int trial = 0; trial < 4; ++trial) {
    std::vector<uint8_t> a(16 * 32), w(8 * 32);
    std::vector<float> c(128);
    for (auto &x : a) x = randomCode();
    for (auto &x : w) x = randomCode();
    std::uniform_real_distribution<float> cdist(-4.0f, 4.0f);
    for (auto &x : c) x = cdist(rng);
    std::vector<double> ref(128), magnitude(128);
    for (int m = 0; m < 16; ++m)
      for (int n = 0; n < 8; ++n) {
        double sum = c[m * 8 + n], mag = std::fabs(c[m * 8 + n]);
        for (int k = 0; k < 32; ++k) {
          const double p = e4m3ToDouble(a[m * 32 + k]) * e4m3ToDouble(w[n * 32 + k]);
          sum += p;
          mag += std::fabs(p);
        }
        ref[m * 8 + n] = sum;
        magnitude[m * 8 + n] = mag;
      }
    DeviceBuffer da(*g.api, 512), dw(*g.api, 256), dc(*g.api, 512), dd(*g.api, 512);
    LOWBIT_CU_ASSERT(g.api, da.upload(a.data(), 512));
    LOWBIT_CU_ASSERT(g.api, dw.upload(w.data(), 256));
    LOWBIT_CU_ASSERT(g.api, dc.upload(c.data(), 512));
    LOWBIT_CU_ASSERT(g.api, dd.poison());
    CUdeviceptr pa = da.get(), pw = dw.get(), pc = dc.get(), pd = dd.get();
    LOWBIT_CU_ASSERT(g.api, launch(g, "mma_e4m3_direct", 1, 32, {&pa, &pw, &pc, &pd}));
    // The fp8 tensor-core accumulation is not full f32 on every arch: a
    // looser bound, still far below any layout mistake (which is O(1)).
    expectMatmul(download<float>(dd, 128), ref, magnitude, 1e-3, "e4m3");
    if (::testing::Test::HasFailure())
      return;
  }
}

// ---------------------------------------------------------------------------

TEST(DeviceHeadersGpu, WarpReductions) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-8.0f, 8.0f);
  std::vector<float> in(32);
  for (auto &x : in) x = dist(rng);
  // Small integers and halves: every f16/bf16 sum below is exact, so the
  // packed reductions must match bit for bit.
  std::vector<uint16_t> h16(64), b16(64);
  for (int i = 0; i < 64; ++i) {
    h16[i] = half::doubleToF16(static_cast<int>(rng() % 33) - 16 + 0.5);
    b16[i] = half::doubleToBf16(static_cast<int>(rng() % 33) - 16 + 0.5);
  }
  std::vector<uint32_t> in16(128);
  for (int lane = 0; lane < 32; ++lane) {
    in16[lane] = h16[2 * lane] | (uint32_t(h16[2 * lane + 1]) << 16);
    in16[32 + lane] = b16[2 * lane] | (uint32_t(b16[2 * lane + 1]) << 16);
  }
  for (int lane = 0; lane < 32; ++lane) { // second operands of the dot products
    in16[64 + lane] = in16[(lane + 5) % 32];
    in16[96 + lane] = in16[32 + (lane + 7) % 32];
  }
  DeviceBuffer din(*g.api, 128), din16(*g.api, 512), dout(*g.api, 768), dout16(*g.api, 256);
  LOWBIT_CU_ASSERT(g.api, din.upload(in.data(), 128));
  LOWBIT_CU_ASSERT(g.api, din16.upload(in16.data(), 512));
  LOWBIT_CU_ASSERT(g.api, dout.poison());
  LOWBIT_CU_ASSERT(g.api, dout16.poison());
  CUdeviceptr p0 = din.get(), p1 = din16.get(), p2 = dout.get(), p3 = dout16.get();
  LOWBIT_CU_ASSERT(g.api, launch(g, "reduce_kernel", 1, 32, {&p0, &p1, &p2, &p3}));
  const std::vector<float> out = download<float>(dout, 192);
  const std::vector<uint32_t> out16 = download<uint32_t>(dout16, 64);
  double total = 0, totalAbs = 0;
  for (float x : in) { total += x; totalAbs += std::fabs(x); }
  for (int lane = 0; lane < 32; ++lane) {
    EXPECT_NEAR(out[lane], total, 1e-6 * totalAbs) << lane;
    double group = 0, groupAbs = 0;
    for (int j = lane & ~7; j < (lane & ~7) + 8; ++j) { group += in[j]; groupAbs += std::fabs(in[j]); }
    EXPECT_NEAR(out[32 + lane], group, 1e-6 * groupAbs) << lane;
    auto f = [&](int i) { return half::f16ToDouble(h16[i]); };
    auto b = [&](int i) { return half::bf16ToDouble(b16[i]); };
    EXPECT_EQ(out[64 + lane], f(2 * lane) + f(2 * lane + 1)) << lane;
    EXPECT_EQ(out[96 + lane], b(2 * lane) + b(2 * lane + 1)) << lane;
    const int l5 = (lane + 5) % 32, l7 = (lane + 7) % 32;
    EXPECT_NEAR(out[128 + lane], in[lane] + f(2 * lane) * f(2 * l5) + f(2 * lane + 1) * f(2 * l5 + 1), 1e-3) << lane;
    EXPECT_NEAR(out[160 + lane], in[lane] + b(2 * lane) * b(2 * l7) + b(2 * lane + 1) * b(2 * l7 + 1), 1e-3) << lane;
    // Groups of 4 lanes, element-wise.
    for (int e = 0; e < 2; ++e) {
      double hs = 0, bs = 0;
      for (int j = lane & ~3; j < (lane & ~3) + 4; ++j) { hs += f(2 * j + e); bs += b(2 * j + e); }
      EXPECT_EQ((out16[lane] >> (16 * e)) & 0xFFFF, half::doubleToF16(hs)) << lane;
      EXPECT_EQ((out16[32 + lane] >> (16 * e)) & 0xFFFF, half::doubleToBf16(bs)) << lane;
    }
  }
}

TEST(DeviceHeadersGpu, CpAsyncZeroFill) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  std::vector<uint32_t> src(128);
  std::mt19937 rng(3);
  for (auto &x : src) do x = rng(); while (x == 0);
  DeviceBuffer dsrc(*g.api, 512), dout(*g.api, 1536);
  LOWBIT_CU_ASSERT(g.api, dsrc.upload(src.data(), 512));
  LOWBIT_CU_ASSERT(g.api, dout.poison());
  CUdeviceptr p0 = dsrc.get(), p1 = dout.get();
  LOWBIT_CU_ASSERT(g.api, launch(g, "zfill_kernel", 1, 32, {&p0, &p1}));
  const std::vector<uint32_t> out = download<uint32_t>(dout, 384);
  for (int lane = 0; lane < 32; ++lane)
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(out[4 * lane + i], lane % 3 != 0 ? src[4 * lane + i] : 0u) << lane;
      EXPECT_EQ(out[128 + 4 * lane + i], lane % 2 != 0 ? src[4 * lane + i] : 0u) << lane;
      EXPECT_EQ(out[256 + 4 * lane + i], src[4 * lane + i]) << lane; // cp_async16_hint
    }
}

TEST(DeviceHeadersGpu, VectorLoadsCopy) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  std::vector<uint32_t> src(512);
  std::mt19937 rng(4);
  for (auto &x : src) x = rng();
  DeviceBuffer dsrc(*g.api, 2048), dout(*g.api, 2048);
  LOWBIT_CU_ASSERT(g.api, dsrc.upload(src.data(), 2048));
  LOWBIT_CU_ASSERT(g.api, dout.poison());
  CUdeviceptr p0 = dsrc.get(), p1 = dout.get();
  LOWBIT_CU_ASSERT(g.api, launch(g, "vector_load_kernel", 1, 32, {&p0, &p1}));
  const std::vector<uint32_t> out = download<uint32_t>(dout, 512);
  for (int i = 0; i < 512; ++i)
    ASSERT_EQ(out[i], src[i]) << "flavour " << i / 128 << " word " << i % 128;
}

// f16 / bf16 <-> f32 conversions (what the generated epilogues use): exact
// round trips, and the operand order of f32x2_to_f16x2.
TEST(DeviceHeadersGpu, ConversionsRoundTrip) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  const int n = 4096;
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> sdist(-10.0, 2.0); // log2 of the value
  auto value = [&](Fp16Kind kind) {
    return half::fromDouble(kind, ((rng() & 1) ? 1 : -1) * std::exp2(sdist(rng)));
  };
  std::vector<uint32_t> in(2 * n);
  for (int i = 0; i < 2 * n; ++i) {
    const Fp16Kind kind = i < n ? Fp16Kind::F16 : Fp16Kind::BF16;
    in[i] = value(kind) | (uint32_t(value(kind)) << 16);
  }
  DeviceBuffer din(*g.api, in.size() * 4), dout(*g.api, 3 * n * 4);
  ASSERT_TRUE(din.ok() && dout.ok());
  LOWBIT_CU_ASSERT(g.api, din.upload(in.data(), in.size() * 4));
  LOWBIT_CU_ASSERT(g.api, dout.poison());
  CUdeviceptr p0 = din.get(), p1 = dout.get();
  int count = n;
  LOWBIT_CU_ASSERT(g.api, launch(g, "conversion_kernel", n / 128, 128, {&p0, &p1, &count}));
  const std::vector<uint32_t> out = download<uint32_t>(dout, 3 * n);
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(out[0 * n + i], in[i]) << "f16 round trip " << i;
    ASSERT_EQ(out[1 * n + i], in[n + i]) << "bf16 round trip " << i;
    ASSERT_EQ(out[2 * n + i], 0xC0003C00u) << "f32x2_to_f16x2(lo, hi) order";
  }
}

// The block-scale widenings on the device, every code against the formats
// library's decode: the same f32 bits (signed zeros included), NaN for NaN
// codes. ScaleConvertTest checks the same functions compiled for the host,
// where e4m3fn's f16 -> f32 step is a host twin of cvt.f32.f16.
TEST(DeviceHeadersGpu, ScaleBytesWidenExactly) {
  LOWBIT_DEVICE_TEST_SETUP(g);
  DeviceBuffer dout(*g.api, 512 * 4);
  ASSERT_TRUE(dout.ok());
  LOWBIT_CU_ASSERT(g.api, dout.poison());
  CUdeviceptr p0 = dout.get();
  LOWBIT_CU_ASSERT(g.api, launch(g, "scale_kernel", 1, 256, {&p0}));
  const std::vector<float> out = download<float>(dout, 512);
  const formats::DataFormat formats[] = {formats::DataFormat::e8m0(),
                                         formats::DataFormat::e4m3fn()};
  for (int f = 0; f < 2; ++f)
    for (uint32_t code = 0; code < 256; ++code) {
      const double expected = formats[f].decode(code);
      const float got = out[256 * f + code];
      if (std::isnan(expected)) {
        EXPECT_TRUE(std::isnan(got)) << formats[f].name() << " code " << code;
        continue;
      }
      const float wanted = static_cast<float>(expected);
      uint32_t gotBits, wantedBits;
      std::memcpy(&gotBits, &got, 4);
      std::memcpy(&wantedBits, &wanted, 4);
      EXPECT_EQ(gotBits, wantedBits) << formats[f].name() << " code " << code << ": got " << got
                                     << ", want " << wanted;
    }
}

} // namespace
} // namespace lowbit::testing

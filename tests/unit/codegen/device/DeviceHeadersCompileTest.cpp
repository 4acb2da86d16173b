// Compiles small kernels using each codegen/device primitive through lowbit's
// NVRTC wrapper, for every target arch, and checks the PTX carries the
// intended instruction and ptxas reports no spills. No GPU needed.
#include "codegen/device/EmbeddedDeviceHeaders.h"
#include "codegen/nvrtc/NvrtcCompiler.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace lowbit::nvrtc {
namespace {

constexpr Arch kAllArchs[] = {Arch::Sm80, Arch::Sm86, Arch::Sm89, Arch::Sm90a};

// The headers generated kernels include (lb-to-cuda's preamble), which must
// be embedded.
const char *const kExpectedHeaders[] = {"types.cuh",  "arith.cuh",    "lop3.cuh",
                                        "mma.cuh",    "cp_async.cuh", "reduce.cuh",
                                        "vector_load.cuh", "scale.cuh"};

struct PrimitiveCase {
  const char *name;
  int minComputeCapability;
  const char *source;
  std::vector<std::string> ptxMustContain;
};

const PrimitiveCase kCases[] = {
    {"mma_16bit", 80, R"(
#include "lowbit/device/mma.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const u32 *in, float *out, u32 *out16) {
  const u32 *p = in + threadIdx.x * 8;
  FragA_f16 a; FragB_f16 b; FragA_bf16 a2; FragB_bf16 b2;
  for (int i = 0; i < 4; ++i) { a.r[i] = p[i]; a2.r[i] = p[i] ^ 0x40004000u; }
  b.r[0] = p[4]; b.r[1] = p[5]; b2.r[0] = p[6]; b2.r[1] = p[7];
  FragC_f32 c = zero_frag_c_f32();
  mma_m16n8k16(c, a, b);
  mma_m16n8k16(c, a2, b2);
  FragC_f16 h = {{0u, 0u}};
  mma_m16n8k16(h, a, b);
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = c.r[i];
  out16[threadIdx.x * 2] = h.r[0]; out16[threadIdx.x * 2 + 1] = h.r[1];
})",
     {"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      "mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16"}},

    {"mma_s8", 80, R"(
#include "lowbit/device/mma.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const u32 *in, int *out) {
  const u32 *p = in + threadIdx.x * 6;
  FragA_s8 a; FragB_s8 b;
  for (int i = 0; i < 4; ++i) a.r[i] = p[i];
  b.r[0] = p[4]; b.r[1] = p[5];
  FragC_s32 c = zero_frag_c_s32();
  mma_m16n8k32(c, a, b);
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = c.r[i];
})",
     {"mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32"}},

    {"mma_e4m3", 89, R"(
#include "lowbit/device/mma.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const u32 *in, float *out) {
  const u32 *p = in + threadIdx.x * 6;
  FragA_e4m3 a; FragB_e4m3 b;
  for (int i = 0; i < 4; ++i) a.r[i] = p[i];
  b.r[0] = p[4]; b.r[1] = p[5];
  FragC_f32 c = zero_frag_c_f32();
  mma_m16n8k32(c, a, b);
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = c.r[i];
})",
     {"mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32"}},

    {"cp_async", 80, R"(
#include "lowbit/device/cp_async.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const u32 *in, u32 *out, int n) {
  __shared__ __align__(16) u32 tile[4][32 * 4];
  const u64 policy = make_l2_evict_first_policy();
  const u32 *src = in + threadIdx.x * 4;
  cp_async16(shared_addr(&tile[0][threadIdx.x * 4]), src);
  cp_async16_zfill(shared_addr(&tile[1][threadIdx.x * 4]), src, threadIdx.x < n);
  cp_async_commit();
  cp_async16_hint(shared_addr(&tile[2][threadIdx.x * 4]), src, policy);
  cp_async16_zfill_hint(shared_addr(&tile[3][threadIdx.x * 4]), src, threadIdx.x < n, policy);
  cp_async_commit();
  cp_async_wait<1>();
  cp_async_wait_all();
  __syncthreads();
  out[threadIdx.x] = tile[0][threadIdx.x] + tile[1][threadIdx.x] + tile[2][threadIdx.x] +
                     tile[3][threadIdx.x] + (u32)make_l2_evict_last_policy();
})",
     {"cp.async.cg.shared.global [", "cp.async.cg.shared.global.L2::cache_hint",
      "cp.async.commit_group", "cp.async.wait_group 1", "cp.async.wait_all",
      "createpolicy.fractional.L2::evict_first.b64", "createpolicy.fractional.L2::evict_last.b64"}},

    {"reduce", 80, R"(
#include "lowbit/device/reduce.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const float *in, const u32 *in16, float *out, u32 *out16) {
  const float v = in[threadIdx.x];
  out[threadIdx.x] = warp_sum(v) + warp_sum<8>(v) + hsum_f16x2_f32(in16[threadIdx.x]) +
                     hsum_bf16x2_f32(in16[threadIdx.x]) +
                     dot2_f16x2_f32(in16[threadIdx.x], in16[threadIdx.x + 1], v) +
                     dot2_bf16x2_f32(in16[threadIdx.x], in16[threadIdx.x + 2], v);
  out16[threadIdx.x] = warp_sum_f16x2(in16[threadIdx.x]) ^ warp_sum_bf16x2<4>(in16[threadIdx.x]);
})",
     {"shfl.sync.bfly.b32", "add.rn.f16x2", "fma.rn.bf16x2", "cvt.f32.f16"}},

    {"vector_load", 80, R"(
#include "lowbit/device/vector_load.cuh"
#include "lowbit/device/cp_async.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const u32 *in, u32 *out) {
  const u32 *p = in + threadIdx.x * 4;
  const U32x4 a = ld_global_nc_na_v4(p);
  const U32x4 b = ld_global_cs_v4(p + 128);
  const U32x4 c = ld_global_nc_hint_v4(p + 256, make_l2_evict_first_policy());
  const U32x4 d = ld_global_v4(p + 384);
  U32x4 r;
  for (int i = 0; i < 4; ++i) r.r[i] = a.r[i] ^ b.r[i] ^ c.r[i] ^ d.r[i];
  st_global_v4(out + threadIdx.x * 4, r);
})",
     {"ld.global.nc.L1::no_allocate.v4.u32", "ld.global.cs.v4.u32",
      "ld.global.nc.L1::no_allocate.L2::cache_hint.v4.u32", "ld.global.v4.u32",
      "st.global.v4.u32"}},

    // The block-scale conversions on every arch (sm_80 has no e4m3 cvt), as
    // integer ops and, for e4m3fn, the exact f16 -> f32 conversion.
    {"scale_convert", 80, R"(
#include "lowbit/device/types.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(const unsigned char *in, float *out) {
  out[threadIdx.x] = e8m0_to_f32(in[threadIdx.x]) + e4m3fn_to_f32(in[threadIdx.x + 32]);
})",
     {"cvt.f32.f16"}},
};

// A small bound: these kernels do next to nothing, so a big count means a
// primitive went wrong (e.g. an array of fragments in local memory).
constexpr int kMaxRegisters = 96;

class DevicePrimitive : public ::testing::TestWithParam<std::tuple<int, Arch>> {};

TEST_P(DevicePrimitive, CompilesToTheInstructionWithoutSpills) {
  const PrimitiveCase &c = kCases[std::get<0>(GetParam())];
  const Arch arch = std::get<1>(GetParam());
  CompileRequest request;
  request.source = c.source;
  request.sourceName = std::string(c.name) + ".cu";
  request.arch = arch;
  Expected<CompileResult> result = compile(request);
  if (archComputeCapability(arch) < c.minComputeCapability) {
    // Below its arch a primitive must refuse to compile, not degrade silently.
    ASSERT_FALSE(result.ok()) << c.name << " compiled for " << archName(arch);
    EXPECT_NE(result.error().find("static assertion failed"), std::string::npos)
        << result.error();
    return;
  }
  ASSERT_TRUE(result.ok()) << result.error();
  for (const std::string &instruction : c.ptxMustContain)
    EXPECT_NE(result->ptx.find(instruction), std::string::npos)
        << "PTX for " << archName(arch) << " lacks '" << instruction << "'";
  ASSERT_EQ(result->resources.size(), 1u) << result->log;
  const KernelResources &r = result->resources[0];
  EXPECT_EQ(r.kernelName, "k");
  EXPECT_GT(r.registers, 0) << result->log;
  EXPECT_LE(r.registers, kMaxRegisters) << result->log;
  EXPECT_EQ(r.spillStoreBytes, 0) << result->log;
  EXPECT_EQ(r.spillLoadBytes, 0) << result->log;
  EXPECT_EQ(r.stackFrameBytes, 0) << result->log;
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<int, Arch>> &info) {
  return std::string(kCases[std::get<0>(info.param)].name) + "_" +
         archName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(
    AllArchs, DevicePrimitive,
    ::testing::Combine(::testing::Range(0, static_cast<int>(sizeof(kCases) / sizeof(kCases[0]))),
                       ::testing::ValuesIn(kAllArchs)),
    caseName);

// Every header is embedded under lowbit/device/ and compiles on its own (so
// each one includes what it uses), with nothing but NVRTC's built-ins.
TEST(DeviceHeaders, EveryHeaderIsEmbeddedAndSelfContained) {
  std::set<std::string> embedded;
  for (size_t i = 0; i < device::kEmbeddedFileCount; ++i)
    embedded.insert(device::kEmbeddedFiles[i].name);
  for (const char *header : kExpectedHeaders)
    EXPECT_TRUE(embedded.count(std::string("lowbit/device/") + header)) << header;
  for (const std::string &name : embedded) {
    CompileRequest request;
    request.source = "#include \"" + name + "\"\n#include \"" + name +
                     "\"\nextern \"C\" __global__ void k(int *p) { *p = 1; }\n";
    request.arch = Arch::Sm80;
    Expected<CompileResult> result = compile(request);
    EXPECT_TRUE(result.ok()) << name << ": " << (result.ok() ? "" : result.error());
  }
}

// The e4m3 mma on an arch without it is a compile error naming the reason,
// not silently missing code.
TEST(DeviceHeaders, E4m3MmaBeforeSm89IsACompileError) {
  CompileRequest request;
  request.source = R"(
#include "lowbit/device/mma.cuh"
using namespace lowbit::device;
extern "C" __global__ void k(float *out) {
  FragA_e4m3 a = {}; FragB_e4m3 b = {}; FragC_f32 c = zero_frag_c_f32();
  mma_m16n8k32(c, a, b);
  out[0] = c.r[0];
})";
  request.arch = Arch::Sm86;
  Expected<CompileResult> result = compile(request);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().find("needs sm_89"), std::string::npos) << result.error();
}

// Static checks in the headers fire on misuse.
TEST(DeviceHeaders, StaticAssertsCatchMisuse) {
  const char *const misuses[] = {
      "u32 x = lop3<0x100>(1u, 2u, 3u); (void)x;",               // lut is 8 bits
      "cp_async_wait<31>();",                                      // immediate range
      "float v = warp_sum<3>(1.0f); (void)v;",                     // width not 2^k
  };
  for (const char *misuse : misuses) {
    CompileRequest request;
    request.source = std::string(R"(
#include "lowbit/device/lop3.cuh"
#include "lowbit/device/cp_async.cuh"
#include "lowbit/device/reduce.cuh"
using namespace lowbit::device;
extern "C" __global__ void k() { )") + misuse + " }\n";
    Expected<CompileResult> result = compile(request);
    EXPECT_FALSE(result.ok()) << "compiled: " << misuse;
    if (!result.ok()) {
      EXPECT_NE(result.error().find("static assertion failed"), std::string::npos)
          << misuse << "\n" << result.error();
    }
  }
}

} // namespace
} // namespace lowbit::nvrtc

// A measurement probe, not product code: how fast can an M = 1 W4A16 gemv
// decode 4-bit codes, by each candidate decode, on this GPU? It answers the
// question issue 15 asks (a register-resident prmt lookup or a shared-memory
// table for codebooks: measure both) and says what the 88%-of-copy target
// needs from the e2m1 decode. Every variant runs the same gemv skeleton
// (grid-stride over groups of rows, one 16-byte unit of 32 codes per lane
// per row and step, an 8-bit scale per 32 codes as MXFP4 has, f16x2 dots of
// 4 products widened to f32 per unit), so the times differ by the decode
// alone. Each result is checked against a CPU reference.
//
// Decodes of a 32-bit word w holding codes c0..c7 in its nibbles (register
// r of the result holds codes 2r, 2r+1 as f16x2):
//   int4    the magic-number lop3 and one hsub2 (what lowbit's W4 uses)
//   e2m1    shift the code to the half's top, shift the magnitude onto the
//           mantissa, mask, lop3 the sign back (lowbit's derived minifloat
//           decode, raw: the 2^14 lands in the f32 scale)
//   regLut  the 16-entry register-resident prmt lookup lowbit emits for
//           lut<4> codes: 22 instructions for 8 values
//   smemLut a 256-entry table of f16x2 pairs (one per code byte) in shared
//           memory, one copy per bank so that no two lanes conflict (32 KB a
//           block): a shift, a lop3 and one 32-bit load per register
//   smem1   the same table once (1 KB): fewer instructions, bank conflicts
//
// Build and run on the GPU machine:
//   nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a \
//     scripts/probes/decode-probe.cu -o decode-probe && ./decode-probe [N K]
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                           \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                      \
                   cudaGetErrorString(e_));                                                   \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

using u32 = uint32_t;

enum Variant { kInt4, kE2m1, kRegLut, kSmemLut, kSmem1, kVariants };
const char *kNames[] = {"int4", "e2m1", "regLut", "smemLut", "smem1"};

constexpr int kRowsPerWarp = 4;
constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kRowsPerBlock = kRowsPerWarp * kWarps;
constexpr int kCodesPerLaneStep = 32; // one 16-byte load
constexpr int kStepK = 32 * kCodesPerLaneStep;

__device__ __forceinline__ u32 prmt(u32 a, u32 b, u32 s) {
  u32 d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(s));
  return d;
}
template <int kLut> __device__ __forceinline__ u32 lop3(u32 a, u32 b, u32 c) {
  u32 d;
  asm("lop3.b32 %0, %1, %2, %3, %4;" : "=r"(d) : "r"(a), "r"(b), "r"(c), "n"(kLut));
  return d;
}
__device__ __forceinline__ u32 lds(u32 address) {
  u32 v;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(v) : "r"(address));
  return v;
}
__device__ __forceinline__ __half2 h2(u32 v) { return *reinterpret_cast<__half2 *>(&v); }

// The 16-entry table, as bytes: [high byte][entries from 8][word].
struct RegTable {
  u32 t[2][2][2];
};

template <Variant V>
__device__ __forceinline__ void decodeWord(u32 w, u32 out[4], const RegTable &rt, u32 smemBase,
                                           u32 laneOffset) {
  if constexpr (V == kInt4) {
    // Registers take nibbles (r, r + 4) with r < 2 from w and r >= 2 from
    // w >> 8, at offset 0 or 4: 1024 + c (or 1024 + 16 c) then minus 1024
    // (or 1024 / 16): here the offset-4 ones use fma by 1/16, as lowbit does.
    const u32 lo = 0x000F000Fu, hi = 0x00F000F0u, magic = 0x64006400u;
    u32 s = w >> 8;
    __half2 k1024 = h2(0x64006400u), k64 = h2(0x54005400u), k16th = h2(0x2C002C00u);
    u32 r0 = lop3<0xEA>(w, lo, magic), r1 = lop3<0xEA>(w, hi, magic);
    u32 r2 = lop3<0xEA>(s, lo, magic), r3 = lop3<0xEA>(s, hi, magic);
    __half2 v0 = __hsub2(h2(r0), k1024), v2 = __hsub2(h2(r2), k1024);
    __half2 v1 = __hfma2(h2(r1), k16th, __hneg2(k64)), v3 = __hfma2(h2(r3), k16th, __hneg2(k64));
    out[0] = *reinterpret_cast<u32 *>(&v0);
    out[1] = *reinterpret_cast<u32 *>(&v1);
    out[2] = *reinterpret_cast<u32 *>(&v2);
    out[3] = *reinterpret_cast<u32 *>(&v3);
  } else if constexpr (V == kE2m1) {
    // Register j: nibble j of each half to the half's top, magnitude >> 3
    // onto bits 11:9, sign back by lop3; value x 2^14 (folded in the scale).
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      u32 x = w << (12 - 4 * j);
      u32 m = (x >> 3) & 0x0E000E00u;
      out[j] = lop3<0xEA>(x, 0x80008000u, m);
    }
  } else if constexpr (V == kRegLut) {
    u32 shifted = w << 4, highCodes = w >> 16;
    u32 sel[2] = {w & 0x7777u, highCodes & 0x7777u};
    u32 mask[2] = {prmt(w, shifted, 0x9D8C), prmt(w, shifted, 0xBFAE)};
#pragma unroll
    for (int g = 0; g < 2; ++g) {
      u32 bytes[2];
#pragma unroll
      for (int high = 0; high < 2; ++high) {
        u32 below = prmt(rt.t[high][0][0], rt.t[high][0][1], sel[g]);
        u32 above = prmt(rt.t[high][1][0], rt.t[high][1][1], sel[g]);
        bytes[high] = lop3<(0xF0 & 0xAA) | (0xCC & ~0xAA & 0xFF)>(above, below, mask[g]);
      }
      out[2 * g] = prmt(bytes[0], bytes[1], 0x5140);
      out[2 * g + 1] = prmt(bytes[0], bytes[1], 0x7362);
    }
  } else if constexpr (V == kSmemLut) {
    // Entry e, bank copy l, at byte e * 128 + l * 4: register r's address
    // is byte r of w shifted to bits 14:7, or the lane's offset.
    out[0] = lds(smemBase + lop3<0xEA>(w << 7, 0x7F80u, laneOffset));
    out[1] = lds(smemBase + lop3<0xEA>(w >> 1, 0x7F80u, laneOffset));
    out[2] = lds(smemBase + lop3<0xEA>(w >> 9, 0x7F80u, laneOffset));
    out[3] = lds(smemBase + lop3<0xEA>(w >> 17, 0x7F80u, laneOffset));
  } else {
    out[0] = lds(smemBase + ((w << 2) & 0x3FCu));
    out[1] = lds(smemBase + ((w >> 6) & 0x3FCu));
    out[2] = lds(smemBase + ((w >> 14) & 0x3FCu));
    out[3] = lds(smemBase + ((w >> 22) & 0x3FCu));
  }
}

// codes: row-major [N, K/2] bytes (code 2i in the low nibble of byte i);
// scales: [N, K/32] bytes, value 2^(s - 127) x scaleBias; pairTable: 256
// f16x2 (entry b = (value(b & 15), value(b >> 4))).
template <Variant V>
__global__ void __launch_bounds__(kThreads) gemv(const uint8_t *__restrict__ codes,
                                                 const uint8_t *__restrict__ scales,
                                                 const __half *__restrict__ x,
                                                 float *__restrict__ y, int n, int k,
                                                 const u32 *__restrict__ pairTable, RegTable rt,
                                                 float scaleBias) {
  extern __shared__ u32 table[];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if constexpr (V == kSmemLut) {
    for (int i = threadIdx.x; i < 256 * 32; i += kThreads)
      table[i] = pairTable[i >> 5];
    __syncthreads();
  } else if constexpr (V == kSmem1) {
    for (int i = threadIdx.x; i < 256; i += kThreads)
      table[i] = pairTable[i];
    __syncthreads();
  }
  const u32 smemBase = static_cast<u32>(__cvta_generic_to_shared(table));
  const u32 laneOffset = lane * 4;
  const int steps = k / kStepK;
  for (int row0 = (blockIdx.x * kWarps + warp) * kRowsPerWarp; row0 < n;
       row0 += gridDim.x * kRowsPerBlock) {
    float acc[kRowsPerWarp] = {};
    for (int step = 0; step < steps; ++step) {
      const int kLane = step * kStepK + lane * kCodesPerLaneStep;
      uint4 units[kRowsPerWarp];
      uint8_t s[kRowsPerWarp];
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const uint8_t *p = codes + (size_t)(row0 + r) * (k / 2) + kLane / 2;
        asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(units[r].x), "=r"(units[r].y), "=r"(units[r].z), "=r"(units[r].w)
                     : "l"(p));
        s[r] = scales[(size_t)(row0 + r) * (k / 32) + kLane / 32];
      }
      u32 xs[16];
      const uint4 *xp = reinterpret_cast<const uint4 *>(x + kLane);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        uint4 v = xp[i];
        xs[4 * i] = v.x, xs[4 * i + 1] = v.y, xs[4 * i + 2] = v.z, xs[4 * i + 3] = v.w;
      }
      // Register j of int4 and e2m1 holds codes j and j + 4 of its word
      // (lowbit folds that into the weight layout; here the activations are
      // paired to match, once per step for all rows).
      u32 xv[16];
#pragma unroll
      for (int wi = 0; wi < 4; ++wi)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          if constexpr (V == kInt4 || V == kE2m1) {
            __half2 a = h2(xs[4 * wi + j / 2]), b = h2(xs[4 * wi + 2 + j / 2]);
            __half2 t = j & 1 ? __halves2half2(a.y, b.y) : __halves2half2(a.x, b.x);
            xv[4 * wi + j] = *reinterpret_cast<u32 *>(&t);
          } else {
            xv[4 * wi + j] = xs[4 * wi + j];
          }
        }
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const u32 words[4] = {units[r].x, units[r].y, units[r].z, units[r].w};
        float sum = 0.f;
#pragma unroll
        for (int wi = 0; wi < 4; ++wi) {
          u32 d[4];
          decodeWord<V>(words[wi], d, rt, smemBase, laneOffset);
          __half2 p = __float2half2_rn(0.f);
#pragma unroll
          for (int j = 0; j < 4; ++j)
            p = __hfma2(h2(d[j]), h2(xv[4 * wi + j]), p);
          float2 f = __half22float2(p);
          sum += f.x + f.y;
        }
        acc[r] = fmaf(sum, __int_as_float(int(s[r]) << 23), acc[r]);
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      float v = acc[r];
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
      if (lane == 0)
        y[row0 + r] = v * scaleBias;
    }
  }
}

int main(int argc, char **argv) {
  const int n = argc > 2 ? std::atoi(argv[1]) : 28672;
  const int k = argc > 2 ? std::atoi(argv[2]) : 8192;
  if (n % kRowsPerBlock || k % kStepK) {
    std::fprintf(stderr, "N must be a multiple of %d and K of %d\n", kRowsPerBlock, kStepK);
    return 1;
  }
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t codeBytes = size_t(n) * k / 2, scaleBytes = size_t(n) * k / 32;
  const size_t copies = std::max<size_t>(2, (size_t(600) << 20) / (codeBytes + scaleBytes) + 1);
  std::printf("N x K = %d x %d, %zu weight copies (L2 cold), %d SMs\n", n, k, copies, sms);

  // Random codes and scales, the same for every variant; only the value
  // table differs (int4: c; e2m1: OCP e2m1 x 2^14 / 2^14; lut: nf4-like).
  srand(1);
  std::vector<uint8_t> codes(codeBytes), scales(scaleBytes);
  for (auto &c : codes) c = uint8_t(rand());
  for (auto &s : scales) s = uint8_t(120 + rand() % 8);
  std::vector<__half> xh(k);
  std::vector<float> xf(k);
  for (int i = 0; i < k; ++i) {
    xh[i] = __float2half((rand() % 2001 - 1000) / 1000.f);
    xf[i] = __half2float(xh[i]);
  }
  const float e2m1[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};
  const float nf4[16] = {-1.f, -0.6962f, -0.5251f, -0.3949f, -0.2844f, -0.1848f, -0.0911f, 0.f,
                         0.0796f, 0.1609f, 0.2461f, 0.3379f, 0.4407f, 0.5626f, 0.7230f, 1.f};

  uint8_t *dCodes, *dScales;
  __half *dX;
  float *dY;
  u32 *dPairs;
  CHECK(cudaMalloc(&dCodes, codeBytes * copies));
  CHECK(cudaMalloc(&dScales, scaleBytes * copies));
  CHECK(cudaMalloc(&dX, k * sizeof(__half)));
  CHECK(cudaMalloc(&dY, n * sizeof(float)));
  CHECK(cudaMalloc(&dPairs, 256 * sizeof(u32)));
  for (size_t c = 0; c < copies; ++c) {
    CHECK(cudaMemcpy(dCodes + c * codeBytes, codes.data(), codeBytes, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dScales + c * scaleBytes, scales.data(), scaleBytes, cudaMemcpyHostToDevice));
  }
  CHECK(cudaMemcpy(dX, xh.data(), k * sizeof(__half), cudaMemcpyHostToDevice));

  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));

  // Copy bandwidth, read + write, as lowbit bench reports it.
  {
    size_t bytes = size_t(256) << 20;
    void *a, *b;
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(start));
    for (int i = 0; i < 10; ++i)
      CHECK(cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaEventRecord(stop));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    double gbps = 2.0 * bytes * 10 / (ms * 1e-3) / 1e9;
    std::printf("copy bandwidth %.0f GB/s; ideal at it %.1f us\n", gbps,
                (codeBytes + scaleBytes + k * 2.0 + n * 4.0) / gbps / 1e3);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
  }

  std::printf("%-8s %9s %8s %10s\n", "decode", "us", "GB/s", "max rel err");
  for (int v = 0; v < kVariants; ++v) {
    // The value of code c before its scale, as the decode computes it.
    float value[16];
    float scaleBias = 1.f;
    for (int c = 0; c < 16; ++c) {
      if (v == kInt4)
        value[c] = float(c);
      else if (v == kE2m1)
        value[c] = (c & 8 ? -1.f : 1.f) * e2m1[c & 7];
      else
        value[c] = nf4[c];
    }
    if (v == kE2m1)
      scaleBias = 16384.f; // the raw decode is value x 2^-14
    RegTable rt{};
    std::vector<u32> pairs(256);
    for (int c = 0; c < 16; ++c) {
      uint16_t bits = __half_as_ushort(__float2half(value[c]));
      for (int high = 0; high < 2; ++high)
        rt.t[high][c / 8][(c / 4) % 2] |= u32((bits >> (8 * high)) & 0xFF) << (8 * (c % 4));
    }
    for (int b = 0; b < 256; ++b)
      pairs[b] = u32(__half_as_ushort(__float2half(value[b & 15]))) |
                 u32(__half_as_ushort(__float2half(value[b >> 4]))) << 16;
    CHECK(cudaMemcpy(dPairs, pairs.data(), 256 * sizeof(u32), cudaMemcpyHostToDevice));

    auto kernel = v == kInt4    ? gemv<kInt4>
                  : v == kE2m1  ? gemv<kE2m1>
                  : v == kRegLut ? gemv<kRegLut>
                  : v == kSmemLut ? gemv<kSmemLut>
                                  : gemv<kSmem1>;
    int smem = v == kSmemLut ? 256 * 32 * 4 : v == kSmem1 ? 1024 : 0;
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int perSm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&perSm, kernel, kThreads, smem));
    int blocks = std::min(n / kRowsPerBlock, sms * perSm);

    auto launch = [&](size_t copy) {
      kernel<<<blocks, kThreads, smem>>>(dCodes + copy * codeBytes, dScales + copy * scaleBytes,
                                         dX, dY, n, k, dPairs, rt, scaleBias);
    };
    launch(0);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    // Check every row against the CPU, in double.
    std::vector<float> y(n);
    CHECK(cudaMemcpy(y.data(), dY, n * sizeof(float), cudaMemcpyDeviceToHost));
    double worst = 0;
    for (int row = 0; row < n; ++row) {
      double ref = 0, mag = 0;
      for (int g = 0; g < k / 32; ++g) {
        double s = std::ldexp(1.0, int(scales[size_t(row) * (k / 32) + g]) - 127);
        for (int i = 0; i < 32; ++i) {
          int kk = g * 32 + i;
          uint8_t byte = codes[(size_t(row) * k + kk) / 2];
          int c = kk & 1 ? byte >> 4 : byte & 15;
          ref += value[c] * s * xf[kk];
          mag += std::fabs(value[c] * s * xf[kk]);
        }
      }
      worst = std::max(worst, std::fabs(y[row] - ref) / std::max(mag, 1e-30));
    }
    // Timed: every launch on the next copy, median of 7 runs of 20.
    std::vector<float> runs;
    for (int run = 0; run < 7; ++run) {
      CHECK(cudaEventRecord(start));
      for (int i = 0; i < 20; ++i)
        launch(size_t(run * 20 + i + 1) % copies);
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      runs.push_back(ms * 1e3f / 20);
    }
    CHECK(cudaGetLastError());
    std::sort(runs.begin(), runs.end());
    float us = runs[3];
    std::printf("%-8s %9.1f %8.0f %10.2e  (%d blocks, %d/SM)\n", kNames[v], us,
                (codeBytes + scaleBytes) / (us * 1e-6) / 1e9, worst, blocks, perSm);
  }
  return 0;
}

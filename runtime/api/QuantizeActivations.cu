// lowbit_matmul_quantizing's first step: f16 or bf16 x [M, K] to s8 or e4m3
// codes and f32 scales (docs/design/quantized-activations.md), into the
// workspace. With qmax = 127 (s8) or 448 (e4m3's largest finite value):
//
//   scale = absmax / qmax (f32, IEEE division; 1 for an all-zero absmax, so
//           a row of zeros gives zero codes and no NaN)
//   s8:   q = clamp(rint(x / scale), -127, 127) (round to nearest even)
//   e4m3: q = the e4m3 value nearest x / scale, ties to an even code, with
//         magnitudes above 448 (absmax / scale may round just past it) taken
//         to 448: cvt.rn.satfinite.e4m3x2.f32, done in integer arithmetic so
//         that the same PTX runs on sm_80 (the plans that read e4m3 codes
//         run on sm_89 and later, the quantizer on any device).
//
// The arithmetic is exactly this, with no reciprocal or fast math, so that a
// host reference reproduces every code and scale bit for bit
// (tests/gpu/runtime/QuantizeGpuTest.cpp). Non-finite x has unspecified codes.
//
// Per token: one launch of lowbit_quantize_activations, a block per row
// (grid-stride over rows), tensorAbsmax NULL. Per tensor: the host zeroes
// one 32-bit word with an async memset on the stream, lowbit_activation_absmax
// raises it to the bits of max |x| (non-negative floats order like their
// bits), and lowbit_quantize_activations reads it; scales[0] gets the scale.
// `bf16` is 0 for f16 x, 1 for bf16; `e4m3` is 0 for s8 codes, 1 for e4m3. With K a multiple of 8,
// rows move in 16-byte vectors (x and q are 16-byte aligned; each row start then is too).

namespace {

constexpr int kThreads = 256;

__device__ __forceinline__ float toFloat(unsigned bits, int bf16) {
  if (bf16)
    return __uint_as_float(bits << 16);
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(static_cast<unsigned short>(bits)));
  return value;
}

// max |x| over the block, handed to every thread. `shared` holds a float per
// warp; the trailing barrier lets the caller's next row reuse it.
__device__ float blockMax(float value, float *shared) {
  for (int offset = 16; offset > 0; offset /= 2)
    value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (lane == 0)
    shared[warp] = value;
  __syncthreads();
  value = shared[0];
  for (int w = 1; w < kThreads / 32; ++w)
    value = fmaxf(value, shared[w]);
  __syncthreads();
  return value;
}

// This thread's part of max |x| over one row.
__device__ float rowAbsmax(const unsigned short *row, long long k, int bf16) {
  float local = 0.0f;
  if (k % 8 == 0) {
    const uint4 *vectors = reinterpret_cast<const uint4 *>(row);
    for (long long i = threadIdx.x; i < k / 8; i += kThreads) {
      const uint4 v = vectors[i];
      const unsigned words[4] = {v.x, v.y, v.z, v.w};
      for (int j = 0; j < 4; ++j) {
        local = fmaxf(local, fabsf(toFloat(words[j] & 0xffffu, bf16)));
        local = fmaxf(local, fabsf(toFloat(words[j] >> 16, bf16)));
      }
    }
  } else {
    for (long long i = threadIdx.x; i < k; i += kThreads)
      local = fmaxf(local, fabsf(toFloat(row[i], bf16)));
  }
  return local;
}

__device__ __forceinline__ float scaleOf(float absmax, int e4m3) {
  return absmax > 0.0f ? absmax / (e4m3 ? 448.0f : 127.0f) : 1.0f;
}

// e4m3 (OCP E4M3FN: bias 7, no infinities, 0x7f the NaN) of v, nearest with
// ties to even, |v| > 448 saturating. Below 2^-6 the codes are the
// subnormals m · 2^-9, so the code is rint(|v| · 2^9) (exact scaling; 8 is
// 2^-6's code, the first normal). From 2^-6 up, rounding the f32 to 3
// mantissa bits is an integer add on its bits: + 0x7ffff + (bit 20), which
// carries into the exponent when the mantissa rounds up to 2; then the
// exponent rebases from 127 to 7. 448 is 0x7e, so no rounding passes it.
__device__ __forceinline__ unsigned e4m3Of(float v) {
  const unsigned sign = __float_as_uint(v) >> 24 & 0x80u;
  const float a = fminf(fabsf(v), 448.0f);
  if (a < 0.015625f)
    return sign | static_cast<unsigned>(rintf(a * 512.0f));
  unsigned bits = __float_as_uint(a);
  bits = (bits + 0x7ffffu + (bits >> 20 & 1u)) >> 20;
  return sign | (bits - ((127u - 7u) << 3));
}

__device__ __forceinline__ unsigned codeOf(unsigned bits, int bf16, float scale, int e4m3) {
  const float v = toFloat(bits, bf16) / scale;
  if (e4m3)
    return e4m3Of(v);
  const float q = fminf(fmaxf(rintf(v), -127.0f), 127.0f);
  return static_cast<unsigned>(static_cast<int>(q)) & 0xffu;
}

__device__ void quantizeRow(const unsigned short *row, long long k, int bf16, int e4m3, float scale,
                            signed char *out) {
  if (k % 8 == 0) {
    const uint4 *vectors = reinterpret_cast<const uint4 *>(row);
    uint2 *codes = reinterpret_cast<uint2 *>(out);
    for (long long i = threadIdx.x; i < k / 8; i += kThreads) {
      const uint4 v = vectors[i];
      const unsigned words[4] = {v.x, v.y, v.z, v.w};
      unsigned packed[2] = {0u, 0u};
      for (int j = 0; j < 4; ++j) {
        const unsigned lo = codeOf(words[j] & 0xffffu, bf16, scale, e4m3);
        const unsigned hi = codeOf(words[j] >> 16, bf16, scale, e4m3);
        packed[j / 2] |= (lo | hi << 8) << (16 * (j % 2));
      }
      codes[i] = make_uint2(packed[0], packed[1]);
    }
  } else {
    for (long long i = threadIdx.x; i < k; i += kThreads)
      out[i] = static_cast<signed char>(codeOf(row[i], bf16, scale, e4m3));
  }
}

} // namespace

// Per tensor, phase one: *tensorAbsmax = max(*tensorAbsmax, bits of max |x|),
// one atomic per block.
extern "C" __global__ void __launch_bounds__(kThreads)
    lowbit_activation_absmax(const unsigned short *__restrict__ x, int bf16, long long m,
                             long long k, unsigned *__restrict__ tensorAbsmax) {
  __shared__ float shared[kThreads / 32];
  float local = 0.0f;
  for (long long row = blockIdx.x; row < m; row += gridDim.x)
    local = fmaxf(local, rowAbsmax(x + row * k, k, bf16));
  const float absmax = blockMax(local, shared);
  if (threadIdx.x == 0)
    atomicMax(tensorAbsmax, __float_as_uint(absmax));
}

// Codes and scales: per row (tensorAbsmax NULL; scales[M]) or with the
// tensor's absmax of phase one (scales[0]).
extern "C" __global__ void __launch_bounds__(kThreads)
    lowbit_quantize_activations(const unsigned short *__restrict__ x, int bf16, int e4m3,
                                long long m, long long k, signed char *__restrict__ q,
                                float *__restrict__ scales,
                                const unsigned *__restrict__ tensorAbsmax) {
  __shared__ float shared[kThreads / 32];
  if (tensorAbsmax) {
    const float scale = scaleOf(__uint_as_float(*tensorAbsmax), e4m3);
    if (blockIdx.x == 0 && threadIdx.x == 0)
      scales[0] = scale;
    for (long long row = blockIdx.x; row < m; row += gridDim.x)
      quantizeRow(x + row * k, k, bf16, e4m3, scale, q + row * k);
    return;
  }
  for (long long row = blockIdx.x; row < m; row += gridDim.x) {
    const float scale = scaleOf(blockMax(rowAbsmax(x + row * k, k, bf16), shared), e4m3);
    if (threadIdx.x == 0)
      scales[row] = scale;
    quantizeRow(x + row * k, k, bf16, e4m3, scale, q + row * k);
  }
}

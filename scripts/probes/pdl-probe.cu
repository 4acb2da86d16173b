// Probe: how much of an M = 1 weight-streaming kernel's fixed cost
// (launch, DRAM ramp, last-wave tail) programmatic dependent launch (PDL,
// sm_90) hides when calls follow each other in a CUDA graph, as decode layers
// do. A stand-in for a gemv: each block streams 16 rows of 4-bit weights
// (K / 2 bytes each) with 16-byte loads, dots them against x and writes y.
// Variants:
//   plain     ordinary launches;
//   pdl-wait  PDL launch, griddepcontrol.wait before any global access, then
//             launch_dependents (only launch latency can overlap);
//   pdl-early PDL launch, the block's first weight loads issued before the
//             wait (weights are not written by the previous kernel), x and y
//             only after it; launch_dependents at the start.
// Build: nvcc -O3 -gencode=arch=compute_90a,code=sm_90a pdl-probe.cu -o pdl-probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CHECK(call)                                                                  \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #call,           \
                   cudaGetErrorString(e_));                                        \
      std::exit(1);                                                                \
    }                                                                              \
  } while (0)

constexpr int kThreads = 128;

template <int Mode, int kRows, int kUnroll> // Mode: 0 plain, 1 wait first, 2 loads before the wait, 3 empty
__global__ void __launch_bounds__(kThreads) streamWeights(const uint4 *__restrict__ w,
                                                  const uint4 *__restrict__ x,
                                                  float *__restrict__ y, int k) {
  if (Mode == 3)
    return;
  const int wordsPerRow = k / 32; // 16-byte words: 32 four-bit codes each
  const int perBlock = kRows * wordsPerRow;
  const uint4 *base = w + size_t(blockIdx.x) * perBlock;
  if (Mode == 2)
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  uint4 first[kUnroll];
  int i = threadIdx.x;
  if (Mode == 2) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      first[u] = base[i + u * kThreads];
    asm volatile("griddepcontrol.wait;" ::: "memory");
  }
  if (Mode == 1) {
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  }
  if (Mode != 2) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      first[u] = base[i + u * kThreads];
  }
  unsigned acc = 0;
  for (;;) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int word = i + u * kThreads;
      uint4 xv = x[word % wordsPerRow];
      acc += __dp4a(first[u].x, xv.x, 0u) + __dp4a(first[u].y, xv.y, 0u) +
             __dp4a(first[u].z, xv.z, 0u) + __dp4a(first[u].w, xv.w, 0u);
    }
    i += kUnroll * kThreads;
    if (i >= perBlock)
      break;
#pragma unroll
    for (int u = 0; u < kUnroll; ++u)
      first[u] = base[i + u * kThreads];
  }
  __shared__ unsigned sum;
  if (threadIdx.x == 0)
    sum = 0;
  __syncthreads();
  atomicAdd(&sum, acc);
  __syncthreads();
  if (threadIdx.x == 0)
    y[blockIdx.x] = float(sum);
}

template <int kRows, int kUnroll>
static float timeVariant(int mode, int n, int k, const std::vector<uint4 *> &weights,
                         const uint4 *x, float *y, int launches) {
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(n / kRows);
  config.blockDim = dim3(kThreads);
  config.stream = stream;
  config.attrs = (mode == 1 || mode == 2) ? &attribute : nullptr;
  config.numAttrs = (mode == 1 || mode == 2) ? 1 : 0;
  auto kernel = mode == 0   ? streamWeights<0, kRows, kUnroll>
                : mode == 1 ? streamWeights<1, kRows, kUnroll>
                : mode == 2 ? streamWeights<2, kRows, kUnroll>
                            : streamWeights<3, kRows, kUnroll>;
  cudaGraph_t graph;
  CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int l = 0; l < launches; ++l)
    CHECK(cudaLaunchKernelEx(&config, kernel, (const uint4 *)weights[l % weights.size()], x, y, k));
  CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  CHECK(cudaGraphLaunch(exec, stream));
  std::vector<float> us;
  for (int r = 0; r < 9; ++r) {
    CHECK(cudaEventRecord(start, stream));
    CHECK(cudaGraphLaunch(exec, stream));
    CHECK(cudaEventRecord(stop, stream));
    CHECK(cudaEventSynchronize(stop));
    float ms;
    CHECK(cudaEventElapsedTime(&ms, start, stop));
    us.push_back(ms * 1000 / launches);
  }
  std::sort(us.begin(), us.end());
  CHECK(cudaGraphExecDestroy(exec));
  CHECK(cudaGraphDestroy(graph));
  CHECK(cudaStreamDestroy(stream));
  return us[us.size() / 2];
}

template <int kRows, int kUnroll>
static void row(int n, int k, const std::vector<uint4 *> &weights, const uint4 *x, float *y,
                int launches, size_t bytes) {
  if ((kRows * (k / 32)) % (kUnroll * kThreads) != 0)
    return; // the kernel reads whole rounds of kUnroll loads per thread
  float t[4];
  for (int mode = 0; mode < 4; ++mode)
    t[mode] = timeVariant<kRows, kUnroll>(mode, n, k, weights, x, y, launches);
  double ideal = bytes / 3.92e6;
  std::printf("%5dx%-6d rows %2d unroll %2d %7.1f MB  plain %6.2f %3.0f%%  pdl-wait %6.2f %3.0f%%  "
              "pdl-early %6.2f %3.0f%%  empty %5.2f\n",
              n, k, kRows, kUnroll, bytes / 1e6, t[0], 100 * ideal / t[0], t[1],
              100 * ideal / t[1], t[2], 100 * ideal / t[2], t[3]);
}

int main() {
  const int shapes[][2] = {{28672, 8192}, {8192, 8192}, {14336, 4096}, {4096, 14336}, {4096, 4096}};
  uint4 *x;
  float *y;
  CHECK(cudaMalloc(&x, 14336 / 2 * 16));
  CHECK(cudaMemset(x, 1, 14336 / 2 * 16));
  CHECK(cudaMalloc(&y, 28672 * sizeof(float)));
  for (auto &shape : shapes) {
    int n = shape[0], k = shape[1];
    size_t bytes = size_t(n) * k / 2;
    int copies = int((600u << 20) / bytes) + 1;
    std::vector<uint4 *> weights(copies);
    for (auto &p : weights) {
      CHECK(cudaMalloc(&p, bytes));
      CHECK(cudaMemset(p, 0x11, bytes));
    }
    int launches = std::max(copies, 40);
    row<16, 8>(n, k, weights, x, y, launches, bytes);
    row<16, 16>(n, k, weights, x, y, launches, bytes);
    row<8, 8>(n, k, weights, x, y, launches, bytes);
    row<8, 16>(n, k, weights, x, y, launches, bytes);
    row<4, 8>(n, k, weights, x, y, launches, bytes);
    row<4, 16>(n, k, weights, x, y, launches, bytes);
    for (auto p : weights)
      CHECK(cudaFree(p));
  }
  return 0;
}

// The copy kernel that measures the device's memory bandwidth (read + write)
// for `lowbit bench` and `lowbit tune`: the memory roof is a device-to-device
// copy (docs/architecture.md), and a kernel (rather than cuMemcpy) is what
// lowbit's kernels compete with. Compiled to PTX for compute_80 at build time (nvcc -ptx),
// embedded in the binary and JIT-compiled by the driver, so the GPU host
// needs neither nvcc nor NVRTC.
//
// Grid-stride over 16-byte vectors; each thread issues four independent
// loads before its four stores, so enough bytes are in flight to cover the
// memory latency with one wave of blocks.
extern "C" __global__ void __launch_bounds__(256)
    lowbit_copy16(const uint4 *__restrict__ source, uint4 *__restrict__ target,
                  unsigned long long count) {
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (; i + 3 * stride < count; i += 4 * stride) {
    uint4 a = source[i], b = source[i + stride], c = source[i + 2 * stride],
          d = source[i + 3 * stride];
    target[i] = a;
    target[i + stride] = b;
    target[i + 2 * stride] = c;
    target[i + 3 * stride] = d;
  }
  for (; i < count; i += stride)
    target[i] = source[i];
}

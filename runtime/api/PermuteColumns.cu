// The act-order gather a plan runs before its matmul: out[m][j] = x[m][perm[j]]
// (docs/architecture.md, "Importing checkpoints"). f16 and bf16 alike: it
// moves 16-bit patterns. grid = (ceil(K / 256), min(M, 65535)), 256 threads;
// a block walks rows in strides of gridDim.y, so any M is one launch. Each
// thread reads its source column once and reuses it for every row.
extern "C" __global__ void __launch_bounds__(256)
    lowbit_permute_columns(const unsigned short *__restrict__ x, const int *__restrict__ perm,
                           unsigned short *__restrict__ out, long long m, long long k) {
  const long long column = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (column >= k)
    return;
  const long long source = perm[column];
  for (long long row = blockIdx.y; row < m; row += gridDim.y)
    out[row * k + column] = x[row * k + source];
}

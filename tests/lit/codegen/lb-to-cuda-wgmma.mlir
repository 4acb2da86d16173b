// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Two consumer warpgroups: setmaxnreg moves registers from the producer to
// them, and the launch is one 384-thread block an SM.
func.func @wgmma(%x: tensor<?x128xf16>, %w: tensor<512x128xui4>, %s: tensor<512x1xf16>) -> tensor<?x512xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [64, 512, 64], warps = [1, 8], stages = 4, split_k = 1>
      : (tensor<?x128xf16>, tensor<512x128xui4>, tensor<512x1xf16>) -> tensor<?x512xf16>
  return %y : tensor<?x512xf16>
}

// CHECK: extern "C" __global__ void __launch_bounds__(384, 1)
// The ring starts on a 1024-byte boundary, found at run time.
// CHECK: unsigned char *const [[RING:smem[0-9]+]] = lb_dynamic_smem + 0 + ((1024u - ((shared_addr(lb_dynamic_smem) + 0u) & 1023u)) & 1023u);
// CHECK: mbarrier_init(shared_addr(&{{barriers[0-9]+}}[i]), 128u);
// CHECK: fence_mbarrier_init();
// CHECK: __syncthreads();
// CHECK: setmaxnreg_dec<40>();
// Lane q's pair of each row goes to its place in the paired K order, in the
// hardware's 128-byte swizzle (chunk c of row r at c ^ (r mod 8)).
// CHECK: const int byte = 64 * (q >> 4) + 32 * ((b >> 1) & 1) + 16 * (b & 1) + 4 * (b >> 2);
// A full row block: a warp's rows are first + 4 i, so two swizzle residues
// (r mod 8 = first, first + 4) are the only addresses, and the 16 unrolled
// copies add immediates to them.
// CHECK: const int first = ((int)(threadIdx.x % 128) / 32);
// CHECK: if ({{v[0-9]+}} + 64 <= arg4) {
// CHECK: const u16 *source = arg0 + ({{v[0-9]+}} + first) * 128LL + {{v[0-9]+}} + 2 * q;
// CHECK: u32 target[2];
// CHECK: const int row = first + 4 * i;
// CHECK: target[i] = base + (u32)(row * 128 + ((byte >> 4) ^ ((row) & 7)) * 16 + (byte & 15));
// CHECK: for (int i = 0; i < 16; ++i)
// CHECK: cp_async4_zfill(target[i % 2] + (u32)((i / 2) * 1024), source + (long long)i * 512, true);
// The last row block zero-fills the rows past M.
// CHECK: } else {
// CHECK: #pragma unroll 1
// CHECK: for (int row = first; row < 64; row += 4) {
// CHECK: cp_async4_zfill(base + (u32)(row * 128 + ((byte >> 4) ^ ((row) & 7)) * 16 + (byte & 15)), source, inside);
// CHECK: cp_async_mbarrier_arrive_noinc(
// CHECK: setmaxnreg_inc<232>();
// CHECK: mbarrier_wait(
// CHECK: fence_proxy_async_shared();
// CHECK: wgmma_fence();
// Step 0 reads the stage's base, step j 32 j bytes into each row.
// CHECK: wgmma_descriptor_swizzled<128>((shared_addr([[RING]]) + (u32)({{.*}}) * 8192u) + 0u);
// CHECK: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, {{.*}}, %31}, {%32, %33, %34, %35}, %36, accumulate, 1, 1, 0;
// CHECK: wgmma_commit();
// CHECK: wgmma_wait<1>();
// CHECK: + 96u);
// CHECK: wgmma_wait<0>();
// CHECK: mbarrier_arrive(
// The accumulator's 8 slices of m16n8, rows below M only.
// CHECK: for (int i = 0; i < 8; ++i)
// CHECK: if (row + 8 * i + h < arg4) {

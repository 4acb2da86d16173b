// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// The s8 wgmma: x is staged as bytes, each lane copying one 4-byte word of
// a 64-byte row into its slot of the s8 paired order, in the hardware's
// 64-byte swizzle (chunk c of row r at c ^ ((r / 2) mod 4)).
func.func @w8a8(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi8>, %s: tensor<256xf16>) -> tensor<?x256xf32> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi8>, tensor<256xf16>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// The ring starts on a whole 512-byte pattern, found at run time.
// CHECK: unsigned char *const [[RING:smem[0-9]+]] = lb_dynamic_smem + 0 + ((512u - ((shared_addr(lb_dynamic_smem) + 0u) & 511u)) & 511u);
// CHECK: const int q = threadIdx.x & 31, kw = q & 15;
// CHECK: const int byte = 32 * (kw >> 3) + 16 * (kw & 1) + 4 * ((kw >> 1) & 3);
// CHECK: const int first = 2 * ((int)(threadIdx.x % 128) / 32) + (q >> 4);
// Rows first + 8 i share one swizzle residue: one address, immediates.
// CHECK: u32 target[1];
// CHECK: cp_async4_zfill(target[i % 1] + (u32)((i / 1) * 512), source + (long long)i * 8192, true);
// CHECK: for (int row = first; row < 32; row += 8) {
// CHECK: const unsigned char *source = arg0 + (inside ? m : 0LL) * 1024LL + {{.*}} + 4 * kw;
// CHECK: cp_async4_zfill(base + (u32)(row * 64 + ((byte >> 4) ^ ((((row) >> 1) & 1) * 1) ^ ((((row) >> 2) & 1) * 2)) * 16 + (byte & 15)), source, inside);
// s32 accumulators of m64n32: 16 a thread, zeroed.
// CHECK: S32x<16> [[ZERO:v[0-9]+]] = {};
// A k32 step is a stage row's 32 bytes.
// CHECK: wgmma_descriptor_swizzled<64>((shared_addr([[RING]]) + (u32)({{.*}}) * 2048u) + 0u);
// CHECK: wgmma.mma_async.sync.aligned.m64n32k32.s32.s8.s8 {%0, {{.*}}, %15}, {%16, %17, %18, %19}, %20, accumulate;
// CHECK: "+r"(
// CHECK: wgmma_descriptor_swizzled<64>({{.*}} + 32u);
// After the loop, once: the channel scale times the sum, then the token's
// scale (0 past M), and the f32 store.
// CHECK: const float x = m < arg5 ? arg1[m] : 0.f;
// CHECK: .r[4 * i + h] = fmaf({{.*}}, (float){{.*}}.r[4 * i + h], 0.f) * x;
// CHECK: float *out = arg4 + (row + 8 * i + h) * 256LL + col;
// CHECK: out[0] = {{.*}}.r[4 * i + h];

// The fp8 form: x staged as its e4m3 bytes, f32 sums, wgmma's e4m3 k32
// with unscaled operands (no transpose immediate for 8-bit types).
func.func @fp8(%x: tensor<?x1024xf8E4M3FN>, %xs: tensor<1xf32>, %w: tensor<256x1024x!lb.float<e4m3, fn>>, %s: tensor<256xf32>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<1xf32>), %w, %s quant <granularity = channel, scale = f32>
      schedule <family = wgmma, tile = [40, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x1024xf8E4M3FN>, tensor<256x1024x!lb.float<e4m3, fn>>, tensor<256xf32>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// CHECK-LABEL: fp8__wgmma_t40x256x64_w1x4_s2_k1(
// CHECK: const F32x<20> {{v[0-9]+}} = {};
// CHECK: const unsigned char *source = arg0
// CHECK: wgmma.mma_async.sync.aligned.m64n40k32.f32.e4m3.e4m3 {%0, {{.*}}, %19}, {%20, %21, %22, %23}, %24, accumulate, 1, 1;
// CHECK: "+f"(
// One scale for every token.
// CHECK: const float x = m < arg5 ? arg1[0] : 0.f;
// CHECK: out[0] = (u16)f32x2_to_bf16x2(

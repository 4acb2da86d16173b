// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// MXFP4 in the split-K mma: a warp's 256-wide chunk holds eight groups of
// 32, so each of the lane's 8 columns loads its chunk's 8 e8m0 scales as one
// 8-byte run at the chunk's start, and each period widens its byte of it.
// CHECK-LABEL: mx__mma_t8x64x256_w1x1_s1_k4(
// CHECK: u32 [[WORDS:v[0-9]+]][2];
// CHECK-NEXT: {
// CHECK-NEXT: const unsigned char *[[P:p[0-9]+]] = reinterpret_cast<const unsigned char *>(arg2 + ({{v[0-9]+}}) * 64LL + {{v[0-9]+}});
// CHECK-NEXT: { const uint2 w = *reinterpret_cast<const uint2 *>([[P]] + 0); [[WORDS]][0] = w.x; [[WORDS]][1] = w.y; }
// CHECK: #pragma unroll 8
// CHECK: e8m0_to_f32((unsigned char)([[WORDS]][({{v[0-9]+}}) >> 2] >> ((({{v[0-9]+}}) & 3) * 8)));
// CHECK-NOT: e8m0_to_f32(arg2[
func.func @mx(%x: tensor<?x2048xf16>, %w: tensor<256x2048x!lb.float<e2m1, finite>>, %s: tensor<256x64x!lb.float<ue8m0, fn>>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>
      schedule <family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x2048xf16>, tensor<256x2048x!lb.float<e2m1, finite>>, tensor<256x64x!lb.float<ue8m0, fn>>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// f16 scales of group 64 in 128-wide chunks: runs of 2, one 4-byte load,
// each period taking its half.
// CHECK-LABEL: half_words__mma_t8x64x128_w1x1_s1_k4(
// CHECK: u32 [[R:v[0-9]+]][1];
// CHECK: [[R]][0] = *reinterpret_cast<const u32 *>({{p[0-9]+}} + 0);
// CHECK: f16_to_f32((u16)([[R]][({{v[0-9]+}}) >> 1] >> ((({{v[0-9]+}}) & 1) * 16)));
func.func @half_words(%x: tensor<?x1920xf16>, %w: tensor<128x1920xui4>, %s: tensor<128x30xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 64, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1920xf16>, tensor<128x1920xui4>, tensor<128x30xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// f16 scales of group 32 in 256-wide chunks: the lane's 8 runs of 16 bytes
// would hold 32 registers across the chunk (ScaleRuns::kMaxRunWords), so
// each period loads its scales.
// CHECK-LABEL: too_many_words__mma_t8x64x256_w1x1_s1_k4(
// CHECK-NOT: const uint4 w = *reinterpret_cast<const uint4 *>(p
// CHECK: f16_to_f32(arg2[
func.func @too_many_words(%x: tensor<?x2048xf16>, %w: tensor<128x2048xui4>, %s: tensor<128x64xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x2048xf16>, tensor<128x2048xui4>, tensor<128x64xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// e8m0 scales in 96-wide chunks: runs of 3 bytes are no aligned load, so
// each column loads its scale once per group, as without runs.
// CHECK-LABEL: three_bytes__mma_t8x64x96_w1x1_s1_k4(
// CHECK-NOT: const uint2 w
// CHECK: e8m0_to_f32(arg2[
func.func @three_bytes(%x: tensor<?x1920xf16>, %w: tensor<128x1920x!lb.float<e2m1, finite>>, %s: tensor<128x60x!lb.float<ue8m0, fn>>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>
      schedule <family = mma, tile = [8, 64, 96], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1920xf16>, tensor<128x1920x!lb.float<e2m1, finite>>, tensor<128x60x!lb.float<ue8m0, fn>>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

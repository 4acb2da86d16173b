// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// 3, 5 and 6 bits are two planes (layout/WeightLayout.h): a lane loads its
// unit's low words from the low plane (16 bytes for 4-bit low planes) and its
// high words from the high plane, which starts after the N x K low codes
// (256 x 2048 x 4 bits = 262144 bytes), and assembles the unit low words
// first. Each register takes two lop3 ((a & b) ^ c): the low field with the
// magic, then the high parts, shifted to sit right above it.
// CHECK-LABEL: u6__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: U32x6 [[UNIT:v[0-9]+]];
// CHECK: const U32x4 low = ld_global_nc_na_v4(arg1 + (({{.*}} / 1LL) * 64LL + {{.*}} / 32LL) * 16LL);
// CHECK: const U32x2 high = ld_global_nc_na_v2(arg1 + 262144LL + (({{.*}} / 1LL) * 64LL + {{.*}} / 32LL) * 8LL);
// CHECK: [[UNIT]].r[0] = low.r[0]; {{.*}} [[UNIT]].r[4] = high.r[0]; [[UNIT]].r[5] = high.r[1];
// CHECK: const u32 [[HIGH:v[0-9]+]] = {{v[0-9]+}} << {{v[0-9]+}};
// CHECK: const u32 [[LOW:v[0-9]+]] = lop3<0x6a>(
// CHECK: lop3<0x6a>([[HIGH]], {{v[0-9]+}}, [[LOW]]);
// CHECK: sub_f16x2(
// 5 bits, bf16, signed: one high word of 1-bit parts.
// CHECK-LABEL: s5bf__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: U32x5 [[UNIT5:v[0-9]+]];
// CHECK: const U32x1 high = ld_global_nc_na_v1(arg1 + 262144LL + {{.*}} * 4LL);
// CHECK: [[UNIT5]].r[4] = high.r[0];
// The staged mma copies both planes of its tiles into each stage (low plane
// first, 2048 bytes of 128 x 64 3-bit codes), and a 2-bit low plane holds
// both k16 steps' units in one load, each unit followed by its high word.
// CHECK-LABEL: u3mma__mma_t32x128x64_w2x2_s2_k1(
// CHECK: cp_async16(base + (u32)(group * 1024 + chunk * 16), source);
// CHECK: const unsigned char *source = arg1 + 131072LL + {{.*}} * 256LL + chunk * 16;
// CHECK: cp_async16(base + (u32)(2048 + group * 512 + chunk * 16), source);
// CHECK: U32x6 [[PAIR:v[0-9]+]];
// CHECK: const U32x4 low = ld_shared_v4({{.*}} * 3072LL + {{.*}} * 512LL + {{.*}} * 16LL + 16 * (threadIdx.x & 31));
// CHECK: const U32x2 high = *reinterpret_cast<const U32x2 *>({{.*}} * 3072LL + 2048LL + {{.*}} * 256LL + {{.*}} * 8LL + 8 * (threadIdx.x & 31));
// CHECK: [[PAIR]].r[0] = low.r[0]; [[PAIR]].r[1] = low.r[1]; [[PAIR]].r[2] = high.r[0];
// CHECK: [[PAIR]].r[3] = low.r[2]; [[PAIR]].r[4] = low.r[3]; [[PAIR]].r[5] = high.r[1];
func.func @u6(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui6>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui6>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
func.func @s5bf(%x: tensor<?x2048xbf16>, %w: tensor<256x2048xsi5>, %s: tensor<256xbf16>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xbf16>, tensor<256x2048xsi5>, tensor<256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
func.func @u3mma(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui3>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 2, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui3>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

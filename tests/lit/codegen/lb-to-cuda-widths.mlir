// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// A lane's unit of 32 codes is `bits` words: one 8-byte load for 2-bit codes,
// one 4-byte load for 1-bit codes, two 16-byte loads for 8-bit codes; the
// tile of one lane is 4 x bits bytes.
// CHECK-LABEL: u2__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const U32x2 {{v[0-9]+}} = ld_global_nc_na_v2(arg1 + (({{.*}} / 1LL) * 64LL + {{.*}} / 32LL) * 8LL);
// CHECK: lop3<0x6a>(
// CHECK: sub_f16x2(
// CHECK-LABEL: u1__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const U32x1 {{v[0-9]+}} = ld_global_nc_na_v1(arg1 + (({{.*}} / 1LL) * 64LL + {{.*}} / 32LL) * 4LL);
// CHECK-LABEL: s8__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const U32x8 {{v[0-9]+}} = ld_global_nc_na_v8(arg1 + (({{.*}} / 1LL) * 64LL + {{.*}} / 32LL) * 32LL);
// CHECK: = {{v[0-9]+}} ^ {{v[0-9]+}};
// CHECK: prmt({{v[0-9]+}}, {{v[0-9]+}}, 0x4240u);
// CHECK-LABEL: u8bf__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: prmt({{v[0-9]+}}, {{v[0-9]+}}, 0x7440u);
// CHECK: = __uint_as_float(
// CHECK: f32x2_to_bf16x2(
// The split-K mma reads both 2-bit units of a 32-wide block (its two k16
// steps) in one 16-byte load a lane, and decodes the second as unit 1.
// CHECK-LABEL: u2split__mma_t8x64x256_w1x1_s1_k4(
// CHECK: const U32x4 {{v[0-9]+}} = ld_global_nc_na_v4(arg1 + {{.*}} * 512LL + (({{.*}}) % 32LL) * 16LL + 16LL * (threadIdx.x & 31));
// CHECK-NOT: ld_global_nc_na_v2(
func.func @u2(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui2>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui2>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
func.func @u1(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui1>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui1>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
func.func @s8(%x: tensor<?x2048xf16>, %w: tensor<256x2048xsi8>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xsi8>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
func.func @u8bf(%x: tensor<?x2048xbf16>, %w: tensor<256x2048xui8>, %s: tensor<256xbf16>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xbf16>, tensor<256x2048xui8>, tensor<256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}
func.func @u2split(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui2>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x2048xf16>, tensor<256x2048xui2>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
// Ternary codes are !lb.int, 2 bits each: the split-K ring sizes their stages
// by the code's storage width (it once took a non-builtin element for 16 bits
// and overran the kernel's dynamic shared memory).
// CHECK-LABEL: tern__mma_t16x64x128_w1x1_s2_k8(
// The codes ring is 8 warps x 8 slots x 64 x 32 2-bit codes = 32768 bytes,
// then the activations ring.
// CHECK: unsigned char *const {{smem[0-9]+}} = lb_dynamic_smem + 0;
// CHECK-NEXT: unsigned char *const {{smem[0-9]+}} = lb_dynamic_smem + 32768;
// CHECK: const U32x4 {{v[0-9]+}} = ld_shared_v4(
func.func @tern(%x: tensor<?x2048xf16>, %w: tensor<256x2048x!lb.int<bits = 2, offset = -1, ternary = true>>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 8>
      : (tensor<?x2048xf16>, tensor<256x2048x!lb.int<bits = 2, offset = -1, ternary = true>>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

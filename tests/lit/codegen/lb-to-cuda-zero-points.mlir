// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// (q - z)·s: the zero, widened from its bf16 bits, is splatted once and
// subtracted from each of the 16 decoded registers; the dot of the centred
// codes is scaled in f32. No bf16 product of z and s is rounded anywhere.
// CHECK-LABEL: code__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const float [[S:v[0-9]+]] = __uint_as_float((u32)arg2[{{.*}}] << 16);
// CHECK: const float [[Z:v[0-9]+]] = __uint_as_float((u32)arg3[{{.*}}] << 16);
// CHECK: const u32 [[P:v[0-9]+]] = f32x2_to_bf16x2([[Z]], [[Z]]);
// CHECK-COUNT-16: = sub_bf16x2({{v[0-9]+}}, [[P]]);
// CHECK-NOT: [[S]]
// CHECK: const float {{v[0-9]+}} = {{v[0-9]+}} * [[S]];
func.func @code(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// f32 zeros with bf16 values: the remainder after rounding z to bf16 goes too.
// CHECK-LABEL: residual__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const float [[Z:v[0-9]+]] = arg3[{{.*}}];
// CHECK: const u32 [[HI:v[0-9]+]] = f32x2_to_bf16x2([[Z]], [[Z]]);
// CHECK: float [[R:v[0-9]+]];
// CHECK: { float hi; bf16x2_to_f32x2(f32x2_to_bf16x2([[Z]], [[Z]]), [[R]], hi); }
// CHECK: const float [[REM:v[0-9]+]] = [[Z]] - [[R]];
// CHECK: const u32 [[LO:v[0-9]+]] = f32x2_to_bf16x2([[REM]], [[REM]]);
// CHECK: const u32 [[C:v[0-9]+]] = sub_bf16x2({{v[0-9]+}}, [[HI]]);
// CHECK: sub_bf16x2([[C]], [[LO]]);
func.func @residual(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xf32>, %z: tensor<64xf32>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xf32>) quant <granularity = channel, scale = f32, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xf32>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// q·s - z in gemv: one fma per register of the whole unit (a register
// array, not a fragment struct), then the dot.
// CHECK-LABEL: value__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: u32 [[W:v[0-9]+]][16];
// CHECK: [[W]][0] = fma_bf16x2({{v[0-9]+}}[0], {{s[0-9]+}}, {{b[0-9]+}});
// CHECK: [[W]][15] = fma_bf16x2({{v[0-9]+}}[15], {{s[0-9]+}}, {{b[0-9]+}});
// CHECK: mul_bf16x2([[W]][0],
func.func @value(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_value>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// Zero codes are packed densely in the scales' order (core::packZeroCodes):
// a uint4 code is a nibble, the even index low; a row of an even number of
// codes starts on a byte, so (n, g) is nibble g mod 2 of byte n (G / 2) +
// g / 2; an odd row length takes the flat index, in 32 bits. uint8: a byte,
// indexed as the scales are.
// CHECK-LABEL: nibbles__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-SAME: const unsigned char *__restrict__ arg3
// CHECK: const float [[Z:v[0-9]+]] = (float)((arg3[({{v[0-9]+}}) * 4LL + ([[G:v[0-9]+]] >> 1)] >> (([[G]] & 1) * 4)) & 15);
// CHECK: f32x2_to_bf16x2([[Z]], [[Z]]);
// CHECK-LABEL: odd__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const u32 [[I:i[0-9]+]] = (u32)(({{v[0-9]+}}) * 3LL + {{v[0-9]+}});
// CHECK: = (float)((arg3[[[I]] >> 1] >> (([[I]] & 1) * 4)) & 15);
// CHECK-LABEL: bytes__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: const float [[Y:v[0-9]+]] = (float)arg3[{{v[0-9]+}}];
// CHECK: f32x2_to_f16x2([[Y]], [[Y]]);
func.func @nibbles(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64x8xbf16>, %z: tensor<64x8xui4>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64x8xui4>) quant <granularity = group, group_size = 128, scale = bf16, zero = quantized>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64x8xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @odd(%x: tensor<?x1536xbf16>, %w: tensor<64x1536xui4>, %s: tensor<64x3xbf16>, %z: tensor<64x3xui4>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64x3xui4>) quant <granularity = group, group_size = 512, scale = bf16, zero = quantized>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1536xbf16>, tensor<64x1536xui4>, tensor<64x3xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @bytes(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui8>, %s: tensor<64xf16>, %z: tensor<64xui8>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xui8>) quant <granularity = channel, scale = f16, zero = quantized>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui8>, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

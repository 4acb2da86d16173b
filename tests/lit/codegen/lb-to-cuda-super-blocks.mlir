// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Two-level scales: si8 codes widened through signed char, times the f16
// step read after the codes. 64 x 16 codes are 1024 bytes, already a
// multiple of 16, so the steps start there; a row has 1024 / 256 = 4.
// CHECK-LABEL: sym__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK-SAME: const unsigned char *__restrict__ arg2
// CHECK: const float [[C:v[0-9]+]] = (float)(signed char)arg2[
// CHECK: const float [[D:v[0-9]+]] = f16_to_f32(*reinterpret_cast<const u16 *>(reinterpret_cast<const unsigned char *>(arg2) + 1024LL + ({{.*}}) * 4LL + {{.*}}) * 2));
// CHECK: = [[C]] * [[D]];

// 5 x 2 ui8 codes round up to 16 bytes; the mins' steps are read from the
// zeros buffer the same way, and bf16 steps widen by a shift.
// CHECK-LABEL: odd__gemv_t1x1x1024_w1x1_s1_k1(
// CHECK: (float)arg2[
// CHECK: __uint_as_float((u32)*reinterpret_cast<const u16 *>(reinterpret_cast<const unsigned char *>(arg2) + 16LL
// CHECK: (float)arg3[
// CHECK: __uint_as_float((u32)*reinterpret_cast<const u16 *>(reinterpret_cast<const unsigned char *>(arg3) + 16LL
// With mins, q·s − z is computed in f32 and rounded once (lb.scale_fragment wide):
// CHECK: const float [[LO:w[0-9]+]] = __uint_as_float({{.*}} << 16), [[HI:w[0-9]+]] = __uint_as_float({{.*}} & 0xFFFF0000u);
// CHECK-NEXT: = f32x2_to_bf16x2(fmaf([[LO]], {{v[0-9]+}}, {{v[0-9]+}}), fmaf([[HI]],
func.func @sym(%x: tensor<?x1024xf16>, %w: tensor<64x1024xsi4>, %s: tensor<64x16xsi8>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 64, scale = si8, super_block = 256, super_step = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xsi4>, tensor<64x16xsi8>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}
func.func @odd(%x: tensor<?x1024xbf16>, %w: tensor<5x1024xui4>, %s: tensor<5x2xui8>, %z: tensor<5x2xui8>) -> tensor<?x5xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<5x2xui8>) quant <granularity = group, group_size = 512, scale = ui8, zero = sub_value, super_block = 1024, super_step = bf16>
      schedule <family = gemv, tile = [1, 1, 1024], warps = [1, 1], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<5x1024xui4>, tensor<5x2xui8>) -> tensor<?x5xbf16>
  return %y : tensor<?x5xbf16>
}

// gemv_tiled, groups of 16 in 128-wide chunks: each column's 8 si8 codes of
// a chunk are one 8-byte run and its f16 step one load, at the chunk's
// start; a lane picks its half block's code from the run (the stored
// bytes of both halves selected, then widened once, signed), times the
// step. A column's registers of both k16 steps join into one chain of four
// packed products.
// CHECK-LABEL: tiled_runs__gemv_tiled_t1x64x128_w1x1_s1_k2(
// CHECK: u32 [[CODES:v[0-9]+]][2];
// CHECK: { const uint2 w = *reinterpret_cast<const uint2 *>({{p[0-9]+}} + 0); [[CODES]][0] = w.x; [[CODES]][1] = w.y; }
// CHECK: const float [[STEP:v[0-9]+]] = f16_to_f32(*reinterpret_cast<const u16 *>(reinterpret_cast<const unsigned char *>(arg2) + 1024LL
// CHECK: const u32 [[BITS:bits[0-9]+]] = {{v[0-9]+}} ? (u32)((unsigned char)([[CODES]][(({{v[0-9]+}}) + 1) >> 2] {{.*}} : (u32)((unsigned char)([[CODES]][
// CHECK-NEXT: const float [[PICK:v[0-9]+]] = (float)(signed char)((unsigned char)[[BITS]]);
// CHECK-NEXT: = [[PICK]] * [[STEP]];
// CHECK: [[COLUMN:v[0-9]+]].r[0] = [[A:v[0-9]+]].r[0];
// CHECK-NEXT: [[COLUMN]].r[1] = [[A]].r[1];
// CHECK-NEXT: [[COLUMN]].r[2] = [[B:v[0-9]+]].r[0];
// CHECK-NEXT: [[COLUMN]].r[3] = [[B]].r[1];
// CHECK: u32 h = mul_f16x2([[COLUMN]].r[0],
// CHECK-NEXT: h = fma_f16x2([[COLUMN]].r[1],
// CHECK-NEXT: h = fma_f16x2([[COLUMN]].r[2],
// CHECK-NEXT: h = fma_f16x2([[COLUMN]].r[3],
func.func @tiled_runs(%x: tensor<?x256xf16>, %w: tensor<64x256xsi4>, %s: tensor<64x16xsi8>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 16, scale = si8, super_block = 256, super_step = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 2>
      : (tensor<?x256xf16>, tensor<64x256xsi4>, tensor<64x16xsi8>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

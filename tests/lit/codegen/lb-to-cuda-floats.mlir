// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// e2m1 in the split-K mma, which scales its f32 sums: the raw decode, shifts
// left and right, the magnitude mask and lop3 (a & b) | c for the sign, and
// no fma: 2^14 (f32 0x46800000 = 1182793728) rides in each loaded scale.
// CHECK-LABEL: e2m1__mma_t8x64x128_w1x1_s2_k4(
// CHECK-DAG: const u32 [[NEGZERO:v[0-9]+]] = 2147516416u;
// CHECK-DAG: const u32 [[MAGNITUDE:v[0-9]+]] = 234884608u;
// CHECK-DAG: const float [[TWO14:v[0-9]+]] = __uint_as_float(1182793728u);
// CHECK: = f16_to_f32((u16)(
// CHECK-NEXT: = {{v[0-9]+}} * [[TWO14]];
// CHECK: const u32 [[X:v[0-9]+]] = {{v[0-9]+}} << {{v[0-9]+}};
// CHECK-NEXT: const u32 [[Y:v[0-9]+]] = [[X]] >> {{v[0-9]+}};
// CHECK-NEXT: const u32 [[M:v[0-9]+]] = [[Y]] & [[MAGNITUDE]];
// CHECK-NEXT: lop3<0xea>([[X]], [[NEGZERO]], [[M]]);
// CHECK-NOT: fma_f16x2(
// CHECK-LABEL: e2m1gemv__gemv_t1x4x1024_w1x4_s1_k1(
// The gemv family scales in f16: the fma by 2^14 (0x74007400 = 1946186752)
// with -0 as its addend finishes each register.
// CHECK-DAG: const u32 [[GTWO14:v[0-9]+]] = 1946186752u;
// CHECK-DAG: const u32 [[GNEGZERO:v[0-9]+]] = 2147516416u;
// CHECK: lop3<0xea>(
// CHECK-NEXT: fma_f16x2({{v[0-9]+}}, [[GTWO14]], [[GNEGZERO]]);
func.func @e2m1(%x: tensor<?x2048xf16>, %w: tensor<256x2048x!lb.float<e2m1, finite>>, %s: tensor<256x64xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 2, split_k = 4>
      : (tensor<?x2048xf16>, tensor<256x2048x!lb.float<e2m1, finite>>, tensor<256x64xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

func.func @e2m1gemv(%x: tensor<?x2048xf16>, %w: tensor<256x2048x!lb.float<e2m1, finite>>, %s: tensor<256x64xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048x!lb.float<e2m1, finite>>, tensor<256x64xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// A table lookup (bf16, in gemv_tiled): prmt's sign mode for the masks,
// prmt with the codes as its selector over constant words of the table's
// bytes, the lop3 select (0xe4), and the pairing of low and high bytes.
// CHECK-LABEL: nf4__gemv_tiled_t2x64x128_w1x1_s2_k8(
// CHECK: prmt({{v[0-9]+}}, {{v[0-9]+}}, 0x9d8cu);
// CHECK: prmt({{v[0-9]+}}, {{v[0-9]+}}, {{v[0-9]+}});
// CHECK: lop3<0xe4>(
// CHECK: prmt({{v[0-9]+}}, {{v[0-9]+}}, 0x5140u);
func.func @nf4(%x: tensor<?x2048xbf16>, %w: tensor<256x2048x!lb.lut<4, [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]>>, %s: tensor<256x32xf32>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 64, scale = f32>
      schedule <family = gemv_tiled, tile = [2, 64, 128], warps = [1, 1], stages = 2, split_k = 8>
      : (tensor<?x2048xbf16>, tensor<256x2048x!lb.lut<4, [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]>>, tensor<256x32xf32>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

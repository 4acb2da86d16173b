// RUN: lowbit-opt %s --lb-tile --split-input-file | FileCheck %s

// Zero points as every family applies them. (q - z)·s: the decode subtracts
// z from the codes (lb.decode ... minus), exactly for integer zeros, and only
// then is anything scaled, with a plain multiply. The earlier q·s + (-z·s)
// rounded -z·s to bf16, an error shared by every K of a column that grew with
// Σx and failed bf16 per-channel kernels (1-1.7e-2 against 1e-2 on the H200).
// No family sums x for a zero any more (no lb.sum), and no scale_fragment
// carries a bias for (q - z)·s.

// gemv: one zero per lane unit, subtracted once for every row of the block.
// CHECK-LABEL: func.func @gemv__gemv_t2x4x1024_w1x4_s1_k1(
// CHECK: %[[S:.*]] = lb.load_scalar %arg2
// CHECK: %[[Z:.*]] = lb.load_scalar %arg3
// CHECK: %[[V:.*]] = lb.decode %{{.*}} minus(%[[Z]]) as ui4
// CHECK-NOT: residual
// CHECK: %[[D:.*]] = lb.dot %[[V]]
// CHECK: arith.mulf %[[D]], %[[S]]
// CHECK: lb.dot %[[V]]
// CHECK-NOT: lb.sum {{%}}
// CHECK: return
func.func @gemv(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_code>
      schedule <family = gemv, tile = [2, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// gemv_tiled: the unit's 8 subtiles have 8 columns, so 8 zeros; the dots of
// the centred codes are scaled once each.
// CHECK-LABEL: func.func @tiled__gemv_tiled_t1x64x128_w1x1_s2_k4(
// CHECK: lb.decode %{{.*}} minus(%{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}, %{{[^,]*}}) as ui4
// CHECK: lb.dot
// CHECK: arith.mulf
// CHECK-NOT: lb.sum {{%}}
// CHECK: return
func.func @tiled(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64x8xbf16>, %z: tensor<64x8xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64x8xbf16>) quant <granularity = group, group_size = 128, scale = bf16, zero = sub_code>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 2, split_k = 4>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64x8xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Split-K mma: per subtile, the scale of the centred codes, no bias.
// CHECK-LABEL: func.func @split__mma_t16x64x128_w1x1_s1_k2(
// CHECK: %[[S0:.*]] = lb.load_scalar %arg2
// CHECK: %[[Z0:.*]] = lb.load_scalar %arg3
// CHECK: lb.decode %{{.*}} minus(%[[Z0]], {{.*}}) as ui4
// CHECK: lb.scale_fragment %{{.*}}, %[[S0]] : vector<4xbf16>
// CHECK-NOT: lb.scale_fragment %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: return
func.func @split(%x: tensor<?x256xbf16>, %w: tensor<128x256xui4>, %s: tensor<128xbf16>, %z: tensor<128xbf16>) -> tensor<?x128xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128xbf16>) quant <granularity = channel, scale = bf16, zero = sub_code>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 2>
      : (tensor<?x256xbf16>, tensor<128x256xui4>, tensor<128xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// -----

// The staged mma: the same, once per K tile.
// CHECK-LABEL: func.func @staged__mma_t64x128x64_w2x2_s3_k1(
// CHECK: lb.decode %{{.*}} minus(%{{.*}}) as ui4
// CHECK: lb.scale_fragment %{{.*}}, %{{[^,]*}} : vector<4xbf16>
// CHECK-NOT: lb.scale_fragment %{{.*}}, %{{.*}}, %{{.*}} :
// CHECK: return
func.func @staged(%x: tensor<?x256xbf16>, %w: tensor<256x256xui4>, %s: tensor<256x2xbf16>, %z: tensor<256x2xbf16>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<256x2xbf16>) quant <granularity = group, group_size = 128, scale = bf16, zero = sub_code>
      schedule <family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x256xbf16>, tensor<256x256xui4>, tensor<256x2xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// -----

// f16 zeros with bf16 activations are not exact in bf16: the decode also
// subtracts what rounding them left (residual). bf16 zeros with f16
// activations are (above: none).
// CHECK-LABEL: func.func @residual__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: lb.decode %{{.*}} minus(%{{.*}}) residual as ui4
// CHECK-LABEL: func.func @exact__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: lb.decode %{{.*}} minus(%{{.*}}) as ui4
func.func @residual(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xf16>, %z: tensor<64xf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xf16>) quant <granularity = channel, scale = f16, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}
func.func @exact(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64xbf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

// q·s - z: one fma per decoded register (the bias is -z), in the gemv
// families before the dot, which then needs no scale and no Σx.
// CHECK-LABEL: func.func @value__gemv_t1x4x1024_w1x4_s1_k1(
// CHECK: %[[S:.*]] = lb.load_scalar %arg2
// CHECK: %[[Z:.*]] = lb.load_scalar %arg3
// CHECK: %[[B:.*]] = arith.negf %[[Z]]
// CHECK: %[[V:.*]] = lb.decode %{{.*}} as ui4
// CHECK: %[[W:.*]] = lb.scale_fragment %[[V]], %[[S]], %[[B]] : vector<32xbf16>
// CHECK: lb.dot %[[W]]
// CHECK-NOT: lb.sum {{%}}
// CHECK-NOT: arith.mulf
// CHECK: return
func.func @value(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_value>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// Quantized zero codes (GPTQ / AWQ): the zeros operand holds uint4 codes,
// loaded per subtile like the scales and subtracted in the decode, exactly
// (integers), so no residual.
// CHECK-LABEL: func.func @codes__mma_t16x64x128_w1x1_s1_k2(
// CHECK: %[[S0:.*]] = lb.load_scalar %arg2
// CHECK: %[[Z0:.*]] = lb.load_scalar %arg3{{.*}} : memref<128x2xui4>
// CHECK: lb.decode %{{.*}} minus(%[[Z0]], {{.*}}) as ui4
// CHECK-NOT: residual
// CHECK: lb.scale_fragment %{{.*}}, %[[S0]] : vector<4xbf16>
func.func @codes(%x: tensor<?x256xbf16>, %w: tensor<128x256xui4>, %s: tensor<128x2xbf16>, %z: tensor<128x2xui4>) -> tensor<?x128xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<128x2xui4>) quant <granularity = group, group_size = 128, scale = bf16, zero = quantized>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 2>
      : (tensor<?x256xbf16>, tensor<128x256xui4>, tensor<128x2xbf16>) -> tensor<?x128xbf16>
  return %y : tensor<?x128xbf16>
}

// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode | FileCheck %s

// f16: per word one shift, four lop3 with lut 0x6A ((a & b) ^ c) against
// masks 0x000F000F (983055) and 0x00F000F0 (15728880) and the magic 0x64006400
// (1677747200), then sub / fma to remove the magic. No per-element shifts.
// CHECK-LABEL: func.func @f16__gemv
// CHECK-NOT: lb.decode
// CHECK: %[[W0:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[HI:.*]] = arith.shrui %[[W0]]
// CHECK: lb.lop3 %[[W0]], %{{.*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith sub f16
// CHECK: lb.lop3 %[[W0]], %{{.*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith fma f16
// CHECK: lb.lop3 %[[HI]], %{{.*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith sub f16
// CHECK: lb.lop3 %[[HI]], %{{.*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith fma f16
// CHECK: lb.extract_word %{{.*}}[3]
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @f16(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// bf16 with signed codes: each register from the word shifted by 4 j, one
// fma.rn.bf16x2 each (legal on sm_80); the two's-complement flip rides in the
// lop3 constant (0x43004300 | 0x00080008 = 1124614152).
// CHECK-LABEL: func.func @bf16__gemv
// CHECK: lb.lop3 %{{.*}}, %{{.*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith fma bf16
// CHECK-NOT: lb.pair_arith sub bf16
func.func @bf16(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xsi4>, %s: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xsi4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// RUN: lowbit-opt %s --lb-tile --split-input-file --verify-diagnostics | FileCheck %s

// dequant: the dense path's first half writes W[N, K] in the activation
// type. K = 1024 is 4 chunks of 256 for split_k = 2 warps, so the grid's z
// has 2 blocks (no cluster) and slice warp + 2 z takes one chunk. Per
// 32-wide block a lane decodes both k16 steps, scales each subtile's
// registers and writes the subtile's 8 values of its column at
// k0 + 8 (lane mod 4): 8 stores, one per subtile.
// CHECK-LABEL: func.func @dense__dequant_t1x64x256_w1x1_s1_k2(
// CHECK-SAME: memref<128x1024xf16>, %{{.*}}: index)
// CHECK-SAME: lb.block_threads = 64 : i64
// CHECK-SAME: lb.grid_tile = array<i64: 64, 16777216, 2>
// CHECK: %[[RANK:.*]] = lb.thread_coord block_z
// CHECK: %[[SPAN:.*]] = arith.muli %[[RANK]], %c2
// CHECK: %[[SLICE:.*]] = arith.addi %{{.*}}, %[[SPAN]]
// CHECK: %[[FIRST:.*]] = arith.muli %[[SLICE]], %c256
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %c1024{{.*}} step %c1024
// CHECK: lb.decode
// CHECK: lb.decode
// CHECK: lb.scale_fragment
// CHECK-COUNT-8: lb.store_dense_weights %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] : vector<4xf16>, memref<128x1024xf16>
// CHECK-NOT: lb.store_output
func.func @dense(%x: tensor<?x1024xf16>, %w: tensor<128x1024xui4>, %s: tensor<128x8xf16>) -> tensor<?x128xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = dequant, tile = [1, 64, 256], warps = [1, 1], stages = 1, split_k = 2>
      : (tensor<?x1024xf16>, tensor<128x1024xui4>, tensor<128x8xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

// -----

// sub_value zero points: the scale's fma gets -z as its addend, as in
// gemv_tiled, so the dense weights are q·s - z with one rounding.
// CHECK-LABEL: func.func @dense_sub_value__dequant_t1x64x128_w1x1_s1_k4(
// CHECK-SAME: memref<64x512xbf16>, %{{.*}}: index)
// CHECK: lb.scale_fragment %{{.*}}, %{{.*}}, %{{.*}} : vector<4xbf16>
// CHECK: lb.store_dense_weights
func.func @dense_sub_value(%x: tensor<?x512xbf16>, %w: tensor<64x512xui4>, %s: tensor<64x4xbf16>, %z: tensor<64x4xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64x4xbf16>) quant <granularity = group, group_size = 128, scale = bf16, zero = sub_value>
      schedule <family = dequant, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x512xbf16>, tensor<64x512xui4>, tensor<64x4xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// The rules every family shares reject what the layout cannot serve.
func.func @dense_bad_tile(%x: tensor<?x1024xf16>, %w: tensor<128x1024xui4>, %s: tensor<128x8xf16>) -> tensor<?x128xf16> {
  // expected-error @+2 {{a 'dequant' schedule writes 64 x 32 weight tiles}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = dequant, tile = [1, 128, 256], warps = [1, 1], stages = 1, split_k = 2>
      : (tensor<?x1024xf16>, tensor<128x1024xui4>, tensor<128x8xf16>) -> tensor<?x128xf16>
  return %y : tensor<?x128xf16>
}

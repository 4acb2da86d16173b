// RUN: lowbit-opt %s | FileCheck %s
// RUN: lowbit-opt %s | lowbit-opt | FileCheck %s

// CHECK-LABEL: func.func @w4a16_group
// CHECK: lb.qmatmul %{{.*}}, %{{.*}}, %{{.*}} quant <granularity = group, group_size = 128, scale = f16> schedule <family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 4, split_k = 1>
// CHECK-SAME: : (tensor<?x4096xf16>, tensor<11008x4096xui4>, tensor<11008x32xf16>) -> tensor<?x11008xf16>
func.func @w4a16_group(%x: tensor<?x4096xf16>, %w: tensor<11008x4096xui4>,
                       %s: tensor<11008x32xf16>) -> tensor<?x11008xf16> {
  %y = lb.qmatmul %x, %w, %s
      quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 4, split_k = 1>
      : (tensor<?x4096xf16>, tensor<11008x4096xui4>, tensor<11008x32xf16>) -> tensor<?x11008xf16>
  return %y : tensor<?x11008xf16>
}

// CHECK-LABEL: func.func @w4a16_zeros
// CHECK: lb.qmatmul {{.*}} zeros(%{{.*}} : tensor<256x4xbf16>) quant <granularity = group, group_size = 64, scale = bf16, zero = sub_code>
func.func @w4a16_zeros(%x: tensor<?x256xbf16>, %w: tensor<256x256xui4>,
                       %s: tensor<256x4xbf16>, %z: tensor<256x4xbf16>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<256x4xbf16>)
      quant <granularity = group, group_size = 64, scale = bf16, zero = sub_code>
      : (tensor<?x256xbf16>, tensor<256x256xui4>, tensor<256x4xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// CHECK-LABEL: func.func @mxfp4
// CHECK: tensor<128x256x!lb.float<e2m1, finite>>
func.func @mxfp4(%x: tensor<16x256xbf16>, %w: tensor<128x256x!lb.float<e2m1, finite>>,
                 %s: tensor<128x8x!lb.float<ue8m0, fn>>) -> tensor<16x128xbf16> {
  %y = lb.qmatmul %x, %w, %s
      quant <granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>>
      : (tensor<16x256xbf16>, tensor<128x256x!lb.float<e2m1, finite>>, tensor<128x8x!lb.float<ue8m0, fn>>) -> tensor<16x128xbf16>
  return %y : tensor<16x128xbf16>
}

// CHECK-LABEL: func.func @codebook
// CHECK: table(%{{.*}} : tensor<16xf16>)
func.func @codebook(%x: tensor<?x64xf16>, %w: tensor<32x64x!lb.lut<4>>,
                    %s: tensor<32xf16>, %t: tensor<16xf16>) -> tensor<?x32xf16> {
  %y = lb.qmatmul %x, %w, %s table(%t : tensor<16xf16>)
      quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64x!lb.lut<4>>, tensor<32xf16>) -> tensor<?x32xf16>
  return %y : tensor<?x32xf16>
}

// CHECK-LABEL: func.func @ternary_per_tensor
// CHECK: tensor<64x64xsi2>
func.func @ternary_per_tensor(%x: tensor<?x64xf16>, %w: tensor<64x64xsi2>,
                              %s: tensor<1xf32>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = tensor, scale = f32>
      : (tensor<?x64xf16>, tensor<64x64xsi2>, tensor<1xf32>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

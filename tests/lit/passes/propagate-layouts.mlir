// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts | FileCheck %s

// gemv_row: a lane's 32 codes of one row are one 16-byte tile [1, 32]; the
// decode's interleave (field i holds element 2 (i mod 4) + i / 4) is folded
// in: k bit 0 -> offset 4, k bit 1 -> offset 1, k bit 2 -> offset 2.
// CHECK-LABEL: func.func @w4__gemv
// CHECK-SAME: lb.weight_layout = "lbwl1;bits=4;tile=1x32;basis=4,1,2,8,16"
// CHECK: lb.load_codes {{.*}} gemv_row tile [1, 32]
func.func @w4(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// mma_b: the layout folds the m16n8k16 B fragment (lane = 4 groupID + tig;
// k = 2 tig + half + 8 reg; n = groupID + 8 subtile) with the interleave into
// a 64 x 16 tile per warp-wide load; the staging copies get the same tile.
// CHECK-LABEL: func.func @m__mma
// CHECK-SAME: lb.weight_layout = "lbwl1;bits=4;tile=64x16;basis=128,256,512,2,8,16,4,32,64,1"
// CHECK: lb.copy_codes_async {{.*}} tile [64, 16]
// CHECK: lb.load_codes {{.*}} mma_b tile [64, 16]
func.func @m(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

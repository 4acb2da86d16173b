// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts | FileCheck %s

// gemv_row: a lane's 32 codes of one row are one 16-byte tile [1, 32]; the
// f16 decode's interleave (field i + 2 w + 4 h, offset i of window w of half
// h, holds element 4 i + 2 w + h) is folded in: k bit 0 -> offset 4, k bit
// 1 -> offset 2, k bit 2 -> offset 1.
// CHECK-LABEL: func.func @w4__gemv
// CHECK-SAME: lb.weight_layout = "lbwl1;bits=4;tile=1x32;basis=4,2,1,8,16"
// CHECK: lb.load_codes {{.*}} gemv_row tile [1, 32]
func.func @w4(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui4>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui4>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// mma_b_paired: the layout folds the m16n8k16 B fragment (lane = 4 groupID +
// tig; slot = 2 tig + half + 8 reg; n = groupID + 8 subtile), the paired K
// order of a 32-wide block (step j's slot holds k = 8 tig + 4 j + 2 reg +
// half) and the interleave into a 64 x 32 tile of two warp-wide loads: k bit
// 0 (half) -> offset 4, bit 1 (reg) -> 2, bit 2 (step) -> 1024 (the second
// load), bits 3 and 4 (tig) -> 32, 64 (the lane's 16 bytes). The staging
// copies get the same tile.
// CHECK-LABEL: func.func @m__mma
// CHECK-SAME: lb.weight_layout = "lbwl1;bits=4;tile=64x32;basis=128,256,512,1,8,16,4,2,1024,32,64"
// CHECK: lb.copy_codes_async {{.*}} tile [64, 32]
// CHECK: lb.load_codes {{.*}} mma_b_paired tile [64, 32]
func.func @m(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 3, split_k = 1>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// The split-K families read the same layout as the staged mma, so one packed
// copy of the weights serves gemv_tiled, split-K mma and staged mma.
// CHECK-LABEL: func.func @tiled__gemv_tiled
// CHECK-SAME: lb.weight_layout = "lbwl1;bits=4;tile=64x32;basis=128,256,512,1,8,16,4,2,1024,32,64"
// CHECK-LABEL: func.func @split__mma
// CHECK-SAME: lb.weight_layout = "lbwl1;bits=4;tile=64x32;basis=128,256,512,1,8,16,4,2,1024,32,64"
func.func @tiled(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}
func.func @split(%x: tensor<?x1024xf16>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xf16>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

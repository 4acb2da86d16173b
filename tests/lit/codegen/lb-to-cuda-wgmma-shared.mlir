// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Two warpgroups that share four layout tiles: the producer copies each
// stage's codes into the weight ring before its activations, and each
// warpgroup's warps read their tile's codes from it with one 16-byte shared
// load a k16 step, decode them and issue m64n128k16 wgmmas for their two
// slices.
func.func @shared(%x: tensor<?x256xf16>, %w: tensor<512x256xui4>, %s: tensor<512x2xf16>) -> tensor<?x512xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [128, 256, 64], warps = [1, 8], stages = 2, split_k = 1>
      : (tensor<?x256xf16>, tensor<512x256xui4>, tensor<512x2xf16>) -> tensor<?x512xf16>
  return %y : tensor<?x512xf16>
}

// CHECK: __launch_bounds__(384, 1)
// The activation ring (2 x 16 KiB, 1 KiB aligned), then the weight ring.
// CHECK: unsigned char *const [[RING:smem[0-9]+]] = lb_dynamic_smem + 0 +
// CHECK: unsigned char *const [[CODES:smem[0-9]+]] = lb_dynamic_smem + 33792;
// The producer: 8 KiB of codes a stage in 16-byte copies (4 layout tiles of
// 64 x 32 codes, two a K tile each), then x, then one arrival for both.
// CHECK: const u32 base = shared_addr([[CODES]]) + (u32)({{v[0-9]+}}) * 8192u;
// CHECK: cp_async16(base + (u32)(group * 2048 + chunk * 16), source);
// CHECK: cp_async4_zfill(
// CHECK: cp_async_mbarrier_arrive_noinc(
// Warpgroup 0, then warpgroup 1, each reading its layout tile's codes from
// the stage it waited for.
// CHECK: mbarrier_wait(
// CHECK: ld_shared_v4([[CODES]] + ({{v[0-9]+}}) * 8192LL +
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// CHECK: } else {
// CHECK: ld_shared_v4([[CODES]] + ({{v[0-9]+}}) * 8192LL +
// CHECK: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16

// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// A persistent block walks the tiles from blockIdx.x in steps of gridDim.x;
// the tile index is read from lane 0, so ptxas keeps it, and the wgmma
// descriptors derived from it, in uniform registers.
func.func @wgmma_persistent(%x: tensor<?x128xf16>, %w: tensor<256x128xui4>, %s: tensor<256x1xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = persistent>
      : (tensor<?x128xf16>, tensor<256x128xui4>, tensor<256x1xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK: __global__ void __launch_bounds__(256, 1){{$}}
// CHECK-NEXT: wgmma_persistent__wgmma_t32x256x64_w1x4_s2_k1_persistent(
// The producer's tiles.
// CHECK: const long long [[FIRST:v[0-9]+]] = (long long)(blockIdx.x);
// CHECK: const long long [[STEP:v[0-9]+]] = (long long)(gridDim.x);
// CHECK: for (long long [[TILE:i[0-9]+]] = [[FIRST]]; [[TILE]] < {{v[0-9]+}}; [[TILE]] += [[STEP]]) {
// CHECK-NEXT: const long long [[UNIFORM:v[0-9]+]] = (long long)__shfl_sync(0xffffffffu, (int)([[TILE]]), 0);
// CHECK-NEXT: const long long {{v[0-9]+}} = [[UNIFORM]] - [[FIRST]];
// The consumers' tiles, the same walk.
// CHECK: } else {
// CHECK: for (long long [[CTILE:i[0-9]+]] = {{v[0-9]+}}; [[CTILE]] < {{v[0-9]+}}; [[CTILE]] += {{v[0-9]+}}) {
// CHECK-NEXT: const long long {{v[0-9]+}} = (long long)__shfl_sync(0xffffffffu, (int)([[CTILE]]), 0);
// CHECK: wgmma.mma_async.sync.aligned.m64n32k16.f32.f16.f16

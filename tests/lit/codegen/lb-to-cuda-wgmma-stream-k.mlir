// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --canonicalize --cse | lowbit-translate --lb-to-cuda | FileCheck %s

// Stream-K: the workspace is the last, writable parameter. A piece that
// does not start its tile stores its partials a float4 a lane and sets
// its warp's flag; the finishing block waits on each later block's flag
// and reads their partials through L2 (another SM wrote them).
func.func @sk(%x: tensor<?x192xf16>, %w: tensor<256x192xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1, scheduler = stream_k>
      : (tensor<?x192xf16>, tensor<256x192xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// CHECK: sk__wgmma_t32x256x64_w1x4_s2_k1_stream_k({{.*}}, long long [[M:arg[0-9]+]], float *__restrict__ [[WS:arg[0-9]+]]) {
// CHECK: float4 *slot = reinterpret_cast<float4 *>([[WS]]) + ({{v[0-9]+}}) * 128 + (threadIdx.x & 31);
// CHECK: slot[32 * i] = make_float4(
// CHECK: release_flag(reinterpret_cast<u32 *>([[WS]]) + ({{v[0-9]+}}));
// CHECK: } else {
// CHECK: wait_flag(reinterpret_cast<const u32 *>([[WS]]) + ({{v[0-9]+}}));
// CHECK: const float4 *slot = reinterpret_cast<const float4 *>([[WS]]) + ({{v[0-9]+}}) * 128 + (threadIdx.x & 31);
// CHECK: const float4 part = __ldcg(slot + 32 * i);

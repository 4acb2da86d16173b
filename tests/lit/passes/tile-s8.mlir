// RUN: lowbit-opt %s --lb-tile --split-input-file --verify-diagnostics | FileCheck %s

// s8 activations on the integer tensor cores: the split-K mma's 32-wide
// block is one m16n8k32 per 16 columns and 8 tokens. The kernel takes
// x_scales after x; both k16 units decode to s8 bytes and together are the
// A fragment; a lane's 8 bytes of x are the B fragment; sums are s32 until
// the K loop ends, then f32 for the warps' partials, scaled once by the
// channel scale and each token's scale, and stored as the f32 y asked for.
// CHECK-LABEL: func.func @w8a8__mma_t16x64x128_w1x1_s1_k4(
// CHECK-SAME: memref<?x1024xsi8>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<256x1024xsi8>, %{{.*}}: memref<256xf16>, %{{.*}}: memref<?x256xf32>, %{{.*}}: index)
// CHECK: %[[ZERO:.*]] = lb.zero_accumulator : vector<4xsi32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]
// CHECK: %[[X:.*]] = lb.load_activations {{.*}} -> vector<8xi8>
// CHECK: %[[STEP0:.*]] = lb.decode {{.*}} as si8 : vector<8xi32> -> vector<32xi8>
// CHECK: %[[STEP1:.*]] = lb.decode {{.*}} as si8 : vector<8xi32> -> vector<32xi8>
// CHECK: %[[A:.*]] = lb.pack_a_fragment_s8 %[[STEP0]], %[[STEP1]][0] : vector<32xi8> -> vector<16xi8>
// CHECK: lb.mma_s8 %[[A]], %[[X]], %{{.*}} : vector<16xi8>, vector<8xi8>, vector<4xsi32>
// CHECK: lb.pack_a_fragment_s8 %[[STEP0]], %[[STEP1]][3]
// CHECK-NOT: lb.scale_fragment
// CHECK: lb.convert_accumulator {{.*}} : vector<4xsi32> -> vector<4xf32>
// CHECK: lb.store_partial_fragment
// CHECK: lb.scale_accumulate
// CHECK: %[[TS:.*]] = lb.load_token_scales %{{.*}} rows %{{.*}} : memref<?xf32> -> vector<2xf32>
// CHECK: %[[Y:.*]] = lb.scale_tokens %{{.*}}, %[[TS]]
// CHECK: lb.store_accumulator %[[Y]], {{.*}} transposed : vector<4xf32>, memref<?x256xf32>
func.func @w8a8(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi8>, %s: tensor<256xf16>) -> tensor<?x256xf32> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi8>, tensor<256xf16>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// W4A8: int4 codes are bytes 16 q, so the scale takes 2^-4 (one multiply
// per column, after the loops); a per-tensor x scale is x_scales[0].
// CHECK-LABEL: func.func @w4a8__mma_t8x64x128_w1x1_s1_k8(
// CHECK: lb.decode {{.*}} as si4 : vector<4xi32> -> vector<32xi8>
// CHECK: lb.mma_s8
// CHECK: %[[SIXTEENTH:.*]] = arith.constant 6.250000e-02 : f32
// CHECK: arith.mulf %{{.*}}, %[[SIXTEENTH]] : f32
// CHECK: lb.load_token_scales %{{.*}} : memref<1xf32> -> vector<2xf32>
// CHECK: lb.store_accumulator {{.*}} transposed : vector<4xf32>, memref<?x256xbf16>
func.func @w4a8(%x: tensor<?x1024xsi8>, %xs: tensor<1xf32>, %w: tensor<256x1024xsi4>, %s: tensor<256xbf16>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<1xf32>), %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi4>, tensor<256xbf16>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// -----

// Only the split-K mma and wgmma multiply s8 activations.
func.func @gemv(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi8>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv schedule: only the split-K mma (family mma, split_k > 1) and wgmma multiply s8 activations, on the integer tensor cores}}
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi8>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// uint8 codes are bytes q - 128: an mma of ones sums each token slice's x
// per block, and 128 Σx joins the integer sum before it becomes f32.
// CHECK-LABEL: func.func @uint8__mma_t16x64x128_w1x1_s1_k4(
// CHECK: %[[ONES:.*]] = lb.ones_a_fragment_s8 : vector<16xi8>
// CHECK: scf.for
// CHECK: lb.mma_s8 %[[ONES]], %{{.*}}, %{{.*}} : vector<16xi8>, vector<8xi8>, vector<4xsi32>
// CHECK: lb.add_token_sums %{{.*}}, %{{.*}} x 128 : vector<4xsi32>
// CHECK: lb.convert_accumulator
func.func @uint8(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xui8>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xsi8>, tensor<256x1024xui8>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// GPTQ-style W4A8: uint4 g128 with quantized zero codes. Each group's s32
// sums close as the period ends: Σx times 2^4 (8 - z) per row in f32, then
// the group scale times 2^-4 into the f32 accumulators the loops carry.
// CHECK-LABEL: func.func @gptq__mma_t16x64x128_w1x1_s1_k4(
// CHECK: lb.ones_a_fragment_s8
// CHECK: scf.for {{.*}} -> (vector<4xf32>, vector<4xf32>
// CHECK: lb.mma_s8
// CHECK: lb.convert_accumulator
// CHECK: arith.subf
// CHECK: lb.scale_accumulate
// CHECK: lb.scale_accumulate
// CHECK-NOT: lb.add_token_sums
// CHECK: lb.store_partial_fragment
func.func @gptq(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xui4>, %s: tensor<256x8xf16>, %z: tensor<256x8xui4>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s zeros(%z : tensor<256x8xui4>) quant <granularity = group, group_size = 128, scale = f16, zero = quantized>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xsi8>, tensor<256x1024xui4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// q·s - z mins would need z Σx outside the scale: not yet.
func.func @mins(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xui4>, %s: tensor<256xf16>, %z: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule with split_k > 1: sub_value zero points (q·s - z) with s8 activations are not implemented}}
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s zeros(%z : tensor<256xf16>) quant <granularity = channel, scale = f16, zero = sub_value>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xsi8>, tensor<256x1024xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// The wgmma family's s8 form: x is staged as bytes in 64-byte rows in the
// hardware's 64-byte swizzle; each 32-wide block is one k32 step whose two
// decoded k16 units pair into the four slices' A fragments; the sums stay
// s32 through the K loop (no quant is loaded in it) and are scaled once,
// by the channel scales and the tokens' scales, before the f32 store.
// CHECK-LABEL: func.func @w8a8_wgmma__wgmma_t32x256x64_w1x4_s2_k1(
// CHECK-SAME: lb.dynamic_shared_bytes = 5120
// CHECK: %[[RING:.*]] = lb.shared_buffer 2 x 32 x 64 dynamic layout <bytes = 64, xor = [0, 1, 2]> : memref<2x32x64xi8, 3>
// CHECK: lb.copy_paired_activations_async %arg0[{{.*}}] to %[[RING]]{{.*}} : memref<?x1024xsi8>, memref<2x32x64xi8, 3>
// CHECK: %[[ZERO:.*]] = lb.zero_accumulator : vector<16xsi32>
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO]]
// CHECK-NOT: lb.load_scalar
// CHECK: %[[U0:.*]] = lb.decode {{.*}} as si8 : vector<8xi32> -> vector<32xi8>
// CHECK: %[[U1:.*]] = lb.decode {{.*}} as si8 : vector<8xi32> -> vector<32xi8>
// CHECK: %[[A:.*]] = lb.pack_a_fragment_s8 %[[U0]], %[[U1]][0] : vector<32xi8> -> vector<16xi8>
// CHECK: lb.wgmma_fence
// CHECK: lb.wgmma %{{.*}}, %[[A]], %[[RING]][%{{.*}}] k_step 0 : vector<16xsi32>, vector<16xi8>, memref<2x32x64xi8, 3>
// CHECK: lb.wgmma {{.*}} k_step 1
// CHECK: scf.yield
// CHECK: lb.load_scalar %arg3
// CHECK: %[[Y:.*]] = lb.scale_wgmma_sums %{{.*}}, %{{.*}}, %{{.*}}, %arg1[%{{.*}}] rows %arg5 : vector<16xsi32>, memref<?xf32> -> vector<16xf32>
// CHECK: lb.store_wgmma_accumulator %[[Y]], %arg4
func.func @w8a8_wgmma(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi8>, %s: tensor<256xf16>) -> tensor<?x256xf32> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi8>, tensor<256xf16>) -> tensor<?x256xf32>
  return %y : tensor<?x256xf32>
}

// -----

// What wgmma's s8 form does not do is refused with the reason.
func.func @w4a8_wgmma_groups(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{group scales with s8 activations on wgmma keep f32 sums next to the s32 ones: tile M must be at most 32, got 64}}
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [64, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// e4m3 activations on the fp8 tensor cores: e4m3fn weights are their own
// bytes (lb.decode to i8 is the words as loaded), the same A and B
// fragments as s8, f32 sums from the start (no s32 to convert), and the
// channel and token scales once, at the end.
// CHECK-LABEL: func.func @fp8__mma_t16x64x128_w1x1_s1_k4(
// CHECK-SAME: memref<?x1024xf8E4M3FN>, %{{.*}}: memref<?xf32>, %{{.*}}: memref<256x1024x!lb.float<e4m3, fn>>
// CHECK-NOT: lb.zero_accumulator
// CHECK: %[[X:.*]] = lb.load_activations {{.*}} : memref<?x1024xf8E4M3FN> -> vector<8xi8>
// CHECK: %[[U0:.*]] = lb.decode {{.*}} as !lb.float<e4m3, fn> : vector<8xi32> -> vector<32xi8>
// CHECK: %[[U1:.*]] = lb.decode {{.*}} as !lb.float<e4m3, fn> : vector<8xi32> -> vector<32xi8>
// CHECK: %[[A:.*]] = lb.pack_a_fragment_s8 %[[U0]], %[[U1]][0]
// CHECK: lb.mma_e4m3 %[[A]], %[[X]], %{{.*}} : vector<16xi8>, vector<8xi8>, vector<4xf32>
// CHECK-NOT: lb.convert_accumulator
// CHECK: lb.scale_accumulate
// CHECK: lb.scale_tokens
func.func @fp8(%x: tensor<?x1024xf8E4M3FN>, %xs: tensor<?xf32>, %w: tensor<256x1024x!lb.float<e4m3, fn>>, %s: tensor<256xf32>) -> tensor<?x256xbf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f32>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf8E4M3FN>, tensor<256x1024x!lb.float<e4m3, fn>>, tensor<256xf32>) -> tensor<?x256xbf16>
  return %y : tensor<?x256xbf16>
}

// -----

// Codes centred off 0 on wgmma: one more wgmma a step, of an A of ones,
// whose every row sums the step's x; after the loop each slice adds
// 2^4 · 8 · Σx (uint4: bytes 16 (v - 8)) in s32.
// CHECK-LABEL: func.func @w4a8_uint4_wgmma__wgmma_t32x256x64_w1x4_s2_k1(
// CHECK: %[[ONES:.*]] = lb.ones_a_fragment_s8 : vector<16xi8>
// CHECK: scf.for
// CHECK: lb.wgmma {{.*}} k_step 0
// CHECK: lb.wgmma {{.*}} k_step 0
// CHECK: lb.wgmma {{.*}} k_step 0
// CHECK: lb.wgmma {{.*}} k_step 0
// CHECK: lb.wgmma %{{.*}}, %[[ONES]], %{{.*}} k_step 0
// CHECK: lb.wgmma_commit
// CHECK: scf.yield
// CHECK: %[[SUMS:.*]] = lb.add_token_sums %{{.*}}, %{{.*}} x 128 : vector<16xsi32>
// CHECK: lb.scale_wgmma_sums %[[SUMS]]
func.func @w4a8_uint4_wgmma(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xui4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x1024xsi8>, tensor<256x1024xui4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// Group scales on wgmma: f32 sums ride next to the s32 ones; after each
// group's last K tile (t + 1 a multiple of 2 for g128) the s32 sums close
// into them, scaled by the tile's group scales, and restart from zero. The
// epilogue then takes only the tokens' scales.
// CHECK-LABEL: func.func @w4a8_g128_wgmma__wgmma_t32x256x64_w1x4_s2_k1(
// CHECK: scf.for
// CHECK: lb.load_scalar %arg3
// CHECK: lb.wgmma {{.*}} k_step 1
// CHECK: %[[LAST:.*]] = arith.cmpi eq
// CHECK: scf.if %[[LAST]] -> (vector<16xsi32>, vector<16xsi32>, vector<16xsi32>, vector<16xsi32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: lb.accumulate_wgmma_group %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<16xsi32> -> vector<16xf32>
// CHECK: } else {
// CHECK: scf.yield
// CHECK: lb.scale_wgmma_sums %{{.*}} : vector<16xf32>, memref<?xf32> -> vector<16xf32>
func.func @w4a8_g128_wgmma(%x: tensor<?x1024xsi8>, %xs: tensor<?xf32>, %w: tensor<256x1024xsi4>, %s: tensor<256x8xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 2, split_k = 1>
      : (tensor<?x1024xsi8>, tensor<256x1024xsi4>, tensor<256x8xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// RUN: lowbit-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{a 2-bit lookup table needs 4 entries, got 3}}
func.func @lut_wrong_size(%a: tensor<4x!lb.lut<2, [1.0, 2.0, 3.0]>>) { return }

// -----

// expected-error @+1 {{a minifloat code must be 2 to 8 bits wide, got 9}}
func.func @float_too_wide(%a: tensor<4x!lb.float<e5m3, ieee>>) { return }

// -----

// expected-error @+1 {{'ieee' special values need at least 2 exponent bits}}
func.func @ieee_one_exponent_bit(%a: tensor<4x!lb.float<e1m2, ieee>>) { return }

// -----

// expected-error @+1 {{expected a minifloat shape such as 'e2m1' or 'ue8m0'}}
func.func @float_bad_shape(%a: tensor<4x!lb.float<fp4, finite>>) { return }

// -----

// expected-error @+1 {{granularity 'group' needs a positive group_size}}
func.func @group_without_size() attributes {q = #lb.quant<granularity = group, scale = f16>} { return }

// -----

// expected-error @+1 {{group_size is only meaningful for granularity 'group', not 'channel'}}
func.func @channel_with_size() attributes {q = #lb.quant<granularity = channel, group_size = 128, scale = f16>} { return }

// -----

// expected-error @+1 {{exponent-only scales ('!lb.float<ue8m0, fn>') are defined for MX blocks}}
func.func @e8m0_not_mx() attributes {q = #lb.quant<granularity = group, group_size = 128, scale = !lb.float<ue8m0, fn>>} { return }

// -----

// expected-error @+1 {{block scales ('f8E4M3FN') need granularity 'group'}}
func.func @block_scale_per_channel() attributes {q = #lb.quant<granularity = channel, scale = f8E4M3FN>} { return }

// -----

// expected-error @+1 {{block scales ('!lb.float<ue8m0, fn>') have no zero points, got zero = sub_code}}
func.func @block_scale_zeros() attributes {q = #lb.quant<granularity = group, group_size = 32, scale = !lb.float<ue8m0, fn>, zero = sub_code>} { return }

// -----

// expected-error @+1 {{tensor_scale must be f32 over f8E4M3FN block scales (NVFP4), got 'f16' over 'f8E4M3FN'}}
func.func @tensor_scale_f16() attributes {q = #lb.quant<granularity = group, group_size = 16, scale = f8E4M3FN, tensor_scale = f16>} { return }

// -----

// expected-error @+1 {{tensor_scale must be f32 over f8E4M3FN block scales (NVFP4), got 'f32' over 'f16'}}
func.func @tensor_scale_over_f16() attributes {q = #lb.quant<granularity = group, group_size = 16, scale = f16, tensor_scale = f32>} { return }

// -----

// expected-error @+1 {{scale type must be f16, bf16, f32, f8E4M3FN or an !lb.float, got 'i32'}}
func.func @integer_scale() attributes {q = #lb.quant<granularity = channel, scale = i32>} { return }

// -----

// expected-error @+1 {{an 'mma' tile must give each warp a multiple of 16x8 and K a multiple of 16, got tile [48, 128, 64] over warps [2, 2]}}
func.func @mma_bad_tile() attributes {s = #lb.schedule<family = mma, tile = [48, 128, 64], warps = [2, 2], stages = 1, split_k = 1>} { return }

// -----

// Split-K mma computes W·xᵀ: M is the n8 side, so 8 rows are fine, 12 are not.
// expected-error @+1 {{an 'mma' tile with split_k > 1 needs M a multiple of 8, N of 16 and K of 32, got tile [12, 64, 128]}}
func.func @split_k_bad_tile() attributes {s = #lb.schedule<family = mma, tile = [12, 64, 128], warps = [1, 1], stages = 1, split_k = 4>} { return }

// -----

// expected-error @+1 {{a 'gemv_tiled' schedule reads 64 x 32 weight tiles with split_k warps along K, each taking tile K values at a time: need tile N = 64, warps = [1, 1] and tile K a multiple of 32}}
func.func @gemv_tiled_bad_chunk() attributes {s = #lb.schedule<family = gemv_tiled, tile = [1, 64, 48], warps = [1, 1], stages = 1, split_k = 4>} { return }

// -----

// expected-error @+1 {{cluster_k > 1 splits K across the blocks of a cluster, which only the split-K families (gemv_tiled, and mma with split_k > 1) and wgmma do; got a mma schedule with split_k = 1}}
func.func @cluster_staged_mma() attributes {s = #lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 3, split_k = 1, cluster_k = 2>} { return }

// -----

// expected-error @+1 {{cluster_k (blocks of a cluster along K) must be 1..8, got 16}}
func.func @cluster_too_big() attributes {s = #lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 16>} { return }

// -----

// expected-error @+1 {{split_k must be at least 1, got 0}}
func.func @zero_split() attributes {s = #lb.schedule<family = gemv, tile = [1, 256, 512], warps = [1, 4], stages = 1, split_k = 0>} { return }

// -----

func.func @group_does_not_divide_k(%x: tensor<?x4096xf16>, %w: tensor<64x4096xui4>, %s: tensor<64x85xf16>) {
  // expected-error @+1 {{group size 48 does not divide K = 4096}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 48, scale = f16>
      : (tensor<?x4096xf16>, tensor<64x4096xui4>, tensor<64x85xf16>) -> tensor<?x64xf16>
  return
}

// -----

func.func @k_mismatch(%x: tensor<?x2048xf16>, %w: tensor<64x4096xui4>, %s: tensor<64xf16>) {
  // expected-error @+1 {{x has K = 2048 but codes have K = 4096}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x2048xf16>, tensor<64x4096xui4>, tensor<64xf16>) -> tensor<?x64xf16>
  return
}

// -----

func.func @n_mismatch(%x: tensor<?x64xf16>, %w: tensor<32x64xui4>, %s: tensor<32xf16>) {
  // expected-error @+1 {{result has N = 16 but codes have N = 32}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64xui4>, tensor<32xf16>) -> tensor<?x16xf16>
  return
}

// -----

func.func @m_mismatch(%x: tensor<8x64xf16>, %w: tensor<32x64xui4>, %s: tensor<32xf16>) {
  // expected-error @+1 {{x and result disagree on M: [8, 64] vs [?, 32]}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<8x64xf16>, tensor<32x64xui4>, tensor<32xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @scale_shape(%x: tensor<?x256xf16>, %w: tensor<32x256xui4>, %s: tensor<32x4xf16>) {
  // expected-error @+1 {{scales must have shape [32, 2] for granularity 'group', got [32, 4]}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      : (tensor<?x256xf16>, tensor<32x256xui4>, tensor<32x4xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @scale_type(%x: tensor<?x256xf16>, %w: tensor<32x256xui4>, %s: tensor<32x2xbf16>) {
  // expected-error @+1 {{scales have element type 'bf16' but #lb.quant says 'f16'}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      : (tensor<?x256xf16>, tensor<32x256xui4>, tensor<32x2xbf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @missing_zeros(%x: tensor<?x256xf16>, %w: tensor<32x256xui4>, %s: tensor<32x2xf16>) {
  // expected-error @+1 {{#lb.quant has zero = sub_code but no zeros operand}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16, zero = sub_code>
      : (tensor<?x256xf16>, tensor<32x256xui4>, tensor<32x2xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @unexpected_zeros(%x: tensor<?x256xf16>, %w: tensor<32x256xui4>, %s: tensor<32x2xf16>, %z: tensor<32x2xf16>) {
  // expected-error @+1 {{zeros given but #lb.quant has zero = none}}
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<32x2xf16>) quant <granularity = group, group_size = 128, scale = f16>
      : (tensor<?x256xf16>, tensor<32x256xui4>, tensor<32x2xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @float_quantized_zeros(%x: tensor<?x256xf16>, %w: tensor<32x256xui4>, %s: tensor<32x2xf16>, %z: tensor<32x2xf16>) {
  // expected-error @+1 {{zero = quantized needs integer zero codes, got 'f16'}}
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<32x2xf16>) quant <granularity = group, group_size = 128, scale = f16, zero = quantized>
      : (tensor<?x256xf16>, tensor<32x256xui4>, tensor<32x2xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @wide_codes(%x: tensor<?x64xf16>, %w: tensor<32x64xi16>, %s: tensor<32xf16>) {
  // expected-error @+1 {{codes element type must be a 1..8-bit integer, !lb.float or !lb.lut, got 'i16'}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64xi16>, tensor<32xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @lut_needs_table(%x: tensor<?x64xf16>, %w: tensor<32x64x!lb.lut<4>>, %s: tensor<32xf16>) {
  // expected-error @+1 {{codes are '!lb.lut<4>' without a table, so a table operand is needed}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64x!lb.lut<4>>, tensor<32xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @table_wrong_size(%x: tensor<?x64xf16>, %w: tensor<32x64x!lb.lut<4>>, %s: tensor<32xf16>, %t: tensor<8xf16>) {
  // expected-error @+1 {{table must have shape [16] for 4-bit codes, got [8]}}
  %y = lb.qmatmul %x, %w, %s table(%t : tensor<8xf16>) quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64x!lb.lut<4>>, tensor<32xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @table_for_integers(%x: tensor<?x64xf16>, %w: tensor<32x64xui4>, %s: tensor<32xf16>, %t: tensor<16xf16>) {
  // expected-error @+1 {{table operand given but codes are not !lb.lut}}
  %y = lb.qmatmul %x, %w, %s table(%t : tensor<16xf16>) quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64xui4>, tensor<32xf16>) -> tensor<?x32xf16>
  return
}

// -----

func.func @result_type(%x: tensor<?x64xf16>, %w: tensor<32x64xui4>, %s: tensor<32xf16>) {
  // expected-error @+1 {{result element type 'bf16' must match the activation type 'f16'}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<32x64xui4>, tensor<32xf16>) -> tensor<?x32xbf16>
  return
}

// -----

// The A fragments come only in the paired form the mma builders produce.
func.func @a_fragment_unpaired(%buffer: memref<2x16x64xf16, 3>, %i: index) {
  // expected-error @+1 {{result #0 must be vector of 16-bit float or bfloat16 type values of length 16}}
  %a = lb.load_a_fragment %buffer[%i, %i, %i] : memref<2x16x64xf16, 3> -> vector<8xf16>
  return
}

// -----

// Packed-pair arithmetic is what the decodes compute: sub and fma, no mul.
func.func @pair_mul(%a: i32, %b: i32) {
  // expected-error @+2 {{expected ::lowbit::lb::PairOp to be one of: sub, fma}}
  // expected-error @+1 {{failed to parse Lb_PairOpAttr parameter}}
  %r = lb.pair_arith mul f16 %a, %b
  return
}

// -----

// expected-error @+1 {{a swizzle spans rows of 32, 64 or 128 bytes, got 96}}
func.func @bad_swizzle() attributes {layout = #lb.swizzle<bytes = 96, xor = [1, 2, 4]>} {
  return
}

// -----

func.func @swizzle_row_bytes() {
  // expected-error @+1 {{a row of 32 values is 64 bytes, not whole 128-byte swizzle spans}}
  %b = lb.shared_buffer 2 x 8 x 32 layout <bytes = 128, xor = [1, 2, 4]> : memref<2x8x32xf16, 3>
  return
}

// -----

func.func @swizzle_stage_alignment() {
  // expected-error @+1 {{a stage of 4 rows must be a multiple of 1024 bytes}}
  %b = lb.shared_buffer 2 x 4 x 64 layout <bytes = 128, xor = [1, 2, 4]> : memref<2x4x64xf16, 3>
  return
}

// -----

func.func @set_max_registers() {
  // expected-error @+1 {{register count must be a multiple of 8 in 24 .. 256, got 20}}
  lb.set_max_registers 20
  return
}

// -----

func.func @wgmma_rows(%acc: vector<16xf32>, %a: vector<8xf16>, %i: index) {
  %b = lb.shared_buffer 2 x 64 x 64 layout <bytes = 128, xor = [1, 2, 4]> : memref<2x64x64xf16, 3>
  // expected-error @+1 {{an accumulator of 16 values is m64 x n32, but a stage holds 64 rows of B}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 0 : vector<16xf32>, vector<8xf16>, memref<2x64x64xf16, 3>
  return
}

// -----

func.func @wgmma_k_step(%acc: vector<16xf32>, %a: vector<8xf16>, %i: index) {
  %b = lb.shared_buffer 2 x 32 x 64 layout <bytes = 128, xor = [1, 2, 4]> : memref<2x32x64xf16, 3>
  // expected-error @+1 {{k_step must be in 0 .. 3 for rows of 64 values}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 4 : vector<16xf32>, vector<8xf16>, memref<2x32x64xf16, 3>
  return
}

// -----

func.func @wgmma_unswizzled(%acc: vector<16xf32>, %a: vector<8xf16>, %i: index) {
  %b = lb.shared_buffer 2 x 32 x 64 : memref<2x32x64xf16, 3>
  // expected-error @+1 {{B must be read from an lb.shared_buffer of 64-value rows in the hardware's swizzle of their bytes}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 0 : vector<16xf32>, vector<8xf16>, memref<2x32x64xf16, 3>
  return
}

// -----

// s8 B rows are 64 bytes: a 32-byte swizzle is not their span's.
func.func @wgmma_s8_swizzle(%acc: vector<16xsi32>, %a: vector<16xi8>, %i: index) {
  %b = lb.shared_buffer 2 x 32 x 64 layout <bytes = 32, xor = [0, 0, 1]> : memref<2x32x64xi8, 3>
  // expected-error @+1 {{B must be read from an lb.shared_buffer of 64-value rows in the hardware's swizzle of their bytes}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 0 : vector<16xsi32>, vector<16xi8>, memref<2x32x64xi8, 3>
  return
}

// -----

func.func @wgmma_s8_into_f32(%acc: vector<16xf32>, %a: vector<16xi8>, %i: index) {
  %b = lb.shared_buffer 2 x 32 x 64 layout <bytes = 64, xor = [0, 1, 2]> : memref<2x32x64xi8, 3>
  // expected-error @+1 {{A is 8 f16 or bf16 values into f32 sums, or 16 bytes of s8 (into s32 sums) or e4m3 (into f32) as the staged B says}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 0 : vector<16xf32>, vector<16xi8>, memref<2x32x64xi8, 3>
  return
}

// -----

func.func @wgmma_s8_k_step(%acc: vector<16xsi32>, %a: vector<16xi8>, %i: index) {
  %b = lb.shared_buffer 2 x 32 x 64 layout <bytes = 64, xor = [0, 1, 2]> : memref<2x32x64xi8, 3>
  // expected-error @+1 {{k_step must be in 0 .. 1 for rows of 64 values}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 2 : vector<16xsi32>, vector<16xi8>, memref<2x32x64xi8, 3>
  return
}

// -----

// expected-error @+1 {{a swizzle maps the 3 bits of the row mod 8 to chunk bits, got 2 masks}}
func.func @swizzle_masks() attributes {layout = #lb.swizzle<bytes = 128, xor = [1, 2]>} {
  return
}

// -----

// expected-error @+1 {{a mask must name chunk bits of the span (0 .. 7), got 8}}
func.func @swizzle_mask_range() attributes {layout = #lb.swizzle<bytes = 128, xor = [1, 2, 8]>} {
  return
}

// -----

func.func @wgmma_software_swizzle(%acc: vector<16xf32>, %a: vector<8xf16>, %i: index) {
  %b = lb.shared_buffer 2 x 32 x 64 layout <bytes = 128, xor = [5, 2, 4]> : memref<2x32x64xf16, 3>
  // expected-error @+1 {{B must be read from an lb.shared_buffer of 64-value rows in the hardware's swizzle of their bytes}}
  %r = lb.wgmma %acc, %a, %b[%i] k_step 0 : vector<16xf32>, vector<8xf16>, memref<2x32x64xf16, 3>
  return
}

// -----

func.func @scale_run_length(%s: memref<64x32xf16>, %i: index) {
  // expected-error @+1 {{a run of 4 scales is a vector of 4, not 8}}
  %r = lb.load_scale_run %s[%i, %i] {count = 4 : i64} : memref<64x32xf16> -> vector<8xf32>
  return
}

// -----

func.func @scale_run_longer_than_row(%s: memref<64x2xf16>, %i: index) {
  // expected-error @+1 {{a run of 4 scales is longer than a row of 2}}
  %r = lb.load_scale_run %s[%i, %i] {count = 4 : i64} : memref<64x2xf16> -> vector<4xf32>
  return
}

// -----

func.func @scale_run_rank(%s: memref<64xf16>, %i: index) {
  // expected-error @+1 {{scales must be a rank-2 memref [N, K / group], got rank 1}}
  %r = lb.load_scale_run %s[%i, %i] {count = 2 : i64} : memref<64xf16> -> vector<2xf32>
  return
}

// -----

// expected-error @+1 {{super_block and super_step go together}}
func.func @super_block_without_step() attributes {lb.q = #lb.quant<granularity = group, group_size = 32, scale = ui8, super_block = 256>} { return }

// -----

// expected-error @+1 {{super_block 96 must hold whole groups}}
func.func @super_block_partial_groups() attributes {lb.q = #lb.quant<granularity = group, group_size = 64, scale = ui8, super_block = 96, super_step = f16>} { return }

// -----

// expected-error @+1 {{the scale type is the codes', ui8 or si8, got 'f16'}}
func.func @super_block_float_codes() attributes {lb.q = #lb.quant<granularity = group, group_size = 32, scale = f16, super_block = 256, super_step = f16>} { return }

// -----

// expected-error @+1 {{super-block mins are ui8 codes with zero = sub_value}}
func.func @super_block_signed_mins() attributes {lb.q = #lb.quant<granularity = group, group_size = 32, scale = si8, zero = sub_value, super_block = 256, super_step = f16>} { return }

// -----

// expected-error @+1 {{scale type must be f16, bf16, f32, f8E4M3FN or an !lb.float, got 'ui8'}}
func.func @codes_without_super_block() attributes {lb.q = #lb.quant<granularity = group, group_size = 32, scale = ui8>} { return }

// -----

func.func @join_pairs_wrong_length(%a: vector<4xf16>, %b: vector<4xf16>) {
  // expected-error @+1 {{joins 8 values into 6}}
  %v = lb.join_pairs %a, %b : vector<4xf16>, vector<4xf16> -> vector<6xf16>
  return
}

// -----

func.func @join_pairs_mixed_types(%a: vector<4xf16>, %b: vector<4xbf16>) {
  // expected-error @+1 {{the element types differ}}
  %v = lb.join_pairs %a, %b : vector<4xf16>, vector<4xbf16> -> vector<8xf16>
  return
}

// -----

// s8 bytes carry no zero points: 16·(q − z) leaves a byte, so the consumer
// subtracts (centre − z)·Σx from its integer sums instead.
func.func @s8_minus(%w: vector<4xi32>, %z: f32) -> vector<32xi8> {
  // expected-error @+1 {{decodes to s8 bytes, which take neither zero points nor `raw`}}
  %v = lb.decode %w minus(%z) as ui4 : vector<4xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// -----

func.func @s8_pack(%a: i32, %b: i32) -> vector<16xi8> {
  // expected-error @+1 {{packs 2 registers of 4 values into 16 values}}
  %v = lb.pack_pairs %a, %b : vector<16xi8>
  return %v : vector<16xi8>
}

// -----

// Quantized activations carry their f32 scales, [M] or [1].
func.func @s8_without_scales(%x: tensor<?x64xsi8>, %w: tensor<64x64xsi8>, %s: tensor<64xf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{quantized activations ('si8') need x_scales: f32 [M] per token or [1] per tensor}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xsi8>, tensor<64x64xsi8>, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

func.func @s8_scales_of_two(%x: tensor<?x64xsi8>, %xs: tensor<2xf32>, %w: tensor<64x64xsi8>, %s: tensor<64xf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{x_scales must be f32 [M] (one per token) or [1] (per tensor), got 'tensor<2xf32>'}}
  %y = lb.qmatmul %x x_scales(%xs : tensor<2xf32>), %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xsi8>, tensor<64x64xsi8>, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

func.func @s8_to_si32(%x: tensor<?x64xsi8>, %xs: tensor<?xf32>, %w: tensor<64x64xsi8>, %s: tensor<64xf16>) -> tensor<?x64xsi32> {
  // expected-error @+1 {{the result of quantized activations is f16, bf16 or f32, got 'si32'}}
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xsi8>, tensor<64x64xsi8>, tensor<64xf16>) -> tensor<?x64xsi32>
  return %y : tensor<?x64xsi32>
}

// -----

func.func @f16_with_scales(%x: tensor<?x64xf16>, %xs: tensor<?xf32>, %w: tensor<64x64xsi8>, %s: tensor<64xf16>) -> tensor<?x64xf16> {
  // expected-error @+1 {{x_scales are only for quantized (si8, f8E4M3FN) activations, not 'f16'}}
  %y = lb.qmatmul %x x_scales(%xs : tensor<?xf32>), %w, %s quant <granularity = channel, scale = f16>
      : (tensor<?x64xf16>, tensor<64x64xsi8>, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

func.func @a_fragment_slice(%u: vector<32xi8>) -> vector<16xi8> {
  // expected-error @+1 {{slice must be 0..3 (a 64-column unit's 16-column slices), got 4}}
  %a = lb.pack_a_fragment_s8 %u, %u[4] : vector<32xi8> -> vector<16xi8>
  return %a : vector<16xi8>
}

// -----

func.func @s8_load_of_f16(%x: memref<?x64xf16>, %i: index) -> vector<8xi8> {
  // expected-error @+1 {{i8 values are loaded from s8 or e4m3 activations, not 'f16'}}
  %v = lb.load_activations %x[%i, %i] rows %i : memref<?x64xf16> -> vector<8xi8>
  return %v : vector<8xi8>
}

// -----

func.func @s8_load_of_sixteen(%x: memref<?x64xsi8>, %i: index) -> vector<16xi8> {
  // expected-error @+1 {{s8 activations are loaded 8 at a time (one m16n8k32 B fragment), not 16}}
  %v = lb.load_activations %x[%i, %i] rows %i : memref<?x64xsi8> -> vector<16xi8>
  return %v : vector<16xi8>
}

// -----

func.func @wgmma_partials_of_one_block(%buffer: memref<16x8x128xf32, 3>, %i: index) -> vector<32xf32> {
  // expected-error @+1 {{adds the partials of 2 or more blocks, got 1}}
  %v = lb.sum_wgmma_cluster_partials %buffer[%i] blocks 1 : memref<16x8x128xf32, 3> -> vector<32xf32>
  return %v : vector<32xf32>
}

// -----

func.func @wgmma_partials_of_another_shape(%acc: vector<32xf32>, %buffer: memref<16x4x128xf32, 3>, %i: index) {
  // expected-error @+1 {{needs a [slots, N / 8, 128] f32 buffer for a 32-float accumulator}}
  lb.store_wgmma_partials %acc, %buffer[%i] : vector<32xf32>, memref<16x4x128xf32, 3>
  return
}

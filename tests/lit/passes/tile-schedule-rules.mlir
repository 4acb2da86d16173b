// RUN: lowbit-opt %s --lb-tile --split-input-file --verify-diagnostics

// lb-tile's diagnostics are the schedule rules' (core/ScheduleRules.h), the
// same words the tuner gives as its reason for skipping a schedule
// (tests/unit/passes/ScheduleAgreementTest.cpp holds the two together).

// Codes the fragment facts have no register decode for get their reason: a
// 7-bit minifloat (fp6 and other 3, 5 and 6-bit codes come in two planes).
func.func @fp7(%x: tensor<?x4096xf16>, %w: tensor<256x4096x!lb.float<e3m3, bias = 3, finite>>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv schedule: no register decode for 7-bit}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x4096xf16>, tensor<256x4096x!lb.float<e3m3, bias = 3, finite>>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// A minifloat whose values f16 cannot hold: the decode's reason.
func.func @e8m0(%x: tensor<?x4096xf16>, %w: tensor<256x4096x!lb.float<ue8m0, fn>>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv schedule: no exact decode of e8m0 to f16: a format without subnormals has no zero}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x4096xf16>, tensor<256x4096x!lb.float<ue8m0, fn>>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// A code type must say its signedness: the decode depends on it.
func.func @signless(%x: tensor<?x4096xf16>, %w: tensor<256x4096xi4>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule: integer codes must say their signedness (ui<N> or si<N>), got 'i4'}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 4, split_k = 1>
      : (tensor<?x4096xf16>, tensor<256x4096xi4>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// A 7-bit code would straddle 32-bit words, and two planes store only 3, 5 and 6 bits.
func.func @seven_bits(%x: tensor<?x4096xf16>, %w: tensor<256x4096xui7>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule with split_k > 1: no register decode for 7-bit codes: a code must not straddle a 32-bit word (1, 2, 4 or 8 bits), and two planes store only 3, 5 and 6 bits}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 8>
      : (tensor<?x4096xf16>, tensor<256x4096xui7>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// Act-order (g_idx) is not implemented by any family yet.
func.func @act_order(%x: tensor<?x4096xf16>, %w: tensor<256x4096xui4>, %s: tensor<256x32xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{gemv_tiled schedule: act_order is not implemented}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16, act_order = true>
      schedule <family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>
      : (tensor<?x4096xf16>, tensor<256x4096xui4>, tensor<256x32xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// wgmma's consumer warps own one 64-column layout tile each.
func.func @wgmma_tile_n(%x: tensor<?x4096xf16>, %w: tensor<512x4096xui4>, %s: tensor<512xf16>) -> tensor<?x512xf16> {
  // expected-error @+1 {{wgmma schedule: each consumer warp owns one 64-column layout tile (tile N = 256), or two warpgroups share four (tile N = 256 over warps [1, 8]), got 512}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = wgmma, tile = [64, 512, 64], warps = [1, 4], stages = 4, split_k = 1>
      : (tensor<?x4096xf16>, tensor<512x4096xui4>, tensor<512xf16>) -> tensor<?x512xf16>
  return %y : tensor<?x512xf16>
}

// -----

// Two consumer warpgroups leave 232 registers a thread: zero points need
// tile M <= 56.
func.func @wgmma_registers(%x: tensor<?x4096xf16>, %w: tensor<512x4096xui4>, %s: tensor<512x32xf16>, %z: tensor<512x32xf16>) -> tensor<?x512xf16> {
  // expected-error @+1 {{wgmma schedule: with two consumer warpgroups, zero points, codes of 5 bits or more, minifloats and lookup tables need tile M <= 56}}
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<512x32xf16>) quant <granularity = group, group_size = 128, scale = f16, zero = sub_code>
      schedule <family = wgmma, tile = [64, 512, 64], warps = [1, 8], stages = 8, split_k = 1>
      : (tensor<?x4096xf16>, tensor<512x4096xui4>, tensor<512x32xf16>) -> tensor<?x512xf16>
  return %y : tensor<?x512xf16>
}

// -----

// A lane's scales are loaded once per 64-wide K tile, or once per 32-wide
// block of it for groups of 16 and 32.
func.func @wgmma_group(%x: tensor<?x4032xf16>, %w: tensor<256x4032xui4>, %s: tensor<256x42xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{wgmma schedule: group size 96 is neither 16, a multiple of tile K = 64 nor a multiple of 32 dividing it}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 96, scale = f16>
      schedule <family = wgmma, tile = [64, 256, 64], warps = [1, 4], stages = 4, split_k = 1>
      : (tensor<?x4032xf16>, tensor<256x4032xui4>, tensor<256x42xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

// -----

// cp.async.wait_group takes at most 7 pending groups, whatever the width.
func.func @ten_stages(%x: tensor<?x4096xf16>, %w: tensor<256x4096xui2>, %s: tensor<256xf16>) -> tensor<?x256xf16> {
  // expected-error @+1 {{mma schedule: stages must be 2..9, got 10}}
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = mma, tile = [16, 64, 64], warps = [1, 1], stages = 10, split_k = 1>
      : (tensor<?x4096xf16>, tensor<256x4096xui2>, tensor<256xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

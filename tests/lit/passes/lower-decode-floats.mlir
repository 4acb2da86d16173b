// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --split-input-file | FileCheck %s

// e2m1 to f16: register j moves field j of each half to the half's top (a
// shift left by 12 - 4 j; none for j = 3), so the code's sign is bit 15.
// The magnitude shifts right by 3 onto f16's mantissa top, the mask
// 0x0E000E00 (234884608) keeps it, lop3 (a & b) | c (lut 234) restores the
// sign (0x80008000 = 2147516416), and one fma by 2^14 (0x74007400 =
// 1946186752) with -0 as the addend makes the value. No per-element shifts
// or converts.
// CHECK-LABEL: func.func @e2m1__gemv
// CHECK-NOT: lb.decode
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[X:.*]] = arith.shli %[[W]], %c12_i32
// CHECK: %[[Y:.*]] = arith.shrui %[[X]], %c3_i32
// CHECK: %[[M:.*]] = arith.andi %[[Y]], %c234884608_i32
// CHECK: %[[V:.*]] = lb.lop3 %[[X]], %c-2147450880_i32{{[_0-9]*}}, %[[M]] lut 234
// CHECK: lb.pair_arith fma f16 %[[V]], %c1946186752_i32{{[_0-9]*}}, %c-2147450880_i32
// CHECK-NOT: arith.sitofp
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @e2m1(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.float<e2m1, finite>>, %s: tensor<64x32xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.float<e2m1, finite>>, tensor<64x32xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

// e5m2 to f16 is the top byte of an f16: one prmt per register, placing
// bytes j and j + 2 in bytes 1 and 3 over zeros (selectors 0x2404 = 9220
// and 0x3414 = 13332), and nothing else.
// CHECK-LABEL: func.func @e5m2__gemv
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0]
// CHECK-NOT: arith.{{(andi|shrui|shli)}}
// CHECK: lb.prmt %[[W]], %{{.*}} selector 9220
// CHECK-NOT: arith.{{(andi|shrui|shli)}}
// CHECK: lb.prmt %[[W]], %{{.*}} selector 13332
// CHECK-NOT: lb.pair_arith
// CHECK: lb.extract_word %{{.*}}[1]
func.func @e5m2(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.float<e5m2, ieee>>, %s: tensor<64xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.float<e5m2, ieee>>, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

// e4m3 to bf16: the magnitude shifts right by 4, and the fma multiplies by
// 2^120 (bf16 0x7B80, pairs 0x7B807B80 = 2072017792).
// CHECK-LABEL: func.func @e4m3__gemv
// CHECK: arith.shrui %{{.*}}, %c4_i32
// CHECK: lb.pair_arith fma bf16 %{{.*}}, %c2072017792_i32
func.func @e4m3(%x: tensor<?x1024xbf16>, %w: tensor<64x1024x!lb.float<e4m3, fn>>, %s: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024x!lb.float<e4m3, fn>>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// -----

// A 16-entry table, register-resident: the codes' low 3 bits select (w &
// 0x7777 = 30583, and the high half's), prmt_lookup reads 8-byte tables of
// the entries' low and high bytes, prmt's sign mode over {w, w << 4}
// (selectors 0x9D8C = 40332, 0xBFAE = 49070) makes the bit-3 masks, lop3
// select (lut 228) picks the half of the table, and two prmts (0x5140 =
// 20800, 0x7362 = 29538) pair low and high bytes into registers. No memory.
// CHECK-LABEL: func.func @nf4__gemv
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[T:.*]] = arith.shli %[[W]], %c4_i32
// CHECK: %[[SEL:.*]] = arith.andi %[[W]], %c30583_i32
// CHECK: %[[MASK:.*]] = lb.prmt %[[W]], %[[T]] selector 40332
// CHECK: lb.prmt %[[W]], %[[T]] selector 49070
// CHECK: %[[LO0:.*]] = lb.prmt_lookup %{{.*}}, %{{.*}} by %[[SEL]]
// CHECK: %[[LO1:.*]] = lb.prmt_lookup %{{.*}}, %{{.*}} by %[[SEL]]
// CHECK: lb.lop3 %[[LO1]], %[[LO0]], %[[MASK]] lut 228
// CHECK: lb.prmt %{{.*}}, %{{.*}} selector 20800
// CHECK: lb.prmt %{{.*}}, %{{.*}} selector 29538
// CHECK-NOT: memref.load
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @nf4(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.lut<4, [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]>>, %s: tensor<64x16xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 64, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.lut<4, [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]>>, tensor<64x16xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

// fp6 (e2m3) in two planes: a unit is four low-plane words (4-bit fields,
// f16's windows for either activation) and two high-plane words (2 bits a
// code). Each register joins its code at the top of both halves: the low
// word shifted left so its field ends at bit 14 (10 for field 0), the high
// word shifted so its 2 bits sit at 14-15, and one lop3 select (lut 228)
// under the mask 0xC000C000 (-1073692672) takes the high part. Then the
// minifloat steps of e2m1, with e2m3's shift (3), mask (0x0F800F80 =
// 260050816) and factor 2^14.
// CHECK-LABEL: func.func @e2m3__gemv
// CHECK: %[[UNIT:.*]] = lb.load_codes {{.*}} -> vector<6xi32>
// CHECK: %[[L0:.*]] = lb.extract_word %[[UNIT]][0]
// CHECK: %[[H0:.*]] = lb.extract_word %[[UNIT]][4]
// CHECK: %[[LOW:.*]] = arith.shli %[[L0]], %c10_i32
// CHECK: %[[HIGH:.*]] = arith.shli %[[H0]], %c14_i32
// CHECK: %[[J:.*]] = lb.lop3 %[[HIGH]], %[[LOW]], %c-1073692672_i32 lut 228
// CHECK: %[[Y:.*]] = arith.shrui %[[J]], %c3_i32
// CHECK: %[[M:.*]] = arith.andi %[[Y]], %c260050816_i32
// CHECK: %[[V:.*]] = lb.lop3 %[[J]], %c-2147450880_i32{{[_0-9]*}}, %[[M]] lut 234
// CHECK: lb.pair_arith fma f16 %[[V]], %c1946186752_i32
// CHECK-NOT: arith.sitofp
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @e2m3(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.float<e2m3, finite>>, %s: tensor<64x32xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 32, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.float<e2m3, finite>>, tensor<64x32xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

// e3m2 to bf16, the same join: the magnitude (5 bits) moves right by 10 -
// (7 - 2) = 5 onto bf16's mantissa top, and the fma multiplies by 2^124
// (0x7D807D80 = 2105572736).
// CHECK-LABEL: func.func @e3m2__gemv
// CHECK: lb.lop3 %{{.*}}, %{{.*}}, %c-1073692672_i32 lut 228
// CHECK: arith.shrui %{{.*}}, %c5_i32
// CHECK: lb.pair_arith fma bf16 %{{.*}}, %c2105572736_i32
func.func @e3m2(%x: tensor<?x1024xbf16>, %w: tensor<64x1024x!lb.float<e3m2, finite>>, %s: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024x!lb.float<e3m2, finite>>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

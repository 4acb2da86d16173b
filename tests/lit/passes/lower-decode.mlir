// RUN: lowbit-opt %s --lb-tile --lb-propagate-layouts --lb-lower-decode --split-input-file | FileCheck %s

// f16: per word one shift, four lop3 with lut 0x6A ((a & b) ^ c) against
// masks 0x000F000F (983055) and 0x00F000F0 (15728880) and the magic 0x64006400
// (1677747200), then sub / fma to remove the magic. No per-element shifts.
// The windows alternate (the word, then the word >> 8), so registers 0 and 1
// (one subtile) both sit at bit 0, registers 2 and 3 at bit 4.
// CHECK-LABEL: func.func @f16__gemv
// CHECK-NOT: lb.decode
// CHECK: %[[W0:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[HI:.*]] = arith.shrui %[[W0]]
// CHECK: lb.lop3 %[[W0]], %c983055_i32{{[_0-9]*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith sub f16
// CHECK: lb.lop3 %[[HI]], %c983055_i32{{[_0-9]*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith sub f16
// CHECK: lb.lop3 %[[W0]], %c15728880_i32{{[_0-9]*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith fma f16
// CHECK: lb.lop3 %[[HI]], %c15728880_i32{{[_0-9]*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith fma f16
// CHECK: lb.extract_word %{{.*}}[3]
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @f16(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// bf16 with signed codes: each register from the word shifted by 4 j, one
// fma.rn.bf16x2 each (legal on sm_80); the two's-complement flip rides in the
// lop3 constant (0x43004300 | 0x00080008 = 1124614152).
// CHECK-LABEL: func.func @bf16__gemv
// CHECK: lb.lop3 %{{.*}}, %{{.*}}, %{{.*}} lut 106
// CHECK: lb.pair_arith fma bf16
// CHECK-NOT: lb.pair_arith sub bf16
func.func @bf16(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xsi4>, %s: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xsi4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// 2 bits, f16: sixteen codes a word, four fields of each byte in place
// (masks 0x00030003 = 196611, 0x000C000C = 786444, 0x00300030 = 3145776,
// 0x00C000C0 = 12583104), one shift by 8 for the high bytes: 8 lop3, 8
// sub/fma, 1 shift for 16 codes, alternating between the word and the
// shifted word. A unit of 32 codes is two words.
// CHECK-LABEL: func.func @u2__gemv
// CHECK: lb.load_codes {{.*}} -> vector<2xi32>
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0] : vector<2xi32>
// CHECK: %[[H:.*]] = arith.shrui %[[W]]
// CHECK: lb.lop3 %[[W]], %c196611_i32
// CHECK: lb.pair_arith sub f16
// CHECK: lb.lop3 %[[H]], %c196611_i32
// CHECK: lb.pair_arith sub f16
// CHECK: lb.lop3 %[[W]], %c786444_i32
// CHECK: lb.pair_arith fma f16
// CHECK: lb.lop3 %[[H]], %c786444_i32
// CHECK: lb.lop3 %[[W]], %c3145776_i32
// CHECK: lb.lop3 %[[H]], %c3145776_i32
// CHECK: lb.lop3 %[[W]], %c12583104_i32
// CHECK: lb.lop3 %[[H]], %c12583104_i32
// CHECK: lb.extract_word %{{.*}}[1] : vector<2xi32>
// CHECK-NOT: lb.extract_word
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @u2(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui2>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui2>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// 2 bits, bf16, signed: bf16's mantissa has 7 bits, so three fields fit a
// window and the word is shifted by 6 and 12; the sign flip rides in the
// lop3 constant (0x43004300 | 0x00020002 = 1124221698).
// CHECK-LABEL: func.func @s2__gemv
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0] : vector<2xi32>
// CHECK: lb.lop3 %[[W]], %c196611_i32{{[_0-9]*}}, %c1124221698_i32
// CHECK: lb.pair_arith fma bf16
// CHECK: arith.shrui %[[W]], %c6_i32
// CHECK: arith.shrui %[[W]], %c12_i32
// CHECK-NOT: lb.pair_arith sub bf16
func.func @s2(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xsi2>, %s: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xsi2>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// 1 bit, f16: 32 codes a word, one word a unit; eight single-bit fields per
// byte (the first mask 0x00010001 = 65537).
// CHECK-LABEL: func.func @u1__gemv
// CHECK: lb.load_codes {{.*}} -> vector<1xi32>
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0] : vector<1xi32>
// CHECK: lb.lop3 %[[W]], %c65537_i32
// CHECK-COUNT-15: lb.lop3
// CHECK-NOT: lb.lop3
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @u1(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui1>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui1>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// 8 bits, f16, signed: one xor flips the four sign bits (0x80808080 =
// 2155905152), two prmt against 0x64646464 (1684300900) put bytes (0, 2)
// and (1, 3) under 1024 (selectors 0x4240 = 16960, 0x4341 = 17217), two
// sub. A unit is 8 words (32 bytes). No lop3, no per-element shift.
// CHECK-LABEL: func.func @s8__gemv
// CHECK: lb.load_codes {{.*}} -> vector<8xi32>
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0] : vector<8xi32>
// CHECK: %[[F:.*]] = arith.xori %[[W]], %c-2139062144_i32
// CHECK: lb.prmt %[[F]], %c1684300900_i32{{[_0-9]*}} selector 16960
// CHECK: lb.pair_arith sub f16
// CHECK: lb.prmt %[[F]], %c1684300900_i32{{[_0-9]*}} selector 17217
// CHECK: lb.pair_arith sub f16
// CHECK-NOT: lb.lop3
// CHECK: lb.extract_word %{{.*}}[7] : vector<8xi32>
func.func @s8(%x: tensor<?x1024xf16>, %w: tensor<64x1024xsi8>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xsi8>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// 8 bits, bf16: prmt against 0x4B000000 (1258291200) makes the f32 2^23 + q
// (selector 0x7440 = 29760 for byte 0), an f32 subtract leaves q, and one
// pack rounds two into a bf16x2 register.
// CHECK-LABEL: func.func @u8__gemv
// CHECK: lb.prmt %{{.*}}, %c1258291200_i32{{[_0-9]*}} selector 29760
// CHECK: arith.bitcast {{.*}} : i32 to f32
// CHECK: arith.subf
// CHECK: lb.pack_f32_pair {{.*}} as bf16
func.func @u8(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui8>, %s: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = bf16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui8>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// Ternary (!lb.int, 2-bit codes with offset -1): the offset folds into the
// bias, sub(v, 1024 + 1) = 1025 (0x64016401 = 1677812737) for the first field.
// CHECK-LABEL: func.func @tern__gemv
// CHECK: lb.load_codes {{.*}} -> vector<2xi32>
// CHECK: %c1677812737_i32
func.func @tern(%x: tensor<?x1024xf16>, %w: tensor<64x1024x!lb.int<bits = 2, offset = -1, ternary = true>>, %s: tensor<64xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = channel, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024x!lb.int<bits = 2, offset = -1, ternary = true>>, tensor<64xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// 1 bit, split-K mma: one load holds both k16 steps' units (2 words); the
// second step's decode is unit 1, lowered from word 1.
// CHECK-LABEL: func.func @u1split__mma
// CHECK: lb.load_codes {{.*}} mma_b_paired {{.*}} -> vector<2xi32>
// CHECK: lb.extract_word %{{.*}}[0] : vector<2xi32>
// CHECK: lb.extract_word %{{.*}}[1] : vector<2xi32>
func.func @u1split(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui1>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<64x1024xui1>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// Raw decodes (split-K mma with per-period f32 scales, unsigned codes, f16):
// a mask per register and nothing else, no magic, no sub or fma. The scales
// carry 2^(24 - p): 2^24 (0x4B800000) for the subtiles at bit 0, 2^20
// (0x49800000) for those at bit 4.
// CHECK-LABEL: func.func @u4raw__mma
// CHECK: arith.constant 0x4B800000 : f32
// CHECK: arith.constant 0x49800000 : f32
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0] : vector<4xi32>
// CHECK: %[[H:.*]] = arith.shrui %[[W]]
// CHECK: arith.andi %[[W]], %c983055_i32
// CHECK: arith.andi %[[H]], %c983055_i32
// CHECK: arith.andi %[[W]], %c15728880_i32
// CHECK: arith.andi %[[H]], %c15728880_i32
// CHECK-NOT: lb.pair_arith
// CHECK: lb.mma
func.func @u4raw(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// Raw 8-bit: the same two prmt with zero for the high bytes.
// CHECK-LABEL: func.func @u8raw__mma
// CHECK: lb.prmt %{{.*}}, %c0_i32{{[_0-9]*}} selector 16960
// CHECK: lb.prmt %{{.*}}, %c0_i32{{[_0-9]*}} selector 17217
// CHECK-NOT: lb.pair_arith
// CHECK: lb.mma
func.func @u8raw(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui8>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<64x1024xui8>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// Signed codes keep the normalizing decode in the same family.
// CHECK-LABEL: func.func @s4split__mma
// CHECK: lb.pair_arith {{(sub|fma)}} f16
func.func @s4split(%x: tensor<?x1024xf16>, %w: tensor<64x1024xsi4>, %s: tensor<64x8xf16>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 4>
      : (tensor<?x1024xf16>, tensor<64x1024xsi4>, tensor<64x8xf16>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// Zero points (lb.decode ... minus): after the magic is removed, each
// register loses its zero, rounded once to the value type and splatted; a
// gemv_row unit has one zero for all 16 registers.
// CHECK-LABEL: func.func @zero__gemv
// CHECK: %[[Z:.*]] = lb.load_scalar %arg3
// CHECK: lb.pair_arith fma bf16
// CHECK: %[[P:.*]] = lb.pack_f32_pair %[[Z]], %[[Z]] as bf16
// CHECK-COUNT-16: lb.pair_arith sub bf16 %{{.*}}, %[[P]]
// CHECK: lb.pack_pairs
func.func @zero(%x: tensor<?x1024xbf16>, %w: tensor<64x1024xui4>, %s: tensor<64xbf16>, %z: tensor<64xbf16>) -> tensor<?x64xbf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xbf16>) quant <granularity = channel, scale = bf16, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xbf16>, tensor<64x1024xui4>, tensor<64xbf16>) -> tensor<?x64xbf16>
  return %y : tensor<?x64xbf16>
}

// f32 zeros with f16 values: the remainder z - round(z), exact in f32, is
// subtracted second.
// CHECK-LABEL: func.func @residual__gemv
// CHECK: %[[Z:.*]] = lb.load_scalar %arg3
// CHECK: %[[HI:.*]] = lb.pack_f32_pair %[[Z]], %[[Z]] as f16
// CHECK: %[[R:.*]] = lb.round_to %[[Z]] as f16
// CHECK: %[[REM:.*]] = arith.subf %[[Z]], %[[R]]
// CHECK: %[[LO:.*]] = lb.pack_f32_pair %[[REM]], %[[REM]] as f16
// CHECK: %[[C:.*]] = lb.pair_arith sub f16 %{{.*}}, %[[HI]]
// CHECK: lb.pair_arith sub f16 %[[C]], %[[LO]]
func.func @residual(%x: tensor<?x1024xf16>, %w: tensor<64x1024xui4>, %s: tensor<64xf32>, %z: tensor<64xf32>) -> tensor<?x64xf16> {
  %y = lb.qmatmul %x, %w, %s zeros(%z : tensor<64xf32>) quant <granularity = channel, scale = f32, zero = sub_code>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x1024xf16>, tensor<64x1024xui4>, tensor<64xf32>) -> tensor<?x64xf16>
  return %y : tensor<?x64xf16>
}

// -----

// 6 bits, f16, two planes: a unit is 4 low words then 2 high words. Each
// register's low field takes the 4-bit lop3 (mask 0x000F000F = 983055 at p = 0,
// 0x00F000F0 = 15728880 at p = 4, magic 0x64006400 = 1677747200); a second
// lop3 then brings in both halves' high parts from one shifted high word
// (mask 0x00300030 = 3145776 above p = 0, 0x03000300 = 50332416 above p = 4).
// CHECK-LABEL: func.func @u6__gemv
// CHECK: %[[UNIT:.*]] = lb.load_codes {{.*}} : memref<256x2048xui6> -> vector<6xi32>
// CHECK: %[[L0:.*]] = lb.extract_word %[[UNIT]][0]
// CHECK: %[[H0:.*]] = lb.extract_word %[[UNIT]][4]
// CHECK: %[[S4:.*]] = arith.shli %[[H0]], %c4_i32
// CHECK: %[[F0:.*]] = lb.lop3 %[[L0]], %c983055_i32, %c1677747200_i32 lut 106
// CHECK: lb.lop3 %[[S4]], %c3145776_i32, %[[F0]] lut 106
// CHECK: lb.pair_arith sub f16
// CHECK: %[[F1:.*]] = lb.lop3 %{{.*}}, %c983055_i32{{[_0-9]*}}, %c1677747200_i32{{[_0-9]*}} lut 106
// CHECK: lb.lop3 %[[H0]], %c3145776_i32{{[_0-9]*}}, %[[F1]] lut 106
// CHECK: %[[S6:.*]] = arith.shli %[[H0]], %c6_i32
// CHECK: %[[F2:.*]] = lb.lop3 %[[L0]], %c15728880_i32, %c1677747200_i32{{[_0-9]*}} lut 106
// CHECK: lb.lop3 %[[S6]], %c50332416_i32, %[[F2]] lut 106
// CHECK: lb.pair_arith fma f16
// CHECK: lb.pack_pairs {{.*}} : vector<32xf16>
func.func @u6(%x: tensor<?x2048xf16>, %w: tensor<256x2048xui6>, %s: tensor<256x16xf16>) -> tensor<?x256xf16> {
  %y = lb.qmatmul %x, %w, %s quant <granularity = group, group_size = 128, scale = f16>
      schedule <family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>
      : (tensor<?x2048xf16>, tensor<256x2048xui6>, tensor<256x16xf16>) -> tensor<?x256xf16>
  return %y : tensor<?x256xf16>
}

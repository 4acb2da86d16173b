// RUN: lowbit-opt %s --lb-lower-decode --split-input-file | FileCheck %s

// Decodes to s8 bytes for the integer tensor cores (core::s8Decode): no
// float arithmetic, no per-element shifts.

// int8: the loaded words are the bytes; nothing is emitted but the word
// extraction. A unit of 32 codes is 8 words, 8 registers.
// CHECK-LABEL: func.func @from_si8
// CHECK-NOT: lb.lop3
// CHECK-NOT: arith.xori
// CHECK: %[[W0:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[W7:.*]] = lb.extract_word %{{.*}}[7]
// CHECK: lb.pack_pairs %[[W0]], {{.*}}, %[[W7]] : vector<32xi8>
func.func @from_si8(%w: vector<8xi32>) -> vector<32xi8> {
  %v = lb.decode %w as si8 : vector<8xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// -----

// uint8: one xor with 0x80808080 (-2139062144) per word re-centres four
// codes (q − 128).
// CHECK-LABEL: func.func @from_ui8
// CHECK-COUNT-8: arith.xori %{{.*}}, %c-2139062144_i32{{[_0-9]*}}
// CHECK-NOT: lb.lop3
// CHECK: lb.pack_pairs {{.*}} : vector<32xi8>
func.func @from_ui8(%w: vector<8xi32>) -> vector<32xi8> {
  %v = lb.decode %w as ui8 : vector<8xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// -----

// uint4: per word one shift by 4 (the even nibbles) and two lop3 (a & b) ^ c
// (lut 106) with the nibble-top mask 0xF0F0F0F0 (-252645136) and the flip
// 0x80808080: bytes 16·(q − 8). Register 0 holds the even fields.
// CHECK-LABEL: func.func @from_ui4
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[EVEN:.*]] = arith.shli %[[W]], %c4_i32{{[_0-9]*}}
// CHECK: lb.lop3 %[[EVEN]], %c-252645136_i32{{[_0-9]*}}, %c-2139062144_i32{{[_0-9]*}} lut 106
// CHECK: lb.lop3 %[[W]], %c-252645136_i32{{[_0-9]*}}, %c-2139062144_i32{{[_0-9]*}} lut 106
// CHECK: lb.extract_word %{{.*}}[3]
// CHECK: lb.pack_pairs {{.*}} : vector<32xi8>
func.func @from_ui4(%w: vector<4xi32>) -> vector<32xi8> {
  %v = lb.decode %w as ui4 : vector<4xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// -----

// int4: the same lop3s without the flip (c = 0): bytes 16·q.
// CHECK-LABEL: func.func @from_si4
// CHECK: arith.shli %{{.*}}, %c4_i32{{[_0-9]*}}
// CHECK: lb.lop3 %{{.*}}, %c-252645136_i32{{[_0-9]*}}, %c0_i32{{[_0-9]*}} lut 106
// CHECK-NOT: arith.xori
func.func @from_si4(%w: vector<4xi32>) -> vector<32xi8> {
  %v = lb.decode %w as si4 : vector<4xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// -----

// ternary (uint2 with offset -1): per word three shifts (by 6, 4 and 2) and
// four lop3 (a & b) ^ c with the 2-bit-top mask 0xC0C0C0C0 (-1061109568) and
// the flip: bytes 64·(v − 1), register j holding field j of every byte.
// CHECK-LABEL: func.func @from_ternary
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[S6:.*]] = arith.shli %[[W]], %c6_i32{{[_0-9]*}}
// CHECK: lb.lop3 %[[S6]], %c-1061109568_i32{{[_0-9]*}}, %c-2139062144_i32{{[_0-9]*}} lut 106
// CHECK: arith.shli %[[W]], %c4_i32
// CHECK: arith.shli %[[W]], %c2_i32
// CHECK: lb.lop3 %[[W]], %c-1061109568_i32{{[_0-9]*}}, %c-2139062144_i32{{[_0-9]*}} lut 106
// CHECK: lb.pack_pairs {{.*}} : vector<32xi8>
func.func @from_ternary(%w: vector<2xi32>) -> vector<32xi8> {
  %v = lb.decode %w as !lb.int<bits = 2, offset = -1, ternary = true> : vector<2xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// -----

// uint1 (binary weights): per word seven shifts (by 7 .. 1) and eight lop3
// (a & b) ^ c with the top-bit mask 0x80808080 (-2139062144), which is also
// the flip: bytes 128·(v − 1), register j holding field j of every byte.
// CHECK-LABEL: func.func @from_ui1
// CHECK: %[[W:.*]] = lb.extract_word %{{.*}}[0]
// CHECK: %[[S7:.*]] = arith.shli %[[W]], %c7_i32{{[_0-9]*}}
// CHECK: lb.lop3 %[[S7]], %c-2139062144_i32{{[_0-9]*}}, %c-2139062144_i32{{[_0-9]*}} lut 106
// CHECK: arith.shli %[[W]], %c1_i32
// CHECK: lb.lop3 %[[W]], %c-2139062144_i32{{[_0-9]*}}, %c-2139062144_i32{{[_0-9]*}} lut 106
// CHECK-NOT: lb.extract_word %{{.*}}[1]
// CHECK: lb.pack_pairs {{.*}} : vector<32xi8>
func.func @from_ui1(%w: vector<1xi32>) -> vector<32xi8> {
  %v = lb.decode %w as ui1 : vector<1xi32> -> vector<32xi8>
  return %v : vector<32xi8>
}

// A CPU interpreter of the bit-level sequences lb-lower-decode emits (the
// decode of passes/DecodeStrategy.cpp and its zero-point subtraction): i32
// and f32 SSA values as their bits, f16x2 / bf16x2 arithmetic modelled
// exactly (HostHalf.h). Any other op fails the test.
#pragma once

#include "ir/LbOps.h"
#include "tests/unit/codegen/device/HostHalf.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

namespace lowbit::testing {

using half::Fp16Kind;

inline float asFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline uint32_t asBits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// prmt.b32's default mode: selector nibble i picks byte (nibble & 7) of
// {b, a}; with the nibble's bit 3 set, that byte's sign bit fills the byte.
inline uint32_t prmt(uint32_t a, uint32_t b, uint32_t selector) {
  uint64_t bytes = uint64_t{a} | uint64_t{b} << 32;
  uint32_t d = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t nibble = (selector >> (4 * i)) & 0xF;
    uint32_t byte = static_cast<uint32_t>((bytes >> (8 * (nibble & 7))) & 0xFF);
    if (nibble & 8)
      byte = byte & 0x80 ? 0xFF : 0x00;
    d |= byte << (8 * i);
  }
  return d;
}

// Values of the interpreted SSA names: i32 and f32 as their bits.
class Interpreter {
public:
  explicit Interpreter(Fp16Kind kind) : kind_(kind) {}

  void bind(mlir::Value v, uint32_t bits) { values_[v.getAsOpaquePointer()] = bits; }
  uint32_t get(mlir::Value v) const { return values_.at(v.getAsOpaquePointer()); }

  // Fails the test on an op the decode should not emit.
  void run(mlir::Operation &op) {
    auto in = [&](unsigned i) { return get(op.getOperand(i)); };
    uint32_t out = 0;
    if (auto c = mlir::dyn_cast<mlir::arith::ConstantOp>(op)) {
      if (auto i = mlir::dyn_cast<mlir::IntegerAttr>(c.getValue()))
        out = static_cast<uint32_t>(i.getValue().getZExtValue());
      else
        out = asBits(
            static_cast<float>(mlir::cast<mlir::FloatAttr>(c.getValue()).getValueAsDouble()));
    } else if (mlir::isa<mlir::arith::ShRUIOp>(op)) {
      out = in(0) >> in(1);
    } else if (mlir::isa<mlir::arith::ShLIOp>(op)) {
      out = in(0) << in(1);
    } else if (mlir::isa<mlir::arith::OrIOp>(op)) {
      out = in(0) | in(1);
    } else if (mlir::isa<mlir::arith::XOrIOp>(op)) {
      out = in(0) ^ in(1);
    } else if (mlir::isa<mlir::arith::AndIOp>(op)) {
      out = in(0) & in(1);
    } else if (mlir::isa<mlir::arith::BitcastOp>(op)) {
      out = in(0);
    } else if (mlir::isa<mlir::arith::SubFOp>(op)) {
      out = asBits(asFloat(in(0)) - asFloat(in(1)));
    } else if (auto lop3 = mlir::dyn_cast<lb::Lop3Op>(op)) {
      out = half::lop3(in(0), in(1), in(2), static_cast<unsigned>(lop3.getLut()));
    } else if (auto p = mlir::dyn_cast<lb::PrmtOp>(op)) {
      out = prmt(in(0), in(1), static_cast<uint32_t>(p.getSelector()));
    } else if (mlir::isa<lb::PrmtLookupOp>(op)) {
      out = prmt(in(0), in(1), in(2));
    } else if (auto pack = mlir::dyn_cast<lb::PackF32PairOp>(op)) {
      Fp16Kind kind = pack.getElement().isBF16() ? Fp16Kind::BF16 : Fp16Kind::F16;
      out = half::fromDouble(kind, asFloat(in(0))) |
            uint32_t{half::fromDouble(kind, asFloat(in(1)))} << 16;
    } else if (auto round = mlir::dyn_cast<lb::RoundToOp>(op)) {
      Fp16Kind kind = round.getElement().isBF16() ? Fp16Kind::BF16 : Fp16Kind::F16;
      out =
          asBits(static_cast<float>(half::toDouble(kind, half::fromDouble(kind, asFloat(in(0))))));
    } else if (auto pair = mlir::dyn_cast<lb::PairArithOp>(op)) {
      EXPECT_EQ(pair.getElement().isBF16(), kind_ == Fp16Kind::BF16);
      switch (pair.getOp()) {
      case lb::PairOp::sub: out = half::sub16x2(kind_, in(0), in(1)); break;
      case lb::PairOp::fma: out = half::fma16x2(kind_, in(0), in(1), in(2)); break;
      }
    } else {
      ADD_FAILURE() << "unexpected op in a decode sequence: " << op.getName().getStringRef().str();
      return;
    }
    bind(op.getResult(0), out);
  }

private:
  Fp16Kind kind_;
  std::map<const void *, uint32_t> values_;
};

} // namespace lowbit::testing

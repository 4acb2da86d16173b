// The wgmma family with 8-bit operands (TileWgmma.cpp builds the kernel).
//
// s8 activations (core::checkQuantizedActivation) take the integer form:
// one wgmma k32 step is a whole 32-wide block, whose two k16 units decode to
// s8 bytes and together are a slice's A fragment (lb.pack_a_fragment_s8, as
// in the split-K mma); x is staged as s8 in its paired order
// (core::pairedS8SlotOfK), 64-byte rows in the hardware's 64-byte swizzle;
// the sums are s32 and exact. Codes centred on c != 0 (unsigned, ternary,
// binary) add 2^shift c Σx after the loop, Σx from one more wgmma a step
// whose A is all ones. e4m3 activations take the fp8 form the same way,
// e4m3fn weights being their own bytes, with f32 sums. Weight scales (per channel or per tensor,
// with the decode's 2^-shift) and x's token scales apply once, after the loop
// (lb.scale_wgmma_sums), so no quant is loaded in it; group scales (whole K
// tiles) close each group's s32 sums into f32 ones after its last tile
// (lb.accumulate_wgmma_group), with the tile's quant loaded as for f16.
#include "passes/TileWgmma.h"

#include <cmath>

namespace lowbit::passes::wgmma {

SmallVector<Value> WgmmaBuilder::blockFragmentsS8(const TileLoads &loads, int64_t block) {
  auto aType = VectorType::get({16}, b.getI8Type());
  SmallVector<Value> units;
  for (int64_t step = block * kStepsPerBlock; step < (block + 1) * kStepsPerBlock; ++step)
    units.push_back(
        decodeUnit(b, loc, p, {loads.codeLoads[loads.stepLoad[step]], loads.stepUnit[step]}));
  SmallVector<Value> fragments;
  for (int64_t r = 0; r < kSlices; ++r)
    fragments.push_back(
        b.create<lb::PackAFragmentS8Op>(loc, aType, units[0], units[1], b.getI64IntegerAttr(r)));
  return fragments;
}

Value WgmmaBuilder::byteScale(Value scale) {
  core::S8Decode decode = p.byteDecode();
  if (!decode.shift)
    return scale;
  Value factor = b.create<arith::ConstantOp>(
      loc, b.getF32FloatAttr(static_cast<float>(std::ldexp(1.0, -decode.shift))));
  return b.create<arith::MulFOp>(loc, scale, factor);
}

void WgmmaBuilder::storeS8(ArrayRef<Value> sums, Value warpN0, Value group, Value m0) {
  SmallVector<Value> scales;
  Value one = b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(1.f));
  for (int64_t s = 0; s < kSubtilesPerLoad; ++s) {
    if (groupedS8()) {
      scales.push_back(one);
      continue;
    }
    ColumnQuant q = loadColumnQuant(b, loc, p, add(warpN0, add(index(8 * s), group)), index(0));
    scales.push_back(byteScale(q.scale));
  }
  auto f32Type = VectorType::get({tileM() / 2}, b.getF32Type());
  for (int64_t r = 0; r < kSlices; ++r) {
    Value values = b.create<lb::ScaleWgmmaSumsOp>(loc, f32Type, sums[r], scales[2 * r],
                                                  scales[2 * r + 1], p.xScales, m0, p.rows);
    b.create<lb::StoreWgmmaAccumulatorOp>(loc, values, p.y, m0, add(warpN0, index(16 * r)), p.rows);
  }
}

void WgmmaBuilder::closeGroups(Value t, SmallVector<Value> &acc, SmallVector<Value> &closedSums,
                               const TileLoads &tile, Value zero, Value ones) {
  const int64_t tilesPerGroup = p.quant.getGroupSize() / kTileK;
  auto close = [&]() {
    SmallVector<Value> results;
    for (int64_t r = 0; r < kSlices; ++r) {
      Value sum = acc[r];
      if (ones) {
        core::S8Decode decode = p.byteDecode();
        sum = b.create<lb::AddTokenSumsOp>(
            loc, sum.getType(), sum, acc[kSlices],
            b.getI64IntegerAttr(int64_t{decode.centre} << decode.shift));
      }
      results.push_back(b.create<lb::AccumulateWgmmaGroupOp>(
          loc, closedSums[r].getType(), closedSums[r], sum, byteScale(tile.scales[2 * r]),
          byteScale(tile.scales[2 * r + 1])));
    }
    return results;
  };
  if (tilesPerGroup == 1) {
    closedSums = close();
    std::fill(acc.begin(), acc.end(), zero);
    return;
  }
  Value last = cmp(arith::CmpIPredicate::eq, rem(add(t, index(1)), tilesPerGroup), index(0));
  SmallVector<Type> types;
  for (Value v : acc)
    types.push_back(v.getType());
  for (Value v : closedSums)
    types.push_back(v.getType());
  auto branch = b.create<scf::IfOp>(loc, types, last, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    SmallVector<Value> yielded(acc.size(), zero);
    SmallVector<Value> sums = close();
    yielded.append(sums.begin(), sums.end());
    b.create<scf::YieldOp>(loc, yielded);
    b.setInsertionPointToStart(branch.elseBlock());
    SmallVector<Value> kept = acc;
    kept.append(closedSums.begin(), closedSums.end());
    b.create<scf::YieldOp>(loc, kept);
  }
  for (size_t i = 0; i < acc.size(); ++i)
    acc[i] = branch.getResult(i);
  for (size_t i = 0; i < closedSums.size(); ++i)
    closedSums[i] = branch.getResult(acc.size() + i);
}

} // namespace lowbit::passes::wgmma

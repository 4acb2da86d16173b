// The wgmma family's split tail (scheduler = stream_k; TileWgmma.cpp runs
// the whole tiles before it): which pieces of the tail's tiles a block runs,
// and how the pieces of one tile meet in the caller's workspace.
#include "passes/TileWgmma.h"

namespace lowbit::passes::wgmma {

void WgmmaBuilder::forEachTailPiece(Value firstTailTile, Value tailTiles, Value rowTiles,
                                    Value wholeKTiles,
                                    llvm::function_ref<void(const OutputTile &)> body) {
  const int64_t kTiles = p.k / kTileK;
  Value blocks = coord(lb::ThreadCoord::grid_x), block = coord(lb::ThreadCoord::block_x);
  Value units = mul(tailTiles, index(kTiles));
  Value runBegin = b.create<arith::DivUIOp>(loc, mul(block, units), blocks);
  Value runEnd = b.create<arith::DivUIOp>(loc, mul(add(block, index(1)), units), blocks);
  Value firstPiece = div(runBegin, kTiles);
  Value endPiece = div(add(runEnd, index(kTiles - 1)), kTiles);
  Value pieces =
      b.create<arith::SelectOp>(loc, cmp(arith::CmpIPredicate::ult, runBegin, runEnd),
                                b.create<arith::SubIOp>(loc, endPiece, firstPiece), index(0));
  auto loop = b.create<scf::ForOp>(loc, index(0), pieces, index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value tailTile =
      b.create<lb::WarpUniformOp>(loc, b.getIndexType(), add(firstPiece, loop.getInductionVar()));
  Value tileBegin = mul(tailTile, index(kTiles));
  Value kBegin =
      b.create<arith::SubIOp>(loc, b.create<arith::MaxUIOp>(loc, runBegin, tileBegin), tileBegin);
  Value kEnd = b.create<arith::SubIOp>(
      loc, b.create<arith::MinUIOp>(loc, runEnd, add(tileBegin, index(kTiles))), tileBegin);
  Value linear = add(firstTailTile, tailTile);
  OutputTile tile = tileAt(linear, rowTiles);
  // The ring has run the whole tiles' K tiles, then the run's up to here.
  tile.ringBase = add(wholeKTiles, b.create<arith::SubIOp>(loc, add(tileBegin, kBegin), runBegin));
  tile.kBegin = kBegin;
  tile.kCount = b.create<arith::SubIOp>(loc, kEnd, kBegin);
  tile.tailTile = tailTile;
  tile.tailUnits = units;
  body(tile);
}

void WgmmaBuilder::finishTailPiece(const OutputTile &tile, SmallVector<Value> sums,
                                   Value consumerWarp, Value warpN0) {
  const int64_t kTiles = p.k / kTileK;
  Value blocks = coord(lb::ThreadCoord::grid_x), block = coord(lb::ThreadCoord::block_x);
  // Block c's slots of this warp's accumulators, and its flag after every
  // block's partials (core::streamKPartialBytes, streamKFlagBytes).
  auto slotOf = [&](Value c, int64_t r) {
    return add(mul(add(mul(c, index(consumerWarps())), consumerWarp), index(slices())), index(r));
  };
  const int64_t slotFloats = tileM() / 2 * 32;
  auto flagOf = [&](Value c) {
    Value partialFloats = mul(blocks, index(consumerWarps() * slices() * slotFloats));
    return add(partialFloats, add(mul(c, index(consumerWarps())), consumerWarp));
  };
  auto writes = b.create<scf::IfOp>(loc, cmp(arith::CmpIPredicate::ugt, tile.kBegin, index(0)),
                                    /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(writes.thenBlock());
  for (int64_t r = 0; r < slices(); ++r)
    b.create<lb::StoreWgmmaPartialsOp>(loc, sums[r], p.workspace, slotOf(block, r));
  b.create<lb::ReleaseFlagOp>(loc, p.workspace, flagOf(block));

  // The tile's last K tile is in the run of block (u + 1) P - 1) / U (u its
  // index in the tail: the last block whose run begins at or before it).
  // Every block between has a piece of the tile: no run is empty, because
  // the launch never has more blocks than K tiles of all the tiles
  // (kernels::launchShape): U >= P with whole waves (U >= P x K tiles)
  // and without (U is all of them).
  b.setInsertionPointToStart(writes.elseBlock());
  Value lastUnit = add(mul(tile.tailTile, index(kTiles)), index(kTiles - 1));
  Value lastBlock = b.create<arith::DivUIOp>(
      loc, b.create<arith::SubIOp>(loc, mul(add(lastUnit, index(1)), blocks), index(1)),
      tile.tailUnits);
  auto others =
      b.create<scf::ForOp>(loc, add(block, index(1)), add(lastBlock, index(1)), index(1), sums);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(others.getBody());
    Value c = others.getInductionVar();
    ValueRange partial = others.getRegionIterArgs();
    b.create<lb::WaitFlagOp>(loc, p.workspace, flagOf(c));
    SmallVector<Value> added;
    for (int64_t r = 0; r < slices(); ++r)
      added.push_back(b.create<lb::AddWgmmaPartialsOp>(loc, partial[r].getType(), partial[r],
                                                       p.workspace, slotOf(c, r)));
    b.create<scf::YieldOp>(loc, added);
  }
  for (int64_t r = 0; r < slices(); ++r)
    b.create<lb::StoreWgmmaAccumulatorOp>(loc, others.getResult(r), p.y, tile.m0,
                                          add(warpN0, index(16 * (firstSlice + r))), p.rows);
}

} // namespace lowbit::passes::wgmma

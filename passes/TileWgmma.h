// The wgmma family's builder (lb-tile), shared by its three files:
// TileWgmma.cpp (the kernel, its producer and consumers, 16-bit operands),
// TileWgmmaS8.cpp (the 8-bit operands' fragments and epilogues) and
// TileWgmmaStreamK.cpp (stream-K's split tail).
#pragma once

#include "core/ScheduleRules.h"
#include "ir/CoreConversion.h"
#include "passes/SplitKLoops.h"
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace lowbit::passes::wgmma {

using namespace mlir;

constexpr int64_t kColumnsPerWarp = core::kColumnsPerUnit; // one layout tile
constexpr int64_t kSlices = core::kWgmmaSlicesPerTile;
constexpr int64_t kTileK = core::kWgmmaTileK;
constexpr int64_t kSteps = kTileK / core::kUnitK; // k16 steps per K tile
constexpr int64_t kStepsPerBlock = core::kBlockK / core::kUnitK;
constexpr int64_t kBlocks = kTileK / core::kBlockK; // s8 k32 steps per K tile
constexpr int64_t kSubtilesPerLoad = core::kSubtilesPerUnit;
constexpr int64_t kProducerThreads = core::Schedule::kProducerThreads;
static_assert(kSubtilesPerLoad == 2 * kSlices, "a 16-row slice is two 8-column subtiles");
// setmaxnreg with two consumer warpgroups: the producer keeps 40 registers a
// thread, the consumers take 232 (128 x 40 + 256 x 232 <= 65536).
constexpr int64_t kProducerRegisters = 40, kConsumerRegisters = 232;

struct WgmmaBuilder : TileBuilderBase {
  Value div(Value a, int64_t c) { return b.create<arith::DivUIOp>(loc, a, index(c)); }
  Value rem(Value a, int64_t c) { return b.create<arith::RemUIOp>(loc, a, index(c)); }
  Value cmp(arith::CmpIPredicate pred, Value a, Value c) {
    return b.create<arith::CmpIOp>(loc, pred, a, c);
  }
  template <typename Body> void ifThen(Value condition, Body body) {
    auto branch = b.create<scf::IfOp>(loc, condition, false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(branch.thenBlock());
    body();
  }

  // 8-bit operands (s8 or e4m3 activations): k32 steps, scales after the loop.
  bool byteOperands() const { return p.quantizedActivations(); }
  // s8 with group scales: each group's s32 sums close into f32.
  bool groupedS8() const {
    return byteOperands() && p.quant.getGranularity() == lb::ScaleGranularity::group;
  }
  // s8 bytes centred off 0 (core::s8Decode): Σx restores the centre.
  bool centreS8() const { return byteOperands() && p.byteDecode().centre != 0; }
  int64_t tileM() const { return p.schedule.getTile()[0]; }
  int64_t tileN() const { return p.schedule.getTile()[1]; }
  int64_t stages() const { return p.schedule.getStages(); }
  int64_t consumerWarps() const { return p.schedule.getWarps()[1]; }
  int64_t clusterK() const { return p.schedule.getClusterK(); }
  bool sharesTiles() const { return core::wgmmaSharesTiles(lb::coreSchedule(p.schedule)); }
  // Whether the consumer's wgmmas run on from one K tile into the next
  // (core::wgmmaOverlapsKTiles), or drain at the end of each.
  bool overlapsKTiles() const {
    Expected<core::Problem> problem = p.coreProblem();
    return problem && core::wgmmaOverlapsKTiles(*problem, lb::coreSchedule(p.schedule));
  }

  // The slices this consumer warp multiplies: firstSlice .. firstSlice +
  // slices - 1 of its layout tile (all four, or its warpgroup's two where
  // warpgroups share tiles); accumulator i is slice firstSlice + i.
  int64_t firstSlice = 0;
  int64_t slices() const { return core::wgmmaSlicesPerWarp(lb::coreSchedule(p.schedule)); }
  int64_t firstSubtile() const { return 2 * firstSlice; }
  int64_t subtiles() const { return 2 * slices(); }
  // Sets of subtile quant a K tile takes: one per 32-wide block where the
  // groups are shorter than the tile, else one.
  int64_t quantSets() const {
    const bool shortGroups =
        p.quant.getGranularity() == lb::ScaleGranularity::group && p.quant.getGroupSize() < kTileK;
    return shortGroups ? kTileK / core::kBlockK : 1;
  }

  // What one K tile's consumer needs loaded, in the order build() carries it
  // through the loop: the distinct code loads, then every non-null quant
  // value (subtile scales, then biases, then zeros).
  struct TileLoads {
    SmallVector<Value> codeLoads;
    // Step j's codes: codeLoads[stepLoad[j]], unit stepUnit[j].
    SmallVector<int64_t> stepLoad, stepUnit;
    // Set q's subtile s at index q * kSubtilesPerLoad + s (quantSets());
    // null where absent.
    SmallVector<Value> scales, biases, zeros;

    SmallVector<Value> flatten() const {
      SmallVector<Value> all(codeLoads.begin(), codeLoads.end());
      for (ArrayRef<Value> list :
           {ArrayRef<Value>(scales), ArrayRef<Value>(biases), ArrayRef<Value>(zeros)})
        for (Value v : list)
          if (v)
            all.push_back(v);
      return all;
    }
    // The same structure over `values` (flatten()'s order).
    TileLoads rebind(ValueRange values) const {
      TileLoads out = *this;
      size_t next = 0;
      for (Value &v : out.codeLoads)
        v = values[next++];
      for (SmallVector<Value> *list : {&out.scales, &out.biases, &out.zeros})
        for (Value &v : *list)
          if (v)
            v = values[next++];
      return out;
    }
  };

  // The warp's codes of its layout tile at columns n0 and the K tile at k0
  // (with a stage: the tile's offset in the block's staged tile N x 64
  // codes, and 0), and its subtiles' quantization there (per 32-wide block
  // for short groups, at the lane's half of it for groups of 16).
  TileLoads loadTile(Value n0, Value group, const HalfBlockLane &half, Value k0);
  void loadCodes(TileLoads &loads, Value weights, Value stage, Value n0, Value k0);
  void loadQuant(TileLoads &loads, Value n0, Value group, const HalfBlockLane &half, Value k0);

  // Step j's A fragments, one per slice the warp multiplies: decoded, zero
  // points off, scaled (as the split-K mma does without period sums). The
  // decode covers the whole unit; what the other slices would take is dead.
  SmallVector<Value> stepFragments(const TileLoads &loads, int64_t step);

  // s8: block `block`'s A fragments, one per 16-row slice: its two k16
  // units decoded to bytes, paired into m16 x k32 fragments.
  SmallVector<Value> blockFragmentsS8(const TileLoads &loads, int64_t block);

  // The weight scales of the bytes: 2^-shift folds into them.
  Value byteScale(Value scale);

  // s8 (or e4m3): the warp's sums as f32 in y, each scaled once: its
  // subtiles' weight scales (times the decode's 2^-shift; none for group
  // scales, which the closed groups took) and its tokens' scales.
  void storeS8(ArrayRef<Value> sums, Value warpN0, Value group, Value m0);

  void build();

  // An output tile: its first column and row, and (persistent blocks only;
  // null otherwise) where the tile's K tiles fill the ring a whole number of
  // times, how many rounds of the ring the block ran before it, else how
  // many K tiles.
  struct OutputTile {
    Value n0, m0, ringBase, ringRounds;
    // scheduler = stream_k, a tile of the split tail (null otherwise): the
    // block runs its K tiles kBegin .. kBegin + kCount - 1; it is tile
    // tailTile of the tail, whose tailUnits K tiles the blocks share.
    Value kBegin, kCount, tailTile, tailUnits;
    // The K tiles the block runs (the tile's, or from firstTile runTiles of
    // them for a whole tile, cluster_k's run of it for a cluster's block).
    Value firstKTile(Value firstTile) const { return kBegin ? kBegin : firstTile; }
  };
  // Where K tile u of `tile` sits in the ring: its stage and how many times
  // the stage was used before (its barrier phase). Where a tile fills whole
  // rounds, the stage is u mod S as with a block a tile: the shared-memory
  // address then stays in uniform registers (with (base + u) mod S, ptxas
  // moved it from vector registers before each wgmma, 21 more instructions
  // a K tile at t128x256).
  struct RingSlot {
    Value stage, uses;
  };
  RingSlot ringSlot(const OutputTile &tile, Value u);
  // Tile `linear` of the output, row tiles fastest (as in the split-K mma:
  // the row tiles of a column tile run side by side and share its weights
  // in L2).
  OutputTile tileAt(Value linear, Value rowTiles);
  // Builds `body` for the block's output tile, or (scheduler = persistent)
  // inside a loop over the tiles blockIdx.x, blockIdx.x + gridDim.x, ...;
  // stream_k loops over its whole tiles (core::streamKWholeTiles), then
  // over the pieces of its run of the split tail (forEachTailPiece).
  void forEachOutputTile(int64_t runTiles, llvm::function_ref<void(const OutputTile &)> body);
  // The whole tiles blockIdx.x, + gridDim.x, ... below `end`.
  void forEachWholeTile(Value end, Value rowTiles, int64_t runTiles,
                        llvm::function_ref<void(const OutputTile &)> body);
  // Stream-K's tail: its `tailTiles` tiles from `firstTailTile` hold
  // tailTiles x K tiles, cut into gridDim.x runs of equal length (within
  // one); block b takes K tiles b U / P .. (b + 1) U / P - 1 of them (U
  // tail K tiles, P blocks), a piece of each tile they touch. Its ring goes
  // on from `wholeKTiles`, the K tiles of its whole tiles.
  void forEachTailPiece(Value firstTailTile, Value tailTiles, Value rowTiles, Value wholeKTiles,
                        llvm::function_ref<void(const OutputTile &)> body);
  // The K tiles `tile` runs: runTiles, or a tail piece's.
  Value kTileCount(const OutputTile &tile, int64_t runTiles) {
    return tile.kCount ? tile.kCount : index(runTiles);
  }
  // Stream-K's epilogue of a tail piece: a piece that does not start the
  // tile leaves its partial sums in the block's slots of the workspace and
  // sets its flags; the piece that starts it adds, in block order, the
  // partials of every later block whose run reaches into the tile, then
  // stores y (a whole tile adds none).
  void finishTailPiece(const OutputTile &tile, SmallVector<Value> sums, Value consumerWarp,
                       Value warpN0);

  // The producer warpgroup fills stage u mod S with the run's K tile u once
  // the consumers have released the tile that used it S tiles before: the
  // block's codes first where there is a weight ring, then x, whose copy's
  // arrival on `full` covers every copy the thread issued before it.
  void buildProducer(Value ring, Value weightRing, Value full, Value empty, const OutputTile &tile,
                     Value firstTile, int64_t runTiles);

  // Group scales with s8: after the group's last K tile (t + 1 a multiple
  // of its tiles) its s32 sums (with 2^shift c Σx for codes centred off 0)
  // close into the f32 ones, scaled by the tile's group scales, and start
  // again from zero.
  void closeGroups(Value t, SmallVector<Value> &acc, SmallVector<Value> &closedSums,
                   const TileLoads &tile, Value zero, Value ones);

  // Where warpgroups share the block's layout tiles, warp q of warpgroup g
  // loads tile q and multiplies its slices 2 g and 2 g + 1: which registers
  // of the decoded unit those are is fixed when the kernel is built, so each
  // warpgroup gets its own copy of the loop. Never a copy per warp: the four
  // warps of a warpgroup must issue the same wgmma.sync.aligned instruction
  // (a copy per warp gave wrong sums, docs/measurements stop 47).
  void buildConsumer(Value ring, Value weightRing, Value full, Value empty, Value partials,
                     Value lane, Value warp, const OutputTile &tile, Value firstTile,
                     int64_t runTiles);

  // One consumer warp's loop over the run's K tiles and its epilogue, for
  // the slices firstSlice .. of layout tile `layoutTile` of the block. Its
  // codes come from global memory a tile ahead, or from the weight ring
  // once the stage is full; its quant always a tile ahead.
  void consumeSlices(Value ring, Value weightRing, Value full, Value empty, Value partials,
                     Value lane, Value consumerWarp, Value layoutTile, const OutputTile &tile,
                     Value firstTile, int64_t runTiles);

  // cluster_k: every block keeps its partial sums of each warp's slices;
  // after a cluster barrier block rank r adds up, in rank order, the slices
  // r, r + cluster_k, ... and stores them; a second barrier keeps each
  // block's partials alive until the others have read them.
  void finishAcrossCluster(Value partials, ValueRange sums, Value consumerWarp, Value warpN0,
                           Value m0);
};

} // namespace lowbit::passes::wgmma

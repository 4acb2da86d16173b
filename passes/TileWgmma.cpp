// The wgmma family (sm_90a, large M): warpgroup-wide wgmma.mma_async with the
// decoded weights as the register A operand.
//
// Like the split-K mma it computes Yᵀ = W·Xᵀ, so the weights are operand A,
// which wgmma takes from registers, and they keep the one weight layout every
// family of a plan shares: a consumer warp's 16-byte mma_b_paired load of a
// 64 x 16 step decodes into the A fragments of the step's four 16-row slices
// (lb.pack_a_fragment), exactly as in the split-K mma. wgmma's m64 is four
// warps' 16 rows, so wgmma r of a step multiplies slice r of all four warps'
// layout tiles: warp q's rows of accumulator r are columns 64 q + 16 r ..
// of the block's tile, and a warpgroup keeps four accumulators of m64 x
// tile M (tile M / 2 floats each per thread). A warp's loads are its own
// 64 columns, so no two warps load the same codes.
//
// Two consumer warpgroups may instead share the block's four layout tiles
// (tile N 256 over warps [1, 8]; core::wgmmaSharesTiles): warpgroup g
// multiplies slices 2 g and 2 g + 1 of every tile, so two accumulators of
// m64 x tile M take the registers four took and tile M doubles to 128, and
// each decoded weight meets twice the tokens. The two warpgroups would load
// every code twice from L2, so the producer copies the block's codes into a
// weight ring next to the activations (lb.copy_codes_async into the stage,
// before the activations, whose arrival on `full` covers both), and the
// consumers read them from the stage once it is full. H100, W4 g128: 28672
// x 8192 at M = 1024 964 -> 868 us, at 4096 4073 -> 3544.
//
// cluster_k splits K across a cluster's blocks: each keeps its warps'
// accumulators in shared memory, and block rank r adds up slice r, r +
// cluster_k, ... of every layout tile over the cluster in rank order
// (finishAcrossCluster), so the result does not depend on timing. With
// shared tiles a warp holds two slices, so the two warpgroups' slices go
// to different ranks. That is what fills the SMs where N gives few 256-column
// tiles (H100, M = 256: 4096 x 14336 115 -> 73 us).
//
// B is tile M rows of x staged in shared memory. The weights' K order inside
// a 32-wide block is the paired one, so the producer warpgroup stages x in
// that order too (lb.copy_paired_activations_async): a 4 x 4 transpose of
// 4-byte pairs, which TMA's 16-byte boxes cannot express, done by cp.async.
// Stages pass from the producer to the consumers on `full` barriers (the
// copies' own arrivals) and back on `empty` barriers (every consumer thread
// arrives once its wgmmas have read the stage).
//
// A consumer iteration takes one 64-wide K tile: it issues the next tile's
// code and scale loads first (carried into the next iteration, so their
// latency hides behind this tile's wgmmas; two tiles ahead spilled 24-320
// bytes at tile M 48 and 64 on sm_90a), waits for its stage, and then for
// each k16 step decodes and scales the step's A fragments and issues its four
// wgmmas; lb.wgmma_wait 1 after each step leaves one step's wgmmas running
// while the next step decodes. Where the decode leaves the registers
// (core::wgmmaOverlapsKTiles) that runs on across K tiles: the previous
// tile's stage goes back once the next tile's first step is the only one
// in flight (its wgmmas have all read it; stages >= 2, so the producer
// never waits on the stage the consumer waits for), and the pipe drains
// only after the last tile. Otherwise each tile drains, then gives its
// stage back.
//
// Groups shorter than the K tile (32: MXFP4, the compact encodings; 16:
// NVFP4, the k-quants' sub-blocks) take one set of subtile quant per 32-wide
// block of the tile: a block's two k16 steps hold the same K values in the
// paired order (core::pairedKOf), so both steps of a block share its set.
// With groups of 16 a lane's 8 values of a block are all in one of the
// block's two groups (core::pairedLanesKeepTheirGroupOf16), so the lane loads
// that group's quant (HalfBlockLane) and the set stays one value a subtile.
//
// scheduler = persistent launches a block an SM (the runtime's min(SMs,
// tiles)); producer and consumers each loop over the tiles blockIdx.x,
// blockIdx.x + gridDim.x, ... (forEachOutputTile). Their stage and barrier
// phase count the K tiles the block has run through its ring, not the
// tile's, so the ring goes on across tiles as in one long loop: the
// producer fills the next tile's stages while the consumers store this
// one's sums, and the barriers are set up once a block.
//
// scheduler = stream_k does the same over its whole tiles (every tile
// where the last wave is at least three-quarters full, else every wave but
// the last one or two), and then splits the rest along K: their K tiles
// are cut into one run a block, equal within one K tile, so the last wave
// ends on every SM at once (forEachTailPiece). A piece of a tile that does
// not hold its first K tile leaves f32 partials in the caller's workspace
// and sets its warp's flag; the block whose piece does hold it adds the
// others' in block order and stores y (finishTailPiece), so the result does
// not depend on timing. Writers write at the start of their runs and wait
// on nothing, and every block is resident (a block an SM), so the waits end.
//
// s8 and e4m3 activations take the 8-bit forms (TileWgmmaS8.cpp).
#include "passes/TileWgmma.h"

#include "core/DecodeFacts.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace lowbit::passes {
namespace wgmma {

WgmmaBuilder::TileLoads WgmmaBuilder::loadTile(Value n0, Value group, const HalfBlockLane &half,
                                               Value k0) {
  TileLoads loads;
  loadCodes(loads, p.weights, /*stage=*/Value(), n0, k0);
  loadQuant(loads, n0, group, half, k0);
  return loads;
}

void WgmmaBuilder::loadCodes(TileLoads &loads, Value weights, Value stage, Value n0, Value k0) {
  for (int64_t block = 0; block < kTileK / core::kBlockK; ++block) {
    PairedCodeLoader codes(b, loc, p, weights, stage);
    for (int64_t step = 0; step < kStepsPerBlock; ++step) {
      Value k = add(k0, index(core::kBlockK * block + core::kUnitK * step));
      PairedCodeLoader::Codes c = codes.load(n0, k, step, /*group=*/0);
      auto *found = llvm::find(loads.codeLoads, c.words);
      if (found == loads.codeLoads.end()) {
        loads.codeLoads.push_back(c.words);
        found = loads.codeLoads.end() - 1;
      }
      loads.stepLoad.push_back(found - loads.codeLoads.begin());
      loads.stepUnit.push_back(c.unit);
    }
  }
}

void WgmmaBuilder::loadQuant(TileLoads &loads, Value n0, Value group, const HalfBlockLane &half,
                             Value k0) {
  // s8 sums take per-channel scales after the loop, group scales as each
  // group closes (the tile's set).
  for (int64_t set = 0; set < (byteOperands() && !groupedS8() ? 0 : quantSets()); ++set) {
    Value k = half.quantK(b, loc, add(k0, index(core::kBlockK * set)));
    for (int64_t s = 0; s < kSubtilesPerLoad; ++s) {
      if (s < firstSubtile() || s >= firstSubtile() + subtiles()) {
        loads.scales.push_back(Value());
        loads.biases.push_back(Value());
        loads.zeros.push_back(Value());
        continue;
      }
      ColumnQuant q = loadColumnQuant(b, loc, p, add(n0, add(index(8 * s), group)), k);
      loads.scales.push_back(q.scale);
      loads.biases.push_back(q.bias);
      loads.zeros.push_back(q.zero);
    }
  }
}

SmallVector<Value> WgmmaBuilder::stepFragments(const TileLoads &loads, int64_t step) {
  auto pairsType = VectorType::get({4}, p.activation);
  auto aType = VectorType::get({8}, p.activation);
  const int64_t set = quantSets() > 1 ? step / kStepsPerBlock : 0;
  const int64_t first = set * kSubtilesPerLoad;
  // Every subtile of the unit takes a zero; those of slices the warp does
  // not multiply stand in with one it loaded.
  SmallVector<Value> zeros;
  if (Value loaded = loads.zeros[first + firstSubtile()])
    for (int64_t s = 0; s < kSubtilesPerLoad; ++s)
      zeros.push_back(loads.zeros[first + s] ? loads.zeros[first + s] : loaded);
  Value values =
      decodeUnit(b, loc, p, {loads.codeLoads[loads.stepLoad[step]], loads.stepUnit[step]}, zeros);
  SmallVector<Value> scaled;
  for (int64_t s = firstSubtile(); s < firstSubtile() + subtiles(); ++s) {
    Value pairs = b.create<lb::SlicePairsOp>(loc, pairsType, values, b.getI64IntegerAttr(2 * s));
    scaled.push_back(scaleFragment(b, loc, p, pairsType, pairs, loads.scales[first + s],
                                   loads.biases[first + s]));
  }
  SmallVector<Value> fragments;
  for (int64_t r = 0; r < slices(); ++r)
    fragments.push_back(
        b.create<lb::PackAFragmentOp>(loc, aType, scaled[2 * r], scaled[2 * r + 1]));
  return fragments;
}

void WgmmaBuilder::build() {
  // Warpgroups that share tiles multiply two slices a warp; the 8-bit path
  // assumes four, and core::checkWgmma keeps them apart.
  assert((!sharesTiles() || !byteOperands()) && "tile sharing is for 16-bit activations");
  int64_t consumerGroups = consumerWarps() / core::kWarpgroupWarps;
  int64_t kTiles = p.k / kTileK;
  Value lane = coord(lb::ThreadCoord::lane);
  Value warp = coord(lb::ThreadCoord::warp);

  // The ring, in the hardware's swizzle of its rows (128 bytes of 16-bit
  // values, 64 of s8 bytes), and its barriers: made before the roles split
  // (lb.mbarriers initializes with a block barrier).
  core::Activation activation = *lb::coreActivation(p.activation);
  // s8 x lands as i8 (the integer wgmma's bytes); e4m3 and 16-bit x as
  // they are.
  Type staged = byteOperands() && !p.e4m3Activations() ? Type(b.getI8Type()) : p.activation;
  auto ringType = MemRefType::get({stages(), tileM(), kTileK}, staged, MemRefLayoutAttrInterface(),
                                  b.getI64IntegerAttr(3));
  auto swizzle =
      lb::SwizzleAttr::getHardware(b.getContext(), kTileK * core::activationBytes(activation));
  Value ring = b.create<lb::SharedBufferOp>(loc, ringType, stages(), tileM(), kTileK,
                                            /*dynamic=*/true, swizzle);
  // Warpgroups that share layout tiles read their codes from a ring the
  // producer fills with each stage's activations (core::wgmmaWeightRingBytes).
  Value weightRing;
  if (sharesTiles()) {
    auto weightRingType = MemRefType::get({stages(), tileN(), kTileK}, p.code,
                                          MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
    weightRing = b.create<lb::SharedBufferOp>(loc, weightRingType, stages(), tileN(), kTileK,
                                              /*dynamic=*/true);
  }
  // cluster_k: each consumer warp's accumulators, for the cluster's blocks
  // to add (core::wgmmaClusterPartialBytes).
  Value partials;
  if (clusterK() > 1) {
    int64_t slots = consumerWarps() * slices(), chunks = tileM() / 8;
    auto partialsType = MemRefType::get({slots, chunks, 128}, b.getF32Type(),
                                        MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
    partials = b.create<lb::SharedBufferOp>(loc, partialsType, slots, chunks, 128,
                                            /*dynamic=*/true);
  }
  p.kernel->setAttr(kDynamicSharedBytesAttr, b.getI64IntegerAttr(core::wgmmaSharedBytes(
                                                 lb::coreSchedule(p.schedule), activation,
                                                 static_cast<int>(lb::getCodeBits(p.code)))));
  auto barriersType = MemRefType::get({stages()}, b.getI64Type(), MemRefLayoutAttrInterface(),
                                      b.getI64IntegerAttr(3));
  Value full = b.create<lb::MbarriersOp>(loc, barriersType, stages(), kProducerThreads);
  Value empty = b.create<lb::MbarriersOp>(loc, barriersType, stages(), 32 * consumerWarps());

  // cluster_k: block rank r of the cluster takes K tiles r R .. r R + R - 1
  // (R = K tiles / cluster_k; core::checkWgmma).
  const int64_t runTiles = kTiles / clusterK();
  Value firstTile =
      clusterK() > 1 ? mul(coord(lb::ThreadCoord::block_z), index(runTiles)) : index(0);

  Value producer = cmp(arith::CmpIPredicate::ult, warp, index(core::kWarpgroupWarps));
  auto roles = b.create<scf::IfOp>(loc, producer, /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(roles.thenBlock());
    if (consumerGroups > 1)
      b.create<lb::SetMaxRegistersOp>(loc, kProducerRegisters);
    forEachOutputTile(runTiles, [&](const OutputTile &tile) {
      buildProducer(ring, weightRing, full, empty, tile, firstTile, runTiles);
    });
    // The consumers' two cluster barriers (finishAcrossCluster's pattern).
    if (clusterK() > 1) {
      b.create<lb::ClusterBarrierOp>(loc);
      b.create<lb::ClusterBarrierOp>(loc);
    }
    b.setInsertionPointToStart(roles.elseBlock());
    if (consumerGroups > 1)
      b.create<lb::SetMaxRegistersOp>(loc, kConsumerRegisters);
    forEachOutputTile(runTiles, [&](const OutputTile &tile) {
      buildConsumer(ring, weightRing, full, empty, partials, lane, warp, tile, firstTile,
                    runTiles);
    });
  }
  b.create<func::ReturnOp>(loc);

  int64_t threads = lb::coreSchedule(p.schedule).threads();
  p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(threads));
  p.kernel->setAttr(kGridTileAttr, b.getDenseI64ArrayAttr({tileN(), tileM(), clusterK()}));
  // One block an SM: the ring and the accumulators are sized for it.
  setRegisterBudget(p, threads, 65536 / threads / 8 * 8);
}

WgmmaBuilder::OutputTile WgmmaBuilder::tileAt(Value linear, Value rowTiles) {
  OutputTile tile;
  tile.n0 = mul(b.create<arith::DivUIOp>(loc, linear, rowTiles), index(tileN()));
  tile.m0 = mul(b.create<arith::RemUIOp>(loc, linear, rowTiles), index(tileM()));
  return tile;
}

void WgmmaBuilder::forEachOutputTile(int64_t runTiles,
                                     llvm::function_ref<void(const OutputTile &)> body) {
  const lb::TileScheduler scheduler = p.schedule.getScheduler();
  if (scheduler == lb::TileScheduler::grid) {
    Value linear = add(coord(lb::ThreadCoord::block_x),
                       mul(coord(lb::ThreadCoord::grid_x), coord(lb::ThreadCoord::block_y)));
    Value rowTiles = coord(lb::ThreadCoord::grid_y);
    body(tileAt(linear, rowTiles));
    return;
  }
  Value rowTiles = div(add(p.rows, index(tileM() - 1)), tileM());
  Value tiles = mul(rowTiles, index(p.n / tileN()));
  if (scheduler == lb::TileScheduler::persistent) {
    forEachWholeTile(tiles, rowTiles, runTiles, body);
    return;
  }
  // Stream-K: core::streamKWholeTiles, in the kernel's terms. Splitting a
  // last wave of 112 to 128 tiles on 132 SMs lost 1.1-1.4x (H100,
  // docs/measurements stop 49), so one at least three-quarters full runs
  // whole.
  Value blocks = coord(lb::ThreadCoord::grid_x);
  Value waves = b.create<arith::DivUIOp>(loc, tiles, blocks);
  Value lastWave = b.create<arith::RemUIOp>(loc, tiles, blocks);
  Value fullEnough = b.create<arith::OrIOp>(
      loc, cmp(arith::CmpIPredicate::eq, lastWave, index(0)),
      cmp(arith::CmpIPredicate::uge, mul(lastWave, index(4)),
          mul(blocks, index(core::kStreamKWholeLastWaveQuarters))));
  Value beforeLast =
      b.create<arith::SelectOp>(loc, cmp(arith::CmpIPredicate::ugt, waves, index(0)),
                                b.create<arith::SubIOp>(loc, waves, index(1)), index(0));
  Value wholeTiles =
      b.create<arith::SelectOp>(loc, fullEnough, tiles, mul(beforeLast, blocks));
  forEachWholeTile(wholeTiles, rowTiles, runTiles, body);
  // A block with a tail ran wholeTiles / P whole tiles before it (P
  // divides wholeTiles then); derived here rather than kept live across the
  // whole tiles' loop, where one more register spilled 12 bytes (compact
  // int4 g64 at t32x256 w1x4).
  Value wholeKTiles = mul(b.create<arith::DivUIOp>(loc, wholeTiles, blocks), index(runTiles));
  forEachTailPiece(wholeTiles, b.create<arith::SubIOp>(loc, tiles, wholeTiles), rowTiles,
                   wholeKTiles, body);
}

void WgmmaBuilder::forEachWholeTile(Value end, Value rowTiles, int64_t runTiles,
                                    llvm::function_ref<void(const OutputTile &)> body) {
  // A block an SM: tiles blockIdx.x, + gridDim.x, ... Its i-th tile starts
  // at K tile i R of the run through the ring, so stages and barrier
  // phases go on across tiles as in one long loop.
  Value first = coord(lb::ThreadCoord::block_x), step = coord(lb::ThreadCoord::grid_x);
  auto loop = b.create<scf::ForOp>(loc, first, end, step);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  // The same in every lane (and whole warps take each role), so ptxas may
  // keep the tile's addresses and the wgmma descriptors uniform.
  Value linear = b.create<lb::WarpUniformOp>(loc, b.getIndexType(), loop.getInductionVar());
  Value walked = b.create<arith::DivUIOp>(loc, b.create<arith::SubIOp>(loc, linear, first), step);
  OutputTile tile = tileAt(linear, rowTiles);
  if (runTiles % stages() == 0)
    tile.ringRounds = mul(walked, index(runTiles / stages()));
  else
    tile.ringBase = mul(walked, index(runTiles));
  body(tile);
}

WgmmaBuilder::RingSlot WgmmaBuilder::ringSlot(const OutputTile &tile, Value u) {
  if (tile.ringRounds)
    return {rem(u, stages()), add(tile.ringRounds, div(u, stages()))};
  if (!tile.ringBase)
    return {rem(u, stages()), div(u, stages())};
  Value through = add(tile.ringBase, u);
  return {rem(through, stages()), div(through, stages())};
}

void WgmmaBuilder::buildProducer(Value ring, Value weightRing, Value full, Value empty,
                                 const OutputTile &tile, Value firstTile, int64_t runTiles) {
  Value n0 = tile.n0, m0 = tile.m0;
  auto loop = b.create<scf::ForOp>(loc, index(0), kTileCount(tile, runTiles), index(1));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value u = loop.getInductionVar();
  Value t = add(tile.firstKTile(firstTile), u);
  RingSlot slot = ringSlot(tile, u);
  Value stage = slot.stage, use = slot.uses;
  ifThen(cmp(arith::CmpIPredicate::uge, use, index(1)), [&] {
    Value parity = rem(b.create<arith::SubIOp>(loc, use, index(1)), 2);
    b.create<lb::MbarrierWaitOp>(loc, empty, stage, parity);
  });
  if (weightRing)
    b.create<lb::CopyCodesAsyncOp>(loc, p.weights, weightRing, stage, n0, mul(t, index(kTileK)),
                                   b.getI64IntegerAttr(kProducerThreads), DenseI64ArrayAttr());
  b.create<lb::CopyPairedActivationsOp>(loc, p.x, ring, stage, full, stage, m0,
                                        mul(t, index(kTileK)), p.rows, kProducerThreads);
}

void WgmmaBuilder::buildConsumer(Value ring, Value weightRing, Value full, Value empty,
                                 Value partials, Value lane, Value warp, const OutputTile &tile,
                                 Value firstTile, int64_t runTiles) {
  Value consumerWarp = b.create<arith::SubIOp>(loc, warp, index(core::kWarpgroupWarps));
  if (!sharesTiles()) {
    consumeSlices(ring, weightRing, full, empty, partials, lane, consumerWarp, consumerWarp, tile,
                  firstTile, runTiles);
    return;
  }
  Value layoutTile = rem(consumerWarp, core::kWarpgroupWarps);
  Value firstGroup = cmp(arith::CmpIPredicate::ult, consumerWarp, index(core::kWarpgroupWarps));
  auto branch = b.create<scf::IfOp>(loc, firstGroup, /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  for (int64_t g = 0; g < 2; ++g) {
    b.setInsertionPointToStart(g ? branch.elseBlock() : branch.thenBlock());
    firstSlice = g * slices();
    consumeSlices(ring, weightRing, full, empty, partials, lane, consumerWarp, layoutTile, tile,
                  firstTile, runTiles);
  }
}

void WgmmaBuilder::consumeSlices(Value ring, Value weightRing, Value full, Value empty,
                                 Value partials, Value lane, Value consumerWarp, Value layoutTile,
                                 const OutputTile &tile, Value firstTile, int64_t runTiles) {
  Value m0 = tile.m0;
  Value warpN0 = add(tile.n0, mul(layoutTile, index(kColumnsPerWarp)));
  Value group = div(lane, 4); // PTX groupID
  const bool groupsOf16 = p.quant.getGranularity() == lb::ScaleGranularity::group &&
                          p.quant.getGroupSize() == core::kUnitK;
  HalfBlockLane half(b, loc, groupsOf16, groupsOf16 ? rem(lane, 4) : Value());
  const bool integerSums = byteOperands() && !p.e4m3Activations();
  auto accType = VectorType::get(
      {tileM() / 2}, integerSums ? Type(b.getIntegerType(32, /*isSigned=*/true)) : b.getF32Type());
  Value zero = integerSums ? Value(b.create<lb::ZeroAccumulatorOp>(loc, accType))
                           : Value(b.create<arith::ConstantOp>(
                                 loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.f))));

  auto loadAhead = [&](Value k0) {
    if (!weightRing)
      return loadTile(warpN0, group, half, k0);
    TileLoads loads;
    loadQuant(loads, warpN0, group, half, k0);
    return loads;
  };
  firstTile = tile.firstKTile(firstTile);
  Value count = kTileCount(tile, runTiles);
  TileLoads first = loadAhead(mul(firstTile, index(kTileK)));
  SmallVector<Value> init(slices(), zero);
  // s8 codes centred on c != 0: one more wgmma a step, of a ones A, sums
  // each token's x (every row of its accumulator holds it), and the
  // epilogue adds 2^shift c Σx in s32 (as the split-K mma does).
  Value ones;
  if (centreS8()) {
    ones = b.create<lb::OnesAFragmentS8Op>(loc, VectorType::get({16}, b.getI8Type()));
    init.push_back(zero);
  }
  const int64_t accumulators = init.size();
  // Group scales: f32 sums of the closed groups next to the s32 ones.
  auto f32Type = VectorType::get({tileM() / 2}, b.getF32Type());
  Value f32Zero =
      b.create<arith::ConstantOp>(loc, DenseElementsAttr::get(f32Type, b.getF32FloatAttr(0.f)));
  const int64_t closed = groupedS8() ? kSlices : 0;
  const bool overlap = overlapsKTiles();
  init.append(closed, f32Zero);
  SmallVector<Value> firstValues = first.flatten();
  init.append(firstValues.begin(), firstValues.end());
  auto loop = b.create<scf::ForOp>(loc, index(0), count, index(1), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value u = loop.getInductionVar();
    Value t = add(firstTile, u);
    ValueRange carried = loop.getRegionIterArgs();
    SmallVector<Value> acc(carried.begin(), carried.begin() + accumulators);
    SmallVector<Value> closedSums(carried.begin() + accumulators,
                                  carried.begin() + accumulators + closed);
    TileLoads current = first.rebind(carried.drop_front(accumulators + closed));
    // The next tile's loads (the last tile reloads itself: in bounds, and
    // never used).
    Value last = tile.kCount ? b.create<arith::SubIOp>(loc, count, index(1)).getResult()
                             : index(runTiles - 1);
    Value nextT = add(firstTile, b.create<arith::MinUIOp>(loc, add(u, index(1)), last));
    TileLoads next = loadAhead(mul(nextT, index(kTileK)));

    RingSlot slot = ringSlot(tile, u);
    Value stage = slot.stage;
    b.create<lb::MbarrierWaitOp>(loc, full, stage, rem(slot.uses, 2));
    b.create<lb::FenceAsyncSharedOp>(loc);
    if (weightRing)
      loadCodes(current, weightRing, stage, mul(layoutTile, index(kColumnsPerWarp)), index(0));
    // One k32 step a 32-wide block for s8, one k16 step a unit otherwise.
    for (int64_t step = 0; step < (byteOperands() ? kBlocks : kSteps); ++step) {
      SmallVector<Value> fragments =
          byteOperands() ? blockFragmentsS8(current, step) : stepFragments(current, step);
      b.create<lb::WgmmaFenceOp>(loc);
      for (int64_t r = 0; r < slices(); ++r)
        acc[r] = b.create<lb::WgmmaOp>(loc, accType, acc[r], fragments[r], ring, stage,
                                       b.getI64IntegerAttr(step));
      if (ones)
        acc[kSlices] = b.create<lb::WgmmaOp>(loc, accType, acc[kSlices], ones, ring, stage,
                                             b.getI64IntegerAttr(step));
      b.create<lb::WgmmaCommitOp>(loc);
      b.create<lb::WgmmaWaitOp>(loc, b.getI64IntegerAttr(1));
      // Every wgmma of the previous K tile has now read its stage.
      if (step == 0 && overlap)
        ifThen(cmp(arith::CmpIPredicate::uge, u, index(1)), [&] {
          Value previous = rem(add(stage, index(stages() - 1)), stages());
          b.create<lb::MbarrierArriveOp>(loc, empty, previous);
        });
    }
    if (!overlap) {
      b.create<lb::WgmmaWaitOp>(loc, b.getI64IntegerAttr(0));
      b.create<lb::MbarrierArriveOp>(loc, empty, stage);
    }
    if (closed)
      closeGroups(t, acc, closedSums, current, zero, ones);
    SmallVector<Value> yielded = acc;
    yielded.append(closedSums.begin(), closedSums.end());
    SmallVector<Value> nextValues = next.flatten();
    yielded.append(nextValues.begin(), nextValues.end());
    b.create<scf::YieldOp>(loc, yielded);
  }
  if (overlap) {
    b.create<lb::WgmmaWaitOp>(loc, b.getI64IntegerAttr(0));
    auto releaseLast = [&] {
      Value lastStage = ringSlot(tile, b.create<arith::SubIOp>(loc, count, index(1))).stage;
      b.create<lb::MbarrierArriveOp>(loc, empty, lastStage);
    };
    if (tile.kCount)
      ifThen(cmp(arith::CmpIPredicate::uge, count, index(1)), releaseLast);
    else
      releaseLast();
  }
  if (groupedS8()) {
    SmallVector<Value> sums(loop.getResults().slice(accumulators, closed));
    storeS8(sums, warpN0, group, m0);
    return;
  }
  if (byteOperands()) {
    SmallVector<Value> sums(loop.getResults().take_front(kSlices));
    if (ones) {
      core::S8Decode decode = p.byteDecode();
      for (Value &sum : sums)
        sum = b.create<lb::AddTokenSumsOp>(
            loc, sum.getType(), sum, loop.getResult(kSlices),
            b.getI64IntegerAttr(int64_t{decode.centre} << decode.shift));
    }
    storeS8(sums, warpN0, group, m0);
    return;
  }
  if (clusterK() > 1) {
    finishAcrossCluster(partials, loop.getResults().take_front(slices()), consumerWarp, warpN0,
                        m0);
    return;
  }
  if (tile.kBegin) {
    finishTailPiece(tile, SmallVector<Value>(loop.getResults().take_front(slices())), consumerWarp,
                    warpN0);
    return;
  }
  for (int64_t r = 0; r < slices(); ++r)
    b.create<lb::StoreWgmmaAccumulatorOp>(loc, loop.getResult(r), p.y, m0,
                                          add(warpN0, index(16 * (firstSlice + r))), p.rows);
}

void WgmmaBuilder::finishAcrossCluster(Value partials, ValueRange sums, Value consumerWarp,
                                       Value warpN0, Value m0) {
  auto slotOf = [&](int64_t r) { return add(mul(consumerWarp, index(slices())), index(r)); };
  for (int64_t r = 0; r < slices(); ++r)
    b.create<lb::StoreWgmmaPartialsOp>(loc, sums[r], partials, slotOf(r));
  b.create<lb::ClusterBarrierOp>(loc);
  Value rank = coord(lb::ThreadCoord::block_z);
  for (int64_t r = 0; r < slices(); ++r) {
    // By the slice of the layout tile, so that with shared tiles the two
    // warpgroups' slices go to different ranks.
    const int64_t slice = firstSlice + r;
    ifThen(cmp(arith::CmpIPredicate::eq, rank, index(slice % clusterK())), [&] {
      Value total = b.create<lb::SumWgmmaClusterPartialsOp>(
          loc, sums[r].getType(), partials, slotOf(r), b.getI64IntegerAttr(clusterK()));
      b.create<lb::StoreWgmmaAccumulatorOp>(loc, total, p.y, m0, add(warpN0, index(16 * slice)),
                                            p.rows);
    });
  }
  b.create<lb::ClusterBarrierOp>(loc);
}

} // namespace wgmma

void buildWgmmaBody(mlir::OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  wgmma::WgmmaBuilder{{builder, problem, source.getLoc()}}.build();
}

} // namespace lowbit::passes

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
// while the next step decodes.
//
// Groups shorter than the K tile (32: MXFP4, the compact encodings; 16:
// NVFP4, the k-quants' sub-blocks) take one set of subtile quant per 32-wide
// block of the tile: a block's two k16 steps hold the same K values in the
// paired order (core::pairedKOf), so both steps of a block share its set.
// With groups of 16 a lane's 8 values of a block are all in one of the
// block's two groups (core::pairedLanesKeepTheirGroupOf16), so the lane loads
// that group's quant (HalfBlockLane) and the set stays one value a subtile.
//
// s8 activations (core::checkQuantizedActivation) take the integer form:
// one wgmma k32 step is a whole 32-wide block, whose two k16 units decode to
// s8 bytes and together are a slice's A fragment (lb.pack_a_fragment_s8, as
// in the split-K mma); x is staged as s8 in its paired order
// (core::pairedS8SlotOfK), 64-byte rows in the hardware's 64-byte swizzle;
// the sums are s32 and exact. Codes centred on c != 0 (unsigned, ternary,
// binary) add 2^shift c Σx after the loop, Σx from one more wgmma a step
// whose A is all ones. e4m3 activations take the fp8 form the same way,
// e4m3fn weights being their own bytes, with f32 sums. Weight scales (per channel or per tensor, with
// the decode's 2^-shift) and x's token scales apply once, after the loop
// (lb.scale_wgmma_sums), so no quant is loaded in it; group scales (whole K
// tiles) close each group's s32 sums into f32 ones after its last tile
// (lb.accumulate_wgmma_group), with the tile's quant loaded as for f16.
#include "core/DecodeFacts.h"
#include "core/ScheduleRules.h"
#include "ir/CoreConversion.h"
#include "passes/SplitKLoops.h"
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <cmath>

using namespace mlir;

namespace lowbit::passes {
namespace {

constexpr int64_t kColumnsPerWarp = core::kColumnsPerUnit; // one layout tile
constexpr int64_t kSlices = kColumnsPerWarp / 16;           // accumulators per warpgroup
constexpr int64_t kTileK = core::kWgmmaTileK;
constexpr int64_t kSteps = kTileK / core::kUnitK;           // k16 steps per K tile
constexpr int64_t kStepsPerBlock = core::kBlockK / core::kUnitK;
constexpr int64_t kBlocks = kTileK / core::kBlockK;          // s8 k32 steps per K tile
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
  bool centreS8() const {
    return byteOperands() && p.byteDecode().centre != 0;
  }
  int64_t tileM() const { return p.schedule.getTile()[0]; }
  int64_t tileN() const { return p.schedule.getTile()[1]; }
  int64_t stages() const { return p.schedule.getStages(); }
  int64_t consumerWarps() const { return p.schedule.getWarps()[1]; }
  int64_t clusterK() const { return p.schedule.getClusterK(); }
  // Sets of subtile quant a K tile takes: one per 32-wide block where the
  // groups are shorter than the tile, else one.
  int64_t quantSets() const {
    const bool shortGroups = p.quant.getGranularity() == lb::ScaleGranularity::group &&
                             p.quant.getGroupSize() < kTileK;
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
      for (ArrayRef<Value> list : {ArrayRef<Value>(scales), ArrayRef<Value>(biases),
                                   ArrayRef<Value>(zeros)})
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

  // The warp's codes of its layout tile at columns n0 and the K tile at k0,
  // and its subtiles' quantization there (per 32-wide block for short
  // groups, at the lane's half of it for groups of 16).
  TileLoads loadTile(Value n0, Value group, const HalfBlockLane &half, Value k0) {
    TileLoads loads;
    for (int64_t block = 0; block < kTileK / core::kBlockK; ++block) {
      PairedCodeLoader codes(b, loc, p, p.weights, /*stage=*/Value());
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
    // s8 sums take per-channel scales after the loop, group scales as each
    // group closes (the tile's set).
    for (int64_t set = 0; set < (byteOperands() && !groupedS8() ? 0 : quantSets()); ++set) {
      Value k = half.quantK(b, loc, add(k0, index(core::kBlockK * set)));
      for (int64_t s = 0; s < kSubtilesPerLoad; ++s) {
        ColumnQuant q = loadColumnQuant(b, loc, p, add(n0, add(index(8 * s), group)), k);
        loads.scales.push_back(q.scale);
        loads.biases.push_back(q.bias);
        loads.zeros.push_back(q.zero);
      }
    }
    return loads;
  }

  // Step j's A fragments, one per 16-row slice: decoded, zero points off,
  // scaled (as the split-K mma does without period sums).
  SmallVector<Value> stepFragments(const TileLoads &loads, int64_t step) {
    auto pairsType = VectorType::get({4}, p.activation);
    auto aType = VectorType::get({8}, p.activation);
    const int64_t set = quantSets() > 1 ? step / kStepsPerBlock : 0;
    const int64_t first = set * kSubtilesPerLoad;
    SmallVector<Value> zeros;
    if (loads.zeros.front())
      zeros.assign(loads.zeros.begin() + first, loads.zeros.begin() + first + kSubtilesPerLoad);
    Value values = decodeUnit(
        b, loc, p, {loads.codeLoads[loads.stepLoad[step]], loads.stepUnit[step]}, zeros);
    SmallVector<Value> scaled;
    for (int64_t s = 0; s < kSubtilesPerLoad; ++s) {
      Value pairs = b.create<lb::SlicePairsOp>(loc, pairsType, values, b.getI64IntegerAttr(2 * s));
      scaled.push_back(scaleFragment(b, loc, p, pairsType, pairs, loads.scales[first + s],
                                    loads.biases[first + s]));
    }
    SmallVector<Value> fragments;
    for (int64_t r = 0; r < kSlices; ++r)
      fragments.push_back(
          b.create<lb::PackAFragmentOp>(loc, aType, scaled[2 * r], scaled[2 * r + 1]));
    return fragments;
  }

  // s8: block `block`'s A fragments, one per 16-row slice: its two k16
  // units decoded to bytes, paired into m16 x k32 fragments.
  SmallVector<Value> blockFragmentsS8(const TileLoads &loads, int64_t block) {
    auto aType = VectorType::get({16}, b.getI8Type());
    SmallVector<Value> units;
    for (int64_t step = block * kStepsPerBlock; step < (block + 1) * kStepsPerBlock; ++step)
      units.push_back(
          decodeUnit(b, loc, p, {loads.codeLoads[loads.stepLoad[step]], loads.stepUnit[step]}));
    SmallVector<Value> fragments;
    for (int64_t r = 0; r < kSlices; ++r)
      fragments.push_back(b.create<lb::PackAFragmentS8Op>(loc, aType, units[0], units[1],
                                                          b.getI64IntegerAttr(r)));
    return fragments;
  }

  // The weight scales of the bytes: 2^-shift folds into them.
  Value byteScale(Value scale) {
    core::S8Decode decode = p.byteDecode();
    if (!decode.shift)
      return scale;
    Value factor = b.create<arith::ConstantOp>(
        loc, b.getF32FloatAttr(static_cast<float>(std::ldexp(1.0, -decode.shift))));
    return b.create<arith::MulFOp>(loc, scale, factor);
  }

  // s8 (or e4m3): the warp's sums as f32 in y, each scaled once: its
  // subtiles' weight scales (times the decode's 2^-shift; none for group
  // scales, which the closed groups took) and its tokens' scales.
  void storeS8(ArrayRef<Value> sums, Value warpN0, Value group, Value m0) {
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
      b.create<lb::StoreWgmmaAccumulatorOp>(loc, values, p.y, m0, add(warpN0, index(16 * r)),
                                            p.rows);
    }
  }

  void build() {
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
    auto ringType = MemRefType::get({stages(), tileM(), kTileK}, staged,
                                    MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
    auto swizzle = lb::SwizzleAttr::getHardware(b.getContext(),
                                                kTileK * core::activationBytes(activation));
    Value ring = b.create<lb::SharedBufferOp>(loc, ringType, stages(), tileM(), kTileK,
                                              /*dynamic=*/true, swizzle);
    // cluster_k: each consumer warp's four accumulators, for the cluster's
    // blocks to add (core::wgmmaClusterPartialBytes).
    Value partials;
    if (clusterK() > 1) {
      int64_t slots = consumerWarps() * kSlices, chunks = tileM() / 8;
      auto partialsType = MemRefType::get({slots, chunks, 128}, b.getF32Type(),
                                          MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
      partials = b.create<lb::SharedBufferOp>(loc, partialsType, slots, chunks, 128,
                                              /*dynamic=*/true);
    }
    p.kernel->setAttr(kDynamicSharedBytesAttr,
                      b.getI64IntegerAttr(
                          core::wgmmaSharedBytes(lb::coreSchedule(p.schedule), activation)));
    auto barriersType = MemRefType::get({stages()}, b.getI64Type(), MemRefLayoutAttrInterface(),
                                        b.getI64IntegerAttr(3));
    Value full = b.create<lb::MbarriersOp>(loc, barriersType, stages(), kProducerThreads);
    Value empty =
        b.create<lb::MbarriersOp>(loc, barriersType, stages(), 32 * consumerWarps());

    // Row tiles fastest, as in the split-K mma: the row tiles of a column
    // tile run side by side and share its weights in L2.
    Value linear = add(coord(lb::ThreadCoord::block_x),
                       mul(coord(lb::ThreadCoord::grid_x), coord(lb::ThreadCoord::block_y)));
    Value rowTiles = coord(lb::ThreadCoord::grid_y);
    Value n0 = mul(b.create<arith::DivUIOp>(loc, linear, rowTiles), index(tileN()));
    Value m0 = mul(b.create<arith::RemUIOp>(loc, linear, rowTiles), index(tileM()));

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
      buildProducer(ring, full, empty, m0, firstTile, runTiles);
      // The consumers' two cluster barriers (finishAcrossCluster's pattern).
      if (clusterK() > 1) {
        b.create<lb::ClusterBarrierOp>(loc);
        b.create<lb::ClusterBarrierOp>(loc);
      }
      b.setInsertionPointToStart(roles.elseBlock());
      if (consumerGroups > 1)
        b.create<lb::SetMaxRegistersOp>(loc, kConsumerRegisters);
      buildConsumer(ring, full, empty, partials, lane, warp, n0, m0, firstTile, runTiles);
    }
    b.create<func::ReturnOp>(loc);

    int64_t threads = lb::coreSchedule(p.schedule).threads();
    p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(threads));
    p.kernel->setAttr(kGridTileAttr, b.getDenseI64ArrayAttr({tileN(), tileM(), clusterK()}));
    // One block an SM: the ring and the accumulators are sized for it.
    setRegisterBudget(p, threads, 65536 / threads / 8 * 8);
  }

  // The producer warpgroup fills stage u mod S with the run's K tile u once
  // the consumers have released the tile that used it S tiles before.
  void buildProducer(Value ring, Value full, Value empty, Value m0, Value firstTile,
                     int64_t runTiles) {
    auto loop = b.create<scf::ForOp>(loc, index(0), index(runTiles), index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value u = loop.getInductionVar();
    Value t = add(firstTile, u);
    Value stage = rem(u, stages());
    Value use = div(u, stages());
    ifThen(cmp(arith::CmpIPredicate::uge, u, index(stages())), [&] {
      Value parity = rem(b.create<arith::SubIOp>(loc, use, index(1)), 2);
      b.create<lb::MbarrierWaitOp>(loc, empty, stage, parity);
    });
    b.create<lb::CopyPairedActivationsOp>(loc, p.x, ring, stage, full, stage, m0,
                                          mul(t, index(kTileK)), p.rows, kProducerThreads);
  }

  // Group scales with s8: after the group's last K tile (t + 1 a multiple
  // of its tiles) its s32 sums (with 2^shift c Σx for codes centred off 0)
  // close into the f32 ones, scaled by the tile's group scales, and start
  // again from zero.
  void closeGroups(Value t, SmallVector<Value> &acc, SmallVector<Value> &closedSums,
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

  void buildConsumer(Value ring, Value full, Value empty, Value partials, Value lane,
                     Value warp, Value n0, Value m0, Value firstTile, int64_t runTiles) {
    Value consumerWarp = b.create<arith::SubIOp>(loc, warp, index(core::kWarpgroupWarps));
    Value warpN0 = add(n0, mul(consumerWarp, index(kColumnsPerWarp)));
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

    TileLoads first = loadTile(warpN0, group, half, mul(firstTile, index(kTileK)));
    SmallVector<Value> init(kSlices, zero);
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
    Value f32Zero = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(f32Type, b.getF32FloatAttr(0.f)));
    const int64_t closed = groupedS8() ? kSlices : 0;
    init.append(closed, f32Zero);
    SmallVector<Value> firstValues = first.flatten();
    init.append(firstValues.begin(), firstValues.end());
    auto loop = b.create<scf::ForOp>(loc, index(0), index(runTiles), index(1), init);
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
      Value nextT =
          add(firstTile, b.create<arith::MinUIOp>(loc, add(u, index(1)), index(runTiles - 1)));
      TileLoads next = loadTile(warpN0, group, half, mul(nextT, index(kTileK)));

      Value stage = rem(u, stages());
      b.create<lb::MbarrierWaitOp>(loc, full, stage, rem(div(u, stages()), 2));
      b.create<lb::FenceAsyncSharedOp>(loc);
      // One k32 step a 32-wide block for s8, one k16 step a unit otherwise.
      for (int64_t step = 0; step < (byteOperands() ? kBlocks : kSteps); ++step) {
        SmallVector<Value> fragments =
            byteOperands() ? blockFragmentsS8(current, step) : stepFragments(current, step);
        b.create<lb::WgmmaFenceOp>(loc);
        for (int64_t r = 0; r < kSlices; ++r)
          acc[r] = b.create<lb::WgmmaOp>(loc, accType, acc[r], fragments[r], ring, stage,
                                         b.getI64IntegerAttr(step));
        if (ones)
          acc[kSlices] = b.create<lb::WgmmaOp>(loc, accType, acc[kSlices], ones, ring, stage,
                                               b.getI64IntegerAttr(step));
        b.create<lb::WgmmaCommitOp>(loc);
        b.create<lb::WgmmaWaitOp>(loc, b.getI64IntegerAttr(1));
      }
      b.create<lb::WgmmaWaitOp>(loc, b.getI64IntegerAttr(0));
      b.create<lb::MbarrierArriveOp>(loc, empty, stage);
      if (closed)
        closeGroups(t, acc, closedSums, current, zero, ones);
      SmallVector<Value> yielded = acc;
      yielded.append(closedSums.begin(), closedSums.end());
      SmallVector<Value> nextValues = next.flatten();
      yielded.append(nextValues.begin(), nextValues.end());
      b.create<scf::YieldOp>(loc, yielded);
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
      finishAcrossCluster(partials, loop.getResults().take_front(kSlices), consumerWarp,
                          warpN0, m0);
      return;
    }
    for (int64_t r = 0; r < kSlices; ++r)
      b.create<lb::StoreWgmmaAccumulatorOp>(loc, loop.getResult(r), p.y, m0,
                                            add(warpN0, index(16 * r)), p.rows);
  }

  // cluster_k: every block keeps its partial sums of each warp's slices;
  // after a cluster barrier block rank r adds up, in rank order, the slices
  // r, r + cluster_k, ... and stores them; a second barrier keeps each
  // block's partials alive until the others have read them.
  void finishAcrossCluster(Value partials, ValueRange sums, Value consumerWarp, Value warpN0,
                           Value m0) {
    auto slotOf = [&](int64_t r) { return add(mul(consumerWarp, index(kSlices)), index(r)); };
    for (int64_t r = 0; r < kSlices; ++r)
      b.create<lb::StoreWgmmaPartialsOp>(loc, sums[r], partials, slotOf(r));
    b.create<lb::ClusterBarrierOp>(loc);
    Value rank = coord(lb::ThreadCoord::block_z);
    for (int64_t r = 0; r < kSlices; ++r)
      ifThen(cmp(arith::CmpIPredicate::eq, rank, index(r % clusterK())), [&] {
        Value total = b.create<lb::SumWgmmaClusterPartialsOp>(
            loc, sums[r].getType(), partials, slotOf(r), b.getI64IntegerAttr(clusterK()));
        b.create<lb::StoreWgmmaAccumulatorOp>(loc, total, p.y, m0, add(warpN0, index(16 * r)),
                                              p.rows);
      });
    b.create<lb::ClusterBarrierOp>(loc);
  }
};

} // namespace

void buildWgmmaBody(OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  WgmmaBuilder{{builder, problem, source.getLoc()}}.build();
}

} // namespace lowbit::passes

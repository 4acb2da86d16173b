// The mma family with split_k > 1 (M up to a few tens, where one block per
// 64 columns would leave most SMs idle and too few bytes in flight).
//
// Operands are swapped: the mma computes W·xᵀ, with the weights as the A
// operand (16 rows of W, 16 K) and the activations as the B operand (16 K,
// 8 rows of x). Two reasons:
//  * The paired K order (mma_b_paired) makes a lane's activations of a
//    32-wide block 8 consecutive values of one row of x, one 16-byte load;
//    as a B operand, step j's registers are words 2 j and 2 j + 1 of that
//    load, already adjacent, so they feed the mma with no register moves.
//    As an A operand they would interleave two rows' loads, and every mma
//    would need four moves to assemble its fragment.
//  * M is the mma's n8 side, so M <= 8 wastes no half of the tensor core.
// The decoded weights need no reshuffle either: the B-fragment registers of
// columns g and g + 8 of a 16-column slice are the A registers of rows g and
// g + 8 (lb.pack_a_fragment only names them).
//
// A block owns tile N (64 or 128) columns of Y and tile M (8, 16 or 32) rows,
// and `split_k` warps that each take whole chunks of K (SplitKLoops.h).
// With stages = 1 nothing is staged in shared memory: the derived weight
// layout gives every lane the 16 bytes that decode into its fragments of a
// 64 x 16 step, so the codes go straight from global memory into registers,
// and a scale period's loads are all independent and in flight together. x
// is small and shared by every block, so it stays in L1/L2. With stages > 1
// each warp streams the same 16-byte pieces, codes and activations, through
// its own cp.async ring in dynamic shared memory (see build()). Scales multiply the
// decoded registers once per step, but are loaded once per group; zero
// points come off the codes in the decode, before the scale. At the end
// each warp leaves its accumulators in shared memory, and warp w adds up and
// stores accumulators w, w + split_k, ... of the block's output; with
// cluster_k > 1 the blocks' totals meet over distributed shared memory
// first (finishAcrossCluster).
//
// s8 activations take the same blocks to the integer tensor cores: the two
// k16 units of a 32-wide block decode to s8 bytes and together are the A
// fragment of one m16n8k32 (lb.pack_a_fragment_s8), a lane's 8 bytes of x
// are its B fragment, and the warp sums in s32. The sums become f32 as
// each group ends (group scales) or once before the partials, and the
// weight scale x 2^-shift of the decode applies there or at the end; each
// token's scale applies last.
#include "core/DecodeFacts.h"
#include "core/ScheduleRules.h"
#include "ir/CoreConversion.h"
#include "passes/SplitKLoops.h"
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <algorithm>
#include <cmath>
#include <optional>

using namespace mlir;

namespace lowbit::passes {
namespace {

constexpr int64_t kColumnsPerLoad = core::kColumnsPerUnit; // one layout tile's n extent
constexpr int64_t kWeightRows = 16, kTokens = 8, kMmaK = 16; // W·xᵀ: m16 x n8 x k16
static_assert(kMmaK == core::kUnitK, "a code unit is one k16 step of the mma");
constexpr int64_t kSubtileColumns = core::kSubtileColumns; // a B-fragment slice: columns g
constexpr int64_t kSubtilesPerLoad = core::kSubtilesPerUnit;
constexpr int64_t kStepsPerBlock = core::kBlockK / core::kUnitK; // per mma_b_paired block
constexpr int64_t kPartialFloats = 32 * 4; // a warp's accumulator fragment

// Accumulators of a block: 16-column slices of W times 8-row slices of x.
int64_t accumulators(const KernelProblem &p) {
  return core::mmaSplitKAccumulators(lb::coreSchedule(p.schedule));
}

// The byte counts are the schedule rules' (core/ScheduleRules.h), so the
// kernel asks for exactly what the rules and the tuner checked.
int64_t partialBytes(const KernelProblem &p) {
  return core::mmaSplitKPartialBytes(lb::coreSchedule(p.schedule));
}

// With stages > 1 each warp streams its codes and activations through its
// own ring of `stages` chunks in dynamic shared memory (see build()).
constexpr int64_t kStepK = core::kBlockK; // one mma_b_paired block
using core::kMaxSharedBytesPerBlock;

bool streamsThroughRing(const KernelProblem &p) { return p.schedule.getStages() > 1; }

int64_t ringSlots(const KernelProblem &p) {
  return core::mmaSplitKRingSlots(lb::coreSchedule(p.schedule));
}

// A slot holds one 32-wide block: tile N x 32 codes and tile M x 32 16-bit
// activations.
int64_t ringBytes(const KernelProblem &p) {
  return core::mmaSplitKRingBytes(lb::coreSchedule(p.schedule), lb::getCodeBits(p.code));
}

struct MmaSplitKBuilder : TileBuilderBase {
  // Whether the mma takes raw decodes (lb.decode raw): set by build().
  bool rawCodes = false;
  // s8 activations with codes centred off 0: the A fragment of ones whose
  // mma sums x (set by build()), or null.
  Value ones = Value();

  // The lane's scale of each 8-column subtile at K offset k (column
  // 8 s + groupID), then their sub_value biases, then their zeros that the
  // decode subtracts (each null where the zero mode has none).
  // Raw decodes are the values x 2^-e: their scales carry 2^e
  // (rawScaleExponent; e = 24 - p for integer codes at bit p).
  // With `runs` active the block scales come from the chunk's runs. With
  // `lane` (groups of 16) each lane's are its own half block's.
  SmallVector<Value> loadQuant(Value n0, Value group, Value k, ScaleRuns *runs = nullptr,
                               const HalfBlockLane *lane = nullptr) {
    Value upperHalf = lane ? lane->upperHalf : Value();
    Value laneK = lane ? lane->quantK(b, loc, k) : k;
    auto rawFactor = [&](size_t s, Value scale) -> Value {
      int shift = rawScaleExponent(p, static_cast<int>(s % kSubtilesPerLoad));
      Value factor = b.create<arith::ConstantOp>(
          loc, b.getF32FloatAttr(static_cast<float>(std::ldexp(1.0, shift))));
      return b.create<arith::MulFOp>(loc, scale, factor);
    };
    return loadColumnsQuant(
        b, loc, p, subtiles(),
        [&](size_t s) { return column(n0, group, static_cast<int64_t>(s)); }, laneK,
        runs ? function_ref<Value(size_t)>(
                   [&](size_t s) { return runs->scaleAt(s, k, upperHalf); })
             : function_ref<Value(size_t)>(),
        rawCodes ? function_ref<Value(size_t, Value)>(rawFactor)
                 : function_ref<Value(size_t, Value)>(),
        runs ? function_ref<Value(size_t)>([&](size_t s) { return runs->zeroAt(s, k, upperHalf); })
             : function_ref<Value(size_t)>());
  }

  // The lane's column of subtile s (8 s + groupID).
  Value column(Value n0, Value group, int64_t s) {
    return add(n0, add(index(kSubtileColumns * s), group));
  }

  int64_t loadsN() const { return p.schedule.getTile()[1] / kColumnsPerLoad; }
  int64_t subtiles() const { return p.schedule.getTile()[1] / kSubtileColumns; }
  int64_t tokenTiles() const { return p.schedule.getTile()[0] / kTokens; }

  // s8 activations (core::checkQuantizedActivation): one m16n8k32 per 16
  // columns and 8 tokens of a 32-wide block, on both steps' decoded bytes
  // (lb.pack_a_fragment_s8); the s32 sums are scaled after the loops. With
  // `ones` (codes centred off 0) acc ends with one Σx accumulator per token
  // slice, which that fragment's mma adds the block's x to.
  SmallVector<Value> multiplyS8(ArrayRef<PairedCodeLoader::Codes> words, ArrayRef<Value> runs,
                                SmallVector<Value> acc) {
    auto aType = VectorType::get({16}, b.getI8Type());
    const bool fp8 = p.e4m3Activations();
    auto accType = VectorType::get(
        {4}, fp8 ? Type(b.getF32Type()) : Type(b.getIntegerType(32, /*isSigned=*/true)));
    for (int64_t j = 0; j < loadsN(); ++j) {
      Value step0 = decodeUnit(b, loc, p, words[j]);
      Value step1 = decodeUnit(b, loc, p, words[loadsN() + j]);
      for (int64_t w = 0; w < kColumnsPerLoad / kWeightRows; ++w) {
        Value a = b.create<lb::PackAFragmentS8Op>(loc, aType, step0, step1,
                                                  b.getI64IntegerAttr(w));
        int64_t rows = j * (kColumnsPerLoad / kWeightRows) + w;
        for (int64_t c = 0; c < tokenTiles(); ++c) {
          Value &sum = acc[rows * tokenTiles() + c];
          sum = fp8 ? b.create<lb::MmaE4M3Op>(loc, accType, a, runs[c], sum).getResult()
                    : b.create<lb::MmaS8Op>(loc, accType, a, runs[c], sum).getResult();
        }
      }
    }
    if (ones) {
      int64_t slots = accumulators(p);
      for (int64_t c = 0; c < tokenTiles(); ++c)
        acc[slots + c] = b.create<lb::MmaS8Op>(loc, accType, ones, runs[c], acc[slots + c]);
    }
    return acc;
  }

  // A warp's s32 sums (its accumulators, then with Σx one per token slice)
  // as f32: codes centred on c add 2^shift c Σx in s32, exactly; zero
  // points add 2^shift (c - z) Σx in f32 instead, z from `quant`
  // (loadQuant's order: scales, biases, zeros) per row g and g + 8.
  SmallVector<Value> closeS8Sums(ValueRange sums, ArrayRef<Value> quant,
                                 const core::S8Decode &decode) {
    const int64_t slots = accumulators(p), tokens = tokenTiles();
    auto f32Type = VectorType::get({4}, b.getF32Type());
    const bool zeros = p.quant.getZero() != lb::ZeroMode::none;
    auto constant = [&](double v) {
      return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(static_cast<float>(v)));
    };
    SmallVector<Value> tokenSums;
    if (zeros)
      for (int64_t c = 0; c < tokens; ++c)
        tokenSums.push_back(b.create<lb::ConvertAccumulatorOp>(loc, f32Type, sums[slots + c]));
    auto zeroFactor = [&](Value zero) {
      Value offCentre = b.create<arith::SubFOp>(loc, constant(decode.centre), zero);
      return b.create<arith::MulFOp>(loc, offCentre, constant(std::ldexp(1.0, decode.shift)));
    };
    SmallVector<Value> values;
    for (int64_t slot = 0; slot < slots; ++slot) {
      const int64_t rows = slot / tokens, c = slot % tokens;
      Value sum = sums[slot];
      if (!zeros && decode.centre)
        sum = b.create<lb::AddTokenSumsOp>(loc, sum.getType(), sum, sums[slots + c],
                                           b.getI64IntegerAttr(int64_t{decode.centre}
                                                               << decode.shift));
      Value value = b.create<lb::ConvertAccumulatorOp>(loc, f32Type, sum);
      if (zeros) {
        ArrayRef<Value> zero = quant.slice(2 * subtiles(), subtiles());
        value = b.create<lb::ScaleAccumulateOp>(loc, f32Type, value, tokenSums[c],
                                                zeroFactor(zero[2 * rows]),
                                                zeroFactor(zero[2 * rows + 1]));
      }
      values.push_back(value);
    }
    return values;
  }

  // acc + scales ⊙ sums for every accumulator, slot r's rows g and g + 8
  // taking the scales of subtiles 2 r' and 2 r' + 1 (r' its 16-row slice).
  SmallVector<Value> scaleSlots(ValueRange acc, ValueRange sums, ArrayRef<Value> scales) {
    auto f32Type = VectorType::get({4}, b.getF32Type());
    SmallVector<Value> next;
    for (int64_t slot = 0; slot < accumulators(p); ++slot) {
      int64_t rows = slot / tokenTiles();
      next.push_back(b.create<lb::ScaleAccumulateOp>(loc, f32Type, acc[slot], sums[slot],
                                                     scales[2 * rows], scales[2 * rows + 1]));
    }
    return next;
  }

  // The weight scales of s8 bytes: 2^-shift folds into them (core::s8Decode).
  SmallVector<Value> s8Scales(ArrayRef<Value> quant, const core::S8Decode &decode) {
    SmallVector<Value> scales(quant.take_front(subtiles()));
    if (!decode.shift)
      return scales;
    Value factor = b.create<arith::ConstantOp>(
        loc, b.getF32FloatAttr(static_cast<float>(std::ldexp(1.0, -decode.shift))));
    for (Value &scale : scales)
      scale = b.create<arith::MulFOp>(loc, scale, factor);
    return scales;
  }

  void build() {
    int64_t warps = p.schedule.getSplitK(), tokenTiles = this->tokenTiles();
    const bool s8 = p.quantizedActivations();
    // Without zero points the scales factor out of a period's sums: the mma
    // multiplies raw codes (exact small integers) and each accumulator is
    // scaled once per period in f32, instead of a packed multiply per decoded
    // register per step. Zero points keep the per-register scale of q - z.
    // The period's sums need a second set of accumulators: only for blocks of
    // at most 4 (8 x 64 tiles). With 8, ptxas needed 196 registers, and on
    // the H200 the 16 x 64 x 256 / split_k 8 kernel took 54 us at M = 16
    // instead of 45 with scaled registers. Raw decodes do not change that:
    // with them the 16 x 64 x 256 kernels needed 190-204 registers, and W4
    // at M = 16 took 48.6 us against 44.7 (H200, 2026-12-01).
    // Short periods (groups of 32 or 64) unroll more scale loads and fmas;
    // with 16 or more warps a thread has only 128 registers, and those spill.
    // Streaming through the ring frees the registers that held a period's
    // loads, so 16 x 64 tiles (8 accumulators) can keep a period's sums too.
    int64_t sumsUpTo = streamsThroughRing(p) ? 8 : 4;
    // Groups of 16 differ between the lanes of one mma (halfBlockGroups).
    bool scalePeriodSums = p.quant.getZero() == lb::ZeroMode::none &&
                           !splitKShape(p).halfBlockGroups &&
                           accumulators(p) <= sumsUpTo &&
                           (splitKShape(p).period >= 128 || warps <= 8);
    // Per-channel scales without zero points factor out of the whole sum:
    // raw codes all the way, and each output scaled once, after the warps'
    // sums meet (no per-register multiply and no second accumulator set).
    bool scaleAtEnd = p.quant.getZero() == lb::ZeroMode::none && !splitKShape(p).scalesAlongK;
    if (scaleAtEnd)
      scalePeriodSums = false;
    // Sums scaled in f32 can take the codes raw (one mask a register, not a
    // mask and an f16x2 op): the fold of 2^(24 - p) is exact.
    rawCodes = (scalePeriodSums || scaleAtEnd) && decodesRaw(p);
    // s8 sums are integers: scales and zero points always leave them, per
    // channel at the end, per group as each period's s32 sums close.
    // e4m3 bytes are the codes as stored: no shift, no centre, f32 sums.
    const bool fp8 = p.e4m3Activations();
    std::optional<core::S8Decode> s8Decode;
    if (s8) {
      s8Decode = p.byteDecode();
      scaleAtEnd = !splitKShape(p).scalesAlongK;
      scalePeriodSums = !scaleAtEnd;
    }
    int64_t subtiles = this->subtiles(), slots = accumulators(p);
    Value lane = coord(lb::ThreadCoord::lane);
    Value warp = coord(lb::ThreadCoord::warp);
    Value group = b.create<arith::DivUIOp>(loc, lane, index(4)); // PTX groupID
    Value inGroup = b.create<arith::RemUIOp>(loc, lane, index(4));
    // Blocks are numbered with the row tile fastest: the row tiles of one
    // column tile run side by side, so all but the first find its weights in
    // L2 and DRAM streams them about once whatever M is.
    Value linear = add(coord(lb::ThreadCoord::block_x),
                       mul(coord(lb::ThreadCoord::grid_x), coord(lb::ThreadCoord::block_y)));
    Value rowTiles = coord(lb::ThreadCoord::grid_y);
    Value n0 = mul(b.create<arith::DivUIOp>(loc, linear, rowTiles), index(p.schedule.getTile()[1]));
    Value m0 = mul(b.create<arith::RemUIOp>(loc, linear, rowTiles), index(p.schedule.getTile()[0]));
    auto partialsType = MemRefType::get({warps, slots, kPartialFloats}, b.getF32Type(),
                                        MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
    Value partials =
        b.create<lb::SharedBufferOp>(loc, partialsType, warps, slots, kPartialFloats);

    auto accType = VectorType::get({4}, b.getF32Type());
    auto aType = VectorType::get({8}, p.activation);
    auto pairsType = VectorType::get({4}, p.activation);
    auto runType = VectorType::get({8}, s8 ? Type(b.getI8Type()) : p.activation);
    // One 32-wide block of the mma_b_paired layout: two k16 steps, whose
    // codes are two 16-byte loads per 64 columns, and whose activations are
    // one 16-byte load per 8 rows of x: lane (g, t) reads row g of the slice
    // at k0 + 8 t, and step j's B registers are its pairs 2 j and 2 j + 1.
    // The ring (stages > 1): warp w's slots are stages w S .. w S + S - 1 of
    // two dynamic buffers, S = stages x (tile K / 32) blocks. A warp's
    // blocks are numbered in the order it computes them; block i lives in
    // slot i mod S. While it computes block i, the copies of blocks
    // i + 1 .. i + S - 1 are in flight, in shared memory rather than in
    // registers, so the depth costs no registers (the register-only kernel
    // could keep only a scale period of 16-row loads in flight at 128
    // registers, and ncu showed it waiting on them). Every lane copies
    // exactly the bytes it reads later, so a warp needs no block barrier.
    int64_t slotsPerWarp = streamsThroughRing(p) ? ringSlots(p) : 0;
    int64_t blocksPerChunk = p.schedule.getTile()[2] / kStepK;
    Value codesRing, xRing;
    if (slotsPerWarp) {
      int64_t stagesTotal = warps * slotsPerWarp;
      auto codesType = MemRefType::get({stagesTotal, p.schedule.getTile()[1], kStepK}, p.code,
                                       MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
      auto xType = MemRefType::get({stagesTotal, p.schedule.getTile()[0], kStepK}, p.activation,
                                   MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
      codesRing = b.create<lb::SharedBufferOp>(loc, codesType, stagesTotal,
                                               p.schedule.getTile()[1], kStepK, true);
      xRing = b.create<lb::SharedBufferOp>(loc, xType, stagesTotal, p.schedule.getTile()[0],
                                           kStepK, true);
      p.kernel->setAttr(kDynamicSharedBytesAttr, b.getI64IntegerAttr(ringBytes(p)));
    }
    // Issue the copies of the block at k into `slot` (none past K), and
    // close their group: one group per block, empty or not, keeps
    // "at most S - 2 pending" meaning "block i has landed".
    auto copyBlock = [&](Value k, Value slot) {
      Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, k, index(p.k));
      auto guarded = b.create<scf::IfOp>(loc, inside, false);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(guarded.thenBlock());
        Value stage = add(mul(warp, index(slotsPerWarp)), slot);
        b.create<lb::CopyCodesAsyncOp>(loc, p.weights, codesRing, stage, n0, k,
                                       b.getI64IntegerAttr(32), DenseI64ArrayAttr());
        b.create<lb::CopyActivationsAsyncOp>(loc, p.x, xRing, stage, m0, k, p.rows);
      }
      b.create<lb::AsyncCommitOp>(loc);
    };
    // The warp's slice of K (kSliceOf): its chunks follow each other
    // split_k x cluster_k chunks apart.
    SplitKShape shape = splitKShape(p);
    Value slice = kSliceOf(b, loc, shape, warp);
    int64_t slices = shape.slices();
    // Block `ahead` places after the block at k0 of the chunk at chunk0, in
    // this warp's order.
    auto blockAhead = [&](Value k0, Value chunk0, int64_t ahead) {
      Value place = add(b.create<arith::DivUIOp>(loc, b.create<arith::SubIOp>(loc, k0, chunk0),
                                                 index(kStepK)),
                        index(ahead));
      Value chunks = b.create<arith::DivUIOp>(loc, place, index(blocksPerChunk));
      Value within = b.create<arith::RemUIOp>(loc, place, index(blocksPerChunk));
      return add(chunk0, add(mul(chunks, index(p.schedule.getTile()[2] * slices)),
                             mul(within, index(kStepK))));
    };
    // The slot of the block at k0: (the warp's chunk number mod stages) x
    // blocks per chunk + the block's place in its chunk.
    auto slotOf = [&](Value k0, Value chunk0) {
      Value chunkNumber = b.create<arith::DivUIOp>(
          loc,
          b.create<arith::SubIOp>(loc,
                                  b.create<arith::DivUIOp>(loc, chunk0,
                                                           index(p.schedule.getTile()[2])),
                                  slice),
          index(slices));
      Value first = mul(b.create<arith::RemUIOp>(loc, chunkNumber,
                                                 index(p.schedule.getStages())),
                        index(blocksPerChunk));
      return add(first, b.create<arith::DivUIOp>(loc, b.create<arith::SubIOp>(loc, k0, chunk0),
                                                 index(kStepK)));
    };
    auto step = [&](Value k0, Value chunk0, ArrayRef<Value> quant, ValueRange carried) {
      SmallVector<Value> acc(carried.begin(), carried.end());
      SmallVector<PairedCodeLoader::Codes> words;
      SmallVector<Value> runs;
      if (slotsPerWarp) {
        Value slot = slotOf(k0, chunk0);
        b.create<lb::AsyncWaitOp>(loc, b.getI64IntegerAttr(slotsPerWarp - 2));
        b.create<lb::BarrierOp>(loc, /*warp=*/true);
        Value stage = add(mul(warp, index(slotsPerWarp)), slot);
        PairedCodeLoader codes(b, loc, p, codesRing, stage);
        for (int64_t half = 0; half < kStepsPerBlock; ++half)
          for (int64_t j = 0; j < loadsN(); ++j)
            words.push_back(
                codes.load(index(kColumnsPerLoad * j), index(kMmaK * half), half, j));
        for (int64_t c = 0; c < tokenTiles; ++c)
          runs.push_back(b.create<lb::LoadStagedActivationsOp>(
              loc, runType, xRing, stage, add(index(kTokens * c), group), mul(inGroup, index(8))));
        // Refill the slot block i - 1 used (every lane is past it: the warp
        // barrier above) with block i + S - 1.
        Value wraps = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, slot, index(0));
        Value refill = b.create<arith::SelectOp>(loc, wraps, index(slotsPerWarp - 1),
                                                 b.create<arith::SubIOp>(loc, slot, index(1)));
        copyBlock(blockAhead(k0, chunk0, slotsPerWarp - 1), refill);
      } else {
        PairedCodeLoader codes(b, loc, p, p.weights, /*stage=*/Value());
        for (int64_t half = 0; half < kStepsPerBlock; ++half)
          for (int64_t j = 0; j < loadsN(); ++j)
            words.push_back(codes.load(add(n0, index(kColumnsPerLoad * j)),
                                       add(k0, index(kMmaK * half)), half, j));
        for (int64_t c = 0; c < tokenTiles; ++c)
          runs.push_back(b.create<lb::LoadActivationsOp>(
              loc, runType, p.x, add(m0, add(index(kTokens * c), group)),
              add(k0, mul(inGroup, index(8))), p.rows));
      }
      if (s8)
        return multiplyS8(words, runs, acc);
      ArrayRef<Value> scales = quant.take_front(subtiles),
                      biases = quant.slice(subtiles, subtiles),
                      zeros = quant.slice(2 * subtiles, subtiles);
      for (int64_t half = 0; half < kStepsPerBlock; ++half) {
        SmallVector<Value> xT;
        for (int64_t c = 0; c < tokenTiles; ++c)
          xT.push_back(b.create<lb::SlicePairsOp>(loc, pairsType, runs[c],
                                                  b.getI64IntegerAttr(2 * half)));
        for (int64_t j = 0; j < loadsN(); ++j) {
          // Zero points come off load j's subtiles in the decode.
          SmallVector<Value> loadZeros;
          if (zeros.front())
            loadZeros.assign(zeros.begin() + j * kSubtilesPerLoad,
                             zeros.begin() + (j + 1) * kSubtilesPerLoad);
          Value values =
              decodeUnit(b, loc, p, words[half * loadsN() + j], loadZeros, rawCodes);
          SmallVector<Value> scaled;
          for (int64_t s = 0; s < kSubtilesPerLoad; ++s) {
            // Subtile s of a load is registers 2 s and 2 s + 1 of its decode.
            int64_t subtile = j * kSubtilesPerLoad + s;
            Value pairs =
                b.create<lb::SlicePairsOp>(loc, pairsType, values, b.getI64IntegerAttr(2 * s));
            if (!scalePeriodSums && !scaleAtEnd)
              pairs = scaleFragment(b, loc, p, pairsType, pairs, scales[subtile],
                                            biases[subtile]);
            scaled.push_back(pairs);
          }
          for (int64_t w = 0; w < kColumnsPerLoad / kWeightRows; ++w) {
            Value a = b.create<lb::PackAFragmentOp>(loc, aType, scaled[2 * w], scaled[2 * w + 1]);
            int64_t rows = j * (kColumnsPerLoad / kWeightRows) + w;
            for (int64_t c = 0; c < tokenTiles; ++c) {
              Value &sum = acc[rows * tokenTiles + c];
              sum = b.create<lb::MmaOp>(loc, accType, a, xT[c], sum);
            }
          }
        }
      }
      return acc;
    };

    // A period's products of raw codes, scaled once in f32 (slot r's rows g
    // and g + 8 are subtiles 2 r and 2 r + 1).
    auto finishPeriod = [&](ArrayRef<Value> quant, ValueRange acc, ValueRange periodSums) {
      return scaleSlots(acc, periodSums, quant);
    };
    Value zero = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.f)));
    // s8 products sum exactly in s32 (a schedule rule bounds a warp's K).
    Value initial = s8 && !fp8 ? Value(b.create<lb::ZeroAccumulatorOp>(
                             loc, VectorType::get({4}, b.getIntegerType(32, true))))
                       : zero;
    SmallVector<Value> init(slots, initial);
    // Codes centred on c != 0: byte d = 2^shift (v - c), so Σ v x =
    // 2^-shift (Σ d x + 2^shift c Σx), and zero points take (c - z) Σx:
    // each token slice's Σx is summed too.
    if (s8 && (s8Decode->centre || p.quant.getZero() != lb::ZeroMode::none)) {
      ones = b.create<lb::OnesAFragmentS8Op>(loc, VectorType::get({16}, b.getI8Type()));
      init.append(tokenTiles, initial);
    }
    // Group scales: s32 sums per period, f32 carried across them.
    SmallVector<Value> periodInit;
    if (s8 && scalePeriodSums) {
      periodInit = init;
      init.assign(slots, zero);
    }
    auto finishPeriodS8 = [&](ArrayRef<Value> quant, ValueRange acc, ValueRange periodSums) {
      // In this order, so the ops are built sums first (arguments would be
      // evaluated in an unspecified order).
      SmallVector<Value> values = closeS8Sums(periodSums, quant, *s8Decode);
      return scaleSlots(acc, values, s8Scales(quant, *s8Decode));
    };
    // The ring's prologue: the warp's first S - 1 blocks in flight.
    if (slotsPerWarp) {
      Value chunk0 = mul(slice, index(p.schedule.getTile()[2]));
      for (int64_t i = 0; i + 1 < slotsPerWarp; ++i)
        copyBlock(blockAhead(chunk0, chunk0, i), index(i));
    }
    // The ring keeps the chunks in flight; the chunk loop need not unroll.
    if (slotsPerWarp)
      shape.chunksInFlight = 1;
    SmallVector<Value> columns;
    for (int64_t s = 0; s < this->subtiles(); ++s)
      columns.push_back(column(n0, group, s));
    // 16 warps leave a thread 128 registers, and runs spilled there (16
    // bytes: MXFP4 f16, 8 x 64 x 256, two words a column).
    ScaleRuns runs(b, loc, p, shape.chunk, columns, /*registersAllow=*/warps < 16);
    HalfBlockLane halfBlock(b, loc, shape, inGroup);
    auto periodQuant = [&](Value k) { return loadQuant(n0, group, k, &runs, &halfBlock); };
    PeriodFinisher finisher = !scalePeriodSums ? PeriodFinisher()
                              : s8                ? PeriodFinisher(finishPeriodS8)
                                                  : PeriodFinisher(finishPeriod);
    SmallVector<Value> sums = buildSplitKLoops(b, loc, shape, slice, init, periodQuant, step,
                                               finisher, runs.starter(), periodInit);

    SmallVector<Value> channelQuant;
    if (scaleAtEnd)
      channelQuant = loadQuant(n0, group, index(0));
    // Per-channel s8: the sums close here, and the scale takes 2^-shift.
    if (s8 && scaleAtEnd) {
      if (!fp8)
        sums = closeS8Sums(sums, channelQuant, *s8Decode);
      SmallVector<Value> scales = s8Scales(channelQuant, *s8Decode);
      std::copy(scales.begin(), scales.end(), channelQuant.begin());
    }
    for (int64_t slot = 0; slot < slots; ++slot)
      b.create<lb::StorePartialFragmentOp>(loc, sums[slot], partials, warp, index(slot));
    b.create<lb::BarrierOp>(loc);
    auto finishSlot = [&](int64_t slot, Value total) {
      int64_t rows = slot / tokenTiles, c = slot % tokenTiles;
      if (scaleAtEnd)
        total = b.create<lb::ScaleAccumulateOp>(loc, accType, zero, total,
                                                channelQuant[2 * rows], channelQuant[2 * rows + 1]);
      if (s8)
        total = b.create<lb::ScaleTokensOp>(
            loc, accType, total,
            b.create<lb::LoadTokenScalesOp>(loc, VectorType::get({2}, b.getF32Type()), p.xScales,
                                            add(m0, index(kTokens * c)), p.rows));
      auto store = b.create<lb::StoreAccumulatorOp>(loc, total, p.y, add(m0, index(kTokens * c)),
                                                    add(n0, index(kWeightRows * rows)), p.rows);
      store.setTransposed(true);
    };
    if (shape.blocks > 1) {
      finishAcrossCluster(
          b, loc, shape, warp, Value(), slots,
          [&](int64_t slot) {
            Value total = b.create<lb::SumPartialFragmentsOp>(loc, accType, partials, index(slot));
            b.create<lb::StorePartialFragmentOp>(loc, total, partials, index(0), index(slot));
          },
          [&](int64_t slot) {
            finishSlot(slot, b.create<lb::SumClusterPartialsOp>(
                                 loc, accType, partials, index(slot),
                                 b.getI64IntegerAttr(shape.blocks)));
          });
    } else {
      // Warp (slot mod split_k) finishes slot: the adds and stores of the
      // block are spread over all its warps.
      for (int64_t slot = 0; slot < slots; ++slot) {
        Value mine =
            b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, warp, index(slot % warps));
        auto owner = b.create<scf::IfOp>(loc, mine, false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(owner.thenBlock());
        finishSlot(slot, b.create<lb::SumPartialFragmentsOp>(loc, accType, partials, index(slot)));
      }
    }
    b.create<func::ReturnOp>(loc);

    int64_t threads = 32 * warps;
    p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(threads));
    p.kernel->setAttr(kGridTileAttr,
                      b.getDenseI64ArrayAttr(
                          {p.schedule.getTile()[1], p.schedule.getTile()[0], shape.blocks}));
    // Accumulators, a period's loaded codes and activations are live at once.
    // One chunk in flight with at most 8 accumulator fragments (counting a
    // period's sums), scale periods of 128 or more and no zero points fits
    // in 128 registers, which keeps two 8-warp blocks on an SM;
    // otherwise give each thread up to 255 (a large block gets what fits).
    int64_t carried = scalePeriodSums ? 2 * slots : slots;
    // Shorter periods unroll more scale loads, and units of more than 4
    // words (8-bit codes) double a period's loaded words.
    bool fitsIn128 = carried <= 8 && !p.zeros && splitKShape(p).period >= 128 &&
                     p.fragment.wordsPerUnit() <= 4;
    if (slotsPerWarp) {
      // With a ring, shared memory decides how many blocks share an SM;
      // registers need not allow more.
      int64_t blocks = std::max<int64_t>(
          1, kMaxSharedBytesPerBlock / (ringBytes(p) + partialBytes(p)));
      setRegisterBudget(p, threads, std::min<int64_t>(255, 65536 / (threads * blocks)));
      return;
    }
    setRegisterBudget(p, threads, fitsIn128 ? 128 : 255);
  }
};

} // namespace

void buildMmaSplitKBody(OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  MmaSplitKBuilder{{builder, problem, source.getLoc()}}.build();
}

} // namespace lowbit::passes

// The gemv_tiled family (M up to ~8): CUDA cores over the same 64 x 32
// weight tiles (mma_b_paired) the mma family reads, so one packed copy of the
// weights serves every M (a plan cannot hold two layouts of the same weights).
//
// A block owns 64 rows of W and `split_k` warps that take turns along K in
// chunks of tile K values (SplitKLoops.h): scales are loaded once per group
// and a group's weight loads are all in flight together. A lane's 16 bytes of
// step j hold, for each of 8 n-subtiles s, the B-fragment registers of row
// 8 s + groupID at k = 8 tig + 4 j + {0, 1, 2, 3}; over a 32-wide block they
// meet the 8 activations x[m][8 tig .. 8 tig + 8) of each row m - one 16-byte
// load - so a subtile's dot needs four pair products. Lanes of one group
// (same groupID) then add their sums with two shuffles, and the warps' sums
// meet in shared memory; with cluster_k > 1 the blocks' sums then meet over
// distributed shared memory (finishAcrossCluster).
#include "passes/SplitKLoops.h"
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace lowbit::passes {
namespace {

constexpr int64_t kRowsPerBlock = core::kColumnsPerUnit, kSubtiles = core::kSubtilesPerUnit;
constexpr int64_t kGroupsPerWarp = 8;
constexpr int64_t kStepsPerBlock = core::kBlockK / core::kUnitK; // per mma_b_paired block

struct GemvTiledBuilder : TileBuilderBase {
  Value f32(double v) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(static_cast<float>(v)));
  }

  void build() {
    int64_t rowsM = p.schedule.getTile()[0], warps = p.schedule.getSplitK();
    int64_t slots = rowsM * kSubtiles;
    Value lane = coord(lb::ThreadCoord::lane);
    Value warp = coord(lb::ThreadCoord::warp);
    Value group = b.create<arith::DivUIOp>(loc, lane, index(4));
    Value inGroup = b.create<arith::RemUIOp>(loc, lane, index(4));
    Value n0 = mul(coord(lb::ThreadCoord::block_x), index(kRowsPerBlock));
    Value m0 = mul(coord(lb::ThreadCoord::block_y), index(rowsM));
    auto partialsType = MemRefType::get({warps, slots, kGroupsPerWarp}, b.getF32Type(),
                                        MemRefLayoutAttrInterface(), b.getI64IntegerAttr(3));
    Value partials =
        b.create<lb::SharedBufferOp>(loc, partialsType, warps, slots, kGroupsPerWarp);

    // The lane's scales of its 8 subtiles at K offset k, then their sub_value
    // biases, then their zeros that the decode subtracts (each null where the
    // zero mode has none).
    // Block scales shorter than a chunk come from the chunk's runs, for up
    // to 2 rows: with 4, MXFP4's 8 runs of 4 scales spilled 32 bytes
    // (t4x64x128, split_k 8, sm_90a).
    SplitKShape shape = splitKShape(p);
    SmallVector<Value> columns;
    for (int64_t s = 0; s < kSubtiles; ++s)
      columns.push_back(add(n0, add(index(8 * s), group)));
    ScaleRuns runs(b, loc, p, shape.chunk, columns, /*registersAllow=*/rowsM <= 2);
    // Groups of 16: each lane's dots are its own 8 K values', so each lane
    // scales them by its own half block's scale.
    HalfBlockLane halfBlock(b, loc, shape, inGroup);
    auto loadQuant = [&](Value k) {
      return loadColumnsQuant(
          b, loc, p, kSubtiles, [&](size_t s) { return columns[s]; },
          halfBlock.quantK(b, loc, k),
          [&](size_t s) { return runs.scaleAt(s, k, halfBlock.upperHalf); }, nullptr,
          [&](size_t s) { return runs.zeroAt(s, k, halfBlock.upperHalf); });
    };

    // One 32-wide block of the mma_b_paired layout: two 16-byte code loads,
    // and per row one 16-byte activation load x[m][k0 + 8 tig .. + 8), whose
    // halves [4 j, 4 j + 4) pair with step j's B registers (slot k = 2 tig +
    // h + 8 r holds k0 + 8 tig + 4 j + 2 r + h).
    // Zero points are applied to the decoded registers, once for all rows:
    // the decode subtracts them (sub_code, quantized) or one fma per register
    // makes q·s - z (sub_value), so the dots sum weights of the size of the
    // result instead of q·x sums that a z·Σx would have to cancel.
    // Two-level mins with f16 activations are the exception: their q·s - z
    // is made in f32 (a code times a step is not exact in halves), five
    // instructions a register, which made these kernels ALU-bound. So their
    // dots sum q·x, and each row's Σx over the lane's 8 K values (one f32
    // sum, shared by its 8 columns) takes the min: s·Σ q·x - z·Σx, with s
    // and z in f32. In bf16 the q·x products keep 8 bits, and the
    // cancellation doubled the worst error of the GPU suite (0.0036 ->
    // 0.0066, bf16 compact int4 g32), so bf16 keeps the f32 q·s - z.
    auto step = [&](Value k0, Value, ArrayRef<Value> quant, ValueRange carried) {
      ArrayRef<Value> scales = quant.take_front(kSubtiles),
                      biases = quant.slice(kSubtiles, kSubtiles),
                      zeros = quant.slice(2 * kSubtiles, kSubtiles);
      const bool minTerm = hasTwoLevelMins(p) && p.activation.isF16();
      const bool dequantized = biases.front() && !minTerm;
      const bool wideDot = needsWideDot(p);
      auto pairType = VectorType::get({4}, p.activation);
      SmallVector<SmallVector<Value>> fragments(kStepsPerBlock);
      PairedCodeLoader codes(b, loc, p, p.weights, /*stage=*/Value());
      for (int64_t half = 0; half < kStepsPerBlock; ++half) {
        Value values = decodeUnit(b, loc, p, codes.load(n0, add(k0, index(16 * half)), half, 0),
                                  zeros.front() ? ValueRange(zeros) : ValueRange());
        for (int64_t s = 0; s < kSubtiles; ++s) {
          Value fragment =
              b.create<lb::SlicePairsOp>(loc, pairType, values, b.getI64IntegerAttr(2 * s));
          if (dequantized)
            fragment = scaleFragment(b, loc, p, pairType, fragment, scales[s], biases[s]);
          fragments[half].push_back(fragment);
        }
      }
      SmallVector<Value> acc(carried.begin(), carried.end());
      auto runType = VectorType::get({8}, p.activation);
      for (int64_t i = 0; i < rowsM; ++i) {
        Value run = b.create<lb::LoadActivationsOp>(loc, runType, p.x, add(m0, index(i)),
                                                    add(k0, mul(inGroup, index(8))), p.rows);
        Value sumX = minTerm ? b.create<lb::SumOp>(loc, b.getF32Type(), run).getResult() : Value();
        for (int64_t s = 0; s < kSubtiles; ++s) {
          // Both steps' registers of the column against the 8 activations:
          // one chain of four pair products, widened once.
          Value column = b.create<lb::JoinPairsOp>(
              loc, runType, ValueRange{fragments[0][s], fragments[1][s]});
          Value &a = acc[i * kSubtiles + s];
          // Dequantized registers (q·s - z) add their dot to the sum; codes
          // (q, or q - z) scale the block's dot once: s·Σ q·x (- z·Σx).
          if (dequantized) {
            a = b.create<lb::DotOp>(loc, b.getF32Type(), column, run, a, wideDot);
            continue;
          }
          Value dot = b.create<lb::DotOp>(loc, b.getF32Type(), column, run, f32(0.0), wideDot);
          a = b.create<arith::AddFOp>(loc, a, b.create<arith::MulFOp>(loc, dot, scales[s]));
          if (minTerm)
            a = b.create<arith::AddFOp>(loc, a, b.create<arith::MulFOp>(loc, biases[s], sumX));
        }
      }
      return acc;
    };

    SmallVector<Value> init(slots, f32(0.0));
    SmallVector<Value> sums =
        buildSplitKLoops(b, loc, shape, kSliceOf(b, loc, shape, warp), init, loadQuant, step,
                         PeriodFinisher(), runs.starter());

    // Lanes of a group hold the same rows: add them, then add the warps.
    for (int64_t slot = 0; slot < slots; ++slot) {
      Value groupSum =
          b.create<lb::WarpSumOp>(loc, b.getF32Type(), sums[slot], b.getI64IntegerAttr(4));
      b.create<lb::StorePartialOp>(loc, groupSum, partials, warp, index(slot));
    }
    b.create<lb::BarrierOp>(loc);
    Value groupLeader = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, inGroup, index(0));
    auto storeRow = [&](int64_t slot, llvm::function_ref<Value()> total) {
      Value m = add(m0, index(slot / kSubtiles));
      auto inRange = b.create<scf::IfOp>(
          loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, m, p.rows), false);
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(inRange.thenBlock());
      b.create<lb::StoreOutputOp>(loc, total(), p.y, m,
                                  add(n0, add(index(8 * (slot % kSubtiles)), group)));
    };
    if (shape.blocks > 1) {
      finishAcrossCluster(
          b, loc, shape, warp, groupLeader, slots,
          [&](int64_t slot) {
            Value total = b.create<lb::SumPartialsOp>(loc, b.getF32Type(), partials, index(slot));
            b.create<lb::StorePartialOp>(loc, total, partials, index(0), index(slot));
          },
          [&](int64_t slot) {
            storeRow(slot, [&] {
              return b.create<lb::SumClusterPartialsOp>(loc, b.getF32Type(), partials,
                                                        index(slot),
                                                        b.getI64IntegerAttr(shape.blocks));
            });
          });
    } else {
      Value writer = b.create<arith::AndIOp>(
          loc, b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, warp, index(0)),
          groupLeader);
      auto writes = b.create<scf::IfOp>(loc, writer, false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(writes.thenBlock());
      for (int64_t slot = 0; slot < slots; ++slot)
        storeRow(slot, [&] {
          return b.create<lb::SumPartialsOp>(loc, b.getF32Type(), partials, index(slot));
        });
    }
    b.create<func::ReturnOp>(loc);

    int64_t threads = 32 * warps;
    p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(threads));
    p.kernel->setAttr(kGridTileAttr,
                      b.getDenseI64ArrayAttr({kRowsPerBlock, rowsM, shape.blocks}));
    // 128 registers hold up to 4 rows x 8 subtiles of accumulators plus a
    // tile's decoded values; 8 rows, or zero points (16 more scale and zero
    // registers), spill at 128 on some shapes, so they get up to 255. So do
    // two-plane units (3, 5 and 6 bits), whose high words stay live beside
    // the low ones: bf16 int5 g64 spilled 40 bytes at 2 rows, 2 stages.
    int64_t registers = rowsM >= 8 || p.zeros || p.fragment.hasPlanes() ? 255 : 128;
    setRegisterBudget(p, threads, registers);
  }
};

} // namespace

void buildGemvTiledBody(OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  GemvTiledBuilder{{builder, problem, source.getLoc()}}.build();
}

} // namespace lowbit::passes

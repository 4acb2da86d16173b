// The gemv family (M up to ~8): CUDA cores, 1, 2, 4 or 8 weight rows per
// warp (tile N / warps N).
//
// Each lane owns 32 consecutive codes of a row per step (one 16-byte load),
// so a warp covers 1024 values of K per step and the whole row in K / 1024
// steps, with `tile[2] / 1024` steps unrolled to keep several loads in
// flight. The activations the lane needs are the same 32 values of K for
// every row: a warp loads them once per step for all its rows of W, and
// they stay in L1 across the block's warps. With one row a warp those
// 64-byte lane loads, repeated per row, saturated L1 at M = 1 (97% busy, DRAM
// at 31%, on the H200) for every code width; more rows a warp divide that
// traffic, and the narrowest codes (1 and 2 bits: 4 or 8 bytes a unit
// against 64 of activations) need the most. Scales are applied once per lane chunk when groups are
// multiples of 32, s·Σ q·x instead of Σ (s·q)·x, and once per half chunk
// when they are odd multiples of 16. Zero points are applied to the decoded
// codes, once per chunk for all rows (see step()), except two-level mins with
// f16 activations, which take s·Σ q·x − z·Σx as gemv_tiled does.
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace lowbit::passes {
namespace {

constexpr int64_t kCodesPerLane = core::kValuesPerUnit; // one gemv_row unit
constexpr int64_t kCodesPerWarpStep = 32 * kCodesPerLane;

struct GemvBuilder : TileBuilderBase {
  Value f32(double v) {
    return b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(static_cast<float>(v)));
  }

  // One lane's contribution for one step: for each row m of the block and
  // each of the warp's rows n of W, the dequantized dot product of its 32
  // codes with x[m, k .. k + 32), at acc[m * rows of W + r]. A group of 16
  // (or an odd multiple) splits the unit into two parts, registers 0-7 and
  // 8-15 (its values in K order), each with its own scale and zero. Each
  // activation load serves every row of W the warp carries.
  SmallVector<Value> step(ArrayRef<Value> ns, Value k, Value m0, ValueRange acc) {
    int64_t rowsPerBlock = p.schedule.getTile()[0];
    auto valuesType = VectorType::get({kCodesPerLane}, p.activation);
    const bool grouped = p.quant.getGranularity() == lb::ScaleGranularity::group;
    const int64_t parts = grouped && p.quant.getGroupSize() % kCodesPerLane ? 2 : 1;
    const int64_t partValues = kCodesPerLane / parts;
    auto partType = VectorType::get({partValues}, p.activation);
    auto partOf = [&](Value vector, int64_t part) -> Value {
      if (parts == 1)
        return vector;
      return b.create<lb::SlicePairsOp>(loc, partType, vector,
                                        b.getI64IntegerAttr(part * partValues / 2));
    };
    // Per row of W: its parts' weights (decoded, dequantized when zero
    // points or scales must be applied per value) and their scales.
    struct RowWeights {
      SmallVector<Value, 2> weights;
      SmallVector<ColumnQuant, 2> quant;
      bool dequantized = false;
    };
    SmallVector<RowWeights, 4> rows;
    const bool minTerm = hasTwoLevelMins(p) && p.activation.isF16();
    for (Value n : ns) {
      auto loadQuant = [&] {
        SmallVector<ColumnQuant, 2> quant;
        for (int64_t part = 0; part < parts; ++part)
          quant.push_back(loadColumnQuant(
              b, loc, p, n, part ? b.create<arith::AddIOp>(loc, k, index(partValues)) : k));
        return quant;
      };
      // With zero points the unit's scales and zeros come first: the decode
      // subtracts the zeros (sub_code, quantized), or one fma per register
      // makes q·s - z (sub_value). Either way the dot then sums weights of
      // the size of the result, never q·x sums that a z·Σx must cancel (bf16
      // keeps 8 bits of those). They are loaded before the codes: after
      // them, ptxas spilled the 4-row kernel with uint4 zero codes at 128
      // registers. Two-level mins with f16 activations are the exception
      // (minTerm): their q·s - z is made in f32, five instructions a
      // register, so the dot sums q·x and the unit's Σx, one per row of x
      // shared by the warp's rows of W, takes the min: s·Σ q·x - z·Σx, as in
      // gemv_tiled. bf16 keeps the f32 q·s - z (docs/architecture.md).
      RowWeights row;
      if (p.zeros)
        row.quant = loadQuant();
      auto words = b.create<lb::LoadCodesOp>(loc, unitWordsType(b, p), p.weights, /*stage=*/Value(),
                                             n, k, lb::Fragment::gemv_row, DenseI64ArrayAttr());
      SmallVector<Value, 2> zeros;
      for (const ColumnQuant &q : row.quant)
        if (q.zero)
          zeros.push_back(q.zero);
      Value values = decodeUnit(b, loc, p, {words, 0}, zeros);
      if (!p.zeros)
        row.quant = loadQuant();
      row.dequantized = static_cast<bool>(row.quant.front().bias) && !minTerm;
      for (int64_t part = 0; part < parts; ++part) {
        Value w = partOf(values, part);
        if (row.dequantized)
          w = scaleFragment(b, loc, p, partType, w, row.quant[part].scale, row.quant[part].bias);
        row.weights.push_back(w);
      }
      rows.push_back(std::move(row));
    }

    const bool wideDot = needsWideDot(p);
    SmallVector<Value> next;
    for (int64_t i = 0; i < rowsPerBlock; ++i) {
      Value m = b.create<arith::AddIOp>(loc, m0, index(i));
      Value x = b.create<lb::LoadActivationsOp>(loc, valuesType, p.x, m, k, p.rows);
      SmallVector<Value, 2> sumX;
      if (minTerm)
        for (int64_t part = 0; part < parts; ++part)
          sumX.push_back(b.create<lb::SumOp>(loc, b.getF32Type(), partOf(x, part)));
      for (size_t r = 0; r < rows.size(); ++r) {
        Value sum = acc[i * rows.size() + r];
        for (int64_t part = 0; part < parts; ++part) {
          Value dot = b.create<lb::DotOp>(loc, b.getF32Type(), rows[r].weights[part],
                                          partOf(x, part), f32(0.0), wideDot);
          // s·Σ (q - z)·x, s·Σ q·x, Σ (q·s - z)·x, or s·Σ q·x - z·Σx.
          Value contribution =
              rows[r].dequantized
                  ? dot
                  : b.create<arith::MulFOp>(loc, dot, rows[r].quant[part].scale).getResult();
          sum = b.create<arith::AddFOp>(loc, sum, contribution);
          if (minTerm)
            sum = b.create<arith::AddFOp>(
                loc, sum,
                b.create<arith::MulFOp>(loc, rows[r].quant[part].bias, sumX[part]));
        }
        next.push_back(sum);
      }
    }
    return next;
  }

  void build() {
    ArrayRef<int64_t> tile = p.schedule.getTile();
    int64_t rowsPerBlock = tile[0], rowsPerGrid = tile[1];
    int64_t warps = p.schedule.getWarps()[1], rowsPerWarp = rowsPerGrid / warps;
    int64_t unroll = tile[2] / kCodesPerWarpStep;
    Value lane = coord(lb::ThreadCoord::lane);
    Value warp = coord(lb::ThreadCoord::warp);
    // Warp w's rows of W are w, w + warps, ...: with one row a warp, the
    // rows of a block are its warps, as before rows per warp existed.
    Value firstRow =
        b.create<arith::MulIOp>(loc, coord(lb::ThreadCoord::block_x), index(rowsPerGrid));
    SmallVector<Value, 4> ns;
    for (int64_t r = 0; r < rowsPerWarp; ++r)
      ns.push_back(b.create<arith::AddIOp>(
          loc, b.create<arith::AddIOp>(loc, firstRow, index(r * warps)), warp));
    Value m0 = b.create<arith::MulIOp>(loc, coord(lb::ThreadCoord::block_y), index(rowsPerBlock));
    Value laneK = b.create<arith::MulIOp>(loc, lane, index(kCodesPerLane));

    SmallVector<Value> init(rowsPerBlock * rowsPerWarp, f32(0.0));
    auto loop = b.create<scf::ForOp>(loc, index(0), index(p.k), index(kCodesPerWarpStep), init);
    loop->setAttr("lb.unroll", b.getI64IntegerAttr(unroll));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value k = b.create<arith::AddIOp>(loc, loop.getInductionVar(), laneK);
      ValueRange acc = loop.getRegionIterArgs();
      if (p.k % kCodesPerWarpStep == 0) {
        b.create<scf::YieldOp>(loc, step(ns, k, m0, acc));
      } else {
        // The last step is partial: lanes past K keep their sums.
        Value inside = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, k, index(p.k));
        auto guarded = b.create<scf::IfOp>(loc, TypeRange(acc), inside, true);
        b.setInsertionPointToStart(guarded.thenBlock());
        b.create<scf::YieldOp>(loc, step(ns, k, m0, acc));
        b.setInsertionPointToStart(guarded.elseBlock());
        b.create<scf::YieldOp>(loc, acc);
        b.setInsertionPointAfter(guarded);
        b.create<scf::YieldOp>(loc, guarded.getResults());
      }
    }

    Value isLaneZero = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, lane, index(0));
    for (int64_t i = 0; i < rowsPerBlock; ++i) {
      Value m = b.create<arith::AddIOp>(loc, m0, index(i));
      Value inRange = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, m, p.rows);
      Value writes = b.create<arith::AndIOp>(loc, isLaneZero, inRange);
      for (int64_t r = 0; r < rowsPerWarp; ++r) {
        Value total =
            b.create<lb::WarpSumOp>(loc, b.getF32Type(), loop.getResult(i * rowsPerWarp + r));
        auto guarded = b.create<scf::IfOp>(loc, writes, false);
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(guarded.thenBlock());
        b.create<lb::StoreOutputOp>(loc, total, p.y, m, ns[r]);
      }
    }
    b.create<func::ReturnOp>(loc);

    int64_t threads = 32 * p.schedule.getWarps()[1];
    p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(threads));
    // The register budget sets how many warps an SM holds, and so how many
    // 16-byte loads are in flight: 64 registers (8 blocks of 4 warps) for one
    // row, 128 up to four (two rows spill at 64 on sm_86/sm_89), 255 from
    // eight rows up, whose activation
    // vectors alone take 128. Without a budget ptxas picks its own and may
    // spill.
    // A unit of more than 4 words (8-bit codes: two 16-byte loads) keeps
    // twice the loaded words live, so one row gets 96, and up to four rows
    // with groups of 16 (two scales, zeros and dots a unit) get 168 (three
    // blocks): 8-bit sub_value codes spilled at 128, and so did e2m1 with
    // e4m3fn scales per 16 and a tensor scale (NVFP4, 20 bytes on sm_90a).
    bool halves = p.quant.getGranularity() == lb::ScaleGranularity::group &&
                  p.quant.getGroupSize() % kCodesPerLane != 0;
    // Two-plane units (3, 5 and 6 bits) keep their high words' shifted
    // copies live too: bf16 int6 per channel spilled 16 bytes at 4 rows and
    // 128 (sm_90a).
    const bool heavyUnit =
        halves || p.fragment.hasPlanes() || p.fragment.wordsPerUnit() > 4 || p.zeros;
    // bf16's two-level mins keep the f32 q·s - z of a unit's registers
    // (step()'s minTerm is f16 only): one row spilled 16 bytes at 64
    // (Q4_K-like uint4 g32, 1536 x 4096, tile K 4096, sm_90a).
    const bool wideMins = hasTwoLevelMins(p) && !p.activation.isF16();
    int64_t registers = rowsPerBlock == 1 ? (p.fragment.wordsPerUnit() > 4 || wideMins ? 96 : 64)
                        : rowsPerBlock <= 4 ? (halves || p.fragment.hasPlanes() ? 168 : 128)
                                            : 255;
    // More rows of W a warp keep their units, decoded values and dots live
    // beside the one activation vector they share.
    if (rowsPerWarp == 2 && rowsPerBlock == 1)
      registers = heavyUnit ? 168 : 128;
    else if (rowsPerWarp > 1)
      registers = rowsPerWarp == 2 && !heavyUnit ? 168 : 255;
    setRegisterBudget(p, threads, registers);
    p.kernel->setAttr(kGridTileAttr, b.getDenseI64ArrayAttr({rowsPerGrid, rowsPerBlock, 1}));
  }
};

} // namespace

void buildGemvBody(OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  GemvBuilder{{builder, problem, source.getLoc()}}.build();
}

} // namespace lowbit::passes

// The mma family (M from ~16 to a few hundred): m16n8k16 tensor-core mma.
//
// A block computes a [tile M, tile N] block of Y; its warps form a
// [warps M, warps N] grid, each warp owning (tile M / warps M) rows in
// m16 fragments and (tile N / warps N) columns in groups of 64 (one 16-byte
// code load per lane covers the B fragments of 64 columns x 16 K). Both
// operands stream through a `stages`-deep ring of shared-memory buffers
// filled with cp.async. The weight tiles stay in the derived weight layout
// (mma_b_paired, shared with the split-K families and gemv_tiled, so one
// packed copy serves every M) and are read with one 16-byte shared load per
// lane per 64 x 16 step; the paired K order lets the activation tile be read
// with one 16-byte shared load per row and lane per 32-wide block. Scales multiply the
// decoded B registers; zero points come off the codes in the decode, before
// the scale. A lane loads its subtiles' quant once per K tile where the tile
// lies inside one group, else at each 32-wide block that starts a group: both
// k16 steps of a block hold the same K values in the paired order, and with
// groups of 16 a lane's values of a block lie in one of its two groups
// (core::pairedLanesKeepTheirGroupOf16; HalfBlockLane picks the lane's).
// Two-level scales' super-block steps are read once per super-block, not
// with each group's codes: a tile inside a super-block carries them to the
// next tile in registers and reloads them where a super-block starts; a tile
// of whole super-blocks loads them where each starts.
#include "passes/SplitKLoops.h"
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace lowbit::passes {
namespace {

constexpr int64_t kColumnsPerLoad = core::kColumnsPerUnit; // n extent of one code unit
constexpr int64_t kMmaK = 16, kMmaM = 16, kMmaN = 8;
static_assert(kMmaK == core::kUnitK, "a code unit is one k16 step of the mma");

struct MmaShape {
  int64_t tm, tn, tk, wm, wn, stages;
  int64_t fragmentsM() const { return tm / wm / kMmaM; }
  int64_t loadsN() const { return tn / wn / kColumnsPerLoad; }
  int64_t threads() const { return 32 * wm * wn; }
};

MmaShape shapeOf(lb::ScheduleAttr s) {
  ArrayRef<int64_t> t = s.getTile(), w = s.getWarps();
  return {t[0], t[1], t[2], w[0], w[1], s.getStages()};
}

struct MmaBuilder : TileBuilderBase {
  MmaShape shape;

  void copyTiles(Value xBuffer, Value wBuffer, Value stage, Value m0, Value n0, Value k0) {
    b.create<lb::CopyTileAsyncOp>(loc, p.x, xBuffer, stage, m0, k0, p.rows,
                                  b.getI64IntegerAttr(shape.threads()));
    b.create<lb::CopyCodesAsyncOp>(loc, p.weights, wBuffer, stage, n0, k0,
                                   b.getI64IntegerAttr(shape.threads()), DenseI64ArrayAttr());
  }

  void build() {
    int64_t tiles = p.k / shape.tk, stages = shape.stages;
    int64_t fragmentsM = shape.fragmentsM(), loadsN = shape.loadsN();
    int64_t subtiles = loadsN * (kColumnsPerLoad / kMmaN);
    auto sharedSpace = b.getI64IntegerAttr(3);
    auto xBufferType = MemRefType::get({stages, shape.tm, shape.tk}, p.activation,
                                       MemRefLayoutAttrInterface(), sharedSpace);
    auto wBufferType = MemRefType::get({stages, shape.tn, shape.tk}, p.code,
                                       MemRefLayoutAttrInterface(), sharedSpace);
    // Rows of x keep their 16-byte chunks swizzled by (r mod 8) ^ 4 (r mod 2)
    // (#lb.swizzle), so lb.load_a_fragment's phases are conflict-free.
    auto swizzle = lb::SwizzleAttr::get(b.getContext(), 128, {5, 2, 4});
    Value xBuffer = b.create<lb::SharedBufferOp>(loc, xBufferType, stages, shape.tm, shape.tk,
                                                 /*dynamic=*/false, swizzle);
    Value wBuffer = b.create<lb::SharedBufferOp>(loc, wBufferType, stages, shape.tn, shape.tk);

    Value lane = coord(lb::ThreadCoord::lane);
    Value warp = coord(lb::ThreadCoord::warp);
    Value warpRow = b.create<arith::DivUIOp>(loc, warp, index(shape.wn));
    Value warpColumn = b.create<arith::RemUIOp>(loc, warp, index(shape.wn));
    Value group = b.create<arith::DivUIOp>(loc, lane, index(4)); // PTX groupID
    const bool grouped = p.quant.getGranularity() == lb::ScaleGranularity::group;
    const int64_t groupSize = grouped ? p.quant.getGroupSize() : p.k;
    const bool groupsOf16 = groupSize == core::kUnitK;
    HalfBlockLane half(b, loc, groupsOf16,
                       groupsOf16 ? b.create<arith::RemUIOp>(loc, lane, index(4)) : Value());
    // The K offsets in a tile where the lane's quant is (re)loaded.
    const int64_t quantPeriod = std::max<int64_t>(groupSize, core::kBlockK);
    auto startsQuant = [&](int64_t blockK) { return blockK % quantPeriod == 0; };
    const int64_t superBlock = p.quant.getSuperStep() ? p.quant.getSuperBlock() : 0;
    const bool carrySteps = superBlock > shape.tk && superBlock % shape.tk == 0;
    const bool tileSteps = superBlock && shape.tk % superBlock == 0;
    const int64_t stepsPerColumn = p.zeros ? 2 : 1;
    Value n0 = mul(coord(lb::ThreadCoord::block_x), index(shape.tn));
    Value m0 = mul(coord(lb::ThreadCoord::block_y), index(shape.tm));
    Value warpM = mul(warpRow, index(fragmentsM * kMmaM));
    Value warpN = mul(warpColumn, index(loadsN * kColumnsPerLoad));

    // Prologue: the first stages - 1 tiles in flight, one commit group each.
    for (int64_t s = 0; s + 1 < stages; ++s) {
      if (s < tiles)
        copyTiles(xBuffer, wBuffer, index(s), m0, n0, index(s * shape.tk));
      b.create<lb::AsyncCommitOp>(loc);
    }

    auto accType = VectorType::get({4}, b.getF32Type());
    Value zero = b.create<arith::ConstantOp>(
        loc, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.f)));
    SmallVector<Value> init(fragmentsM * subtiles, zero);
    if (carrySteps) // tile 0 starts a super-block: these are never read
      init.append(subtiles * stepsPerColumn,
                  b.create<arith::ConstantOp>(loc, b.getF32FloatAttr(0.f)));
    auto loop = b.create<scf::ForOp>(loc, index(0), index(tiles), index(1), init);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value tile = loop.getInductionVar();
      Value stage = b.create<arith::RemUIOp>(loc, tile, index(stages));
      // Tile t is complete once at most stages - 2 newer groups are pending;
      // the barrier also tells every warp that stage (t - 1) % stages, which
      // the copy below overwrites, has been read.
      b.create<lb::AsyncWaitOp>(loc, b.getI64IntegerAttr(stages - 2));
      b.create<lb::BarrierOp>(loc);
      Value next = add(tile, index(stages - 1));
      Value inRange = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, next, index(tiles));
      auto prefetch = b.create<scf::IfOp>(loc, inRange, false);
      {
        OpBuilder::InsertionGuard inner(b);
        b.setInsertionPointToStart(prefetch.thenBlock());
        copyTiles(xBuffer, wBuffer, b.create<arith::RemUIOp>(loc, next, index(stages)), m0, n0,
                  mul(next, index(shape.tk)));
      }
      b.create<lb::AsyncCommitOp>(loc);

      // The lane's scale (and zero) for each of its n-subtiles from K
      // offset blockK of this tile on.
      Value k0 = mul(tile, index(shape.tk));
      auto columnOf = [&](int64_t s) { return add(add(n0, warpN), add(index(kMmaN * s), group)); };
      SmallVector<SuperSteps> steps; // per subtile, where loaded once per super-block
      ValueRange carried = loop.getRegionIterArgs().drop_front(fragmentsM * subtiles);
      if (carrySteps) {
        Value starts = b.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::eq,
            b.create<arith::RemUIOp>(loc, tile, index(superBlock / shape.tk)), index(0));
        SmallVector<Type> types(carried.size(), b.getF32Type());
        auto reload = b.create<scf::IfOp>(loc, types, starts, /*withElseRegion=*/true);
        {
          OpBuilder::InsertionGuard inner(b);
          b.setInsertionPointToStart(reload.thenBlock());
          SmallVector<Value> fresh;
          for (int64_t s = 0; s < subtiles; ++s) {
            SuperSteps loaded = loadSuperSteps(b, loc, p, columnOf(s), k0);
            fresh.push_back(loaded.scale);
            if (loaded.zero)
              fresh.push_back(loaded.zero);
          }
          b.create<scf::YieldOp>(loc, fresh);
          b.setInsertionPointToStart(reload.elseBlock());
          b.create<scf::YieldOp>(loc, carried);
        }
        for (int64_t s = 0; s < subtiles; ++s)
          steps.push_back({reload.getResult(s * stepsPerColumn),
                           p.zeros ? reload.getResult(s * stepsPerColumn + 1) : Value()});
      }
      SmallVector<Value> scales, biases, zeros;
      auto loadQuant = [&](int64_t blockK) {
        scales.clear(), biases.clear(), zeros.clear();
        Value k = half.quantK(b, loc, add(k0, index(blockK)));
        if (tileSteps && blockK % superBlock == 0) {
          steps.clear();
          for (int64_t s = 0; s < subtiles; ++s)
            steps.push_back(loadSuperSteps(b, loc, p, columnOf(s), add(k0, index(blockK))));
        }
        for (int64_t s = 0; s < subtiles; ++s) {
          ColumnQuant q = loadColumnQuant(b, loc, p, columnOf(s), k, {}, {},
                                          steps.empty() ? SuperSteps() : steps[size_t(s)]);
          scales.push_back(q.scale);
          biases.push_back(q.bias);
          if (q.zero)
            zeros.push_back(q.zero);
        }
      };

      SmallVector<Value> acc(loop.getRegionIterArgs().take_front(fragmentsM * subtiles));
      auto aType = VectorType::get({8}, p.activation);
      auto bType = VectorType::get({4}, p.activation);
      auto pairedType = VectorType::get({16}, p.activation);
      SmallVector<Value> paired;
      PairedCodeLoader codes(b, loc, p, wBuffer, stage);
      for (int64_t ks = 0; ks < shape.tk / kMmaK; ++ks) {
        if (ks % 2 == 0 && startsQuant(kMmaK * ks))
          loadQuant(kMmaK * ks);
        // Both k16 steps of a 32-wide block read their A fragments with one
        // 16-byte shared load per row (the mma_b_paired K order).
        if (ks % 2 == 0) {
          paired.clear();
          for (int64_t f = 0; f < fragmentsM; ++f)
            paired.push_back(b.create<lb::LoadAFragmentOp>(loc, pairedType, xBuffer, stage,
                                                           add(warpM, index(kMmaM * f)),
                                                           index(kMmaK * ks)));
        }
        SmallVector<Value> a;
        for (int64_t f = 0; f < fragmentsM; ++f)
          a.push_back(b.create<lb::SlicePairsOp>(loc, aType, paired[f],
                                                 b.getI64IntegerAttr(4 * (ks % 2))));
        for (int64_t j = 0; j < loadsN; ++j) {
          // Zero points come off the codes of load j's subtiles in the decode.
          constexpr int64_t kSubtilesPerLoad = kColumnsPerLoad / kMmaN;
          ValueRange loadZeros =
              zeros.empty() ? ValueRange()
                            : ValueRange(zeros).slice(j * kSubtilesPerLoad, kSubtilesPerLoad);
          Value values = decodeUnit(b, loc, p,
                                    codes.load(add(warpN, index(kColumnsPerLoad * j)),
                                               index(kMmaK * ks), ks % 2, (ks / 2) * loadsN + j),
                                    loadZeros);
          for (int64_t s = 0; s < kColumnsPerLoad / kMmaN; ++s) {
            int64_t subtile = j * (kColumnsPerLoad / kMmaN) + s;
            // Subtile s of a load is registers 2 s and 2 s + 1 of its decode.
            Value fragment = b.create<lb::SlicePairsOp>(loc, bType, values,
                                                        b.getI64IntegerAttr(2 * s));
            fragment = scaleFragment(b, loc, p, bType, fragment, scales[subtile],
                                     biases[subtile]);
            for (int64_t f = 0; f < fragmentsM; ++f) {
              Value &c = acc[f * subtiles + subtile];
              c = b.create<lb::MmaOp>(loc, accType, a[f], fragment, c);
            }
          }
        }
      }
      if (carrySteps)
        for (const SuperSteps &step : steps) {
          acc.push_back(step.scale);
          if (step.zero)
            acc.push_back(step.zero);
        }
      b.create<scf::YieldOp>(loc, acc);
    }

    for (int64_t f = 0; f < fragmentsM; ++f)
      for (int64_t s = 0; s < subtiles; ++s)
        b.create<lb::StoreAccumulatorOp>(loc, loop.getResult(f * subtiles + s), p.y,
                                         add(add(m0, warpM), index(kMmaM * f)),
                                         add(add(n0, warpN), index(kMmaN * s)), p.rows);
    b.create<func::ReturnOp>(loc);

    p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(shape.threads()));
    p.kernel->setAttr(kGridTileAttr, b.getDenseI64ArrayAttr({shape.tn, shape.tm, 1}));
    // Up to 255 registers a thread: accumulators and decoded fragments of a
    // whole K tile are live at once.
    setRegisterBudget(p, shape.threads(), 255);
  }
};

} // namespace

void buildMmaBody(OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  MmaBuilder{{builder, problem, source.getLoc()}, shapeOf(problem.schedule)}.build();
}

} // namespace lowbit::passes

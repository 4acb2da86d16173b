// The dequant family: the first half of the dense path (docs/architecture.md,
// "The dense path"). It writes dequant(W)[N, K] in the activation type,
// row-major, into the caller's workspace, and cuBLASLt multiplies that by x.
// Where M is large the tensor cores' f16 rate, not the weights' bytes, is the
// limit, and cuBLAS reaches more of it than lowbit's own large-M kernels; so
// for those M the plan pays one pass over the weights to use it.
//
// It reads the same mma_b_paired tiles as gemv_tiled (one packed copy serves
// every family of a plan) with the same decode and quantization, so every
// format any family serves is served here too. A block owns 64 columns and
// split_k warps; each warp takes chunks of tile K along K (SplitKLoops.h),
// and the grid's z gives every chunk a warp of its own. Per 32-wide K block
// a lane decodes both k16 steps and, for each of its 8 subtiles, writes the
// 8 consecutive values of its column that the two steps' registers hold
// (lb.store_dense_weights): a quad writes 64 contiguous bytes of a row.
#include "passes/SplitKLoops.h"
#include "passes/TileFamilies.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace lowbit::passes {
namespace {

constexpr int64_t kSubtiles = core::kSubtilesPerUnit;
constexpr int64_t kStepsPerBlock = core::kBlockK / core::kUnitK;

struct DequantBuilder : TileBuilderBase {
  void build() {
    SplitKShape shape = splitKShape(p);
    int64_t chunks = p.k / shape.chunk;
    // Enough blocks along z that every chunk has a warp; no cluster, since
    // nothing is reduced.
    shape.blocks = (chunks + shape.warps - 1) / shape.warps;
    shape.chunksInFlight = 1;

    Value lane = coord(lb::ThreadCoord::lane);
    Value warp = coord(lb::ThreadCoord::warp);
    Value group = b.create<arith::DivUIOp>(loc, lane, index(4));
    Value inGroup = b.create<arith::RemUIOp>(loc, lane, index(4));
    Value n0 = mul(coord(lb::ThreadCoord::block_x), index(core::kColumnsPerUnit));
    SmallVector<Value> columns;
    for (int64_t s = 0; s < kSubtiles; ++s)
      columns.push_back(add(n0, add(index(8 * s), group)));

    HalfBlockLane halfBlock(b, loc, shape, inGroup);
    // As gemv_tiled loads them, without scale runs: a chunk is one warp's.
    auto loadQuant = [&](Value k) {
      return loadColumnsQuant(b, loc, p, kSubtiles, [&](size_t s) { return columns[s]; },
                              halfBlock.quantK(b, loc, k));
    };

    auto pairType = VectorType::get({4}, p.activation);
    auto step = [&](Value k0, Value, ArrayRef<Value> quant, ValueRange) {
      ArrayRef<Value> scales = quant.take_front(kSubtiles),
                      biases = quant.slice(kSubtiles, kSubtiles),
                      zeros = quant.slice(2 * kSubtiles, kSubtiles);
      PairedCodeLoader codes(b, loc, p, p.weights, /*stage=*/Value());
      SmallVector<SmallVector<Value>> fragments(kStepsPerBlock);
      for (int64_t half = 0; half < kStepsPerBlock; ++half) {
        Value values = decodeUnit(b, loc, p, codes.load(n0, add(k0, index(16 * half)), half, 0),
                                  zeros.front() ? ValueRange(zeros) : ValueRange());
        for (int64_t s = 0; s < kSubtiles; ++s) {
          Value fragment =
              b.create<lb::SlicePairsOp>(loc, pairType, values, b.getI64IntegerAttr(2 * s));
          fragments[half].push_back(
              scaleFragment(b, loc, p, pairType, fragment, scales[s], biases[s]));
        }
      }
      Value k = add(k0, mul(inGroup, index(8)));
      for (int64_t s = 0; s < kSubtiles; ++s)
        b.create<lb::StoreDenseWeightsOp>(loc, fragments[0][s], fragments[1][s], p.y,
                                          columns[s], k);
      return SmallVector<Value>();
    };
    buildSplitKLoops(b, loc, shape, kSliceOf(b, loc, shape, warp), ValueRange(), loadQuant,
                     step);
    b.create<func::ReturnOp>(loc);

    int64_t threads = 32 * shape.warps;
    p.kernel->setAttr(kBlockThreadsAttr, b.getI64IntegerAttr(threads));
    // M does not change the work: one block row whatever M the launch says.
    p.kernel->setAttr(kGridTileAttr, b.getDenseI64ArrayAttr(
                                         {core::kColumnsPerUnit, kDequantRowsPerBlock,
                                          shape.blocks}));
    // Zero points, and two-plane units (their high words live beside the low
    // ones: Q6_K's int6 spilled 96 bytes at tile K 256 and 128), get 255.
    setRegisterBudget(p, threads, p.zeros || p.fragment.hasPlanes() ? 255 : 128);
  }
};

} // namespace

void buildDequantBody(OpBuilder &builder, const KernelProblem &problem) {
  lb::QMatmulOp source = problem.source;
  DequantBuilder{{builder, problem, source.getLoc()}}.build();
}

} // namespace lowbit::passes

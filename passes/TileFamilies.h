// What lb-tile hands each kernel family: the kernel function it created and
// the problem it must compute. Each family builds the body in its own file.
#pragma once

#include "core/DecodeFacts.h"
#include "core/FragmentFacts.h"
#include "ir/LbOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace lowbit::passes {

struct KernelProblem {
  mlir::func::FuncOp kernel;
  lb::QMatmulOp source;
  lb::ScheduleAttr schedule;
  lb::QuantAttr quant;
  int64_t n = 0, k = 0;
  mlir::Type activation; // f16 or bf16, or si8 (x_scales then carry its scales)
  mlir::Type output;     // y's element type: the activation's, or f16, bf16, f32
  mlir::Type code;       // the codes' storage type
  // What a lane's unit of 32 codes is in memory (its words), asked of the
  // code width instead of assumed.
  core::CodeFragment fragment;
  // Kernel arguments, in order: x, [x_scales,] weights, scales, [zeros], y,
  // M, [workspace] (core/KernelArguments.h is the runtime's copy of that
  // order); the workspace only for scheduler = stream_k.
  mlir::Value x, xScales, weights, scales, zeros, y, rows, workspace;
  bool quantizedActivations() const { return static_cast<bool>(xScales); }
  // Quantized activations in e4m3 (the fp8 tensor cores; f32 sums).
  bool e4m3Activations() const {
    return quantizedActivations() && mlir::isa<mlir::Float8E4M3FNType>(activation);
  }
  // The bytes quantized activations meet: core::s8Decode's shift and centre
  // for s8, none for e4m3 (e4m3fn weights are their own bytes). The rules
  // admit only codes that have one.
  core::S8Decode byteDecode() const;
  // The problem as the core model (what the schedule rules are asked of).
  Expected<core::Problem> coreProblem() const;
  // NVFP4's f32 tensor scale (lb.load_tensor_scale at the kernel's entry),
  // or null: loadColumnQuant multiplies every block scale by it.
  mlir::Value tensorScale;
};

// What every family's builder starts from: the problem, where to build, and
// the index arithmetic its loops and addresses are written in.
struct TileBuilderBase {
  mlir::OpBuilder &b;
  const KernelProblem &p;
  mlir::Location loc;

  mlir::Value index(int64_t v);
  mlir::Value add(mlir::Value a, mlir::Value c);
  mlir::Value mul(mlir::Value a, mlir::Value c);
  // The calling thread's lb.thread_coord `c`.
  mlir::Value coord(lb::ThreadCoord c);
};

// Checks that the schedule's family can compute the problem with it, by the
// schedule rules every family and the tuner share (core/ScheduleRules.h),
// with their diagnostic naming what does not fit (ScheduleCheck.cpp).
mlir::LogicalResult checkSchedule(const KernelProblem &problem);

// The scale (and zero) tensor index of column n at K offset k: [0] for a
// tensor scale, [n] per channel, [n, k / group] per group.
llvm::SmallVector<mlir::Value> quantIndex(mlir::OpBuilder &b, mlir::Location loc,
                                          const KernelProblem &p, mlir::Value n, mlir::Value k);

// Column n's quantization at K offset k, as every family applies it: the
// scale widened to f32 and, by zero mode,
//  - sub_code and quantized: `zero` (f32), which decodeUnit subtracts from the
//    decoded codes before anything scales them, so (q - z)·s rounds once,
//    after an exact q - z. Folding the zero into the scale's fma as
//    q·s + (-z·s) rounded -z·s to the activation type: an error that is the
//    same for every K of a column, so it grew with Σx and failed bf16
//    per-channel kernels at 1-1.7e-2.
//  - sub_value: `bias` = -z, the addend of one fma: q·s - z with one rounding.
// Two-level scales: the f32 step of row n's super-block at K offset k, read
// from after the codes of `buffer` (the scales' or the mins').
mlir::Value loadSuperStep(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &p,
                          mlir::Value buffer, mlir::Value n, mlir::Value k);

// Two-level scales: the f32 steps of column n's super-block at K offset k,
// the scales' and (with zeros) the mins', which a family loads once per
// super-block and hands to loadColumnQuant for each of its groups.
struct SuperSteps {
  mlir::Value scale, zero;
};
SuperSteps loadSuperSteps(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &p,
                          mlir::Value n, mlir::Value k);

struct ColumnQuant {
  mlir::Value scale, zero, bias;
};
// `scale`, when given, is column n's block scale at k already loaded (from
// ScaleRuns, with its super-block step): the tensor scale and zeros still
// apply. `zero`, when given, is its two-level min, loaded the same way.
// `steps`, when given, are column n's super-block steps at k, so the group's
// codes are read but no step is.
ColumnQuant loadColumnQuant(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &p,
                            mlir::Value n, mlir::Value k, mlir::Value scale = {},
                            mlir::Value zero = {}, const SuperSteps &steps = {});

// Two-level scales with mins (zero = sub_value with a super-block step): the
// k-quants' w = q·(c_s·d_s) − c_z·d_z, whose q·s − z is made in f32.
bool hasTwoLevelMins(const KernelProblem &p);

// lb.scale_fragment of `fragment` by scale (+ bias), wide (in f32) where the
// problem's scales are two-level with mins (their codes times steps are not
// exact in the element type, and q·s − z cancels).
mlir::Value scaleFragment(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &p,
                          mlir::Type type, mlir::Value fragment, mlir::Value scale,
                          mlir::Value bias);

// The type of one lb.load_codes: a unit's words.
mlir::VectorType unitWordsType(mlir::OpBuilder &b, const KernelProblem &problem);

// The mma_b_paired codes of 64-column groups, one k16 step at a time. When
// the fragment holds both steps of a 32-wide block in one load (2- and 1-bit
// codes: CodeFragment::pairedUnitsPerLoad), step 1 finds step 0's load and
// decodes its second unit; otherwise each step is its own load, made where
// it is asked for (so 4- and 8-bit kernels are built as they always were).
class PairedCodeLoader {
public:
  struct Codes {
    mlir::Value words;
    int64_t unit = 0;
  };
  // `stage` null: from global memory; else from that stage of a staging
  // buffer.
  PairedCodeLoader(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &problem,
                   mlir::Value weights, mlir::Value stage)
      : b_(b), loc_(loc), problem_(problem), weights_(weights), stage_(stage) {}
  // Step `step` (0, 1) of a block, whose codes start at (n0, stepK0);
  // `group` names the 64-column group within the block, so step 1 can find
  // step 0's load. Asked in step order for each group.
  Codes load(mlir::Value n0, mlir::Value stepK0, int64_t step, int64_t group);

private:
  mlir::OpBuilder &b_;
  mlir::Location loc_;
  const KernelProblem &problem_;
  mlir::Value weights_, stage_;
  llvm::DenseMap<int64_t, mlir::Value> firstStep_;
};

// The 32 decoded values of one unit of loaded codes, minus `zeros` when
// given (ColumnQuant::zero: one for a gemv_row unit, one per subtile of an
// mma_b_paired unit; see lb.decode). `raw`: as lb.decode raw leaves them,
// the values times 2^-rawScaleExponent (the caller folds the factor into
// its scales; no zeros), which only decodesRaw problems allow.
// What lb.decode turns the codes into: i8 (s8 bytes) for s8 activations,
// the activation type otherwise.
mlir::Type decodedValueType(mlir::OpBuilder &b, const KernelProblem &problem);
mlir::Value decodeUnit(mlir::OpBuilder &b, mlir::Location loc, const KernelProblem &problem,
                       const PairedCodeLoader::Codes &codes, mlir::ValueRange zeros = {},
                       bool raw = false);
// Whether the problem's codes have a raw decode (core::decodesRaw: unsigned
// integers without an offset, or minifloats, to f16), and the exponent of
// the factor subtile s's scale carries for it (core::rawScaleExponent).
bool decodesRaw(const KernelProblem &problem);
int rawScaleExponent(const KernelProblem &problem, int subtile);
// Whether the gemv families' lb.dot must be wide (core::needsWideDot).
bool needsWideDot(const KernelProblem &problem);

// Fill the kernel's entry block (which has only its arguments).
void buildGemvBody(mlir::OpBuilder &builder, const KernelProblem &problem);
void buildMmaBody(mlir::OpBuilder &builder, const KernelProblem &problem);
void buildGemvTiledBody(mlir::OpBuilder &builder, const KernelProblem &problem);
void buildMmaSplitKBody(mlir::OpBuilder &builder, const KernelProblem &problem);
void buildWgmmaBody(mlir::OpBuilder &builder, const KernelProblem &problem);
// Its `y` is the dense weights W[N, K] (lb-tile types it so).
void buildDequantBody(mlir::OpBuilder &builder, const KernelProblem &problem);

// Launch shape, read by the runtime from the kernel's attributes:
// blockDim.x = lb.block_threads; grid = (N / lb.grid_tile[0],
// ceil(M / lb.grid_tile[1]), lb.grid_tile[2]). With the schedule's cluster_k
// > 1, grid_tile[2] is cluster_k: the z blocks of one output tile are one
// cluster, which the kernel declares itself (__cluster_dims__), so the
// launch needs nothing more. The dequant family's z blocks are no cluster.
constexpr const char *kBlockThreadsAttr = "lb.block_threads";
constexpr const char *kGridTileAttr = "lb.grid_tile";
// Bytes of dynamic shared memory the kernel's launch must pass (absent: 0).
// The dequant family's grid_tile[1]: its work does not depend on M, so any
// M a launch names is one row of blocks.
constexpr int64_t kDequantRowsPerBlock = int64_t(1) << 24;
// Bytes of dynamic shared memory the kernel's launch must pass (absent: 0).
constexpr const char *kDynamicSharedBytesAttr = "lb.dynamic_shared_bytes";
// __launch_bounds__' second argument: blocks an SM must fit, which sets the
// register budget.
constexpr const char *kMinBlocksAttr = "lb.min_blocks_per_sm";
// Sets kMinBlocksAttr so that ptxas may give each of `threads` threads up to
// `registers` registers (of an SM's 65536; at least one block).
void setRegisterBudget(const KernelProblem &problem, int64_t threads, int64_t registers);
constexpr const char *kKernelAttr = "lb.kernel";
constexpr const char *kWeightLayoutAttr = "lb.weight_layout";

} // namespace lowbit::passes

#include "ir/LbAttrs.h"

#include "ir/LbDialect.h"
#include "ir/LbTypes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lowbit::lb;

#define GET_ATTRDEF_CLASSES
#include "ir/LbAttrs.cpp.inc"

// Scales are stored in a float type the hardware (or a cheap decode) can
// widen: f16, bf16, f32, or a minifloat such as e8m0 (MX) or e4m3 (NVFP4).
static bool isScaleType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32() ||
         llvm::isa<Float8E4M3FNType, MiniFloatType>(type);
}

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ScaleGranularity granularity, int64_t groupSize,
                                Type scale, ZeroMode zero, bool actOrder) {
  (void)zero;
  if (granularity == ScaleGranularity::group && groupSize <= 0)
    return emitError() << "granularity 'group' needs a positive group_size";
  if (granularity != ScaleGranularity::group && groupSize != 0)
    return emitError() << "group_size is only meaningful for granularity "
                          "'group', not '"
                       << stringifyScaleGranularity(granularity) << "'";
  if (actOrder && granularity != ScaleGranularity::group)
    return emitError() << "act_order permutes groups, so it needs granularity "
                          "'group'";
  if (!isScaleType(scale))
    return emitError() << "scale type must be f16, bf16, f32, f8E4M3FN or an "
                          "!lb.float, got "
                       << scale;
  if (auto minifloat = llvm::dyn_cast<MiniFloatType>(scale)) {
    // An exponent-only scale (e8m0) is a power of two chosen per block; it is
    // defined by the MX specification for blocks of 32.
    if (minifloat.getMantissa() == 0 &&
        !(granularity == ScaleGranularity::group && groupSize == 32))
      return emitError() << "exponent-only scales (" << scale
                         << ") are defined for MX blocks: granularity 'group' "
                            "with group_size 32";
  }
  return success();
}

LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   KernelFamily family, ArrayRef<int64_t> tile,
                                   ArrayRef<int64_t> warps, int64_t stages,
                                   int64_t splitK) {
  if (tile.size() != 3)
    return emitError() << "tile must be [M, N, K], got " << tile.size()
                       << " sizes";
  if (warps.size() != 2)
    return emitError() << "warps must be [M, N], got " << warps.size()
                       << " sizes";
  for (int64_t size : tile)
    if (size <= 0)
      return emitError() << "tile sizes must be positive";
  for (int64_t count : warps)
    if (count <= 0)
      return emitError() << "warp counts must be positive";
  if (warps[0] * warps[1] > 32)
    return emitError() << "a block holds at most 32 warps, got "
                       << warps[0] * warps[1];
  if (stages < 1)
    return emitError() << "stages must be at least 1, got " << stages;
  if (splitK < 1)
    return emitError() << "split_k must be at least 1, got " << splitK;
  if (family == KernelFamily::gemv_tiled &&
      (tile[1] != 64 || warps[0] != 1 || warps[1] != 1 || tile[2] % 32))
    return emitError() << "a 'gemv_tiled' schedule reads 64 x 32 weight tiles with split_k "
                          "warps along K, each taking tile K values at a time: need tile N "
                          "= 64, warps = [1, 1] and tile K a multiple of 32";
  if (family == KernelFamily::mma && splitK > 1) {
    // Split-K mma computes W·xᵀ: W's columns are the m16 side, x's rows the
    // n8 side, and K goes in 32-wide blocks of the paired K order.
    if (tile[0] % 8 || tile[1] % 16 || tile[2] % 32)
      return emitError() << "an 'mma' tile with split_k > 1 needs M a multiple of 8, N of 16 "
                            "and K of 32, got tile ["
                         << tile[0] << ", " << tile[1] << ", " << tile[2] << "]";
  } else if (family == KernelFamily::mma || family == KernelFamily::wgmma) {
    // Each warp covers a whole number of m16n8k16 instructions.
    int64_t warpM = tile[0] / warps[0], warpN = tile[1] / warps[1];
    if (tile[0] % warps[0] || tile[1] % warps[1] || warpM % 16 || warpN % 8 ||
        tile[2] % 16)
      return emitError() << "an '" << stringifyKernelFamily(family)
                         << "' tile must give each warp a multiple of 16x8 "
                            "and K a multiple of 16, got tile ["
                         << tile[0] << ", " << tile[1] << ", " << tile[2]
                         << "] over warps [" << warps[0] << ", " << warps[1]
                         << "]";
  }
  return success();
}

void LbDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/LbAttrs.cpp.inc"
      >();
}

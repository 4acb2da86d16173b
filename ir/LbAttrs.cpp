#include "ir/LbAttrs.h"

#include "core/ScheduleRules.h"
#include "ir/CoreConversion.h"
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

// Two-level scales: byte codes times a float step per super-block.
static LogicalResult verifySuperBlocks(function_ref<InFlightDiagnostic()> emitError,
                                       ScaleGranularity granularity, int64_t groupSize,
                                       Type scale, Type tensorScale, ZeroMode zero,
                                       bool actOrder, int64_t superBlock, Type superStep) {
  if (superBlock < 0 || (superBlock == 0) != !superStep)
    return emitError() << "super_block and super_step go together, with a positive super_block";
  if (granularity != ScaleGranularity::group || groupSize <= 0 || superBlock % groupSize)
    return emitError() << "super_block " << superBlock
                       << " must hold whole groups of granularity 'group'";
  if (!superStep.isF16() && !superStep.isBF16() && !superStep.isF32())
    return emitError() << "super_step must be f16, bf16 or f32, got " << superStep;
  auto code = llvm::dyn_cast<IntegerType>(scale);
  if (!code || code.getWidth() != 8 || code.isSignless())
    return emitError() << "with super-blocks the scale type is the codes', ui8 or si8, got "
                       << scale;
  if (zero != ZeroMode::none && (zero != ZeroMode::sub_value || !code.isUnsigned()))
    return emitError() << "super-block mins are ui8 codes with zero = sub_value, got zero = "
                       << stringifyZeroMode(zero) << " over " << scale;
  if (tensorScale || actOrder)
    return emitError() << "super-blocks take no tensor_scale and no act_order";
  return success();
}

LogicalResult QuantAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                ScaleGranularity granularity, int64_t groupSize,
                                Type scale, Type tensorScale, ZeroMode zero, bool actOrder,
                                int64_t superBlock, Type superStep) {
  if (superBlock != 0 || superStep)
    return verifySuperBlocks(emitError, granularity, groupSize, scale, tensorScale, zero,
                             actOrder, superBlock, superStep);
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
  // One-byte block scales come from formats without zero points (MX, NVFP4).
  if (llvm::isa<Float8E4M3FNType, MiniFloatType>(scale)) {
    if (granularity != ScaleGranularity::group)
      return emitError() << "block scales (" << scale << ") need granularity 'group'";
    if (zero != ZeroMode::none)
      return emitError() << "block scales (" << scale << ") have no zero points, got zero = "
                         << stringifyZeroMode(zero);
  }
  if (tensorScale && (!tensorScale.isF32() || !llvm::isa<Float8E4M3FNType>(scale)))
    return emitError() << "tensor_scale must be f32 over f8E4M3FN block scales (NVFP4), got "
                       << tensorScale << " over " << scale;
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

Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  KernelFamily family;
  SmallVector<int64_t> tile, warps;
  int64_t stages = 0, splitK = 0, clusterK = 1;
  TileScheduler scheduler = TileScheduler::grid;
  auto parseSizes = [&](SmallVector<int64_t> &sizes) {
    return parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, [&] {
      return parser.parseInteger(sizes.emplace_back());
    });
  };
  StringRef familyName;
  SMLoc familyLoc, start = parser.getCurrentLocation();
  if (parser.parseLess() || parser.parseKeyword("family") || parser.parseEqual() ||
      (familyLoc = parser.getCurrentLocation(), parser.parseKeyword(&familyName)))
    return {};
  std::optional<KernelFamily> parsedFamily = symbolizeKernelFamily(familyName);
  if (!parsedFamily) {
    parser.emitError(familyLoc, "unknown kernel family '") << familyName << "'";
    return {};
  }
  family = *parsedFamily;
  if (parser.parseComma() || parser.parseKeyword("tile") || parser.parseEqual() ||
      parseSizes(tile) || parser.parseComma() || parser.parseKeyword("warps") ||
      parser.parseEqual() || parseSizes(warps) || parser.parseComma() ||
      parser.parseKeyword("stages") || parser.parseEqual() || parser.parseInteger(stages) ||
      parser.parseComma() || parser.parseKeyword("split_k") || parser.parseEqual() ||
      parser.parseInteger(splitK))
    return {};
  // The optional fields, each at most once and in the printed order.
  bool seenCluster = false, seenScheduler = false;
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    SMLoc keyLoc = parser.getCurrentLocation();
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "cluster_k" && !seenCluster && !seenScheduler) {
      seenCluster = true;
      if (parser.parseInteger(clusterK))
        return {};
    } else if (key == "scheduler" && !seenScheduler) {
      seenScheduler = true;
      StringRef name;
      SMLoc nameLoc = parser.getCurrentLocation();
      if (parser.parseKeyword(&name))
        return {};
      std::optional<TileScheduler> parsed = symbolizeTileScheduler(name);
      if (!parsed) {
        parser.emitError(nameLoc, "unknown tile scheduler '")
            << name << "' (grid, persistent or stream_k)";
        return {};
      }
      scheduler = *parsed;
    } else {
      parser.emitError(keyLoc, "expected 'cluster_k' or 'scheduler' (once each, in that "
                               "order), got '")
          << key << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  return parser.getChecked<ScheduleAttr>(start, parser.getContext(), family, tile, warps, stages,
                                         splitK, clusterK, scheduler);
}

void ScheduleAttr::print(AsmPrinter &printer) const {
  printer << "<family = " << stringifyKernelFamily(getFamily()) << ", tile = [";
  llvm::interleaveComma(getTile(), printer);
  printer << "], warps = [";
  llvm::interleaveComma(getWarps(), printer);
  printer << "], stages = " << getStages() << ", split_k = " << getSplitK();
  if (getClusterK() != 1)
    printer << ", cluster_k = " << getClusterK();
  if (getScheduler() != TileScheduler::grid)
    printer << ", scheduler = " << stringifyTileScheduler(getScheduler());
  printer << ">";
}

// The schedule's own rules (core::checkScheduleStructure): what holds for
// any problem. Whether a family can compute a given problem with it is
// lb-tile's question, asked of the same rules with the problem.
LogicalResult ScheduleAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                   KernelFamily family, ArrayRef<int64_t> tile,
                                   ArrayRef<int64_t> warps, int64_t stages,
                                   int64_t splitK, int64_t clusterK,
                                   TileScheduler scheduler) {
  if (tile.size() != 3)
    return emitError() << "tile must be [M, N, K], got " << tile.size()
                       << " sizes";
  if (warps.size() != 2)
    return emitError() << "warps must be [M, N], got " << warps.size()
                       << " sizes";
  lowbit::Status structure = lowbit::core::checkScheduleStructure(
      coreSchedule(family, tile, warps, stages, splitK, clusterK, scheduler));
  if (!structure)
    return emitError() << structure.error();
  return success();
}

// The spans the TMA unit and wgmma swizzle (CU_TENSOR_MAP_SWIZZLE_32B, 64B
// and 128B; the descriptor's modes 3, 2 and 1); any map of the row's bits
// into the span's chunk bits is a layout.
LogicalResult SwizzleAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t bytes,
                                  ArrayRef<int64_t> xorMasks) {
  if (bytes != 32 && bytes != 64 && bytes != 128)
    return emitError() << "a swizzle spans rows of 32, 64 or 128 bytes, got " << bytes;
  int64_t chunks = bytes / 16;
  if (static_cast<int64_t>(xorMasks.size()) != kRowBits)
    return emitError() << "a swizzle maps the 3 bits of the row mod 8 to chunk bits, got "
                       << xorMasks.size() << " masks";
  for (int64_t mask : xorMasks)
    if (mask < 0 || mask >= chunks)
      return emitError() << "a mask must name chunk bits of the span (0 .. " << chunks - 1
                         << "), got " << mask;
  return success();
}

// Row r of `bytes` starts at address r x bytes, so row bit i is address bit
// i + log2(bytes), which the hardware XORs into address bit i + log2(bytes)
// - 3, chunk bit i + log2(bytes) - 7 (none below chunk bit 0).
SwizzleAttr SwizzleAttr::getHardware(MLIRContext *context, int64_t bytes) {
  int64_t rowShift = bytes == 128 ? 0 : bytes == 64 ? 1 : 2;
  SmallVector<int64_t> toggles;
  for (int64_t bit = 0; bit < kRowBits; ++bit)
    toggles.push_back(bit >= rowShift ? int64_t{1} << (bit - rowShift) : 0);
  return get(context, bytes, toggles);
}

bool SwizzleAttr::isHardware() const {
  return getToggles() == getHardware(getContext(), getBytes()).getToggles();
}

void LbDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/LbAttrs.cpp.inc"
      >();
}

#include "ir/LbOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace lowbit::lb;

#define GET_OP_CLASSES
#include "ir/LbOps.cpp.inc"

namespace {

bool isActivationType(Type type) {
  return type.isF16() || type.isBF16() || type.isF32() ||
         isa<Float8E4M3FNType>(type) || type.isSignlessInteger(8) ||
         type.isSignedInteger(8);
}

// The shape `scales` and `zeros` must have for a [N, K] weight.
SmallVector<int64_t> expectedScaleShape(QuantAttr quant, int64_t n, int64_t k) {
  switch (quant.getGranularity()) {
  case ScaleGranularity::tensor:
    return {1};
  case ScaleGranularity::channel:
    return {n};
  case ScaleGranularity::group:
    return {n, k / quant.getGroupSize()};
  }
  return {};
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << "[";
  llvm::interleave(
      shape, os,
      [&](int64_t d) {
        if (ShapedType::isDynamic(d))
          os << "?";
        else
          os << d;
      },
      ", ");
  os << "]";
  return out;
}

bool isQuantizedActivation(Type type) {
  return type.isInteger(8) || isa<Float8E4M3FNType>(type);
}

// Quantized activations carry their f32 scales and let the caller pick y's
// type; the others have none and y is theirs.
LogicalResult verifyActivationScales(QMatmulOp op) {
  Type activation = op.getX().getType().getElementType();
  Type output = op.getResult().getType().getElementType();
  if (!isQuantizedActivation(activation)) {
    if (op.getXScales())
      return op.emitOpError("x_scales are only for quantized (si8, f8E4M3FN) activations, not ")
             << activation;
    if (output != activation)
      return op.emitOpError("result element type ")
             << output << " must match the activation type " << activation;
    return success();
  }
  if (!output.isF16() && !output.isBF16() && !output.isF32())
    return op.emitOpError("the result of quantized activations is f16, bf16 or f32, got ")
           << output;
  if (!op.getXScales())
    return op.emitOpError("quantized activations (")
           << activation << ") need x_scales: f32 [M] per token or [1] per tensor";
  auto scales = cast<RankedTensorType>(op.getXScales().getType());
  int64_t m = op.getX().getType().getDimSize(0);
  bool perTensor = scales.getRank() == 1 && scales.getDimSize(0) == 1;
  bool perToken = scales.getRank() == 1 && scales.getDimSize(0) == m;
  if (!scales.getElementType().isF32() || !(perTensor || perToken))
    return op.emitOpError("x_scales must be f32 [M] (one per token) or [1] (per tensor), got ")
           << scales;
  return success();
}

} // namespace

LogicalResult QMatmulOp::verify() {
  auto xType = getX().getType();
  auto codesType = getCodes().getType();
  auto scalesType = getScales().getType();
  auto resultType = getResult().getType();
  QuantAttr quant = getQuant();

  if (xType.getRank() != 2)
    return emitOpError("x must be a rank-2 tensor [M, K], got rank ")
           << xType.getRank();
  if (codesType.getRank() != 2)
    return emitOpError("codes must be a rank-2 tensor [N, K], got rank ")
           << codesType.getRank();
  if (resultType.getRank() != 2)
    return emitOpError("result must be a rank-2 tensor [M, N], got rank ")
           << resultType.getRank();
  if (!codesType.hasStaticShape())
    return emitOpError("codes must have a static shape: weights are packed "
                       "offline for one [N, K]");
  if (ShapedType::isDynamic(xType.getDimSize(1)))
    return emitOpError("K (x dimension 1) must be static");

  int64_t n = codesType.getDimSize(0), k = codesType.getDimSize(1);
  if (xType.getDimSize(1) != k)
    return emitOpError("x has K = ")
           << xType.getDimSize(1) << " but codes have K = " << k;
  if (resultType.getDimSize(1) != n)
    return emitOpError("result has N = ")
           << resultType.getDimSize(1) << " but codes have N = " << n;
  if (xType.getDimSize(0) != resultType.getDimSize(0))
    return emitOpError("x and result disagree on M: ")
           << shapeString(xType.getShape()) << " vs "
           << shapeString(resultType.getShape());

  Type activation = xType.getElementType();
  if (!isActivationType(activation))
    return emitOpError("x element type must be f16, bf16, f32, f8E4M3FN or "
                       "8-bit integer, got ")
           << activation;
  if (failed(verifyActivationScales(*this)))
    return failure();

  Type codeType = codesType.getElementType();
  if (getCodeBits(codeType) == 0)
    return emitOpError("codes element type must be a 1..8-bit integer, "
                       "!lb.float or !lb.lut, got ")
           << codeType;

  if (quant.getGranularity() == ScaleGranularity::group &&
      k % quant.getGroupSize() != 0)
    return emitOpError("group size ")
           << quant.getGroupSize() << " does not divide K = " << k;
  if (scalesType.getElementType() != quant.getScale())
    return emitOpError("scales have element type ")
           << scalesType.getElementType() << " but #lb.quant says "
           << quant.getScale();
  SmallVector<int64_t> scaleShape = expectedScaleShape(quant, n, k);
  if (scalesType.getShape() != ArrayRef<int64_t>(scaleShape))
    return emitOpError("scales must have shape ")
           << shapeString(scaleShape) << " for granularity '"
           << stringifyScaleGranularity(quant.getGranularity())
           << "', got " << shapeString(scalesType.getShape());

  ZeroMode zeroMode = quant.getZero();
  if (zeroMode == ZeroMode::none) {
    if (getZeros())
      return emitOpError("zeros given but #lb.quant has zero = none");
  } else {
    if (!getZeros())
      return emitOpError("#lb.quant has zero = ")
             << stringifyZeroMode(zeroMode) << " but no zeros operand";
    auto zerosType = cast<RankedTensorType>(getZeros().getType());
    if (zerosType.getShape() != ArrayRef<int64_t>(scaleShape))
      return emitOpError("zeros must have the scales' shape ")
             << shapeString(scaleShape) << ", got "
             << shapeString(zerosType.getShape());
    bool integerZeros = isa<IntegerType>(zerosType.getElementType());
    if (zeroMode == ZeroMode::quantized && !integerZeros)
      return emitOpError("zero = quantized needs integer zero codes, got ")
             << zerosType.getElementType();
    if (zeroMode != ZeroMode::quantized &&
        zerosType.getElementType() != quant.getScale())
      return emitOpError("zero = ")
             << stringifyZeroMode(zeroMode)
             << " needs zeros of the scale type " << quant.getScale()
             << ", got " << zerosType.getElementType();
  }

  auto lut = dyn_cast<LutType>(codeType);
  bool needsTable = lut && !lut.getTable();
  if (getTable() && !needsTable)
    return emitOpError(lut ? "table operand given but the !lb.lut type "
                             "already carries its table"
                           : "table operand given but codes are not !lb.lut");
  if (needsTable) {
    if (!getTable())
      return emitOpError("codes are ")
             << codeType << " without a table, so a table operand is needed";
    auto tableType = cast<RankedTensorType>(getTable().getType());
    int64_t entries = int64_t{1} << lut.getBits();
    if (tableType.getRank() != 1 || tableType.getDimSize(0) != entries)
      return emitOpError("table must have shape [")
             << entries << "] for " << lut.getBits() << "-bit codes, got "
             << shapeString(tableType.getShape());
  }
  return success();
}

LogicalResult LoadCodesOp::verify() {
  auto type = cast<MemRefType>(getWeights().getType());
  int64_t rank = getStage() ? 3 : 2;
  if (type.getRank() != rank)
    return emitOpError(getStage() ? "a staging buffer must be [stages, N, K], got rank "
                                  : "weights must be a rank-2 memref [N, K], got rank ")
           << type.getRank();
  // A unit is 32 codes: as many words as a code has bits; a load holds one
  // unit or two.
  unsigned bits = getCodeBits(type.getElementType());
  int64_t words = cast<VectorType>(getWords().getType()).getNumElements();
  if (bits == 0 || (words != bits && words != 2 * bits))
    return emitOpError("a load of 32 or 64 ")
           << type.getElementType() << " codes is " << bits << " or " << 2 * bits
           << " words, not " << words;
  if (auto tile = getTile()) {
    if (tile->size() != 2 || (*tile)[0] <= 0 || (*tile)[1] <= 0)
      return emitOpError("tile must be [N, K] with positive sizes");
    int64_t n = type.getDimSize(rank - 2), k = type.getDimSize(rank - 1);
    if (n % (*tile)[0] || k % (*tile)[1])
      return emitOpError("weights [")
             << n << ", " << k
             << "] are not a whole number of [" << (*tile)[0] << ", "
             << (*tile)[1] << "] tiles";
  }
  return success();
}

LogicalResult LoadScaleRunOp::verify() {
  auto type = cast<MemRefType>(getScales().getType());
  if (type.getRank() != 2)
    return emitOpError("scales must be a rank-2 memref [N, K / group], got rank ")
           << type.getRank();
  int64_t count = getCount();
  // A run is held in registers: more than 32 scales a column is no longer
  // the few loads of one chunk.
  if (count < 1 || count > 32)
    return emitOpError("count must be 1..32, got ") << count;
  if (!type.isDynamicDim(1) && count > type.getDimSize(1))
    return emitOpError("a run of ") << count << " scales is longer than a row of "
                                    << type.getDimSize(1);
  int64_t length = cast<VectorType>(getResult().getType()).getNumElements();
  if (length != count)
    return emitOpError("a run of ") << count << " scales is a vector of " << count
                                    << ", not " << length;
  return success();
}

LogicalResult DecodeOp::verify() {
  if (cast<VectorType>(getValues().getType()).getElementType().isInteger(8)) {
    // s8 bytes: zeros and raw factors belong to the consumer's sums.
    if (!getZeros().empty() || getRaw())
      return emitOpError("decodes to s8 bytes, which take neither zero points nor `raw`: "
                         "the consumer applies both to its integer sums");
    return success();
  }
  // 32 values are 16 registers of pairs, shared evenly by the zeros.
  size_t zeros = getZeros().size(), registers = 16;
  if (zeros && registers % zeros)
    return emitOpError("splits 16 registers between ")
           << zeros << " zeros; the count must divide 16";
  if (getResidual() && !zeros)
    return emitOpError("has `residual` but no zeros");
  // Raw values carry a factor per subtile that the consumer's scale undoes;
  // a zero subtracted from them would be off by that factor.
  if (getRaw() && zeros)
    return emitOpError("cannot subtract zero points from raw values");
  return success();
}

LogicalResult PackPairsOp::verify() {
  auto type = cast<VectorType>(getValues().getType());
  const int64_t perRegister = 32 / type.getElementTypeBitWidth();
  if (type.getNumElements() != perRegister * static_cast<int64_t>(getPairs().size()))
    return emitOpError("packs ")
           << getPairs().size() << " registers of " << perRegister << " values into "
           << type.getNumElements() << " values";
  return success();
}

LogicalResult JoinPairsOp::verify() {
  auto type = cast<VectorType>(getValues().getType());
  int64_t joined = 0;
  for (Value part : getParts()) {
    auto partType = cast<VectorType>(part.getType());
    if (partType.getElementType() != type.getElementType())
      return emitOpError("joins ") << partType << " into " << type << ": the element types differ";
    if (partType.getNumElements() % 2)
      return emitOpError("joins ") << partType << ", which is not whole registers of 2 values";
    joined += partType.getNumElements();
  }
  if (getParts().empty() || joined != type.getNumElements())
    return emitOpError("joins ") << joined << " values into " << type.getNumElements();
  return success();
}

LogicalResult StoreDenseWeightsOp::verify() {
  Type element = cast<MemRefType>(getW().getType()).getElementType();
  if (element != cast<VectorType>(getLow().getType()).getElementType())
    return emitOpError("writes ") << getLow().getType() << " registers into a matrix of "
                                  << element << "; the dense weights are the registers' type";
  return success();
}

LogicalResult SumClusterPartialsOp::verify() {
  auto type = cast<MemRefType>(getBuffer().getType());
  if (type.getRank() != 3 || type.isDynamicDim(2))
    return emitOpError("reads a [warps, slots, lanes] partials buffer, got ") << type;
  // A cluster has at most 8 blocks along K (core::kMaxClusterK) and a
  // single block needs no cluster.
  int64_t blocks = getBlocks();
  if (blocks < 2 || blocks > 8)
    return emitOpError("adds the totals of 2..8 blocks, got ") << blocks;
  bool fragment = isa<VectorType>(getResult().getType());
  int64_t lanes = type.getDimSize(2);
  if (lanes != (fragment ? 128 : 8))
    return emitOpError(fragment ? "a fragment sum reads a [warps, slots, 128] buffer"
                                : "a group sum reads a [warps, slots, 8] buffer")
           << ", got " << lanes << " values a slot";
  return success();
}

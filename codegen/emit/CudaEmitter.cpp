#include "codegen/emit/CudaEmitter.h"

#include "codegen/emit/Emitter.h"
#include "core/layout/WeightLayout.h"
#include "ir/LbOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace lowbit::codegen {

std::string valueType(Type type) {
  if (type.isIndex() || type.isInteger(64))
    return "long long";
  if (type.isInteger(1))
    return "bool";
  if (type.isInteger(32))
    return "u32";
  if (type.isF32())
    return "float";
  if (auto vector = dyn_cast<VectorType>(type)) {
    Type element = vector.getElementType();
    std::string suffix = element.isBF16() ? "bf16" : "f16";
    if (element.isF32() && vector.getNumElements() == 4)
      return "FragC_f32";
    if (element.isF32())
      return "F32x<" + std::to_string(vector.getNumElements()) + ">";
    // The integer tensor cores' fragments (LbMmaS8Ops.td).
    if (element.isSignedInteger(32) && vector.getNumElements() == 4)
      return "FragC_s32";
    if (element.isSignedInteger(32))
      return "S32x<" + std::to_string(vector.getNumElements()) + ">";
    if (element.isInteger(8) && vector.getNumElements() == 16)
      return "FragA_s8";
    if (element.isInteger(8) && vector.getNumElements() == 8)
      return "FragB_s8";
    if (element.isInteger(32))
      return "U32x" + std::to_string(vector.getNumElements());
    if (vector.getNumElements() == 8 && (element.isF16() || element.isBF16()))
      return "FragA_" + suffix;
    if (vector.getNumElements() == 4 && (element.isF16() || element.isBF16()))
      return "FragB_" + suffix;
  }
  return "";
}

std::string elementPointerType(Type element) {
  if (element.isF16() || element.isBF16())
    return "u16";
  if (element.isF32())
    return "float";
  // Codes, zero codes and one-byte block scales (e8m0 is an !lb.float).
  if (lb::getCodeBits(element) || isa<Float8E4M3FNType>(element))
    return "unsigned char";
  return "";
}

std::string pairSuffix(Type element) { return element.isBF16() ? "bf16x2" : "f16x2"; }

std::string Emitter::registerOf(Value vector, int64_t index) {
  // Fragments are structs (assignable, so loops can carry them); other
  // decoded vectors are plain register arrays.
  bool fragment = valueType(vector.getType()).rfind("Frag", 0) == 0;
  return name(vector) + (fragment ? ".r[" : "[") + std::to_string(index) + "]";
}

void Emitter::declareVector(Value vector) {
  auto type = cast<VectorType>(vector.getType());
  std::string declared = valueType(type);
  if (declared.empty())
    line() << "u32 " << name(vector) << "[" << type.getNumElements() / 2 << "];\n";
  else
    line() << declared << " " << name(vector) << ";\n";
}

std::string Emitter::dimSize(MemRefType type, unsigned dim) {
  if (!type.isDynamicDim(dim))
    return std::to_string(type.getDimSize(dim)) + "LL";
  return name(rowsArgument);
}

std::string Emitter::linearIndex(MemRefType type, ValueRange indices) {
  std::string index = name(indices[0]);
  for (unsigned d = 1; d < indices.size(); ++d)
    index = "(" + index + ") * " + dimSize(type, d) + " + " + name(indices[d]);
  return index;
}

void Emitter::assignYield(Operation *yield, ArrayRef<std::string> targets) {
  if (targets.empty())
    return;
  // Through temporaries, so a yield that swaps iteration values stays right.
  SmallVector<std::string> temps;
  for (auto [operand, target] : llvm::zip(yield->getOperands(), targets)) {
    std::string temp = fresh("t");
    line() << valueType(operand.getType()) << " " << temp << " = " << name(operand) << ";\n";
    temps.push_back(temp);
  }
  for (auto [temp, target] : llvm::zip(temps, targets))
    line() << target << " = " << temp << ";\n";
}

LogicalResult Emitter::emitFor(scf::ForOp loop) {
  SmallVector<std::string> carried;
  for (auto [result, init] : llvm::zip(loop.getResults(), loop.getInitArgs())) {
    std::string var = bind(result, "c");
    line() << valueType(result.getType()) << " " << var << " = " << name(init) << ";\n";
    carried.push_back(var);
  }
  for (auto [arg, var] : llvm::zip(loop.getRegionIterArgs(), carried))
    names[arg] = var;
  std::string iv = bind(loop.getInductionVar(), "i");
  if (auto unroll = loop->getAttrOfType<IntegerAttr>("lb.unroll"))
    line() << "#pragma unroll " << unroll.getInt() << "\n";
  line() << "for (long long " << iv << " = " << name(loop.getLowerBound()) << "; " << iv
         << " < " << name(loop.getUpperBound()) << "; " << iv << " += "
         << name(loop.getStep()) << ") {\n";
  ++depth;
  for (Operation &op : loop.getBody()->without_terminator())
    if (failed(emitOp(op)))
      return failure();
  assignYield(loop.getBody()->getTerminator(), carried);
  --depth;
  line() << "}\n";
  return success();
}

LogicalResult Emitter::emitIf(scf::IfOp branch) {
  SmallVector<std::string> results;
  for (Value result : branch.getResults()) {
    std::string var = bind(result, "r");
    line() << valueType(result.getType()) << " " << var << ";\n";
    results.push_back(var);
  }
  line() << "if (" << name(branch.getCondition()) << ") {\n";
  ++depth;
  for (Operation &op : branch.thenBlock()->without_terminator())
    if (failed(emitOp(op)))
      return failure();
  assignYield(branch.thenBlock()->getTerminator(), results);
  --depth;
  if (branch.elseBlock()) {
    line() << "} else {\n";
    ++depth;
    for (Operation &op : branch.elseBlock()->without_terminator())
      if (failed(emitOp(op)))
        return failure();
    assignYield(branch.elseBlock()->getTerminator(), results);
    --depth;
  }
  line() << "}\n";
  return success();
}

LogicalResult Emitter::emitOp(Operation &op) {
  bool handled = false;
  if (LogicalResult result = emitMmaS8Op(op, handled); handled)
    return result;
  if (LogicalResult result = emitMmaOp(op, handled); handled)
    return result;
  if (LogicalResult result = emitWgmmaOp(op, handled); handled)
    return result;
  if (LogicalResult result = emitScaleOp(op, handled); handled)
    return result;
  if (LogicalResult result = emitDecodeOp(op, handled); handled)
    return result;
  auto binary = [&](StringRef symbol) {
    Value result = op.getResult(0);
    line() << "const " << valueType(result.getType()) << " " << bind(result) << " = "
           << name(op.getOperand(0)) << " " << symbol << " " << name(op.getOperand(1))
           << ";\n";
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<arith::ConstantOp>([&](arith::ConstantOp c) -> LogicalResult {
        std::string value;
        if (auto i = dyn_cast<IntegerAttr>(c.getValue())) {
          if (c.getType().isInteger(32))
            value = std::to_string(static_cast<uint32_t>(i.getValue().getZExtValue())) + "u";
          else if (c.getType().isInteger(1))
            value = i.getValue().isZero() ? "false" : "true";
          else
            value = std::to_string(i.getValue().getSExtValue()) + "LL";
        } else if (auto f = dyn_cast<FloatAttr>(c.getValue())) {
          value = "__uint_as_float(" +
                  std::to_string(static_cast<uint32_t>(
                      f.getValue().bitcastToAPInt().getZExtValue())) +
                  "u)";
        } else if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
                   dense && dense.isSplat() && valueType(c.getType()) == "FragC_f32" &&
                   dense.getSplatValue<APFloat>().isZero()) {
          line() << "const FragC_f32 " << bind(c.getResult()) << " = zero_frag_c_f32();\n";
          return success();
        } else if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
                   dense && dense.isSplat() && valueType(c.getType()).rfind("F32x<", 0) == 0 &&
                   dense.getSplatValue<APFloat>().isZero()) {
          line() << "const " << valueType(c.getType()) << " " << bind(c.getResult())
                 << " = {};\n";
          return success();
        } else {
          return c.emitOpError("lb-to-cuda: unsupported constant");
        }
        line() << "const " << valueType(c.getType()) << " " << bind(c.getResult()) << " = "
               << value << ";\n";
        return success();
      })
      .Case<arith::AddIOp, arith::AddFOp>([&](auto) { return binary("+"); })
      .Case<arith::SubIOp, arith::SubFOp>([&](auto) { return binary("-"); })
      .Case<arith::MulIOp, arith::MulFOp>([&](auto) { return binary("*"); })
      .Case<arith::DivUIOp>([&](auto) { return binary("/"); })
      .Case<arith::RemUIOp>([&](auto) { return binary("%"); })
      .Case<arith::ShRUIOp>([&](auto) { return binary(">>"); })
      .Case<arith::ShLIOp>([&](auto) { return binary("<<"); })
      .Case<arith::MinUIOp, arith::MaxUIOp>([&](auto op) {
        // Index values are non-negative, so the signed comparison of long
        // long is the unsigned one.
        const char *less = isa<arith::MinUIOp>(op.getOperation()) ? " < " : " > ";
        std::string a = name(op.getLhs()), c = name(op.getRhs());
        line() << "const " << valueType(op.getType()) << " " << bind(op.getResult()) << " = " << a
               << less << c << " ? " << a << " : " << c << ";\n";
        return success();
      })
      .Case<arith::AndIOp>([&](auto) { return binary("&"); })
      .Case<arith::OrIOp>([&](auto) { return binary("|"); })
      .Case<arith::XOrIOp>([&](auto) { return binary("^"); })
      .Case<arith::NegFOp>([&](arith::NegFOp neg) {
        line() << "const float " << bind(neg.getResult()) << " = -" << name(neg.getOperand())
               << ";\n";
        return success();
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) -> LogicalResult {
        StringRef symbol;
        switch (cmp.getPredicate()) {
        case arith::CmpIPredicate::eq: symbol = "=="; break;
        case arith::CmpIPredicate::ne: symbol = "!="; break;
        case arith::CmpIPredicate::ult:
        case arith::CmpIPredicate::slt: symbol = "<"; break;
        case arith::CmpIPredicate::ule:
        case arith::CmpIPredicate::sle: symbol = "<="; break;
        case arith::CmpIPredicate::uge:
        case arith::CmpIPredicate::sge: symbol = ">="; break;
        case arith::CmpIPredicate::ugt:
        case arith::CmpIPredicate::sgt: symbol = ">"; break;
        default: return cmp.emitOpError("lb-to-cuda: unsupported predicate");
        }
        // Index values are never negative here, so signed C++ comparison is
        // the unsigned one too.
        return binary(symbol);
      })
      .Case<arith::SelectOp>([&](arith::SelectOp select) {
        line() << "const " << valueType(select.getType()) << " " << bind(select.getResult())
               << " = " << name(select.getCondition()) << " ? " << name(select.getTrueValue())
               << " : " << name(select.getFalseValue()) << ";\n";
        return success();
      })
      .Case<scf::ForOp>([&](scf::ForOp loop) { return emitFor(loop); })
      .Case<scf::IfOp>([&](scf::IfOp branch) { return emitIf(branch); })
      .Case<func::ReturnOp>([&](auto) {
        line() << "return;\n";
        return success();
      })
      .Case<lb::ThreadCoordOp>([&](lb::ThreadCoordOp coord) {
        const char *expression = "";
        switch (coord.getCoord()) {
        case lb::ThreadCoord::lane: expression = "threadIdx.x & 31"; break;
        case lb::ThreadCoord::warp: expression = "threadIdx.x >> 5"; break;
        case lb::ThreadCoord::block_x: expression = "blockIdx.x"; break;
        case lb::ThreadCoord::block_y: expression = "blockIdx.y"; break;
        case lb::ThreadCoord::grid_x: expression = "gridDim.x"; break;
        case lb::ThreadCoord::grid_y: expression = "gridDim.y"; break;
        case lb::ThreadCoord::block_z: expression = "blockIdx.z"; break;
        }
        line() << "const long long " << bind(coord.getResult()) << " = (long long)("
               << expression << ");\n";
        return success();
      })
      .Case<lb::WarpUniformOp>([&](lb::WarpUniformOp uniform) {
        // 32 bits: ptxas took a 64-bit shuffle's result for a vector value.
        line() << "const long long " << bind(uniform.getResult())
               << " = (long long)__shfl_sync(0xffffffffu, (int)(" << name(uniform.getValue())
               << "), 0);\n";
        return success();
      })
      .Case<lb::LoadCodesOp>([&](lb::LoadCodesOp load) -> LogicalResult {
        std::optional<ArrayRef<int64_t>> tile = load.getTile();
        if (!tile)
          return load.emitOpError("lb-to-cuda: no tile; run lb-propagate-layouts first");
        auto type = cast<MemRefType>(load.getWeights().getType());
        const int64_t bits = lb::getCodeBits(type.getElementType());
        // A lane's unit of 32 codes: `bits` 32-bit words, U32x<words> for
        // the load's `units` units.
        const int64_t words = load.getWords().getType().getNumElements();
        const int64_t units = words / bits;
        std::string wordsType = "U32x" + std::to_string(words);
        // For each plane (one, or the two of a 3-, 5- or 6-bit code; see
        // layout/WeightLayout.h): the address of the lane's run of `planeBits`
        // a code, in a plane that starts at byte `planeStart` of the
        // weights (global) or of the stage.
        auto planeAddress = [&](int64_t planeBits, const std::string &planeStart) {
          const int64_t tileBytes = (*tile)[0] * (*tile)[1] * planeBits / 8;
          const std::string runBytes = std::to_string(4 * units * planeBits);
          // A tile of several k16 steps (mma_b_paired) holds each step's
          // warp load as its own contiguous run, in step order.
          std::string step;
          if (load.getFragment() == lb::Fragment::mma_b_paired)
            step = " + ((" + name(load.getK0()) + ") % " + std::to_string((*tile)[1]) +
                   "LL) * " + std::to_string(tileBytes / (*tile)[1]) + "LL";
          std::string address;
          llvm::raw_string_ostream out(address);
          if (load.getStage()) {
            // A stage of [tile N, tile K] codes, laid out like global memory.
            int64_t k = type.getDimSize(2);
            out << name(load.getWeights()) << " + " << planeStart << " + (("
                << name(load.getN0()) << " / " << (*tile)[0] << "LL) * " << k / (*tile)[1]
                << "LL + " << name(load.getK0()) << " / " << (*tile)[1] << "LL) * " << tileBytes
                << "LL" << step << " + " << runBytes << " * (threadIdx.x & 31)";
            return address;
          }
          // Tiles follow each other k-fastest; inside its tile a thread's
          // unit starts at unit bytes * lane when the fragment spans the warp.
          int64_t tilesAlongK = type.getDimSize(1) / (*tile)[1];
          std::string lane = load.getFragment() != lb::Fragment::gemv_row
                                 ? step + " + " + runBytes + "LL * (threadIdx.x & 31)"
                                 : "";
          out << name(load.getWeights()) << (planeStart.empty() ? "" : " + " + planeStart)
              << " + ((" << name(load.getN0())
              << " / " << (*tile)[0] << "LL) * " << tilesAlongK << "LL + " << name(load.getK0())
              << " / " << (*tile)[1] << "LL) * " << tileBytes << "LL" << lane;
          return address;
        };
        auto loadRun = [&](int64_t runWords, const std::string &address) {
          std::string type = "U32x" + std::to_string(runWords);
          if (!load.getStage())
            return "ld_global_nc_na_v" + std::to_string(runWords) + "(" + address + ")";
          return runWords == 4 ? "ld_shared_v4(" + address + ")"
                               : "*reinterpret_cast<const " + type + " *>(" + address + ")";
        };
        const layout::CodePlanes planes = layout::codePlanes(static_cast<int>(bits));
        std::string stageStart;
        int64_t planeCodes = type.getNumElements();
        if (load.getStage()) {
          planeCodes = type.getDimSize(1) * type.getDimSize(2);
          stageStart = "(" + name(load.getStage()) + ") * " +
                       std::to_string(planeCodes * bits / 8) + "LL";
        }
        if (!planes.highBits) {
          line() << "const " << wordsType << " " << bind(load.getWords()) << " = "
                 << loadRun(words, planeAddress(bits, stageStart)) << ";\n";
          return success();
        }
        // The high plane follows the low plane's N x K (or stage's) codes.
        std::string highStart = (stageStart.empty() ? "" : stageStart + " + ") +
                                std::to_string(planeCodes * planes.lowBits / 8) + "LL";
        std::string var = bind(load.getWords());
        line() << wordsType << " " << var << ";\n";
        line() << "{\n";
        line() << "  const U32x" << units * planes.lowBits << " low = "
               << loadRun(units * planes.lowBits, planeAddress(planes.lowBits, stageStart))
               << ";\n";
        line() << "  const U32x" << units * planes.highBits << " high = "
               << loadRun(units * planes.highBits, planeAddress(planes.highBits, highStart))
               << ";\n";
        // Unit u's words: its low words, then its high words.
        for (int64_t u = 0; u < units; ++u) {
          line() << " ";
          for (int64_t w = 0; w < planes.lowBits; ++w)
            os << " " << var << ".r[" << u * bits + w << "] = low.r[" << u * planes.lowBits + w
               << "];";
          for (int64_t w = 0; w < planes.highBits; ++w)
            os << " " << var << ".r[" << u * bits + planes.lowBits + w << "] = high.r["
               << u * planes.highBits + w << "];";
          os << "\n";
        }
        line() << "}\n";
        return success();
      })
      .Case<lb::LoadActivationsOp>([&](lb::LoadActivationsOp load) {
        auto type = cast<MemRefType>(load.getX().getType());
        if (cast<VectorType>(load.getValues().getType()).getElementType().isInteger(8))
          return emitS8ActivationLoad(load);
        int64_t pairs = cast<VectorType>(load.getValues().getType()).getNumElements() / 2;
        std::string var = bind(load.getValues());
        std::string fragment = valueType(load.getValues().getType());
        std::string at = fragment.empty() ? var + "[" : var + ".r[";
        // Rows past M read as zeros, so padding rows contribute nothing.
        if (fragment.empty())
          line() << "u32 " << var << "[" << pairs << "];\n";
        else
          line() << fragment << " " << var << ";\n";
        line() << "if (" << name(load.getM()) << " < " << name(load.getRows()) << ") {\n";
        line() << "  const u16 *p = " << name(load.getX()) << " + ("
               << name(load.getM()) << ") * " << dimSize(type, 1) << " + " << name(load.getK())
               << ";\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int q = 0; q < " << pairs / 4 << "; ++q) {\n";
        line() << "    const U32x4 w = ld_global_v4(p + 8 * q);\n";
        line() << "    " << at << "4 * q] = w.r[0]; " << at << "4 * q + 1] = w.r[1]; " << at
               << "4 * q + 2] = w.r[2]; " << at << "4 * q + 3] = w.r[3];\n";
        line() << "  }\n";
        line() << "} else {\n";
        line() << "  #pragma unroll\n";
        line() << "  for (int q = 0; q < " << pairs << "; ++q) " << at << "q] = 0u;\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::DotOp>([&](lb::DotOp dot) {
        auto type = cast<VectorType>(dot.getA().getType());
        int64_t pairs = type.getNumElements() / 2;
        std::string var = bind(dot.getResult());
        std::string suffix = pairSuffix(type.getElementType());
        // Up to four pair products accumulate in packed halves (one rounding
        // per step on small sums), then widen: f32 carries the long sum.
        line() << "float " << var << " = " << name(dot.getAcc()) << ";\n";
        if (dot.getWide()) {
          for (int64_t q = 0; q < pairs; ++q)
            line() << "{ float a0, a1, b0, b1; " << suffix << "_to_f32x2("
                   << registerOf(dot.getA(), q) << ", a0, a1); " << suffix << "_to_f32x2("
                   << registerOf(dot.getB(), q) << ", b0, b1); " << var << " = fmaf(a0, b0, "
                   << var << "); " << var << " = fmaf(a1, b1, " << var << "); }\n";
          return success();
        }
        for (int64_t q = 0; q < pairs; q += 4) {
          line() << "{\n";
          line() << "  u32 h = mul_" << suffix << "(" << registerOf(dot.getA(), q) << ", "
                 << registerOf(dot.getB(), q) << ");\n";
          for (int64_t i = q + 1; i < std::min(pairs, q + 4); ++i)
            line() << "  h = fma_" << suffix << "(" << registerOf(dot.getA(), i) << ", "
                   << registerOf(dot.getB(), i) << ", h);\n";
          line() << "  float lo, hi; " << suffix << "_to_f32x2(h, lo, hi); " << var
                 << " += lo + hi;\n";
          line() << "}\n";
        }
        return success();
      })
      .Case<lb::SumOp>([&](lb::SumOp sum) {
        auto type = cast<VectorType>(sum.getA().getType());
        std::string var = bind(sum.getResult());
        line() << "float " << var << " = 0.f;\n";
        for (int64_t q = 0; q < type.getNumElements() / 2; ++q)
          line() << "{ float lo, hi; " << pairSuffix(type.getElementType()) << "_to_f32x2("
                 << registerOf(sum.getA(), q) << ", lo, hi); " << var << " += lo + hi; }\n";
        return success();
      })
      .Case<lb::WarpSumOp>([&](lb::WarpSumOp sum) {
        line() << "const float " << bind(sum.getResult()) << " = warp_sum<" << sum.getWidth()
               << ">(" << name(sum.getValue()) << ");\n";
        return success();
      })
      .Case<lb::StoreOutputOp>([&](lb::StoreOutputOp store) {
        auto type = cast<MemRefType>(store.getY().getType());
        std::string target = name(store.getY()) + "[" +
                             linearIndex(type, {store.getM(), store.getN()}) + "]";
        Type element = type.getElementType();
        std::string value = name(store.getValue());
        if (element.isF16())
          value = "(u16)f32x2_to_f16x2(" + value + ", 0.f)";
        else if (element.isBF16())
          value = "(u16)f32x2_to_bf16x2(" + value + ", 0.f)";
        line() << target << " = " << value << ";\n";
        return success();
      })
      .Case<lb::StoreDenseWeightsOp>([&](lb::StoreDenseWeightsOp store) {
        auto type = cast<MemRefType>(store.getW().getType());
        line() << "*reinterpret_cast<uint4 *>(" << name(store.getW()) << " + "
               << linearIndex(type, {store.getN(), store.getK()}) << ") = make_uint4("
               << registerOf(store.getLow(), 0) << ", " << registerOf(store.getLow(), 1) << ", "
               << registerOf(store.getHigh(), 0) << ", " << registerOf(store.getHigh(), 1)
               << ");\n";
        return success();
      })
      .Default([&](Operation *other) {
        return other->emitOpError("lb-to-cuda: no CUDA emission for this op");
      });
}

LogicalResult Emitter::emitKernel(func::FuncOp func) {
  kernel = func;
  names.clear();
  nextId = 0;
  dynamicSharedOffset = 0;
  auto threads = func->getAttrOfType<IntegerAttr>("lb.block_threads");
  if (!threads)
    return func.emitOpError("lb-to-cuda: kernel has no lb.block_threads");
  blockThreads = threads.getInt();
  os << "extern \"C\" __global__ void __launch_bounds__(" << threads.getInt();
  if (auto minBlocks = func->getAttrOfType<IntegerAttr>("lb.min_blocks_per_sm"))
    os << ", " << minBlocks.getInt();
  os << ")";
  // A grid split along K across a cluster is one cluster per output tile
  // (TileFamilies.h: kGridTileAttr), compiled in so a plain cuLaunchKernel
  // launches it.
  if (auto schedule = func->getAttrOfType<lb::ScheduleAttr>("lb.schedule");
      schedule && schedule.getClusterK() > 1)
    os << " __cluster_dims__(1, 1, " << schedule.getClusterK() << ")";
  os << "\n" << func.getSymName() << "(";
  Block &entry = func.getBody().front();
  int index = 0;
  for (BlockArgument arg : entry.getArguments()) {
    if (index)
      os << ", ";
    std::string argName = "arg" + std::to_string(index++);
    names[arg] = argName;
    if (auto memref = dyn_cast<MemRefType>(arg.getType())) {
      std::string pointee = elementPointerType(memref.getElementType());
      if (pointee.empty())
        return func.emitOpError("lb-to-cuda: unsupported argument element type ")
               << memref.getElementType();
      // Only the output is written; everything else is read-only for the
      // whole launch, which lets loads use the non-coherent path.
      bool written = llvm::any_of(arg.getUsers(), [](Operation *user) {
        return isa<lb::StoreOutputOp, lb::StoreAccumulatorOp, lb::StoreWgmmaAccumulatorOp,
                   lb::StoreDenseWeightsOp, lb::StoreWgmmaPartialsOp, lb::ReleaseFlagOp>(user);
      });
      os << (written ? "" : "const ") << pointee << " *__restrict__ " << argName;
    } else if (arg.getType().isIndex()) {
      os << "long long " << argName;
      rowsArgument = arg;
    } else {
      return func.emitOpError("lb-to-cuda: unsupported argument type ") << arg.getType();
    }
  }
  os << ") {\n";
  depth = 1;
  for (Operation &op : entry)
    if (failed(emitOp(op)))
      return failure();
  os << "}\n\n";
  return success();
}

LogicalResult emitCuda(ModuleOp module, raw_ostream &os) {
  os << "// Generated by lowbit (lb-to-cuda). Do not edit.\n"
        "#include \"lowbit/device/arith.cuh\"\n"
        "#include \"lowbit/device/cluster.cuh\"\n"
        "#include \"lowbit/device/cp_async.cuh\"\n"
        "#include \"lowbit/device/lop3.cuh\"\n"
        "#include \"lowbit/device/mma.cuh\"\n"
        "#include \"lowbit/device/reduce.cuh\"\n"
        "#include \"lowbit/device/types.cuh\"\n"
        "#include \"lowbit/device/vector_load.cuh\"\n"
        "#include \"lowbit/device/wgmma.cuh\"\n\n"
        "using namespace lowbit::device;\n\n"
        "static __device__ __forceinline__ float f16_to_f32(u16 bits) {\n"
        "  float lo, hi;\n"
        "  f16x2_to_f32x2(bits, lo, hi);\n"
        "  return lo;\n"
        "}\n\n";
  Emitter emitter(os);
  for (auto func : module.getOps<func::FuncOp>())
    if (func->hasAttr("lb.kernel") && failed(emitter.emitKernel(func)))
      return failure();
  return success();
}

FailureOr<std::vector<KernelLaunchInfo>> kernelLaunchInfo(ModuleOp module) {
  std::vector<KernelLaunchInfo> kernels;
  for (auto func : module.getOps<func::FuncOp>()) {
    if (!func->hasAttr("lb.kernel"))
      continue;
    KernelLaunchInfo info;
    info.name = func.getSymName().str();
    auto threads = func->getAttrOfType<IntegerAttr>("lb.block_threads");
    auto grid = func->getAttrOfType<DenseI64ArrayAttr>("lb.grid_tile");
    auto layout = func->getAttrOfType<StringAttr>("lb.weight_layout");
    if (!threads || !grid || !layout)
      return func.emitOpError("kernel lacks launch attributes or a weight layout");
    info.blockThreads = threads.getInt();
    info.gridTile.assign(grid.asArrayRef().begin(), grid.asArrayRef().end());
    info.weightLayout = layout.getValue().str();
    if (auto dynamicShared = func->getAttrOfType<IntegerAttr>("lb.dynamic_shared_bytes"))
      info.dynamicSharedBytes = dynamicShared.getInt();
    if (auto schedule = func->getAttr("lb.schedule")) {
      llvm::raw_string_ostream text(info.scheduleText);
      text << schedule;
    }
    kernels.push_back(std::move(info));
  }
  return kernels;
}

} // namespace lowbit::codegen

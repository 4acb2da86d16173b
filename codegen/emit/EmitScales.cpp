// CUDA for the ops that load scales and zeros: one scalar widened to f32
// (lb.load_scalar), a chunk's run of block scales kept as its stored words
// (lb.load_scale_run) and the one a period picks (lb.scale_in_run), and
// NVFP4's tensor scale after the block scales (lb.load_tensor_scale), and
// two-level scales' steps after their codes (lb.load_super_step).
#include "codegen/emit/Emitter.h"

#include "core/FragmentFacts.h"
#include "core/Problem.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;

namespace lowbit::codegen {
namespace {

// The f32 value of a scale whose stored bits `bits` are (u16 for 16-bit
// floats, a byte for one-byte scales, a float for f32).
FailureOr<std::string> scaleToF32(Operation *op, Type element, const std::string &bits) {
  if (element.isF32())
    return bits;
  if (element.isF16())
    return "f16_to_f32(" + bits + ")";
  if (element.isBF16())
    return "__uint_as_float((u32)" + bits + " << 16)";
  if (isa<Float8E4M3FNType>(element))
    return "e4m3fn_to_f32(" + bits + ")";
  if (auto minifloat = dyn_cast<lb::MiniFloatType>(element)) {
    // The one minifloat scale #lb.quant admits for kernels: e8m0.
    if (minifloat.getIsSigned() || minifloat.getExponent() != 8 || minifloat.getMantissa() != 0 ||
        minifloat.getBias() != 127)
      return op->emitOpError("lb-to-cuda: minifloat scales are e8m0, not ") << element;
    return "e8m0_to_f32(" + bits + ")";
  }
  // Two-level scales' codes, widened; their steps multiply them after.
  if (auto code = dyn_cast<IntegerType>(element); code && code.getWidth() == 8)
    return std::string(code.isSigned() ? "(float)(signed char)(" : "(float)(unsigned char)(") +
           bits + ")";
  return op->emitOpError("lb-to-cuda: no f32 widening of scales of ") << element;
}

} // namespace

LogicalResult Emitter::emitScaleOp(Operation &op, bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<lb::LoadScalarOp>([&](lb::LoadScalarOp load) -> LogicalResult {
        auto type = cast<MemRefType>(load.getSource().getType());
        std::string element =
            name(load.getSource()) + "[" + linearIndex(type, load.getIndices()) + "]";
        std::string value = element;
        Type elementType = type.getElementType();
        if (!isa<IntegerType>(elementType)) {
          FailureOr<std::string> widened = scaleToF32(load, elementType, element);
          if (failed(widened))
            return failure();
          value = *widened;
        }
        if (auto code = dyn_cast<IntegerType>(elementType)) {
          // Zero codes, packed densely in the scales' order (core::packZeroCodes):
          // code i is bits [b (i mod 8 / b), ...) of byte i / (8 / b).
          // Two-level scales' codes are ui8 or si8, one a byte (core::validate).
          unsigned bits = code.getWidth();
          if (code.isSignless() || (code.isSigned() && bits != 8) || (bits != 4 && bits != 8))
            return load.emitOpError("lb-to-cuda: integer scalars are uint4 or uint8 zero "
                                    "codes, or uint8 or int8 scale codes, not ")
                   << elementType;
          ValueRange at = load.getIndices();
          if (bits == 8) {
            // the scales' own index
            value = code.isSigned() ? "(float)(signed char)" + element : "(float)" + element;
          } else if (type.getRank() == 1 || type.getDimSize(1) % 2 == 0) {
            // Rows of an even number of codes start on a byte, so code (r, c)
            // is nibble c mod 2 of byte r (C / 2) + c / 2: the scales' index
            // shape. Shifting and masking the flat index instead cost a
            // 16-warp split-K g32 kernel the registers it had (it spilled
            // at 128).
            std::string c = name(at.back());
            std::string row = type.getRank() == 1
                                  ? ""
                                  : "(" + name(at.front()) + ") * " +
                                        std::to_string(type.getDimSize(1) / 2) + "LL + ";
            value = "(float)((" + name(load.getSource()) + "[" + row + "(" + c + " >> 1)] >> ((" +
                    c + " & 1) * 4)) & 15)";
          } else {
            // An odd row length: the flat index, in 32 bits when it fits.
            std::string flat = fresh("i");
            bool narrow = type.getNumElements() <= (int64_t{1} << 32);
            line() << (narrow ? "const u32 " : "const long long ") << flat << " = "
                   << (narrow ? "(u32)(" : "(") << linearIndex(type, at) << ");\n";
            value = "(float)((" + name(load.getSource()) + "[" + flat + " >> 1] >> ((" + flat +
                    " & 1) * 4)) & 15)";
          }
        }
        line() << "const float " << bind(load.getResult()) << " = " << value << ";\n";
        return success();
      })
      .Case<lb::LoadScaleRunOp>([&](lb::LoadScaleRunOp load) -> LogicalResult {
        // The run stays in registers as the stored words (two to eight
        // scales a word for 16- and 8-bit scales) and lb.scale_in_run
        // widens the one it picks: a chunk's run of 8 e8m0 scales for 8
        // columns then holds 16 registers, not 64.
        auto type = cast<MemRefType>(load.getScales().getType());
        int64_t bytes = lb::getScaleBytes(type.getElementType()), count = load.getCount();
        int64_t width = type.isDynamicDim(1)
                            ? 0
                            : core::scaleRunLoadBytes(count * bytes, type.getDimSize(1) * bytes);
        if (!bytes || !width)
          return load.emitOpError("lb-to-cuda: no aligned loads of a run of ")
                 << count << " scales in rows of " << type << " (core::scaleRunLoadBytes)";
        std::string run = bind(load.getResult()), at = fresh("p");
        int64_t words = count * bytes / 4;
        line() << "u32 " << run << "[" << words << "];\n";
        line() << "{\n";
        line() << "  const unsigned char *" << at
               << " = reinterpret_cast<const unsigned char *>(" << name(load.getScales())
               << " + (" << name(load.getRow()) << ") * " << dimSize(type, 1) << " + "
               << name(load.getFirst()) << ");\n";
        for (int64_t l = 0; l < words; l += width / 4) {
          std::string from = at + " + " + std::to_string(4 * l);
          if (width == 16)
            line() << "  { const uint4 w = *reinterpret_cast<const uint4 *>(" << from << "); "
                   << run << "[" << l << "] = w.x; " << run << "[" << l + 1 << "] = w.y; " << run
                   << "[" << l + 2 << "] = w.z; " << run << "[" << l + 3 << "] = w.w; }\n";
          else if (width == 8)
            line() << "  { const uint2 w = *reinterpret_cast<const uint2 *>(" << from << "); "
                   << run << "[" << l << "] = w.x; " << run << "[" << l + 1 << "] = w.y; }\n";
          else
            line() << "  " << run << "[" << l << "] = *reinterpret_cast<const u32 *>(" << from
                   << ");\n";
        }
        line() << "}\n";
        return success();
      })
      .Case<lb::ScaleInRunOp>([&](lb::ScaleInRunOp pick) -> LogicalResult {
        auto load = pick.getRun().getDefiningOp<lb::LoadScaleRunOp>();
        if (!load)
          return pick.emitOpError("lb-to-cuda: picks from an lb.load_scale_run only");
        Type element = cast<MemRefType>(load.getScales().getType()).getElementType();
        int64_t bytes = lb::getScaleBytes(element);
        std::string run = name(pick.getRun());
        auto storedBits = [&](const std::string &position) {
          return bytes == 4 ? run + "[" + position + "]"
                 : bytes == 2
                     ? "(u16)(" + run + "[(" + position + ") >> 1] >> (((" + position +
                           ") & 1) * 16))"
                     : "(unsigned char)(" + run + "[(" + position + ") >> 2] >> (((" + position +
                           ") & 3) * 8))";
        };
        std::string position = name(pick.getPosition());
        std::string bits = storedBits(position);
        if (Value upper = pick.getUpperHalf()) {
          // The stored bits of both candidates, selected before the one widening.
          std::string picked = fresh("bits");
          line() << "const u32 " << picked << " = " << name(upper) << " ? (u32)("
                 << storedBits("(" + position + ") + 1") << ") : (u32)(" << bits << ");\n";
          bits = bytes == 4   ? picked
                 : bytes == 2 ? "(u16)" + picked
                              : "(unsigned char)" + picked;
        }
        if (bytes == 4)
          bits = "__uint_as_float(" + bits + ")";
        FailureOr<std::string> value = scaleToF32(pick, element, bits);
        if (failed(value))
          return failure();
        line() << "const float " << bind(pick.getResult()) << " = " << *value << ";\n";
        return success();
      })
      .Case<lb::LoadSuperStepOp>([&](lb::LoadSuperStepOp load) -> LogicalResult {
        auto type = cast<MemRefType>(load.getCodes().getType());
        Type step = load.getStepType();
        if (!type.hasStaticShape() || lb::getCodeBits(type.getElementType()) != 8 ||
            !(step.isF16() || step.isBF16() || step.isF32()))
          return load.emitOpError("lb-to-cuda: super-block steps (f16, bf16 or f32) follow "
                                  "byte codes of a static shape, not ")
                 << type << " and " << step;
        int64_t offset = core::superStepOffsetAfter(type.getNumElements());
        int64_t stepBytes = step.isF32() ? 4 : 2;
        std::string index = "(" + name(load.getRow()) + ") * " +
                            std::to_string(load.getStepsPerRow()) + "LL + " +
                            name(load.getBlock());
        std::string at = "reinterpret_cast<const unsigned char *>(" + name(load.getCodes()) +
                         ") + " + std::to_string(offset) + "LL + (" + index + ") * " +
                         std::to_string(stepBytes);
        std::string bits = stepBytes == 4 ? "*reinterpret_cast<const float *>(" + at + ")"
                                          : "*reinterpret_cast<const u16 *>(" + at + ")";
        FailureOr<std::string> value = scaleToF32(load, step, bits);
        if (failed(value))
          return failure();
        line() << "const float " << bind(load.getResult()) << " = " << *value << ";\n";
        return success();
      })
      .Case<lb::LoadTensorScaleOp>([&](lb::LoadTensorScaleOp load) -> LogicalResult {
        auto type = cast<MemRefType>(load.getScales().getType());
        Type element = type.getElementType();
        unsigned bits = isa<FloatType>(element) ? cast<FloatType>(element).getWidth()
                                                : lb::getCodeBits(element);
        if (!type.hasStaticShape() || bits % 8)
          return load.emitOpError("lb-to-cuda: a tensor scale follows whole block-scale bytes "
                                  "of a static shape, not ")
                 << type;
        int64_t offset = core::tensorScaleOffsetAfter(type.getNumElements() * (bits / 8));
        line() << "const float " << bind(load.getResult())
               << " = *reinterpret_cast<const float *>(reinterpret_cast<const unsigned char *>("
               << name(load.getScales()) << ") + " << offset << "LL);\n";
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace lowbit::codegen

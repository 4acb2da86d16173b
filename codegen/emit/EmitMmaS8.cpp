// CUDA for the integer and fp8 tensor cores' ops (ir/LbMmaS8Ops.td):
// m16n8k32 with s8 or e4m3 operands, whose fragments are the device headers'
// FragA_s8 (4 registers), FragB_s8 (2), FragC_s32 and FragC_f32 (types.cuh,
// mma.cuh).
#include "codegen/emit/Emitter.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace lowbit::codegen {

LogicalResult Emitter::emitS8ActivationLoad(lb::LoadActivationsOp load) {
  auto type = cast<MemRefType>(load.getX().getType());
  std::string var = bind(load.getValues());
  // Rows past M read as zeros, so padding tokens contribute nothing.
  line() << "FragB_s8 " << var << ";\n";
  line() << "if (" << name(load.getM()) << " < " << name(load.getRows()) << ") {\n";
  line() << "  const U32x2 w = ld_global_v2(" << name(load.getX()) << " + ("
         << name(load.getM()) << ") * " << dimSize(type, 1) << " + " << name(load.getK())
         << ");\n";
  line() << "  " << var << ".r[0] = w.r[0]; " << var << ".r[1] = w.r[1];\n";
  line() << "} else {\n";
  line() << "  " << var << ".r[0] = 0u; " << var << ".r[1] = 0u;\n";
  line() << "}\n";
  return success();
}

LogicalResult Emitter::emitMmaS8Op(Operation &op, bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<lb::ZeroAccumulatorOp>([&](lb::ZeroAccumulatorOp zero) {
        auto type = cast<VectorType>(zero.getAcc().getType());
        if (type.getNumElements() == 4)
          line() << "FragC_s32 " << bind(zero.getAcc()) << " = {{0, 0, 0, 0}};\n";
        else
          line() << valueType(type) << " " << bind(zero.getAcc()) << " = {};\n";
        return success();
      })
      .Case<lb::PackAFragmentS8Op>([&](lb::PackAFragmentS8Op pack) {
        std::string var = bind(pack.getFragment());
        int64_t w = pack.getSlice();
        line() << "FragA_s8 " << var << ";\n";
        line() << var << ".r[0] = " << registerOf(pack.getStep0(), 2 * w) << "; " << var
               << ".r[1] = " << registerOf(pack.getStep0(), 2 * w + 1) << "; " << var
               << ".r[2] = " << registerOf(pack.getStep1(), 2 * w) << "; " << var
               << ".r[3] = " << registerOf(pack.getStep1(), 2 * w + 1) << ";\n";
        return success();
      })
      .Case<lb::MmaS8Op>([&](lb::MmaS8Op mma) {
        std::string var = bind(mma.getResult());
        line() << "FragC_s32 " << var << " = " << name(mma.getAcc()) << ";\n";
        line() << "mma_m16n8k32(" << var << ", " << name(mma.getA()) << ", " << name(mma.getB())
               << ");\n";
        return success();
      })
      .Case<lb::MmaE4M3Op>([&](lb::MmaE4M3Op mma) {
        // The bytes are e4m3fn bit patterns: the same registers, retyped.
        std::string var = bind(mma.getResult()), a = name(mma.getA()), x = name(mma.getB());
        line() << "FragC_f32 " << var << " = " << name(mma.getAcc()) << ";\n";
        line() << "{\n";
        line() << "  const FragA_e4m3 a = {{" << a << ".r[0], " << a << ".r[1], " << a << ".r[2], "
               << a << ".r[3]}};\n";
        line() << "  const FragB_e4m3 b = {{" << x << ".r[0], " << x << ".r[1]}};\n";
        line() << "  mma_m16n8k32(" << var << ", a, b);\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::OnesAFragmentS8Op>([&](lb::OnesAFragmentS8Op ones) {
        line() << "const FragA_s8 " << bind(ones.getFragment())
               << " = {{0x01010101u, 0x01010101u, 0x01010101u, 0x01010101u}};\n";
        return success();
      })
      .Case<lb::AddTokenSumsOp>([&](lb::AddTokenSumsOp add) {
        std::string var = bind(add.getResult()), acc = name(add.getAcc());
        auto type = cast<VectorType>(add.getResult().getType());
        line() << valueType(type) << " " << var << ";\n";
        for (int64_t i = 0; i < type.getNumElements(); ++i)
          line() << var << ".r[" << i << "] = " << acc << ".r[" << i << "] + "
                 << add.getFactor() << " * " << name(add.getSums()) << ".r[" << i << "];\n";
        return success();
      })
      .Case<lb::ConvertAccumulatorOp>([&](lb::ConvertAccumulatorOp convert) {
        std::string var = bind(convert.getResult()), acc = name(convert.getAcc());
        line() << "FragC_f32 " << var << ";\n";
        for (int i = 0; i < 4; ++i)
          line() << var << ".r[" << i << "] = (float)" << acc << ".r[" << i << "];\n";
        return success();
      })
      .Case<lb::LoadTokenScalesOp>([&](lb::LoadTokenScalesOp load) {
        std::string var = bind(load.getValues());
        auto type = cast<MemRefType>(load.getScales().getType());
        line() << "F32x<2> " << var << ";\n";
        // One scale for the whole tensor: every token's.
        if (!type.isDynamicDim(0) && type.getDimSize(0) == 1) {
          line() << var << ".r[0] = " << var << ".r[1] = " << name(load.getScales()) << "[0];\n";
          return success();
        }
        line() << "{\n";
        line() << "  const long long token = " << name(load.getM0())
               << " + 2 * (threadIdx.x & 3);\n";
        for (int i = 0; i < 2; ++i)
          line() << "  " << var << ".r[" << i << "] = token + " << i << " < "
                 << name(load.getRows()) << " ? " << name(load.getScales()) << "[token + " << i
                 << "] : 0.f;\n";
        line() << "}\n";
        return success();
      })
      .Case<lb::ScaleTokensOp>([&](lb::ScaleTokensOp scale) {
        std::string var = bind(scale.getResult()), acc = name(scale.getAcc());
        line() << "FragC_f32 " << var << ";\n";
        // Registers 0, 1 and 2, 3 are tokens 2t and 2t + 1 (rows g, g + 8).
        for (int i = 0; i < 4; ++i)
          line() << var << ".r[" << i << "] = " << acc << ".r[" << i << "] * "
                 << name(scale.getScales()) << ".r[" << i % 2 << "];\n";
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace lowbit::codegen

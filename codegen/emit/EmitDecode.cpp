// CUDA for the ops a decode lowers to (lb-lower-decode): the lop3, prmt and
// packed-pair arithmetic on code registers, the words of a unit, and the
// pairs of decoded values the fragments are made of.
#include "codegen/emit/Emitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace lowbit::codegen {

LogicalResult Emitter::emitDecodeOp(Operation &op, bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(&op)
      .Case<lb::PrmtOp>([&](lb::PrmtOp prmt) {
        line() << "const u32 " << bind(prmt.getResult()) << " = prmt(" << name(prmt.getA())
               << ", " << name(prmt.getB()) << ", 0x";
        os.write_hex(static_cast<uint32_t>(prmt.getSelector()));
        os << "u);\n";
        return success();
      })
      .Case<lb::PrmtLookupOp>([&](lb::PrmtLookupOp prmt) {
        line() << "const u32 " << bind(prmt.getResult()) << " = prmt(" << name(prmt.getA())
               << ", " << name(prmt.getB()) << ", " << name(prmt.getSelector()) << ");\n";
        return success();
      })
      .Case<lb::PackF32PairOp>([&](lb::PackF32PairOp pack) {
        line() << "const u32 " << bind(pack.getResult()) << " = f32x2_to_"
               << (pack.getElement().isBF16() ? "bf16" : "f16") << "x2(" << name(pack.getLo())
               << ", " << name(pack.getHi()) << ");\n";
        return success();
      })
      .Case<lb::RoundToOp>([&](lb::RoundToOp round) {
        std::string type = round.getElement().isBF16() ? "bf16" : "f16";
        std::string var = bind(round.getResult());
        line() << "float " << var << ";\n";
        line() << "{ float hi; " << type << "x2_to_f32x2(f32x2_to_" << type << "x2("
               << name(round.getValue()) << ", " << name(round.getValue()) << "), " << var
               << ", hi); }\n";
        return success();
      })
      .Case<arith::BitcastOp>([&](arith::BitcastOp cast) -> LogicalResult {
        if (!cast.getIn().getType().isInteger(32) || !cast.getType().isF32())
          return cast.emitOpError("lb-to-cuda: only i32 -> f32 bitcasts");
        line() << "const float " << bind(cast.getResult()) << " = __uint_as_float("
               << name(cast.getIn()) << ");\n";
        return success();
      })
      .Case<lb::ExtractWordOp>([&](lb::ExtractWordOp extract) {
        line() << "const u32 " << bind(extract.getWord()) << " = " << name(extract.getWords())
               << ".r[" << extract.getIndex() << "];\n";
        return success();
      })
      .Case<lb::Lop3Op>([&](lb::Lop3Op lop3) {
        line() << "const u32 " << bind(lop3.getResult()) << " = lop3<0x";
        os.write_hex(lop3.getLut());
        os << ">(" << name(lop3.getA()) << ", " << name(lop3.getB()) << ", "
           << name(lop3.getC()) << ");\n";
        return success();
      })
      .Case<lb::PairArithOp>([&](lb::PairArithOp pair) {
        std::string call = lb::stringifyPairOp(pair.getOp()).str() + "_" +
                           pairSuffix(pair.getElement());
        line() << "const u32 " << bind(pair.getResult()) << " = " << call << "("
               << name(pair.getA()) << ", " << name(pair.getB());
        if (pair.getC())
          os << ", " << name(pair.getC());
        os << ");\n";
        return success();
      })
      .Case<lb::PackPairsOp>([&](lb::PackPairsOp pack) {
        line() << "const u32 " << bind(pack.getValues()) << "[" << pack.getPairs().size()
               << "] = {";
        llvm::interleaveComma(pack.getPairs(), os, [&](Value v) { os << name(v); });
        os << "};\n";
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace lowbit::codegen

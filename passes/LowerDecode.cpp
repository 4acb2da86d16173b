// Each lb.decode becomes, per loaded unit, the strategy's bit-level sequence
// (see DecodeStrategy.cpp), and the resulting pair registers are viewed as
// the decoded vector again: word w, register j holds elements c w + 2 j and
// c w + 2 j + 1 (c codes per word), which is the order lb-propagate-layouts
// assumed. Zero points (lb.decode's `minus`) are subtracted from those
// registers before anything scales them (subtractZeros).
#include "passes/DecodeStrategy.h"
#include "passes/Passes.h"

#include "ir/LbOps.h"

using namespace mlir;

namespace lowbit::passes {
#define GEN_PASS_DEF_LBLOWERDECODE
#include "passes/Passes.h.inc"

namespace {

struct LbLowerDecodePass : impl::LbLowerDecodeBase<LbLowerDecodePass> {
  void runOnOperation() override {
    SmallVector<lb::DecodeOp> decodes;
    getOperation().walk([&](lb::DecodeOp op) { decodes.push_back(op); });
    for (lb::DecodeOp decode : decodes) {
      auto valuesType = decode.getValues().getType();
      FailureOr<DecodeStrategy> strategy =
          selectDecodeStrategy(decode.getCodeType(), valuesType.getElementType(), decode.getRaw(),
                               [&] { return decode.emitOpError(); });
      if (failed(strategy))
        return signalPassFailure();
      OpBuilder builder(decode);
      Location loc = decode.getLoc();
      SmallVector<Value> pairs;
      // Unit u of the load is words [u bits, (u + 1) bits).
      int64_t words = lb::getCodeBits(decode.getCodeType());
      int64_t first = decode.getUnit() * words;
      if (first + words > decode.getWords().getType().getNumElements()) {
        decode.emitOpError("unit ") << decode.getUnit() << " is past the loaded words";
        return signalPassFailure();
      }
      SmallVector<Value> unitWords;
      for (int64_t w = first; w < first + words; ++w) {
        Value word = builder.create<lb::ExtractWordOp>(loc, builder.getI32Type(), decode.getWords(),
                                                       builder.getI64IntegerAttr(w));
        if (!strategy->emit) { // two planes: the unit's words decode together
          unitWords.push_back(word);
          continue;
        }
        SmallVector<Value> registers = strategy->emit(builder, loc, word);
        pairs.append(registers.begin(), registers.end());
      }
      if (!strategy->emit)
        pairs = strategy->emitUnit(builder, loc, unitWords);
      pairs = subtractZeros(builder, loc, valuesType.getElementType(), pairs, decode.getZeros(),
                            decode.getResidual());
      Value values = builder.create<lb::PackPairsOp>(loc, valuesType, pairs);
      decode.replaceAllUsesWith(values);
      decode.erase();
    }
  }
};

} // namespace
} // namespace lowbit::passes

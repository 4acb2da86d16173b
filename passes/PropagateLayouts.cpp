// The weight layout is derived, not chosen: at each lb.load_codes anchor we
// know (1) which logical (n, k) a thread's decoded values must be, from the
// fragment the consumer needs; (2) which bit field of which loaded word each
// decoded value comes from, from the decode strategy's interleave; and (3)
// that the thread's 16 bytes must be contiguous in memory. All three are
// F2-linear maps over index bits, so
//     weight layout = memory ∘ (fragment ∘ interleave)⁻¹ : (n, k) -> offset
// inside one tile, and tiles follow each other with k fastest.
#include "passes/DecodeStrategy.h"
#include "passes/Passes.h"
#include "passes/TileFamilies.h"

#include "ir/LbOps.h"
#include "core/layout/WeightLayout.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cmath>

using namespace mlir;
using lowbit::layout::BitTarget;
using lowbit::layout::Dim;
using lowbit::layout::LinearLayout;

namespace lowbit::passes {
#define GEN_PASS_DEF_LBPROPAGATELAYOUTS
#include "passes/Passes.h.inc"

namespace {

// Thread-local decoded values (lane, step, word, element in word) -> (n, k)
// in the tile, as the consumer of the fragment reads them. A unit holds 32
// values v = (codes per word) word + element, and a fragment fixes where each
// bit of v goes; the code width only decides how many of v's low bits are
// the element inside a word (`elementBits`) and how many pick the word.
Expected<LinearLayout> fragmentLayout(lb::Fragment fragment, int elementBits) {
  std::vector<BitTarget> value; // v's bits, least significant first
  std::vector<Dim> ins, outs;
  std::vector<std::vector<BitTarget>> targets;
  switch (fragment) {
  case lb::Fragment::gemv_row:
    // Value v pairs with x[k0 + v]: a 1 x 32 tile.
    value = {{"k", 0}, {"k", 1}, {"k", 2}, {"k", 3}, {"k", 4}};
    outs = {{"n", 0}, {"k", 5}};
    break;
  case lb::Fragment::mma_b_paired:
    // m16n8k16 B operand (PTX ISA, f16/bf16): lane = 4 groupID + tig holds
    // rows 2 tig + h + 8 r of column n = groupID, in register r, half h; the
    // two k16 steps j of a 32-wide block take K in the order
    // k = 8 tig + 4 j + 2 r + h, so lane tig's A values of both steps are
    // x[8 tig .. 8 tig + 8), one 16-byte load, and A and B agree on the order.
    // Register q = v / 2 = r + 2 s of the unit serves 8-column subtile s
    // (columns 8 s + groupID), so a warp's unit covers 64 x 16 per step.
    ins = {{"lane", 5}, {"step", 1}};
    targets = {{{"k", 3}, {"k", 4}, {"n", 0}, {"n", 1}, {"n", 2}}, {{"k", 2}}};
    value = {{"k", 0}, {"k", 1}, {"n", 3}, {"n", 4}, {"n", 5}};
    outs = {{"n", 6}, {"k", 5}};
    break;
  }
  int valueBits = static_cast<int>(value.size());
  if (elementBits < 0 || elementBits > valueBits)
    return makeError("a word holds more codes than a unit");
  ins.push_back({"word", valueBits - elementBits});
  targets.push_back(std::vector<BitTarget>(value.begin() + elementBits, value.end()));
  ins.push_back({"element", elementBits});
  targets.push_back(std::vector<BitTarget>(value.begin(), value.begin() + elementBits));
  return LinearLayout::fromBitPermutation(ins, outs, targets);
}

bool hasStep(lb::Fragment fragment) { return fragment == lb::Fragment::mma_b_paired; }

// The thread's unit of 32 codes, contiguous: offset = 32 lane + c word +
// field (c codes per word). With steps, either a warp's units of step j
// follow each other (+ 1024 j codes: one load per step), or, when the load
// holds both steps (`stepInLoad`, 2- and 1-bit codes), a lane's two units
// are adjacent (+ 32 j, the lane at 64 lane): one load per block.
Expected<LinearLayout> memoryLayout(bool hasLane, bool hasStep, bool stepInLoad, int fieldBits) {
  int wordBits = 5 - fieldBits;
  std::vector<Dim> ins = {{"word", wordBits}, {"field", fieldBits}};
  std::vector<std::vector<BitTarget>> targets(2);
  for (int b = 0; b < wordBits; ++b)
    targets[0].push_back({"offset", fieldBits + b});
  for (int b = 0; b < fieldBits; ++b)
    targets[1].push_back({"offset", b});
  int offsetBits = 5;
  int stepBit = stepInLoad ? 5 : 10, laneBit = stepInLoad ? 6 : 5;
  if (hasStep) {
    ins.insert(ins.begin(), Dim{"step", 1});
    targets.insert(targets.begin(), {{"offset", stepBit}});
    ++offsetBits;
  }
  if (hasLane) {
    ins.insert(ins.begin(), Dim{"lane", 5});
    std::vector<BitTarget> lane;
    for (int b = 0; b < 5; ++b)
      lane.push_back({"offset", laneBit + b});
    targets.insert(targets.begin(), lane);
    offsetBits += 5;
  }
  return LinearLayout::fromBitPermutation(ins, {{"offset", offsetBits}}, targets);
}

FailureOr<layout::WeightLayout> deriveLayout(lb::LoadCodesOp load, lb::DecodeOp decode) {
  auto fail = [&](const std::string &why) {
    return load.emitOpError("cannot derive the weight layout: ") << why;
  };
  FailureOr<DecodeStrategy> strategy = selectDecodeStrategy(
      decode.getCodeType(), decode.getValues().getType().getElementType(), decode.getRaw(),
      [&] { return decode.emitOpError(); });
  if (failed(strategy))
    return failure();
  bool hasLane = load.getFragment() != lb::Fragment::gemv_row;
  bool steps = hasStep(load.getFragment());

  int fieldBits = static_cast<int>(std::log2(strategy->codesPerWord));
  Expected<LinearLayout> fragment = fragmentLayout(load.getFragment(), fieldBits);
  std::vector<Dim> threadDims = {{"word", 5 - fieldBits}};
  if (steps)
    threadDims.insert(threadDims.begin(), Dim{"step", 1});
  if (hasLane)
    threadDims.insert(threadDims.begin(), Dim{"lane", 5});
  // (lane, word, field) -> (lane, word, element): the interleave acts inside
  // each word.
  Expected<LinearLayout> registers = LinearLayout::product(
      LinearLayout::identity(threadDims), strategy->interleave);
  if (!fragment.ok() || !registers.ok())
    return fail(fragment.ok() ? registers.error() : fragment.error());
  Expected<LinearLayout> valuesOfFields = fragment->compose(*registers);
  if (!valuesOfFields.ok())
    return fail(valuesOfFields.error());
  Expected<LinearLayout> fieldsOfValues = valuesOfFields->invert();
  int64_t unitsInLoad = load.getWords().getType().getNumElements() /
                        static_cast<int64_t>(lb::getCodeBits(decode.getCodeType()));
  if (unitsInLoad == 2 && !steps)
    return fail("only an mma_b_paired load holds two units (both k16 steps)");
  Expected<LinearLayout> memory = memoryLayout(hasLane, steps, unitsInLoad == 2, fieldBits);
  if (!fieldsOfValues.ok() || !memory.ok())
    return fail(fieldsOfValues.ok() ? memory.error() : fieldsOfValues.error());
  Expected<LinearLayout> offsets = memory->compose(*fieldsOfValues);
  if (!offsets.ok())
    return fail(offsets.error());
  Expected<LinearLayout> ordered = offsets->reorderIns({"n", "k"});
  if (!ordered.ok())
    return fail(ordered.error());
  auto codeBits = static_cast<int>(lb::getCodeBits(decode.getCodeType()));
  Expected<layout::WeightLayout> weights = layout::weightLayoutFromLinear(*ordered, codeBits);
  if (!weights.ok())
    return fail(weights.error());
  return *weights;
}

// The lb.decode that consumes loaded words, following them through the
// loops that carry them (the wgmma family loads a K tile ahead): an scf.for
// init or yield operand forwards to the loop's region argument.
lb::DecodeOp findDecode(Value words) {
  SmallVector<Value> pending = {words};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!pending.empty()) {
    Value value = pending.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    for (OpOperand &use : value.getUses()) {
      Operation *user = use.getOwner();
      if (auto decode = dyn_cast<lb::DecodeOp>(user))
        return decode;
      if (auto loop = dyn_cast<scf::ForOp>(user)) {
        if (use.getOperandNumber() >= loop.getNumControlOperands())
          pending.push_back(
              loop.getRegionIterArgs()[use.getOperandNumber() - loop.getNumControlOperands()]);
      } else if (isa<scf::YieldOp>(user)) {
        if (auto loop = dyn_cast<scf::ForOp>(user->getParentOp()))
          pending.push_back(loop.getRegionIterArgs()[use.getOperandNumber()]);
      }
    }
  }
  return {};
}

struct LbPropagateLayoutsPass : impl::LbPropagateLayoutsBase<LbPropagateLayoutsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp kernel) {
      if (!kernel->hasAttr(kKernelAttr))
        return;
      std::optional<layout::WeightLayout> chosen;
      WalkResult result = kernel.walk([&](lb::LoadCodesOp load) {
        lb::DecodeOp decode = findDecode(load.getWords());
        if (!decode) {
          load.emitOpError("has no lb.decode consumer to anchor its layout");
          return WalkResult::interrupt();
        }
        FailureOr<layout::WeightLayout> derived = deriveLayout(load, decode);
        if (failed(derived))
          return WalkResult::interrupt();
        if (chosen && *chosen != *derived) {
          load.emitOpError("needs a weight layout that differs from another load's in this kernel");
          return WalkResult::interrupt();
        }
        chosen = *derived;
        OpBuilder builder(load);
        auto tile = builder.getDenseI64ArrayAttr({derived->tileN, derived->tileK});
        load.setTileAttr(tile);
        // Staged codes: the copies that fill the buffer move whole layout
        // tiles, so the buffer holds the same layout as global memory.
        if (load.getStage())
          for (Operation *user : load.getWeights().getUsers())
            if (auto copy = dyn_cast<lb::CopyCodesAsyncOp>(user)) {
              auto buffer = cast<MemRefType>(copy.getBuffer().getType());
              if (buffer.getDimSize(1) % derived->tileN || buffer.getDimSize(2) % derived->tileK) {
                copy.emitOpError("stages [")
                    << buffer.getDimSize(1) << ", " << buffer.getDimSize(2)
                    << "] codes, not a whole number of [" << derived->tileN << ", "
                    << derived->tileK << "] layout tiles";
                return WalkResult::interrupt();
              }
              copy.setTileAttr(tile);
            }
        return WalkResult::advance();
      });
      if (result.wasInterrupted())
        return signalPassFailure();
      if (chosen)
        kernel->setAttr(kWeightLayoutAttr,
                        StringAttr::get(kernel.getContext(), layout::serialize(*chosen)));
    });
  }
};

} // namespace
} // namespace lowbit::passes

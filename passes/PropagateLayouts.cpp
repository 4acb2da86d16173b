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

using namespace mlir;
using lowbit::layout::BitTarget;
using lowbit::layout::Dim;
using lowbit::layout::LinearLayout;

namespace lowbit::passes {
#define GEN_PASS_DEF_LBPROPAGATELAYOUTS
#include "passes/Passes.h.inc"

namespace {

// Thread-local decoded values (word, element in word[, lane]) -> (n, k) in
// the tile, as the consumer of the fragment reads them.
Expected<LinearLayout> fragmentLayout(lb::Fragment fragment) {
  switch (fragment) {
  case lb::Fragment::gemv_row:
    // Value v = 8 word + element pairs with x[k0 + v]: a 1 x 32 tile.
    return LinearLayout::fromBitPermutation(
        {{"word", 2}, {"element", 3}}, {{"n", 0}, {"k", 5}},
        {{{"k", 3}, {"k", 4}}, {{"k", 0}, {"k", 1}, {"k", 2}}});
  case lb::Fragment::mma_b:
    // m16n8k16 B operand (PTX ISA, f16/bf16): lane = 4 groupID + tig holds
    // rows k = 2 tig + h + 8 r of column n = groupID, in register r, half h.
    // Element e = 2 j + h of a word fills register j = r + 2 s_lo, and word
    // w serves n-subtiles 2 w + s_lo, so a warp's 16-byte loads cover a
    // 64 x 16 tile: 8 subtiles of 8 columns.
    return LinearLayout::fromBitPermutation(
        {{"lane", 5}, {"word", 2}, {"element", 3}}, {{"n", 6}, {"k", 4}},
        {{{"k", 1}, {"k", 2}, {"n", 0}, {"n", 1}, {"n", 2}},
         {{"n", 4}, {"n", 5}},
         {{"k", 0}, {"k", 3}, {"n", 3}}});
  case lb::Fragment::mma_b_paired:
    // The same registers, but the two k16 steps j of a 32-wide block take K
    // in the order k = 8 tig + 4 j + 2 r + h instead of 16 j + 2 tig + 8 r + h:
    // lane tig's A values of both steps are then x[8 tig .. 8 tig + 8), one
    // 16-byte load, and A and B agree on the order, so the sum is unchanged.
    return LinearLayout::fromBitPermutation(
        {{"lane", 5}, {"step", 1}, {"word", 2}, {"element", 3}}, {{"n", 6}, {"k", 5}},
        {{{"k", 3}, {"k", 4}, {"n", 0}, {"n", 1}, {"n", 2}},
         {{"k", 2}},
         {{"n", 4}, {"n", 5}},
         {{"k", 0}, {"k", 1}, {"n", 3}}});
  }
  return makeError("unknown fragment");
}

bool hasStep(lb::Fragment fragment) { return fragment == lb::Fragment::mma_b_paired; }

// The thread's 16 bytes, contiguous: offset = 32 lane + 8 word + field, and
// with steps, a warp's loads of step j follow each other: + 1024 j codes.
Expected<LinearLayout> memoryLayout(bool hasLane, bool hasStep) {
  std::vector<Dim> ins = {{"word", 2}, {"field", 3}};
  std::vector<std::vector<BitTarget>> targets = {{{"offset", 3}, {"offset", 4}},
                                                 {{"offset", 0}, {"offset", 1}, {"offset", 2}}};
  int offsetBits = 5;
  if (hasStep) {
    ins.insert(ins.begin(), Dim{"step", 1});
    targets.insert(targets.begin(), {{"offset", 10}});
    ++offsetBits;
  }
  if (hasLane) {
    ins.insert(ins.begin(), Dim{"lane", 5});
    targets.insert(targets.begin(), {{"offset", 5}, {"offset", 6}, {"offset", 7},
                                     {"offset", 8}, {"offset", 9}});
    offsetBits += 5;
  }
  return LinearLayout::fromBitPermutation(ins, {{"offset", offsetBits}}, targets);
}

FailureOr<layout::WeightLayout> deriveLayout(lb::LoadCodesOp load, lb::DecodeOp decode) {
  auto fail = [&](const std::string &why) {
    return load.emitOpError("cannot derive the weight layout: ") << why;
  };
  FailureOr<DecodeStrategy> strategy = selectDecodeStrategy(
      decode.getCodeType(), decode.getValues().getType().getElementType(),
      [&] { return decode.emitOpError(); });
  if (failed(strategy))
    return failure();
  bool hasLane = load.getFragment() != lb::Fragment::gemv_row;
  bool steps = hasStep(load.getFragment());

  Expected<LinearLayout> fragment = fragmentLayout(load.getFragment());
  std::vector<Dim> threadDims = {{"word", 2}};
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
  Expected<LinearLayout> memory = memoryLayout(hasLane, steps);
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

struct LbPropagateLayoutsPass : impl::LbPropagateLayoutsBase<LbPropagateLayoutsPass> {
  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp kernel) {
      if (!kernel->hasAttr(kKernelAttr))
        return;
      std::optional<layout::WeightLayout> chosen;
      WalkResult result = kernel.walk([&](lb::LoadCodesOp load) {
        lb::DecodeOp decode;
        for (Operation *user : load->getUsers())
          if (auto d = dyn_cast<lb::DecodeOp>(user))
            decode = d;
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

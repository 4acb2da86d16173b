// A CPU simulation of the loads each kernel family makes from packed weights,
// written from the PTX ISA's fragment tables and the decode's documented
// interleave, not from the pass: for every lane and code width, it reads the
// unit of 32 codes the kernel reads (4 x bits bytes), decodes them as the registers would hold them, and checks
// that each value lands where the consumer (a gemv dot or an mma B operand)
// expects the reference weight (n, k) to be.
#include "compiler/ProblemModule.h"
#include "ir/LbDialect.h"
#include "ir/LbOps.h"
#include "passes/Passes.h"
#include "core/FragmentFacts.h"
#include "core/layout/WeightLayout.h"

#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace lowbit {
namespace {

// The decode's interleave for f16 (passes/DecodeStrategy.cpp): register j of
// a word holds elements 2j (low half) and 2j + 1 (high half), from one field
// of each 16-bit half. 8-bit codes: register j holds bytes j and j + 2. 1, 2
// and 4 bits: register j takes window j % 2 (the half's byte) and offset
// (j / 2) x bits in it, i.e. field (j % 2) (8 / bits) + j / 2 of the half.
int fieldOfElement(int e, int bits) {
  int perHalf = 16 / bits, j = e >> 1, high = e & 1;
  int inHalf = bits == 8 ? j : (j % 2) * (8 / bits) + j / 2;
  return inHalf + (high ? perHalf : 0);
}

std::string derivedLayout(const char *schedule, const core::Problem &problem) {
  mlir::MLIRContext context;
  mlir::DialectRegistry registry;
  registry.insert<lb::LbDialect, mlir::arith::ArithDialect, mlir::func::FuncDialect,
                  mlir::memref::MemRefDialect, mlir::scf::SCFDialect>();
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
  mlir::Attribute attr = mlir::parseAttribute(schedule, &context);
  auto module = compiler::buildProblemModule(context, {problem}, attr);
  if (mlir::failed(module))
    return "";
  mlir::PassManager pm(&context);
  pm.addPass(passes::createLbTile());
  pm.addPass(passes::createLbPropagateLayouts());
  if (mlir::failed(pm.run(**module)))
    return "";
  std::string layout;
  (*module)->walk([&](mlir::func::FuncOp f) {
    if (auto a = f->getAttrOfType<mlir::StringAttr>("lb.weight_layout"))
      layout = a.str();
  });
  return layout;
}

struct Packed {
  layout::WeightLayout layout;
  std::vector<uint8_t> codes, bytes;
};

Packed pack(const std::string &text, int64_t n, int64_t k, int bits) {
  Packed p;
  Expected<layout::WeightLayout> parsed = layout::parseWeightLayout(text);
  EXPECT_TRUE(parsed.ok()) << text;
  p.layout = *parsed;
  EXPECT_EQ(p.layout.codeBits, bits);
  std::mt19937 rng(7);
  p.codes.resize(static_cast<size_t>(n * k));
  for (uint8_t &c : p.codes)
    c = static_cast<uint8_t>(rng() & ((1u << bits) - 1));
  p.bytes.resize(static_cast<size_t>(layout::packedBytes(p.layout, n, k)));
  Status s = layout::packWeights(p.layout, n, k, p.codes.data(), p.bytes.data(), p.bytes.size());
  EXPECT_TRUE(s.ok()) << s.error();
  return p;
}

uint32_t wordAt(const uint8_t *bytes) {
  return bytes[0] | bytes[1] << 8 | bytes[2] << 16 | uint32_t(bytes[3]) << 24;
}

// The codes of one word as the decode's registers hold them, in element order.
std::vector<int> decodeWord(const uint8_t *word, int bits) {
  uint32_t raw = wordAt(word);
  int codesPerWord = 32 / bits;
  std::vector<int> elements(static_cast<size_t>(codesPerWord));
  for (int e = 0; e < codesPerWord; ++e)
    elements[static_cast<size_t>(e)] =
        (raw >> (bits * fieldOfElement(e, bits))) & ((1u << bits) - 1);
  return elements;
}

// A lane's unit as the decode sees it: 32 values in element order (word
// w's elements at (32 / low bits) w). For 3-, 5- and 6-bit codes the low
// parts come from the low plane at `low` and the high parts from the high
// plane at `high`, where layout::highPlaneBit places them.
std::vector<int> decodeUnit(const uint8_t *low, const uint8_t *high, int bits) {
  const layout::CodePlanes planes = layout::codePlanes(bits);
  const int lowBits = planes.lowBits, perWord = 32 / lowBits;
  std::vector<int> values;
  for (int word = 0; word < lowBits; ++word) {
    std::vector<int> elements = decodeWord(low + 4 * word, lowBits);
    for (int e = 0; e < perWord; ++e) {
      int value = elements[static_cast<size_t>(e)];
      if (planes.highBits) {
        int bit = layout::highPlaneBit(bits, perWord * word + fieldOfElement(e, lowBits));
        uint32_t highWord = wordAt(high + 4 * (bit / 32));
        value |= static_cast<int>((highWord >> (bit % 32)) & ((1u << planes.highBits) - 1))
                 << lowBits;
      }
      values.push_back(value);
    }
  }
  return values;
}

// Lane `lane`'s unit of k16 step j in the 64 x 32 tile at (n0, k0) of an
// n x k mma_b_paired packing, decoded. Units of 8 bytes or fewer share a
// load between the two steps (core::CodeFragment::pairedUnitsPerLoad): a
// lane's two units are adjacent, at 2 u l + u j; wider ones are the step's
// 32 units in lane order. The high plane keeps the low plane's unit order.
std::vector<int> laneUnit(const Packed &p, int bits, int64_t n, int64_t k, int64_t n0,
                          int64_t k0, int j, int lane) {
  const layout::CodePlanes planes = layout::codePlanes(bits);
  const int64_t unitBytes = 4 * planes.lowBits, highUnitBytes = 4 * planes.highBits;
  const int64_t highStart = n * k * planes.lowBits / 8;
  int64_t unitInTile = unitBytes <= 8 ? 2 * lane + j : 32 * j + lane;
  int64_t unit = ((n0 / 64) * (k / 32) + k0 / 32) * 64 + unitInTile;
  return decodeUnit(&p.bytes[static_cast<size_t>(unit * unitBytes)],
                    &p.bytes[static_cast<size_t>(highStart + unit * highUnitBytes)], bits);
}

core::Problem problem(int64_t n, int64_t k, int bits) {
  core::Problem p;
  p.name = "sim";
  p.n = n;
  p.k = k;
  p.scheme.groupSize = 64;
  p.code = formats::DataFormat::unsignedInt(bits);
  return p;
}

// Every width the compiler decodes; a unit is 32 codes in `bits` words (3,
// 5 and 6 bits: in two planes).
class FragmentSimulation : public ::testing::TestWithParam<int> {};

INSTANTIATE_TEST_SUITE_P(Widths, FragmentSimulation, ::testing::Values(1, 2, 3, 4, 5, 6, 8),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return "uint" + std::to_string(info.param);
                         });

TEST_P(FragmentSimulation, GemvLanesSeeTheirRowChunkInOrder) {
  const int bits = GetParam();
  const layout::CodePlanes planes = layout::codePlanes(bits);
  const int64_t n = 8, k = 2048, unitBytes = 4 * planes.lowBits;
  const int64_t highStart = n * k * planes.lowBits / 8, highUnitBytes = 4 * planes.highBits;
  std::string text = derivedLayout(
      "#lb.schedule<family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>",
      problem(n, k, bits));
  ASSERT_FALSE(text.empty());
  Packed p = pack(text, n, k, bits);
  ASSERT_EQ(p.layout.tileN, 1);
  ASSERT_EQ(p.layout.tileK, 32);
  // Lane l at step kt reads its unit at tile (row, (kt + 32 l) / 32); value
  // v = (32 / bits) word + element must be W[row, kt + 32 l + v].
  for (int64_t row = 0; row < n; ++row)
    for (int64_t kt = 0; kt < k; kt += 1024)
      for (int lane = 0; lane < 32; ++lane) {
        int64_t k0 = kt + 32 * lane;
        const int64_t unit = row * (k / 32) + k0 / 32;
        std::vector<int> values =
            decodeUnit(&p.bytes[static_cast<size_t>(unit * unitBytes)],
                       &p.bytes[static_cast<size_t>(highStart + unit * highUnitBytes)], bits);
        for (int v = 0; v < 32; ++v)
          ASSERT_EQ(values[static_cast<size_t>(v)],
                    p.codes[static_cast<size_t>(row * k + k0 + v)])
              << "row " << row << " lane " << lane << " value " << v;
      }
}

TEST_P(FragmentSimulation, MmaLanesHoldTheirPtxBFragmentsInPairedKOrder) {
  const int bits = GetParam();
  const int64_t n = 256, k = 128;
  std::string text = derivedLayout(
      "#lb.schedule<family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 2, split_k = 1>",
      problem(n, k, bits));
  ASSERT_FALSE(text.empty());
  Packed p = pack(text, n, k, bits);
  ASSERT_EQ(p.layout.tileN, 64);
  ASSERT_EQ(p.layout.tileK, 32);
  // A tile is 64 x 32 codes, 64 units: the warp's units of k16 step j
  // (j = 0, 1) are bytes [32 u j, 32 u j + 32 u) for unit bytes u, lane l's
  // at u l (or, for units of 8 bytes or fewer, lane l's two at 2 u l). Decoded value v sits in register v / 2 (half v % 2); registers
  // 2 s and 2 s + 1 are subtile s's b0b1 and b2b3. PTX m16n8k16 B fragment:
  // half h of register r of lane (groupID g, threadID t) is slot 2 t + h + 8 r
  // of the step, column n = g (of its 8-column subtile). The paired K order
  // puts weight column k0 + 8 t + 4 j + 2 r + h in that slot, so lane t's A
  // values of both steps are the 8 consecutive activations at k0 + 8 t.
  for (int64_t n0 = 0; n0 < n; n0 += 64)
    for (int64_t k0 = 0; k0 < k; k0 += 32)
      for (int j = 0; j < 2; ++j)
        for (int lane = 0; lane < 32; ++lane) {
          int g = lane / 4, t = lane % 4;
          std::vector<int> values = laneUnit(p, bits, n, k, n0, k0, j, lane);
          for (int v = 0; v < 32; ++v) {
            int reg = v / 2, half = v % 2;
            int subtile = reg / 2, r = reg % 2;
            int64_t row = n0 + 8 * subtile + g, col = k0 + 8 * t + 4 * j + 2 * r + half;
            ASSERT_EQ(values[static_cast<size_t>(v)], p.codes[static_cast<size_t>(row * k + col)])
                << "tile (" << n0 << ", " << k0 << ") step " << j << " lane " << lane
                << " value " << v;
          }
        }
}

// The wgmma family reads the same units, and each warp's A operand is its
// decoded B-fragment registers renamed (lb.pack_a_fragment: a0..a3 = low.r0,
// high.r0, low.r1, high.r1, low the slice's first subtile, high its second).
// PTX's wgmma .m64nNk16 register A fragment: half h of register a of lane
// (groupID g, threadID t) of warp q of the warpgroup is A[16 q + g + 8 (a %
// 2)][2 t + h + 8 (a / 2)]; row 16 q + g' of slice r's accumulator is W
// column 64 q + 16 r + g' (lb.store_wgmma_accumulator), and row kk of step j
// of B is the staged x in slot 16 j + kk of its 32-wide block, whose K
// core::pairedSlotOfK says. So every A value must be the weight at that
// column and K.
TEST_P(FragmentSimulation, WgmmaWarpgroupsHoldTheirPtxAFragmentsAgainstTheStagedX) {
  const int bits = GetParam();
  const int64_t n = 256, k = 128;
  std::string text = derivedLayout(
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 4], stages = 4, "
      "split_k = 1>",
      problem(n, k, bits));
  ASSERT_FALSE(text.empty());
  Packed p = pack(text, n, k, bits);
  int kOfSlot[32];
  for (int kk = 0; kk < 32; ++kk)
    kOfSlot[core::pairedSlotOfK(kk)] = kk;
  for (int q = 0; q < 4; ++q)
    for (int64_t k0 = 0; k0 < k; k0 += 32)
      for (int j = 0; j < 2; ++j)
        for (int lane = 0; lane < 32; ++lane) {
          const int g = lane / 4, t = lane % 4;
          std::vector<int> values = laneUnit(p, bits, n, k, 64 * q, k0, j, lane);
          for (int r = 0; r < 4; ++r)
            for (int a = 0; a < 4; ++a)
              for (int h = 0; h < 2; ++h) {
                // The B register behind A register a: subtile 2 r + a % 2,
                // its register a / 2, which holds decoded values 2 reg, + 1.
                int subtile = 2 * r + a % 2, reg = 2 * subtile + a / 2;
                int value = values[static_cast<size_t>(2 * reg + h)];
                int64_t column = 64 * q + 16 * r + g + 8 * (a % 2);
                int64_t kIndex = k0 + kOfSlot[16 * j + 2 * t + h + 8 * (a / 2)];
                ASSERT_EQ(value, p.codes[static_cast<size_t>(column * k + kIndex)])
                    << "warp " << q << " K block " << k0 << " step " << j << " lane " << lane
                    << " slice " << r << " register " << a << " half " << h;
              }
        }
}

// gemv_tiled multiplies the same B-fragment registers on CUDA cores and the
// split-K mma reads them straight from global memory, so both must derive
// the very layout the staged mma family reads: one packed copy of the
// weights then serves every M.
TEST_P(FragmentSimulation, EveryFamilyButGemvSharesTheMmaLayout) {
  core::Problem p = problem(256, 1024, GetParam());
  std::string mma = derivedLayout(
      "#lb.schedule<family = mma, tile = [32, 128, 64], warps = [2, 2], stages = 2, split_k = 1>", p);
  std::string gemv = derivedLayout(
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 1024], warps = [1, 1], stages = 1, "
      "split_k = 8>",
      p);
  std::string splitK = derivedLayout(
      "#lb.schedule<family = mma, tile = [16, 128, 128], warps = [1, 1], stages = 2, split_k = 4>",
      p);
  std::string wgmma = derivedLayout(
      "#lb.schedule<family = wgmma, tile = [32, 256, 64], warps = [1, 4], stages = 4, split_k = 1>",
      p);
  ASSERT_FALSE(mma.empty());
  EXPECT_EQ(gemv, mma);
  EXPECT_EQ(splitK, mma);
  EXPECT_EQ(wgmma, mma);
}

} // namespace
} // namespace lowbit

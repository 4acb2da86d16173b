#include "core/layout/LinearLayout.h"

#include <gtest/gtest.h>

#include <random>

using namespace lowbit::layout;

namespace {

// A random linear map; with `bijective` the columns are resampled until they
// are independent, which gives a uniformly random invertible GF(2) matrix.
LinearLayout randomLayout(std::mt19937_64 &rng, const std::vector<Dim> &ins,
                          const std::vector<Dim> &outs, bool bijective) {
  for (;;) {
    std::vector<std::vector<std::vector<uint32_t>>> basis;
    for (const Dim &in : ins) {
      std::vector<std::vector<uint32_t>> bits;
      for (int bit = 0; bit < in.bits; ++bit) {
        std::vector<uint32_t> image;
        for (const Dim &out : outs)
          image.push_back(uint32_t(rng()) & uint32_t((uint64_t(1) << out.bits) - 1));
        bits.push_back(image);
      }
      basis.push_back(bits);
    }
    auto layout = LinearLayout::create(ins, outs, basis);
    EXPECT_TRUE(layout.ok()) << layout.error();
    if (!bijective || layout->isInjective())
      return *layout;
  }
}

uint32_t bitOf(uint32_t value, int bit) { return (value >> bit) & 1; }

} // namespace

TEST(LinearLayout, IdentityMapsEveryPointToItself) {
  LinearLayout id = LinearLayout::identity({{"x", 3}, {"y", 2}});
  for (uint32_t x = 0; x < 8; ++x)
    for (uint32_t y = 0; y < 4; ++y)
      EXPECT_EQ(id.apply({x, y}), (std::vector<uint32_t>{x, y}));
  EXPECT_TRUE(id.isInjective());
  EXPECT_TRUE(id.isSurjective());
}

TEST(LinearLayout, CreateValidates) {
  auto wrongLength = LinearLayout::create({{"x", 2}}, {{"y", 2}}, {{{1}}});
  ASSERT_FALSE(wrongLength.ok());
  EXPECT_NE(wrongLength.error().find("in dim 'x' has 2 bits but its basis has 1 entries"),
            std::string::npos)
      << wrongLength.error();
  auto tooBig = LinearLayout::create({{"x", 1}}, {{"y", 2}}, {{{4}}});
  ASSERT_FALSE(tooBig.ok());
  EXPECT_NE(tooBig.error().find("x[0] gives out dim 'y' the value 4, which does not fit in 2"),
            std::string::npos)
      << tooBig.error();
  auto twice = LinearLayout::create({{"x", 1}, {"x", 1}}, {{"y", 2}}, {{{1}}, {{2}}});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().find("'x' appears twice"), std::string::npos) << twice.error();
  auto wide = LinearLayout::create({{"x", 33}}, {{"y", 2}}, {});
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.error().find("0..32 bits"), std::string::npos) << wide.error();
  auto perOut = LinearLayout::create({{"x", 1}}, {{"y", 2}, {"z", 1}}, {{{1}}});
  ASSERT_FALSE(perOut.ok());
  EXPECT_NE(perOut.error().find("x[0] has 1 values; there are 2 out dims"), std::string::npos)
      << perOut.error();
}

TEST(LinearLayout, ApplyRejectsMalformedInput) {
  LinearLayout id = LinearLayout::identity({{"x", 3}});
  EXPECT_TRUE(id.apply({8}).empty());
  EXPECT_TRUE(id.apply({1, 2}).empty());
}

TEST(LinearLayout, ComposeMatchesApplyingInTurn) {
  std::mt19937_64 rng(1);
  for (int trial = 0; trial < 20; ++trial) {
    LinearLayout inner = randomLayout(rng, {{"a", 3}, {"b", 2}}, {{"x", 4}, {"y", 2}}, false);
    LinearLayout outer = randomLayout(rng, {{"x", 4}, {"y", 2}}, {{"p", 5}, {"q", 1}}, false);
    auto composed = outer.compose(inner);
    ASSERT_TRUE(composed.ok()) << composed.error();
    EXPECT_EQ(composed->inDims(), inner.inDims());
    EXPECT_EQ(composed->outDims(), outer.outDims());
    for (uint32_t a = 0; a < 8; ++a)
      for (uint32_t b = 0; b < 4; ++b)
        EXPECT_EQ(composed->apply({a, b}), outer.apply(inner.apply({a, b})));
  }
}

TEST(LinearLayout, ComposeRejectsMismatchedDims) {
  LinearLayout inner = LinearLayout::identity({{"x", 3}});
  LinearLayout outer = LinearLayout::identity({{"x", 4}});
  auto composed = outer.compose(inner);
  ASSERT_FALSE(composed.ok());
  EXPECT_NE(composed.error().find("inner layout's out dims {x:3} must equal the outer layout's "
                                  "in dims {x:4}"),
            std::string::npos)
      << composed.error();
}

TEST(LinearLayout, LawsOnRandomBijections) {
  std::mt19937_64 rng(2);
  const std::vector<Dim> ins = {{"lane", 5}, {"reg", 2}, {"half", 1}};
  const std::vector<Dim> mids = {{"k", 4}, {"n", 4}};
  const std::vector<Dim> outs = {{"offset", 8}};
  const LinearLayout idIn = LinearLayout::identity(ins);
  const LinearLayout idMid = LinearLayout::identity(mids);
  const LinearLayout idOut = LinearLayout::identity(outs);
  for (int trial = 0; trial < 50; ++trial) {
    LinearLayout a = randomLayout(rng, ins, mids, true);
    LinearLayout b = randomLayout(rng, mids, outs, true);
    LinearLayout c = randomLayout(rng, outs, {{"z", 8}}, true);
    EXPECT_TRUE(a.isInjective() && a.isSurjective());
    EXPECT_EQ(*a.compose(idIn), a);
    EXPECT_EQ(*idMid.compose(a), a);
    auto aInv = a.invert();
    ASSERT_TRUE(aInv.ok()) << aInv.error();
    EXPECT_EQ(aInv->inDims(), mids);
    EXPECT_EQ(aInv->outDims(), ins);
    EXPECT_EQ(*a.compose(*aInv), idMid);
    EXPECT_EQ(*aInv->compose(a), idIn);
    EXPECT_EQ(*aInv->invert(), a);
    // (b ∘ a)^-1 == a^-1 ∘ b^-1
    LinearLayout ba = *b.compose(a);
    EXPECT_EQ(*ba.invert(), *aInv->compose(*b.invert()));
    // Associativity.
    EXPECT_EQ(*c.compose(ba), *(*c.compose(b)).compose(a));
    EXPECT_EQ(*idOut.compose(ba), ba);
  }
}

TEST(LinearLayout, InvertRejectsNonBijections) {
  // Different sizes.
  auto embedded = LinearLayout::create({{"x", 3}}, {{"y", 4}}, {{{1}, {2}, {4}}});
  ASSERT_TRUE(embedded.ok());
  EXPECT_TRUE(embedded->isInjective());
  EXPECT_FALSE(embedded->isSurjective());
  auto noInverse = embedded->invert();
  ASSERT_FALSE(noInverse.ok());
  EXPECT_NE(noInverse.error().find("maps 3 in bits to 4 out bits, so it is not a bijection"),
            std::string::npos)
      << noInverse.error();

  // Square but singular: x[0] ^ y[1] == 0.
  auto singular = LinearLayout::create({{"x", 2}, {"y", 2}}, {{"o", 4}},
                                       {{{3}, {4}}, {{8}, {3}}});
  ASSERT_TRUE(singular.ok());
  EXPECT_FALSE(singular->isInjective());
  EXPECT_FALSE(singular->isSurjective());
  EXPECT_EQ(singular->rank(), 3);
  auto singularInverse = singular->invert();
  ASSERT_FALSE(singularInverse.ok());
  EXPECT_NE(singularInverse.error().find("not a bijection: the XOR of the images of "
                                         "{x[0], y[1]} is 0"),
            std::string::npos)
      << singularInverse.error();
}

TEST(LinearLayout, FlattenAndReshapeRoundTrip) {
  std::mt19937_64 rng(3);
  const std::vector<Dim> ins = {{"a", 2}, {"b", 3}};
  const std::vector<Dim> outs = {{"x", 1}, {"y", 3}, {"z", 2}};
  for (int trial = 0; trial < 10; ++trial) {
    LinearLayout layout = randomLayout(rng, ins, outs, false);
    auto flat = layout.flattenOuts("xyz");
    ASSERT_TRUE(flat.ok()) << flat.error();
    EXPECT_EQ(flat->outDims(), (std::vector<Dim>{{"xyz", 6}}));
    for (uint32_t a = 0; a < 4; ++a)
      for (uint32_t b = 0; b < 8; ++b) {
        std::vector<uint32_t> split = layout.apply({a, b});
        // The first out dim is least significant.
        EXPECT_EQ(flat->apply({a, b})[0], split[0] | split[1] << 1 | split[2] << 4);
      }
    EXPECT_EQ(*flat->reshapeOuts(outs), layout);
    auto flatIns = layout.flattenIns("ab");
    ASSERT_TRUE(flatIns.ok()) << flatIns.error();
    for (uint32_t a = 0; a < 4; ++a)
      for (uint32_t b = 0; b < 8; ++b)
        EXPECT_EQ(flatIns->apply({a | b << 2}), layout.apply({a, b}));
    EXPECT_EQ(*flatIns->reshapeIns(ins), layout);
    // Re-split differently and back.
    auto resplit = layout.reshapeOuts({{"lo", 4}, {"hi", 2}});
    ASSERT_TRUE(resplit.ok()) << resplit.error();
    EXPECT_EQ(*resplit->reshapeOuts(outs), layout);
  }
  auto wrongTotal = LinearLayout::identity(ins).reshapeIns({{"a", 4}});
  ASSERT_FALSE(wrongTotal.ok());
  EXPECT_NE(wrongTotal.error().find("{a:4} has 4 bits but {a:2, b:3} has 5"), std::string::npos)
      << wrongTotal.error();
  auto tooWide = LinearLayout::identity({{"a", 20}, {"b", 20}}).flattenOuts("ab");
  ASSERT_FALSE(tooWide.ok());
  EXPECT_NE(tooWide.error().find("'ab' has 40 bits"), std::string::npos) << tooWide.error();
}

TEST(LinearLayout, ReorderMovesBitsAndRoundTrips) {
  std::mt19937_64 rng(4);
  LinearLayout layout = randomLayout(rng, {{"a", 2}, {"b", 3}}, {{"x", 3}, {"y", 2}}, false);
  auto swapped = layout.reorderOuts({"y", "x"});
  ASSERT_TRUE(swapped.ok()) << swapped.error();
  auto swappedIns = layout.reorderIns({"b", "a"});
  ASSERT_TRUE(swappedIns.ok()) << swappedIns.error();
  for (uint32_t a = 0; a < 4; ++a)
    for (uint32_t b = 0; b < 8; ++b) {
      std::vector<uint32_t> xy = layout.apply({a, b});
      EXPECT_EQ(swapped->apply({a, b}), (std::vector<uint32_t>{xy[1], xy[0]}));
      EXPECT_EQ(swappedIns->apply({b, a}), xy);
    }
  EXPECT_EQ(*swapped->reorderOuts({"x", "y"}), layout);
  EXPECT_EQ(*swappedIns->reorderIns({"a", "b"}), layout);
  auto unknown = layout.reorderOuts({"y", "w"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("no dim named 'w'"), std::string::npos) << unknown.error();
  auto twice = layout.reorderIns({"a", "a"});
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().find("'a' is listed twice"), std::string::npos) << twice.error();
}

TEST(LinearLayout, Rename) {
  LinearLayout id = LinearLayout::identity({{"x", 2}, {"y", 1}});
  auto renamed = id.renameOut("x", "k");
  ASSERT_TRUE(renamed.ok()) << renamed.error();
  EXPECT_EQ(renamed->outDims(), (std::vector<Dim>{{"k", 2}, {"y", 1}}));
  EXPECT_EQ(renamed->inDims(), id.inDims());
  auto clash = id.renameIn("x", "y");
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().find("already has a dim named 'y'"), std::string::npos)
      << clash.error();
  EXPECT_FALSE(id.renameIn("w", "v").ok());
}

TEST(LinearLayout, ProductIsADirectSum) {
  std::mt19937_64 rng(5);
  LinearLayout a = randomLayout(rng, {{"lane", 3}}, {{"k", 3}}, false);
  LinearLayout b = randomLayout(rng, {{"reg", 2}}, {{"n", 2}}, false);
  auto ab = LinearLayout::product(a, b);
  ASSERT_TRUE(ab.ok()) << ab.error();
  EXPECT_EQ(ab->inDims(), (std::vector<Dim>{{"lane", 3}, {"reg", 2}}));
  EXPECT_EQ(ab->outDims(), (std::vector<Dim>{{"k", 3}, {"n", 2}}));
  for (uint32_t lane = 0; lane < 8; ++lane)
    for (uint32_t reg = 0; reg < 4; ++reg)
      EXPECT_EQ(ab->apply({lane, reg}),
                (std::vector<uint32_t>{a.apply({lane})[0], b.apply({reg})[0]}));

  // Shared names concatenate: a's bits low, b's high, on both sides.
  LinearLayout c = randomLayout(rng, {{"lane", 2}}, {{"k", 1}}, false);
  auto ac = LinearLayout::product(a, c);
  ASSERT_TRUE(ac.ok()) << ac.error();
  EXPECT_EQ(ac->inDims(), (std::vector<Dim>{{"lane", 5}}));
  EXPECT_EQ(ac->outDims(), (std::vector<Dim>{{"k", 4}}));
  for (uint32_t lane = 0; lane < 32; ++lane)
    EXPECT_EQ(ac->apply({lane})[0], a.apply({lane & 7})[0] | c.apply({lane >> 3})[0] << 3);

  auto tooWide = LinearLayout::product(LinearLayout::identity({{"x", 20}}),
                                       LinearLayout::identity({{"x", 20}}));
  ASSERT_FALSE(tooWide.ok());
  EXPECT_NE(tooWide.error().find("'x' has 40 bits"), std::string::npos) << tooWide.error();
}

TEST(LinearLayout, FromBitPermutation) {
  // The int4 decode interleave {0, 2, 4, 6, 1, 3, 5, 7}: code c goes to slot
  // (c & 1) * 4 + (c >> 1), i.e. code bit 0 -> slot bit 2, bits 1,2 -> 0,1.
  auto interleave = LinearLayout::fromBitPermutation(
      {{"code", 3}}, {{"slot", 3}}, {{{"slot", 2}, {"slot", 0}, {"slot", 1}}});
  ASSERT_TRUE(interleave.ok()) << interleave.error();
  const uint32_t slotOf[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  for (uint32_t code = 0; code < 8; ++code)
    EXPECT_EQ(interleave->apply({code})[0], slotOf[code]);
  EXPECT_TRUE(interleave->invert().ok());

  auto duplicate = LinearLayout::fromBitPermutation({{"code", 2}}, {{"slot", 2}},
                                                    {{{"slot", 1}, {"slot", 1}}});
  ASSERT_FALSE(duplicate.ok());
  EXPECT_NE(duplicate.error().find("code[1] targets slot[1], which another in bit already"),
            std::string::npos)
      << duplicate.error();
  auto outOfRange = LinearLayout::fromBitPermutation({{"code", 1}}, {{"slot", 2}},
                                                     {{{"slot", 2}}});
  ASSERT_FALSE(outOfRange.ok());
  EXPECT_NE(outOfRange.error().find("'slot' has 2 bits"), std::string::npos)
      << outOfRange.error();
}

// PTX ISA, mma.m16n8k16 with .f16 operands, fragment layout of B (16x8, K x N):
//   groupID = laneid >> 2, threadID_in_group = laneid % 4
//   row (k) = threadID_in_group * 2 + (i & 1) + (i >= 2 ? 8 : 0), col (n) = groupID
// for the four halves b0..b3 held in two .f16x2 registers: i = 2 * reg + half.
TEST(LinearLayout, MmaM16N8K16FragmentB) {
  // Basis by hand: lane bits 0,1 are threadID_in_group (k += 2, 4); lane bits
  // 2..4 are groupID (n += 1, 2, 4); reg selects k += 8; half selects k += 1.
  auto fragment = LinearLayout::create({{"lane", 5}, {"reg", 1}, {"half", 1}}, {{"k", 4}, {"n", 3}},
                                       {{{2, 0}, {4, 0}, {0, 1}, {0, 2}, {0, 4}}, {{8, 0}}, {{1, 0}}});
  ASSERT_TRUE(fragment.ok()) << fragment.error();
  int checked = 0;
  for (uint32_t lane = 0; lane < 32; ++lane)
    for (uint32_t reg = 0; reg < 2; ++reg)
      for (uint32_t half = 0; half < 2; ++half) {
        const uint32_t groupId = lane / 4, threadInGroup = lane % 4;
        const uint32_t k = 2 * threadInGroup + half + 8 * reg;
        const uint32_t n = groupId;
        EXPECT_EQ(fragment->apply({lane, reg, half}), (std::vector<uint32_t>{k, n}))
            << "lane " << lane << " reg " << reg << " half " << half;
        ++checked;
      }
  EXPECT_EQ(checked, 128);
  EXPECT_TRUE(fragment->isInjective());
  EXPECT_TRUE(fragment->isSurjective());
  auto owner = fragment->invert();
  ASSERT_TRUE(owner.ok()) << owner.error();
  // Every (k, n) of the 16x8 tile belongs to exactly one (lane, reg, half).
  for (uint32_t k = 0; k < 16; ++k)
    for (uint32_t n = 0; n < 8; ++n) {
      std::vector<uint32_t> where = owner->apply({k, n});
      ASSERT_EQ(where.size(), 3u);
      EXPECT_EQ(where[0], 4 * n + (k % 8) / 2);
      EXPECT_EQ(where[1], k / 8);
      EXPECT_EQ(where[2], bitOf(k, 0));
    }
  EXPECT_EQ(fragment->toString(), "{lane:5, reg:1, half:1} -> {k:4, n:3}\n"
                                  "  lane[0] -> (k=2, n=0)\n"
                                  "  lane[1] -> (k=4, n=0)\n"
                                  "  lane[2] -> (k=0, n=1)\n"
                                  "  lane[3] -> (k=0, n=2)\n"
                                  "  lane[4] -> (k=0, n=4)\n"
                                  "  reg[0] -> (k=8, n=0)\n"
                                  "  half[0] -> (k=1, n=0)");
}

TEST(LinearLayout, BasisRoundTripsThroughCreate) {
  std::mt19937_64 rng(6);
  LinearLayout layout = randomLayout(rng, {{"a", 3}, {"b", 0}, {"c", 2}}, {{"x", 2}, {"y", 4}},
                                     false);
  auto again = LinearLayout::create(layout.inDims(), layout.outDims(), layout.basis());
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(*again, layout);
}

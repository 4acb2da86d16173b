// The checked size arithmetic that every shape, count and byte size read
// from a file or an API argument goes through (issue 19).
#include "core/support/CheckedMath.h"

#include <gtest/gtest.h>

#include <limits>
#include <new>
#include <vector>

namespace lowbit {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kTwo30 = int64_t(1) << 30;

TEST(CheckedMath, ResultsThatFit) {
  EXPECT_EQ(*checkedMul(274177, 32, "x"), 8773664);
  EXPECT_EQ(*checkedMul(0, kMax, "x"), 0);
  EXPECT_EQ(*checkedMul(kMax, 1, "x"), kMax);
  EXPECT_EQ(*checkedProduct({}, "x"), 1);
  EXPECT_EQ(*checkedProduct({kTwo30, kTwo30, 4}, "x"), int64_t(1) << 62);
  EXPECT_EQ(*checkedAdd(kMax - 1, 1, "x"), kMax);
  int64_t out = -1;
  EXPECT_FALSE(mulOverflows(-3, 4, &out));
  EXPECT_EQ(out, -12) << "the predicates take signed operands";
  EXPECT_FALSE(addOverflows(-1, kMax, &out));
  EXPECT_EQ(out, kMax - 1);
}

// The wrapping shapes: each product lands on a small number modulo
// 2^64, which is what made the size checks pass.
TEST(CheckedMath, WrappingProductsAreErrorsNamingTheOperands) {
  Expected<int64_t> gguf = checkedMul(274177, 32 * int64_t(67280421310721), "rows * cols");
  ASSERT_FALSE(gguf.ok());
  EXPECT_EQ(gguf.error(), "rows * cols: 274177 * 2152973481943072 does not fit in a 64-bit size");
  Expected<int64_t> gptq =
      checkedProduct({1024, 8 * ((int64_t(1) << 54) + 1), 8}, "N * K * 8 bytes");
  ASSERT_FALSE(gptq.ok());
  EXPECT_EQ(gptq.error(),
            "N * K * 8 bytes: 1024 * 144115188075855880 * 8 does not fit in a 64-bit size");
  EXPECT_FALSE(checkedProduct({kTwo30, kTwo30, 8}, "x").ok()) << "exactly 2^63";
  EXPECT_FALSE(checkedMul(kMax, 2, "x").ok());
  int64_t untouched = 7;
  EXPECT_TRUE(mulOverflows(kMax, 2, &untouched));
  EXPECT_EQ(untouched, 7) << "nothing is stored on overflow";
  EXPECT_TRUE(addOverflows(kMax, 1));
  Expected<int64_t> sum = checkedAdd(kMax, 1, "offset + length");
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.error(), "offset + length: 9223372036854775807 + 1 does not fit in a 64-bit size");
}

// Sizes are never negative: a negative operand is refused, not multiplied
// into a positive product (-2 * -3) or added away.
TEST(CheckedMath, NegativeSizesAreErrors) {
  Expected<int64_t> product = checkedMul(-2, -3, "rows * cols");
  ASSERT_FALSE(product.ok());
  EXPECT_EQ(product.error(), "rows * cols: -2 is negative, not a size");
  EXPECT_FALSE(checkedProduct({4, 0, -1}, "x").ok()) << "even with a zero factor";
  EXPECT_FALSE(checkedAdd(5, -1, "x").ok());
}

TEST(CheckedMath, BadAllocBecomesAnError) {
  Expected<int> failed =
      catchingBadAlloc("importGptq", []() -> Expected<int> { throw std::bad_alloc(); });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error(), "importGptq: out of memory");
  Status status = catchingBadAlloc("pack", []() -> Status { throw std::bad_alloc(); });
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error(), "pack: out of memory");
  Expected<std::vector<int>> fine =
      catchingBadAlloc("x", [] { return Expected<std::vector<int>>(std::vector<int>(3, 1)); });
  ASSERT_TRUE(fine.ok());
  EXPECT_EQ(fine->size(), 3u);
}

} // namespace
} // namespace lowbit

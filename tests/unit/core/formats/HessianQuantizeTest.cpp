#include "FormatTestUtil.h"
#include "core/formats/HessianQuantize.h"

#include <gtest/gtest.h>

#include <random>

namespace lowbit::formats {
namespace {

using test::gaussianMatrix;

QuantScheme scheme(const std::string &name) { return std::move(findScheme(name)).value(); }

std::vector<double> identity(int64_t n) {
  std::vector<double> h(size_t(n * n), 0.0);
  for (int64_t i = 0; i < n; ++i)
    h[size_t(i * n + i)] = 1;
  return h;
}

// Inputs with a few loud channels and correlated ones, as real activations
// have: x = z·A with A mixing neighbours, then channel c scaled by 1 + 8·[c % 17 == 0].
std::vector<double> correlatedInputs(int64_t samples, int64_t cols, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal;
  std::vector<double> x(size_t(samples * cols));
  for (int64_t s = 0; s < samples; ++s) {
    std::vector<double> z(static_cast<size_t>(cols));
    for (double &v : z)
      v = normal(rng);
    for (int64_t c = 0; c < cols; ++c) {
      double v = z[size_t(c)] + 0.8 * z[size_t((c + 1) % cols)] + 0.5 * z[size_t((c + 3) % cols)];
      x[size_t(s * cols + c)] = v * (c % 17 == 0 ? 9.0 : 1.0);
    }
  }
  return x;
}

std::vector<double> gram(const std::vector<double> &x, int64_t samples, int64_t cols) {
  std::vector<double> h(size_t(cols * cols), 0.0);
  for (int64_t s = 0; s < samples; ++s)
    for (int64_t i = 0; i < cols; ++i)
      for (int64_t j = 0; j < cols; ++j)
        h[size_t(i * cols + j)] += x[size_t(s * cols + i)] * x[size_t(s * cols + j)];
  return h;
}

// ||X·(W - W')ᵀ||², the output error the quantizer is meant to lower.
double outputError(const std::vector<double> &x, int64_t samples, const std::vector<double> &w,
                   const QuantizedMatrix &q) {
  std::vector<double> back = std::move(dequantize(q)).value();
  double total = 0;
  for (int64_t s = 0; s < samples; ++s)
    for (int64_t n = 0; n < q.rows; ++n) {
      double e = 0;
      for (int64_t k = 0; k < q.cols; ++k)
        e += x[size_t(s * q.cols + k)] *
             (w[size_t(n * q.cols + k)] - back[size_t(n * q.cols + k)]);
      total += e * e;
    }
  return total;
}

TEST(HessianQuantize, IdentityHessianIsRoundToNearest) {
  // With H = I no column's error moves another, so the sweep rounds each
  // weight to nearest under the plain fit: exactly quantize()'s codes.
  const int64_t rows = 8, cols = 256;
  auto w = gaussianMatrix(rows, cols, 11, 0.05);
  auto h = identity(cols);
  HessianQuantizeOptions plain;
  plain.damping = 0;
  for (const char *name : {"w4-g64", "nf4-g64", "w4-g128-asym", "w2-g64-asym", "gguf-q4_k",
                           "nvfp4", "mxfp4", "w8-channel"}) {
    Expected<QuantizedMatrix> rtn = quantize(w.data(), rows, cols, scheme(name));
    Expected<QuantizedMatrix> swept =
        quantizeWithHessian(w.data(), rows, cols, h.data(), scheme(name), plain);
    ASSERT_TRUE(rtn.ok()) << name << ": " << rtn.error();
    ASSERT_TRUE(swept.ok()) << name << ": " << swept.error();
    EXPECT_EQ(swept->codes, rtn->codes) << name;
    EXPECT_EQ(swept->scales, rtn->scales) << name;
    EXPECT_EQ(swept->zeros, rtn->zeros) << name;
    EXPECT_EQ(swept->superScales, rtn->superScales) << name;
  }
}

TEST(HessianQuantize, LowersTheOutputErrorOnCorrelatedInputs) {
  const int64_t rows = 16, cols = 256, samples = 512;
  auto w = gaussianMatrix(rows, cols, 12, 0.05);
  auto x = correlatedInputs(samples, cols, 13);
  auto h = gram(x, samples, cols);
  for (const char *name : {"w4-g64", "nf4-g64", "w4-g128-asym", "w2-g64-asym", "gguf-q4_k"}) {
    Expected<QuantizedMatrix> rtn = quantize(w.data(), rows, cols, scheme(name));
    Expected<QuantizedMatrix> swept =
        quantizeWithHessian(w.data(), rows, cols, h.data(), scheme(name));
    ASSERT_TRUE(rtn.ok() && swept.ok()) << name;
    ASSERT_TRUE(validateQuantizedMatrix(*swept).ok()) << name;
    double before = outputError(x, samples, w, *rtn), after = outputError(x, samples, w, *swept);
    EXPECT_LT(after, 0.8 * before) << name << ": round-to-nearest " << before << ", GPTQ "
                                   << after;
  }
}

TEST(HessianQuantize, ClippingNeverLosesToThePlainFit) {
  // Ratio 1 is among the candidates, and the per-slot choice minimizes the
  // weighted round-to-nearest error, so with H = I (no error moves) the
  // clipped result is at least as close as the plain one, and closer here
  // (Gaussian groups of 64 have outliers worth clipping).
  const int64_t rows = 16, cols = 256;
  auto w = gaussianMatrix(rows, cols, 14);
  auto h = identity(cols);
  for (const char *name : {"w4-g64", "nf4-g64", "w4-g128-asym"}) {
    HessianQuantizeOptions plain, clipped;
    plain.damping = clipped.damping = 0;
    clipped.clipRatios = defaultClipRatios();
    auto a = quantizeWithHessian(w.data(), rows, cols, h.data(), scheme(name), plain);
    auto b = quantizeWithHessian(w.data(), rows, cols, h.data(), scheme(name), clipped);
    ASSERT_TRUE(a.ok() && b.ok()) << name;
    double plainError = outputError(identity(cols), cols, w, *a);
    double clippedError = outputError(identity(cols), cols, w, *b);
    EXPECT_LT(clippedError, plainError) << name;
  }
}

TEST(HessianQuantize, ZeroHessianStillQuantizes) {
  // No calibration input reached any channel: nothing to weigh, and the
  // dead-channel rule must keep the factorization defined.
  const int64_t rows = 4, cols = 128;
  auto w = gaussianMatrix(rows, cols, 15);
  std::vector<double> h(size_t(cols * cols), 0.0);
  auto q = quantizeWithHessian(w.data(), rows, cols, h.data(), scheme("w4-g64"));
  ASSERT_TRUE(q.ok()) << q.error();
  auto rtn = quantize(w.data(), rows, cols, scheme("w4-g64"));
  EXPECT_EQ(q->codes, rtn->codes);
}

TEST(HessianQuantize, RejectsBadArguments) {
  const int64_t rows = 4, cols = 256; // a whole Q4_K super-block
  auto w = gaussianMatrix(rows, cols, 16);
  auto h = identity(cols);
  auto errorOf = [&](const QuantScheme &s, const std::vector<double> &hessian,
                     const HessianQuantizeOptions &options) {
    auto q = quantizeWithHessian(w.data(), rows, cols, hessian.data(), s, options);
    EXPECT_FALSE(q.ok());
    return q.ok() ? std::string() : q.error();
  };
  HessianQuantizeOptions defaults;
  QuantScheme actOrder = scheme("w4-g128-asym");
  actOrder.actOrder = true;
  EXPECT_NE(errorOf(actOrder, h, defaults).find("act-order"), std::string::npos);

  auto nan = h;
  nan[size_t(3 * cols + 5)] = std::nan("");
  EXPECT_NE(errorOf(scheme("w4-g64"), nan, defaults).find("H[3][5] is not finite"),
            std::string::npos);
  auto negative = h;
  negative[size_t(7 * cols + 7)] = -2;
  EXPECT_NE(errorOf(scheme("w4-g64"), negative, defaults).find("H[7][7] = -2 is negative"),
            std::string::npos);

  HessianQuantizeOptions badRatio;
  badRatio.clipRatios = {1.0, 0.0};
  EXPECT_NE(errorOf(scheme("w4-g64"), h, badRatio).find("clipping ratio 0 is outside (0, 1]"),
            std::string::npos);
  badRatio.clipRatios = {};
  EXPECT_NE(errorOf(scheme("w4-g64"), h, badRatio).find("no clipping ratios"), std::string::npos);
  HessianQuantizeOptions clipped;
  clipped.clipRatios = defaultClipRatios();
  EXPECT_NE(errorOf(scheme("gguf-q4_k"), h, clipped).find("one-level scheme"), std::string::npos);
  HessianQuantizeOptions badDamping;
  badDamping.damping = -1;
  EXPECT_NE(errorOf(scheme("w4-g64"), h, badDamping).find("damping -1"), std::string::npos);

  // Indefinite and undamped: the factorization fails with a message, not NaNs.
  std::vector<double> indefinite(size_t(cols * cols), 0.0);
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < cols; ++j)
      indefinite[size_t(i * cols + j)] = i == j ? 1.0 : 0.9;
  indefinite[1] = indefinite[size_t(cols)] = 5.0;
  HessianQuantizeOptions undamped;
  undamped.damping = 0;
  EXPECT_NE(errorOf(scheme("w4-g64"), indefinite, undamped).find("not positive definite"),
            std::string::npos);
}

} // namespace
} // namespace lowbit::formats

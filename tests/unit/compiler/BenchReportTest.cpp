// `lowbit bench`'s outputs: the CSV and table columns of dispatched rows, the
// JSON document, and the SVG with its bandwidth roofline.
#include "compiler/measure/BenchReport.h"
#include "tests/unit/compiler/tuner/TunerTestSupport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>

namespace lowbit::measure {
namespace {

// Two measured rows of a dispatched problem and one without a timing.
std::vector<BenchRow> sampleRows() {
  BenchRow a;
  a.problem = "p";
  a.n = 4096;
  a.k = 4096;
  a.m = 1;
  a.kernel = "lb_gemv";
  a.kernelId = "aaaa";
  a.family = "gemv";
  a.tier = "exact device";
  a.rangeLo = 1;
  a.rangeHi = 9;
  a.medianUs = 10;
  a.cublasUs = 20;
  setRates(a, 4096.0 * 4096 / 2, 2000);
  BenchRow b = a;
  b.m = 64;
  b.kernel = "lb_mma";
  b.kernelId = "bbbb";
  b.family = "mma";
  b.rangeLo = 9;
  b.rangeHi = -1;
  b.medianUs = 16;
  b.cublasUs = 12;
  setRates(b, 4096.0 * 4096 / 2, 2000);
  BenchRow c = b;
  c.m = 4096;
  c.medianUs = c.gbps = c.tflops = c.copyFraction = 0;
  c.failed = true;
  c.note = "FAILED the reference check, relative error 0.5";
  return {a, b, c};
}

BenchContext sampleContext() {
  BenchContext context;
  context.mode = "db";
  context.source = "tuned.db";
  context.device = tuner::testing::testDevice();
  context.copyGBs = 2000;
  context.copyBufferBytes = 1u << 30;
  context.notes = {"p: a note"};
  return context;
}

TEST(BenchReport, RatesCountIdealBytesAndFlops) {
  BenchRow row = sampleRows()[1];
  double bytes = 4096.0 * 4096 / 2 + 2.0 * 64 * (4096 + 4096);
  EXPECT_NEAR(row.gbps, bytes / (16 * 1e3), 1e-9);
  EXPECT_NEAR(row.copyFraction, row.gbps / 2000, 1e-12);
  EXPECT_NEAR(row.tflops, 2.0 * 64 * 4096 * 4096 / (16 * 1e6), 1e-9);
}

TEST(BenchReport, CsvKeepsItsOldColumnsFirstAndAddsTheDispatchedOnes) {
  std::ostringstream csv;
  writeBenchCsv(sampleRows(), csv);
  std::istringstream lines(csv.str());
  std::string header, first, second, third;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  std::getline(lines, third);
  EXPECT_EQ(header.rfind("problem,n,k,m,kernel,median_us,p10_us,p90_us,cublas_us,gbps,", 0), 0u);
  EXPECT_NE(header.find(",kernel_id,family,tier,m_lo,m_hi,jit,passed,note"), std::string::npos);
  EXPECT_NE(first.find(",aaaa,gemv,exact device,1,9,0,1,"), std::string::npos) << first;
  EXPECT_NE(second.find(",bbbb,mma,exact device,9,,0,1,"), std::string::npos) << second;
  // The note holds a comma: quoted, so the row keeps its column count.
  EXPECT_NE(third.find(",0,0,\"FAILED the reference check, relative error 0.5\""),
            std::string::npos)
      << third;
}

TEST(BenchReport, TableShowsRangeFamilyAndTier) {
  std::ostringstream table;
  printBenchTable(sampleRows(), 2000, table);
  std::string text = table.str();
  EXPECT_NE(text.find("[9, inf)"), std::string::npos) << text;
  EXPECT_NE(text.find("[1, 9)"), std::string::npos) << text;
  EXPECT_NE(text.find("p: dispatch from the exact device tier"), std::string::npos) << text;
  EXPECT_NE(text.find("FAILED"), std::string::npos) << text;
}

TEST(BenchReport, JsonHoldsDeviceCopyBandwidthAndEveryRow) {
  std::ostringstream out;
  writeBenchJson(sampleRows(), sampleContext(), out);
  nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["mode"], "db");
  EXPECT_EQ(doc["device"]["name"], "NVIDIA H200");
  EXPECT_EQ(doc["device"]["sm_count"], 132);
  EXPECT_EQ(doc["device"]["id"], tuner::testing::testDevice().id());
  EXPECT_EQ(doc["copy_gbs"], 2000);
  EXPECT_EQ(doc["notes"].size(), 1u);
  const nlohmann::json &rows = doc["rows"];
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0]["kernel"], "lb_gemv");
  EXPECT_EQ(rows[0]["tier"], "exact device");
  EXPECT_EQ(rows[0]["m_hi"], 9);
  EXPECT_DOUBLE_EQ(rows[0]["speedup"].get<double>(), 2.0);
  EXPECT_TRUE(rows[1]["m_hi"].is_null()); // open-ended range
  EXPECT_DOUBLE_EQ(rows[1]["speedup"].get<double>(), 0.75);
  EXPECT_TRUE(rows[2]["median_us"].is_null());
  EXPECT_TRUE(rows[2]["speedup"].is_null());
  EXPECT_FALSE(rows[2]["passed"].get<bool>());
  EXPECT_TRUE(rows[0]["passed"].get<bool>());
}

TEST(BenchReport, ReportRowsCarryIntensityAndSpeedupOnlyWhereMeasured) {
  std::vector<tuner::ReportRow> rows = benchReportRows(sampleRows());
  ASSERT_EQ(rows.size(), 3u);
  double bytes = 4096.0 * 4096 / 2 + 2.0 * 64 * (4096 + 4096);
  EXPECT_NEAR(rows[1].intensity, 2.0 * 64 * 4096 * 4096 / bytes, 1e-9);
  ASSERT_TRUE(rows[1].speedup.has_value());
  EXPECT_DOUBLE_EQ(*rows[1].speedup, 0.75);
  EXPECT_FALSE(rows[2].speedup.has_value());
  EXPECT_EQ(rows[2].intensity, 0);
}

TEST(BenchReport, SvgHasBothPanelsAndTheCopyRoof) {
  std::ostringstream out;
  writeBenchSvg(sampleRows(), sampleContext(), out);
  std::string svg = out.str();
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("speedup over cuBLAS"), std::string::npos);
  EXPECT_NE(svg.find("bandwidth roofline"), std::string::npos);
  EXPECT_NE(svg.find("achieved GB/s"), std::string::npos);
  EXPECT_NE(svg.find("copy 2000 GB/s"), std::string::npos);
  EXPECT_NE(svg.find("on NVIDIA H200"), std::string::npos);
  // Speedup panel: the two measured rows; roofline: the same two points.
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, 4u);
}

} // namespace
} // namespace lowbit::measure

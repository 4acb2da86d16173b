#include "compiler/tuner/Progress.h"
#include "compiler/tuner/Report.h"
#include "TunerTestSupport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <regex>
#include <sstream>

namespace lowbit::tuner {
namespace {

using testing::w4a16;

std::vector<BestPoint> sampleBest() {
  std::vector<BestPoint> best;
  for (auto problem : {w4a16(28672, 8192, "up<gate>"), w4a16(4096, 4096, "square")})
    for (int64_t m : {1, 16, 256, 4096}) {
      BestPoint b;
      b.problemId = std::string(64, problem.name == "square" ? 'a' : 'b');
      b.problem = problem;
      b.m = m;
      b.kernelId = "kernel-" + std::to_string(m);
      b.schedule =
          "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 4, split_k = 1>";
      b.medianUs = 30.0 + double(m) * 0.5;
      if (m != 4096)
        b.referenceUs = 100.0 + double(m);
      // At M = 1 the table serves another kernel (the fastest was of
      // another weight layout); at 4096 no table was committed.
      if (m != 4096) {
        b.servedKernelId = m == 1 ? "served-1" : b.kernelId;
        b.servedUs = m == 1 ? b.medianUs * 1.5 : b.medianUs;
      }
      best.push_back(b);
    }
  return best;
}

// RFC 4180 lines (no embedded newlines in these rows).
std::vector<std::string> splitCsvLine(const std::string &line) {
  std::vector<std::string> fields;
  std::string field;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      field += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      fields.push_back(field);
      field.clear();
    } else {
      field += c;
    }
  }
  fields.push_back(field);
  return fields;
}

TEST(Report, RowsComputeBandwidthAndSpeedup) {
  auto rows = reportRows(sampleBest(), 4190);
  ASSERT_EQ(rows.size(), 8u);
  const ReportRow &r = rows[0]; // 28672 x 8192 at M = 1, 30.5 µs
  double bytes = 28672.0 * 8192 / 2 + 28672.0 * 64 * 2 + 8192 * 2 + 28672 * 2;
  EXPECT_NEAR(r.gbps, bytes / 30.5 / 1e3, 1e-6);
  EXPECT_NEAR(r.copyFraction, r.gbps / 4190, 1e-12);
  EXPECT_NEAR(r.tflops, 2.0 * 28672 * 8192 / 30.5 / 1e6, 1e-9);
  ASSERT_TRUE(r.speedup.has_value());
  EXPECT_NEAR(*r.speedup, 101.0 / 30.5, 1e-12);
  EXPECT_FALSE(rows[3].speedup.has_value());
}

TEST(Report, CsvParsesBack) {
  auto rows = reportRows(sampleBest(), 4190);
  std::ostringstream out;
  writeCsv(rows, out);
  std::istringstream in(out.str());
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = splitCsvLine(line);
  ASSERT_EQ(header.size(), 15u);
  EXPECT_EQ(header[0], "problem");
  EXPECT_EQ(header[12], "speedup");
  EXPECT_EQ(header[14], "served_us");
  size_t index = 0;
  while (std::getline(in, line)) {
    ASSERT_LT(index, rows.size());
    std::vector<std::string> f = splitCsvLine(line);
    ASSERT_EQ(f.size(), 15u) << line;
    const ReportRow &r = rows[index++];
    EXPECT_EQ(f[0], r.problem);
    EXPECT_EQ(std::stoll(f[4]), r.m);
    EXPECT_EQ(f[6], r.schedule); // quoted: it has commas
    EXPECT_NEAR(std::stod(f[7]), r.medianUs, 1e-9);
    EXPECT_NEAR(std::stod(f[8]), r.gbps, r.gbps * 1e-5);
    if (r.speedup)
      EXPECT_NEAR(std::stod(f[12]), *r.speedup, *r.speedup * 1e-5);
    else
      EXPECT_EQ(f[12], "");
    EXPECT_EQ(f[13], r.servedKernelId);
    if (r.servedUs)
      EXPECT_NEAR(std::stod(f[14]), *r.servedUs, *r.servedUs * 1e-5);
    else
      EXPECT_EQ(f[14], "");
  }
  EXPECT_EQ(index, rows.size());
}

TEST(Report, JsonParsesBack) {
  auto rows = reportRows(sampleBest(), 4190);
  std::ostringstream out;
  writeJson(rows, 4190, out);
  nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["copy_gbs"].get<double>(), 4190);
  ASSERT_EQ(doc["rows"].size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const nlohmann::json &j = doc["rows"][i];
    EXPECT_EQ(j["problem"], rows[i].problem);
    EXPECT_EQ(j["m"].get<int64_t>(), rows[i].m);
    EXPECT_DOUBLE_EQ(j["median_us"].get<double>(), rows[i].medianUs);
    EXPECT_EQ(j["speedup"].is_null(), !rows[i].speedup.has_value());
    EXPECT_EQ(j["served_us"].is_null(), !rows[i].servedUs.has_value());
    if (rows[i].servedUs) {
      EXPECT_EQ(j["served_kernel"], rows[i].servedKernelId);
      EXPECT_DOUBLE_EQ(j["served_us"].get<double>(), *rows[i].servedUs);
    }
  }
  // The M = 1 rows keep the fastest kernel and carry what was served.
  EXPECT_EQ(rows[0].kernelId, "kernel-1");
  EXPECT_EQ(rows[0].servedKernelId, "served-1");
  EXPECT_TRUE(doc["failed_candidates"].empty());
}

TEST(Report, JsonListsTheCandidatesThatFailedToCompile) {
  FailedCandidate failed{"q4096", {std::string(64, 'a'), "sm_90a", "#lb.schedule<family = mma>",
                                   "k_mma", "compile", "nvrtc: error: bad\nmore log", "v", "t"}};
  EXPECT_EQ(failed.text(), "q4096 · #lb.schedule<family = mma> · sm_90a: compile failed: nvrtc: "
                           "error: bad");
  std::ostringstream out;
  writeJson(reportRows(sampleBest(), 4190), 4190, out, {failed});
  nlohmann::json doc = nlohmann::json::parse(out.str());
  ASSERT_EQ(doc["failed_candidates"].size(), 1u);
  const nlohmann::json &j = doc["failed_candidates"][0];
  EXPECT_EQ(j["problem"], "q4096");
  EXPECT_EQ(j["schedule"], "#lb.schedule<family = mma>");
  EXPECT_EQ(j["stage"], "compile");
  EXPECT_EQ(j["reason"], "nvrtc: error: bad\nmore log"); // the whole log, not its first line
}

TEST(Report, SvgIsWellFormed) {
  auto rows = reportRows(sampleBest(), 4190);
  std::ostringstream out;
  SvgOptions options;
  options.title = "H200 & W4A16 <g128>";
  writeSvg(rows, options, out);
  std::string svg = out.str();
  ASSERT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  // Every opening tag is closed or self-closing, in order.
  std::regex tag(R"(<(/?)([a-zA-Z]+)[^>]*?(/?)>)");
  std::vector<std::string> open;
  for (std::sregex_iterator it(svg.begin(), svg.end(), tag), end; it != end; ++it) {
    const std::smatch &t = *it;
    if (t[3] == "/")
      continue;
    if (t[1] == "/") {
      ASSERT_FALSE(open.empty()) << "stray </" << t[2] << ">";
      ASSERT_EQ(open.back(), t[2].str());
      open.pop_back();
    } else {
      open.push_back(t[2]);
    }
  }
  EXPECT_TRUE(open.empty());
  // Text is escaped, so no raw '&' or '<' leaks from the title or names.
  EXPECT_NE(svg.find("H200 &amp; W4A16 &lt;g128&gt;"), std::string::npos);
  EXPECT_NE(svg.find("up&lt;gate&gt;"), std::string::npos);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  // An empty report is still a valid document.
  std::ostringstream empty;
  writeSvg({}, options, empty);
  EXPECT_EQ(empty.str().rfind("<svg", 0), 0u);
}

SweepProgress sampleProgress() {
  SweepProgress p;
  p.candidatesDone = 7;
  p.candidatesTotal = 20;
  p.pointsDone = 35;
  p.pointsTotal = 100;
  p.measuredNow = 25;
  p.elapsedSeconds = 50;
  p.geomeanSpeedup = 1.84;
  p.worstSpeedup = 0.97;
  p.current = "up · lb_up_3 · M=16";
  return p;
}

TEST(Progress, LineHasCountsEtaAndSpeedup) {
  SweepProgress p = sampleProgress();
  // 2 s per measured point, 65 points left.
  EXPECT_DOUBLE_EQ(estimateRemainingSeconds(p), 130);
  std::string line = formatProgressLine(p, false);
  EXPECT_NE(line.find("7/20 candidates"), std::string::npos) << line;
  EXPECT_NE(line.find("35%"), std::string::npos) << line;
  EXPECT_NE(line.find("ETA 2m10s"), std::string::npos) << line;
  EXPECT_NE(line.find("vs cuBLAS 1.84x (worst 0.97x)"), std::string::npos) << line;
  EXPECT_EQ(formatDuration(3725), "1h02m");
  EXPECT_EQ(formatDuration(9), "9s");
  p.measuredNow = 0;
  EXPECT_NE(formatProgressLine(p, false).find("ETA ?"), std::string::npos);
}

TEST(Progress, TtyRewritesOneLinePlainOutputThrottles) {
  std::ostringstream tty;
  ProgressPrinter bar(tty, true);
  SweepProgress p = sampleProgress();
  bar.onProgress(p);
  p.pointsDone = 36;
  p.current = "x";
  bar.onProgress(p);
  bar.finish();
  std::string text = tty.str();
  EXPECT_EQ(std::count(text.begin(), text.end(), '\r'), 2);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(text.back(), '\n');

  std::ostringstream log;
  ProgressPrinter plain(log, false, 10);
  p = sampleProgress();
  plain.onProgress(p); // first: printed
  p.elapsedSeconds += 3;
  plain.onProgress(p); // within 10 s: skipped
  p.elapsedSeconds += 10;
  plain.onProgress(p); // printed
  p.finished = true;
  p.elapsedSeconds += 1;
  plain.onProgress(p); // the last one is always printed
  std::string lines = log.str();
  EXPECT_EQ(std::count(lines.begin(), lines.end(), '\n'), 3);
  EXPECT_EQ(lines.find('\r'), std::string::npos);
}

} // namespace
} // namespace lowbit::tuner

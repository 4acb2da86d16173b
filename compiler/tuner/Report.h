// What a sweep found, per (problem, M): the best kernel's time, its
// bandwidth against the measured copy bandwidth, its TFLOP/s, and its
// speedup over cuBLAS at the same shape (docs/architecture.md's reporting
// rules). Written
// as CSV, JSON and a dependency-free SVG plot.
#pragma once

#include "compiler/tuner/Sweep.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::tuner {

struct ReportRow {
  std::string problem; // the problem's name, or its id's first 12 digits
  std::string problemId;
  int64_t n = 0, k = 0, m = 0;
  std::string kernelId, schedule;
  double medianUs = 0;
  double gbps = 0;         // ideal bytes (packed W, scales, X, Y) / time
  double copyFraction = 0; // gbps / measured copy bandwidth
  double tflops = 0;
  double intensity = 0;    // flops per ideal byte, for the roofline
  std::optional<double> cublasUs, speedup;
  // What the committed dispatch table serves at m (BestPoint::served*),
  // when a table was committed; kernelId and medianUs are the fastest
  // kernel measured, which the table may not have been able to use.
  std::string servedKernelId;
  std::optional<double> servedUs;
};

// Rows in the order given (runSweep sorts by problem, then M).
std::vector<ReportRow> reportRows(const std::vector<BestPoint> &best, double copyGBs);

// RFC 4180: fields with a comma, quote or newline are quoted. Missing
// cuBLAS figures are empty fields. Columns: problem, problem_id, n, k, m,
// kernel, schedule, median_us, gbps, copy_pct, tflops, cublas_us, speedup.
void writeCsv(const std::vector<ReportRow> &rows, std::ostream &out);

// {"copy_gbs": ..., "rows": [{"problem": ..., "m": ..., "cublas_us": null, ...}],
//  "failed_candidates": [{"problem": ..., "schedule": ..., "stage": ..., "reason": ...}]}:
// the candidates that never compiled, which have no rows.
void writeJson(const std::vector<ReportRow> &rows, double copyGBs, std::ostream &out,
               const std::vector<FailedCandidate> &failed = {});

// What the roofline panel plots against flops per byte.
enum class Roofline {
  Flops,     // TFLOP/s; roof = min(peak, intensity x copy bandwidth)
  Bandwidth, // achieved GB/s; roof = min(copy bandwidth, peak / intensity)
};

struct SvgOptions {
  std::string title = "lowbit tune";
  double copyGBs = 4190;    // the roofline's slope
  double peakTflops = 660;  // its ceiling: about cuBLAS f16 at large M on the H200
  Roofline roofline = Roofline::Flops;
  int width = 1120, height = 480;
};

// Two panels: left, speedup over cuBLAS against M on a log2 axis, one curve
// per problem, with the 1x line; right, the roofline (TFLOP/s or GB/s, see
// Roofline, against flops per byte, both log) with every row as a point.
void writeSvg(const std::vector<ReportRow> &rows, const SvgOptions &options, std::ostream &out);

} // namespace lowbit::tuner

// `lowbit bench`'s JSON and SVG outputs (the table and CSV are in
// KernelBench.h). The SVG reuses the tuner's writer (tuner/Report.h): per-M
// speedup over cuBLAS per problem, and a bandwidth roofline whose roof is
// the copy kernel's bandwidth measured in the same run.
#pragma once

#include "compiler/measure/KernelBench.h"
#include "compiler/tuner/Report.h"
#include "tuning_db/Fingerprint.h"

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::measure {

// Where the rows came from, for the JSON's header.
struct BenchContext {
  std::string mode;   // "db" (dispatched kernels) or "kernels" (best of a compiled set)
  std::string source; // the database or kernel-set directory
  std::optional<db::DeviceFingerprint> device;
  double copyGBs = 0;         // the copy kernel's bandwidth (read + write)
  size_t copyBufferBytes = 0; // per buffer
  std::vector<std::string> notes;
  bool budgetSpent = false;
};

// Rows as the tuner's report rows: flops per byte from the row's own GB/s
// and TFLOP/s; speedup only where both lowbit and cuBLAS were timed.
std::vector<tuner::ReportRow> benchReportRows(const std::vector<BenchRow> &rows);

// {"mode", "source", "device": {...} | null, "copy_gbs", "copy_buffer_bytes",
//  "budget_spent", "notes": [...], "rows": [{...every BenchRow field...}]}.
// Missing figures (no cuBLAS, no timing, open range end) are null.
void writeBenchJson(const std::vector<BenchRow> &rows, const BenchContext &context,
                    std::ostream &out);

// tuner::writeSvg with the bandwidth roofline (Roofline::Bandwidth) under
// the measured copy bandwidth.
void writeBenchSvg(const std::vector<BenchRow> &rows, const BenchContext &context,
                   std::ostream &out);

} // namespace lowbit::measure

#include "compiler/measure/BenchReport.h"

#include <nlohmann/json.hpp>

namespace lowbit::measure {
namespace {

nlohmann::json positiveOrNull(double value) {
  return value > 0 ? nlohmann::json(value) : nlohmann::json(nullptr);
}

nlohmann::json deviceJson(const db::DeviceFingerprint &f) {
  return {{"name", f.name},
          {"id", f.id()},
          {"compute_capability", std::to_string(f.ccMajor) + "." + std::to_string(f.ccMinor)},
          {"sm_count", f.smCount},
          {"l2_bytes", f.l2Bytes},
          {"shared_mem_per_block_optin_bytes", f.sharedMemPerBlockOptinBytes},
          {"memory_clock_khz", f.memoryClockKhz},
          {"memory_bus_width_bits", f.memoryBusWidthBits},
          {"driver_version", f.driverVersion},
          {"cuda_version", f.cudaVersion}};
}

} // namespace

std::vector<tuner::ReportRow> benchReportRows(const std::vector<BenchRow> &rows) {
  std::vector<tuner::ReportRow> out;
  for (const BenchRow &b : rows) {
    tuner::ReportRow r;
    r.problem = b.problem;
    r.n = b.n;
    r.k = b.k;
    r.m = b.m;
    r.kernelId = b.kernelId.empty() ? b.kernel : b.kernelId;
    r.medianUs = b.medianUs;
    r.gbps = b.gbps;
    r.copyFraction = b.copyFraction;
    r.tflops = b.tflops;
    // TFLOP/s x 1e3 / GB/s = flops per byte.
    r.intensity = b.gbps > 0 ? b.tflops * 1e3 / b.gbps : 0;
    if (b.cublasUs > 0)
      r.cublasUs = b.cublasUs;
    if (b.cublasUs > 0 && b.medianUs > 0)
      r.speedup = b.cublasUs / b.medianUs;
    out.push_back(std::move(r));
  }
  return out;
}

void writeBenchJson(const std::vector<BenchRow> &rows, const BenchContext &context,
                    std::ostream &out) {
  nlohmann::json doc;
  doc["mode"] = context.mode;
  doc["source"] = context.source;
  doc["device"] = context.device ? deviceJson(*context.device) : nlohmann::json(nullptr);
  doc["copy_gbs"] = context.copyGBs;
  doc["copy_buffer_bytes"] = context.copyBufferBytes;
  doc["budget_spent"] = context.budgetSpent;
  doc["notes"] = context.notes;
  doc["rows"] = nlohmann::json::array();
  for (const BenchRow &r : rows) {
    nlohmann::json j = {
        {"problem", r.problem},
        {"n", r.n},
        {"k", r.k},
        {"m", r.m},
        {"kernel", r.kernel},
        {"kernel_id", r.kernelId},
        {"family", r.family},
        {"median_us", positiveOrNull(r.medianUs)},
        {"p10_us", positiveOrNull(r.p10Us)},
        {"p90_us", positiveOrNull(r.p90Us)},
        {"cublas_us", positiveOrNull(r.cublasUs)},
        {"speedup", r.medianUs > 0 && r.cublasUs > 0 ? nlohmann::json(r.cublasUs / r.medianUs)
                                                     : nlohmann::json(nullptr)},
        {"gbps", positiveOrNull(r.gbps)},
        {"copy_pct", r.gbps > 0 ? nlohmann::json(100 * r.copyFraction) : nlohmann::json(nullptr)},
        {"tflops", positiveOrNull(r.tflops)},
        {"max_rel_error", r.maxRelativeError},
        {"passed", !r.failed && r.medianUs > 0},
        {"note", r.note}};
    if (!r.tier.empty()) {
      j["tier"] = r.tier;
      j["m_lo"] = r.rangeLo;
      j["m_hi"] = r.rangeHi < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.rangeHi);
      j["jit"] = r.jit;
    }
    doc["rows"].push_back(std::move(j));
  }
  out << doc.dump(2) << '\n';
}

void writeBenchSvg(const std::vector<BenchRow> &rows, const BenchContext &context,
                   std::ostream &out) {
  tuner::SvgOptions options;
  options.title = std::string("lowbit bench") +
                  (context.mode == "db" ? ": dispatched kernels" : ": best compiled kernels") +
                  (context.device ? " on " + context.device->name : "");
  options.copyGBs = context.copyGBs > 0 ? context.copyGBs : options.copyGBs;
  options.roofline = tuner::Roofline::Bandwidth;
  tuner::writeSvg(benchReportRows(rows), options, out);
}

} // namespace lowbit::measure

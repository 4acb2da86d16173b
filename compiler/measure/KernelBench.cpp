#include "compiler/measure/KernelBench.h"

#include "core/Schedule.h"

#include "compiler/measure/BenchFixture.h"

#include <algorithm>
#include <iomanip>
#include <map>

namespace lowbit::measure {
bool worthBenchmarking(const kernels::KernelEntry &entry, int64_t m) {
  int64_t tileM = entry.gridTile.size() == 3 ? entry.gridTile[1] : 1;
  if (entry.family == "gemv")
    return m <= 8;
  // The dense path pays a pass over the weights before cuBLAS: only where
  // the tensor cores' rate, not the weights' bytes, limits.
  if (entry.family == core::familyName(core::Family::Dequant))
    return m >= kDenseMinRows;
  return tileM <= std::max<int64_t>(8, 4 * m);
}

std::vector<size_t> kernelsToTime(const std::vector<const kernels::KernelEntry *> &kernels,
                                  int64_t m) {
  std::vector<size_t> worth, launchable;
  for (size_t i = 0; i < kernels.size(); ++i) {
    if (!kernels::launchShape(*kernels[i], m, /*persistentBlocks=*/0).ok())
      continue;
    launchable.push_back(i);
    if (worthBenchmarking(*kernels[i], m))
      worth.push_back(i);
  }
  return worth.empty() ? launchable : worth;
}

Expected<std::vector<BenchRow>> benchKernelSet(const cuda::DriverApi &api,
                                               const std::vector<kernels::KernelEntry> &kernels,
                                               const BenchOptions &options, double copyGBs,
                                               const Cublas *cublas, std::ostream &progress) {
  std::map<std::string, std::vector<const kernels::KernelEntry *>> byProblem;
  std::vector<std::string> order;
  for (const kernels::KernelEntry &k : kernels) {
    if (!options.problemFilter.empty() &&
        k.problem.name.find(options.problemFilter) == std::string::npos)
      continue;
    if (!byProblem.count(k.problem.name))
      order.push_back(k.problem.name);
    byProblem[k.problem.name].push_back(&k);
  }
  std::vector<BenchRow> rows;
  FixtureOptions fixtureOptions;
  fixtureOptions.rotationBytes = options.rotationBytes;
  fixtureOptions.replays = options.replays;
  fixtureOptions.cublas = cublas;
  fixtureOptions.smCount = options.smCount;
  for (const std::string &name : order) {
    const std::vector<const kernels::KernelEntry *> &group = byProblem[name];
    const kernels::ProblemDesc &p = group.front()->problem;
    progress << "problem " << name << ": preparing weights\n" << std::flush;
    // The same fixture (weights per layout, rotation, x/y) as `lowbit tune`.
    Expected<std::unique_ptr<BenchFixture>> fixture = BenchFixture::create(api, p, fixtureOptions);
    if (!fixture.ok())
      return makeError(fixture.error());
    std::vector<std::unique_ptr<LoadedKernel>> loaded;
    for (const kernels::KernelEntry *entry : group) {
      Expected<std::vector<char>> cubin = kernels::readCubin(*entry);
      if (!cubin.ok())
        return makeError(cubin.error());
      Expected<std::unique_ptr<LoadedKernel>> kernel = LoadedKernel::load(api, *entry, *cubin);
      if (!kernel.ok())
        return makeError(kernel.error());
      loaded.push_back(std::move(*kernel));
    }

    for (int64_t m : options.rowCounts) {
      BenchRow row;
      row.problem = name;
      row.n = p.n;
      row.k = p.k;
      row.m = m;
      std::vector<const kernels::KernelEntry *> entries;
      for (const std::unique_ptr<LoadedKernel> &kernel : loaded)
        entries.push_back(&kernel->entry());
      std::vector<size_t> timed = kernelsToTime(entries, m);
      if (timed.empty())
        row.note = "no kernel of the set launches at M = " + std::to_string(m);
      for (size_t index : timed) {
        const std::unique_ptr<LoadedKernel> &kernel = loaded[index];
        Expected<KernelTiming> measured = (*fixture)->measure(*kernel, m);
        if (!measured.ok())
          return makeError(measured.error());
        if (!measured->passed) {
          progress << "  rejected " << kernel->entry().name << " at M = " << m
                   << ": relative error " << measured->relativeError << "\n";
          continue;
        }
        ++row.kernelsTried;
        const Timing &timing = measured->timing;
        if (row.kernel.empty() || timing.medianUs < row.medianUs) {
          row.kernel = kernel->entry().name;
          row.medianUs = timing.medianUs;
          row.p10Us = timing.p10Us;
          row.p90Us = timing.p90Us;
          row.maxRelativeError = measured->relativeError;
        }
      }
      row.cublasUs = (*fixture)->cublasUsOrZero(cublas, m, progress);
      if (!row.kernel.empty())
        setRates(row, static_cast<double>((*fixture)->weightCopyBytes()), copyGBs);
      if (row.kernel.empty() && row.note.empty())
        row.note = "every kernel failed its check at M = " + std::to_string(m);
      progress << "  M = " << m << ": " << row.medianUs << " us ("
               << (row.kernel.empty() ? row.note : row.kernel) << ")\n"
               << std::flush;
      rows.push_back(row);
    }
  }
  return rows;
}

void setRates(BenchRow &row, double weightBytes, double copyGBs) {
  if (!(row.medianUs > 0))
    return;
  // Packed weights and scales once, X read and Y written once: the bytes an
  // ideal kernel moves. Bytes per µs / 1e3 = GB/s; flops per µs / 1e6 = TFLOP/s.
  double bytes = weightBytes + 2.0 * row.m * (row.k + row.n);
  row.gbps = bytes / (row.medianUs * 1e3);
  row.copyFraction = copyGBs > 0 ? row.gbps / copyGBs : 0;
  row.tflops = 2.0 * row.m * row.n * row.k / (row.medianUs * 1e6);
}

std::map<std::string, std::vector<const kernels::KernelEntry *>>
groupByWeightLayout(const std::vector<const kernels::KernelEntry *> &kernels) {
  std::map<std::string, std::vector<const kernels::KernelEntry *>> groups;
  for (const kernels::KernelEntry *entry : kernels)
    groups[entry->weightLayout].push_back(entry);
  return groups;
}

namespace {

std::string rangeText(const BenchRow &r) {
  return "[" + std::to_string(r.rangeLo) + ", " +
         (r.rangeHi < 0 ? std::string("inf") : std::to_string(r.rangeHi)) + ")";
}

bool dispatchRows(const std::vector<BenchRow> &rows) {
  return std::any_of(rows.begin(), rows.end(), [](const BenchRow &r) { return !r.tier.empty(); });
}

// CSV fields are plain here except the note, which is free text.
std::string csvText(const std::string &text) {
  if (text.find_first_of(",\"\n") == std::string::npos)
    return text;
  std::string quoted = "\"";
  for (char c : text)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return quoted + "\"";
}

} // namespace

void printBenchTable(const std::vector<BenchRow> &rows, double copyGBs, std::ostream &os) {
  const bool dispatch = dispatchRows(rows);
  os << "copy bandwidth (read + write): " << std::fixed << std::setprecision(0) << copyGBs
     << " GB/s\n";
  os << std::left << std::setw(18) << "N x K" << std::right << std::setw(6) << "M" << std::setw(10)
     << "lowbit us" << std::setw(10) << "cuBLAS us" << std::setw(9) << "speedup" << std::setw(8)
     << "GB/s" << std::setw(7) << "%copy" << std::setw(8) << "TFLOP/s";
  if (dispatch)
    os << "  " << std::left << std::setw(14) << "range" << std::setw(7) << "family" << std::right;
  os << "  kernel\n";
  for (const BenchRow &r : rows) {
    std::string shape = std::to_string(r.n) + "x" + std::to_string(r.k);
    os << std::left << std::setw(18) << shape << std::right << std::setw(6) << r.m
       << std::setprecision(1) << std::setw(10) << r.medianUs << std::setw(10) << r.cublasUs
       << std::setprecision(2) << std::setw(9) << (r.medianUs > 0 && r.cublasUs > 0 ? r.cublasUs / r.medianUs : 0)
       << std::setprecision(0) << std::setw(8) << r.gbps << std::setw(6) << 100 * r.copyFraction << "%"
       << std::setprecision(1) << std::setw(8) << r.tflops;
    if (dispatch)
      os << "  " << std::left << std::setw(14) << rangeText(r) << std::setw(7) << r.family
         << std::right;
    os << "  " << r.kernel << (r.jit ? " (PTX)" : "") << (r.note.empty() ? "" : "  " + r.note)
       << "\n";
  }
  if (dispatch && !rows.empty()) {
    // The tier is per problem; say it once per problem, after the table.
    std::string last;
    for (const BenchRow &r : rows)
      if (r.problem != last) {
        os << r.problem << ": dispatch from the " << r.tier << " tier\n";
        last = r.problem;
      }
  }
}

void writeBenchCsv(const std::vector<BenchRow> &rows, std::ostream &os) {
  os << "problem,n,k,m,kernel,median_us,p10_us,p90_us,cublas_us,gbps,copy_fraction,tflops,"
        "max_rel_error,kernel_id,family,tier,m_lo,m_hi,jit,passed,note\n";
  for (const BenchRow &r : rows)
    os << r.problem << "," << r.n << "," << r.k << "," << r.m << "," << r.kernel << ","
       << r.medianUs << "," << r.p10Us << "," << r.p90Us << "," << r.cublasUs << "," << r.gbps
       << "," << r.copyFraction << "," << r.tflops << "," << r.maxRelativeError << ","
       << r.kernelId << "," << r.family << "," << csvText(r.tier) << ","
       << (r.tier.empty() ? "" : std::to_string(r.rangeLo)) << ","
       << (r.tier.empty() || r.rangeHi < 0 ? "" : std::to_string(r.rangeHi)) << ","
       << (r.jit ? 1 : 0) << "," << (!r.failed && r.medianUs > 0 ? 1 : 0) << ","
       << csvText(r.note) << "\n";
}

} // namespace lowbit::measure

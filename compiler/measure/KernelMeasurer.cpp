#include "compiler/measure/KernelMeasurer.h"

#include "runtime/kernels/KernelRecordCodec.h"

#include <cmath>

namespace lowbit::measure {
namespace {

// Identifies a candidate's cubin: databaseCubins looks cubins up by it, and
// loaded modules are cached by it. It deliberately leaves out what is only
// launch data (weight layout, grid tile, block size), which the fixture
// takes from the entry being measured.
std::string kernelKey(const kernels::KernelEntry &entry) {
  return core::signature(entry.problem) + "|" + entry.arch + "|" + entry.name + "|" +
         entry.schedule;
}

} // namespace

CubinLoader databaseCubins(const db::Database &database,
                           const std::vector<tuner::SweepProblem> &problems) {
  // loadSweepProblems reads kernel rows without blobs (a sweep may list
  // hundreds of candidates); the cubin is fetched by id when measured.
  auto ids = std::make_shared<std::map<std::string, std::string>>();
  for (const tuner::SweepProblem &problem : problems)
    for (const tuner::SweepCandidate &candidate : problem.candidates)
      (*ids)[kernelKey(candidate.entry)] = candidate.kernelId;
  const db::Database *db = &database;
  return [ids, db](const kernels::KernelEntry &entry) -> Expected<std::vector<char>> {
    auto id = ids->find(kernelKey(entry));
    if (id == ids->end())
      return makeError("kernel " + entry.name + " is not among the sweep's candidates");
    auto record = db->findKernel(id->second, /*withBlobs=*/true);
    if (!record)
      return makeError(record.error());
    if (!*record || (*record)->cubin.empty())
      return makeError("kernel " + id->second.substr(0, 12) + " has no cubin in " + db->path());
    return std::vector<char>((*record)->cubin.begin(), (*record)->cubin.end());
  };
}

KernelMeasurer::KernelMeasurer(const cuda::DriverApi &api, CubinLoader cubins,
                               const Cublas *cublas, FixtureOptions options, std::ostream *log)
    : api_(api), cubins_(std::move(cubins)), cublas_(cublas), options_(options), log_(log) {
  options_.cublas = cublas; // the dense path's kernels are measured with it
}

// Modules before the fixture's buffers (members go in reverse order anyway;
// spelled out because both hold driver resources of one context).
KernelMeasurer::~KernelMeasurer() {
  loaded_.clear();
  fixture_.reset();
}

Expected<BenchFixture *> KernelMeasurer::fixtureFor(const kernels::ProblemDesc &problem) {
  std::string key = core::signature(problem);
  if (fixture_ && key == fixtureKey_)
    return fixture_.get();
  if (key == fixtureKey_ && !fixtureError_.empty())
    return makeError(fixtureError_); // making the inputs again would fail again
  // Free the previous problem's memory before allocating the next one's.
  loaded_.clear();
  loadErrors_.clear();
  fixture_.reset();
  fixtureKey_ = key;
  fixtureError_.clear();
  Expected<std::unique_ptr<BenchFixture>> fixture = BenchFixture::create(api_, problem, options_);
  if (!fixture.ok()) {
    fixtureError_ = fixture.error();
    if (log_)
      *log_ << "  " << problem.name << ": " << fixtureError_ << "\n";
    return makeError(fixtureError_);
  }
  fixture_ = std::move(*fixture);
  return fixture_.get();
}

Expected<tuner::Measurement> KernelMeasurer::measure(const kernels::KernelEntry &kernel,
                                                     int64_t m) {
  tuner::Measurement result;
  Expected<BenchFixture *> fixture = fixtureFor(kernel.problem);
  if (!fixture.ok()) {
    // No inputs for the problem (the formats library has no quantizer for
    // it): no kernel of it can pass a check, so none is dispatched. This is
    // the problem's failure, not the device's, and the sweep goes on.
    ++rejected_;
    result.passed = false;
    result.maxRelError = 1e30;
    return result;
  }
  const std::string key = kernelKey(kernel);
  auto found = loaded_.find(key);
  if (found == loaded_.end()) {
    Expected<std::vector<char>> cubin = cubins_(kernel);
    Expected<std::unique_ptr<LoadedKernel>> loaded =
        cubin.ok() ? LoadedKernel::load(api_, kernel, *cubin)
                   : Expected<std::unique_ptr<LoadedKernel>>(makeError(cubin.error()));
    if (!loaded.ok())
      loadErrors_[key] = loaded.error();
    found = loaded_.emplace(key, loaded.ok() ? std::move(*loaded) : nullptr).first;
  }
  if (!found->second) {
    // A cubin that does not load (another arch, a corrupt row) is this
    // kernel's failure, not the device's: record it and go on.
    ++rejected_;
    if (log_)
      *log_ << "  " << kernel.name << " not measured: " << loadErrors_[key] << "\n";
    result.passed = false;
    result.maxRelError = 1e30;
    return result;
  }
  // The module is cached by the cubin it came from; how it is launched and
  // which packing of the weights it reads come from `kernel`, the entry
  // being measured. (Taking them from the cached module's entry once let an
  // entry with another weight layout borrow the first one's packing, and
  // pass a check it should fail.)
  Expected<KernelTiming> measured = (*fixture)->measure(kernel, found->second->function(), m);
  if (!measured.ok())
    return makeError(measured.error());
  // Stored in the database and printed: keep it finite.
  result.maxRelError = std::isfinite(measured->relativeError) ? measured->relativeError : 1e30;
  result.passed = measured->passed;
  if (!measured->passed) {
    ++rejected_;
    if (log_)
      *log_ << "  rejected " << kernel.name << " at M = " << m << ": relative error "
            << measured->relativeError << "\n";
    return result;
  }
  result.medianUs = measured->timing.medianUs;
  result.p10Us = measured->timing.p10Us;
  result.p90Us = measured->timing.p90Us;
  return result;
}

Expected<double> KernelMeasurer::referenceUs(const kernels::ProblemDesc &problem, int64_t m) {
  if (!cublas_)
    return makeError("no cuBLAS on this machine");
  Expected<BenchFixture *> fixture = fixtureFor(problem);
  if (!fixture.ok())
    return makeError(fixture.error());
  Expected<Timing> timing = (*fixture)->cublasTiming(*cublas_, m);
  if (!timing.ok())
    return makeError(timing.error());
  return timing->medianUs;
}

} // namespace lowbit::measure

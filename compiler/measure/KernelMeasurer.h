// tuner::Measurer on the GPU: the sweep's kernels measured with the same
// BenchFixture as `lowbit bench` (weights packed once per problem and layout,
// rotated over > 512 MB; an f64 reference check on fresh activations before
// every timing; CUDA-graph timing, median of >= 7 replays).
//
// It lives in its own library, lowbit_tune_measure, because it joins the two
// halves: lowbit_tuner (the Measurer interface, no CUDA) and lowbit_measure
// (CUDA, no tuner). Neither of those depends on the other.
#pragma once

#include "compiler/measure/BenchFixture.h"
#include "compiler/tuner/Sweep.h"
#include "tuning_db/Database.h"

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace lowbit::measure {

// Where a kernel's cubin comes from: a kernel database or a kernel-set
// directory (kernels::readCubin).
using CubinLoader = std::function<Expected<std::vector<char>>(const kernels::KernelEntry &)>;

// The cubins of the sweep's candidates, read from `database` (which must
// outlive the loader) on first use. Candidates are matched by problem, arch,
// entry name and schedule, so equal entry names of different problems never mix.
CubinLoader databaseCubins(const db::Database &database,
                           const std::vector<tuner::SweepProblem> &problems);

class KernelMeasurer : public tuner::Measurer {
public:
  // `cublas` may be null (no reference timings); `log`, when given, gets one
  // line per rejected kernel. The current context must stay current.
  KernelMeasurer(const cuda::DriverApi &api, CubinLoader cubins, const Cublas *cublas,
                 FixtureOptions options, std::ostream *log = nullptr);
  ~KernelMeasurer() override;

  // A kernel that computes wrong values, whose cubin does not load here, or
  // whose problem the formats library cannot make inputs for, is passed =
  // false (recorded as failed, never dispatched). Launch and device failures
  // are errors: the sweep records the candidate as failed and goes on, and
  // stops only when several candidates in a row fail so (Sweep.h).
  Expected<tuner::Measurement> measure(const kernels::KernelEntry &kernel, int64_t m) override;
  Expected<double> referenceUs(const kernels::ProblemDesc &problem, int64_t m) override;

  int rejected() const { return rejected_; }

private:
  Expected<BenchFixture *> fixtureFor(const kernels::ProblemDesc &problem);

  const cuda::DriverApi &api_;
  CubinLoader cubins_;
  const Cublas *cublas_;
  FixtureOptions options_;
  std::ostream *log_;
  int rejected_ = 0;
  // One problem's fixture at a time: its rotation holds > 512 MB per weight
  // layout, and the sweep finishes a problem before starting the next.
  std::string fixtureKey_;
  std::unique_ptr<BenchFixture> fixture_;
  std::string fixtureError_; // why fixtureKey_'s problem has no fixture, if it has none
  // Modules of the current problem's kernels, loaded once for all M points
  // and keyed by the cubin they hold (never by what to pack for them); a
  // null entry is a kernel whose cubin failed to load.
  std::map<std::string, std::unique_ptr<LoadedKernel>> loaded_;
  std::map<std::string, std::string> loadErrors_;
};

} // namespace lowbit::measure

// `lowbit compile` into a kernel database when some candidates fail: the
// NVRTC step is stood in for (KernelSetOptions::compile), failing one
// kernel's compile and reporting a spill for another. Both are recorded as
// failed candidates with their reasons, the third kernel is stored, and the
// tuner's sweep measures that one and reports the two; a later compile that
// succeeds clears the records.
#include "compiler/KernelSetCompiler.h"
#include "compiler/tuner/Sweep.h"
#include "tests/unit/compiler/tuner/TunerTestSupport.h"

#include <gtest/gtest.h>

#include <sstream>

namespace lowbit::compiler {
namespace {

using tuner::testing::ScratchDir;

const std::vector<std::string> kSchedules = {
    "#lb.schedule<family = gemv, tile = [1, 4, 1024], warps = [1, 4], stages = 1, split_k = 1>",
    "#lb.schedule<family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 1, split_k = 8>",
    "#lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 3, split_k = 1>",
};

// Placeholder cubins, one per kernel name (nothing launches them); the
// split-K kernel fails to compile and the staged one spills, unless `healthy`.
Expected<nvrtc::CompileResult> standIn(const nvrtc::CompileRequest &request, bool healthy) {
  const std::string name = request.sourceName.substr(0, request.sourceName.size() - 3);
  if (!healthy && name.find("__mma_t16x64x256") != std::string::npos)
    return makeError("nvrtc: " + request.sourceName + "(12): error: forced for the test\nlog");
  nvrtc::CompileResult result;
  std::string image = "\x7f" "ELF " + name;
  result.cubin.assign(image.begin(), image.end());
  result.ptx = ".version 8.0";
  nvrtc::KernelResources resources;
  resources.kernelName = name;
  resources.registers = 64;
  if (!healthy && name.find("__mma_t64x128x64") != std::string::npos)
    resources.spillStoreBytes = 24;
  result.resources.push_back(resources);
  return result;
}

struct PassingMeasurer : tuner::Measurer {
  std::vector<std::string> measured;
  Expected<tuner::Measurement> measure(const kernels::KernelEntry &kernel, int64_t) override {
    measured.push_back(kernel.name);
    tuner::Measurement m;
    m.medianUs = 10;
    m.passed = true;
    return m;
  }
};

struct FixedClock : tuner::Clock {
  double seconds() override { return 0; }
};

TEST(KernelSetCompiler, CandidatesThatFailToCompileAreRecordedAndTheRestGoOn) {
  ScratchDir dir;
  spec::KernelSetSpec spec;
  spec.archs = {"sm_90a"};
  spec.problems = {tuner::testing::w4a16(256, 256, "p256")};
  spec.problems[0].scheme.granularity = formats::Granularity::PerChannel;
  spec.problems[0].scheme.groupSize = 0;
  KernelSetOptions options;
  options.output = dir.file("tuned.db");
  options.schedules = kSchedules;
  options.jobs = 1;
  options.compile = [](const nvrtc::CompileRequest &r) { return standIn(r, false); };
  std::ostringstream diagnostics;
  Expected<KernelSetReport> report = compileKernelSet(spec, options, diagnostics);
  ASSERT_TRUE(report.ok()) << report.error() << "\n" << diagnostics.str();
  EXPECT_EQ(report->failures(), 2);
  EXPECT_NE(diagnostics.str().find("forced for the test"), std::string::npos) << diagnostics.str();
  EXPECT_NE(diagnostics.str().find("spills 24 bytes"), std::string::npos) << diagnostics.str();

  const std::string problemId = db::problemIdForSignature(core::signature(spec.problems[0]));
  {
    Expected<db::Database> database = db::Database::open(options.output);
    ASSERT_TRUE(database.ok()) << database.error();
    auto kernels = database->kernelsForProblem(problemId);
    ASSERT_TRUE(kernels.ok()) << kernels.error();
    ASSERT_EQ(kernels->size(), 1u);
    auto failures = database->candidateFailures(problemId, "sm_90a");
    ASSERT_TRUE(failures.ok()) << failures.error();
    ASSERT_EQ(failures->size(), 2u);
    std::map<std::string, db::CandidateFailureRecord> byStage;
    for (const db::CandidateFailureRecord &f : *failures)
      byStage[f.stage] = f;
    EXPECT_EQ(byStage.at("compile").schedule, kSchedules[1]);
    EXPECT_NE(byStage.at("compile").reason.find("error: forced for the test\nlog"),
              std::string::npos);
    EXPECT_EQ(byStage.at("spill").schedule, kSchedules[2]);
    EXPECT_EQ(byStage.at("spill").reason, "spills 24 bytes");

    // The sweep measures the kernel there is and reports the two that failed.
    ASSERT_TRUE(database->putDevice(tuner::testing::testDevice()).ok());
    auto sweep = tuner::loadSweepProblems(*database, "sm_90a");
    ASSERT_TRUE(sweep.ok()) << sweep.error();
    ASSERT_EQ(sweep->size(), 1u);
    EXPECT_EQ(sweep->front().candidates.size(), 1u);
    tuner::SweepOptions sweepOptions;
    sweepOptions.runId = "run";
    sweepOptions.deviceId = tuner::testing::testDevice().id();
    sweepOptions.mPoints = {1, 4};
    PassingMeasurer measurer;
    FixedClock clock;
    auto summary = tuner::runSweep(*database, *sweep, measurer, sweepOptions, clock);
    ASSERT_TRUE(summary.ok()) << summary.error();
    EXPECT_TRUE(summary->complete());
    EXPECT_EQ(measurer.measured.size(), 2u);
    ASSERT_EQ(summary->failedCandidates.size(), 2u);
    EXPECT_NE(summary->failedCandidates[0].text().find("p256 · #lb.schedule<family = mma"),
              std::string::npos)
        << summary->failedCandidates[0].text();
  }

  // Compiled again, now without failures: nothing is left recorded as failed.
  options.compile = [](const nvrtc::CompileRequest &r) { return standIn(r, true); };
  Expected<KernelSetReport> again = compileKernelSet(spec, options, diagnostics);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ(again->failures(), 0);
  Expected<db::Database> database = db::Database::open(options.output);
  ASSERT_TRUE(database.ok());
  auto failures = database->candidateFailures(problemId);
  ASSERT_TRUE(failures.ok());
  EXPECT_TRUE(failures->empty());
  auto kernels = database->kernelsForProblem(problemId);
  ASSERT_TRUE(kernels.ok());
  EXPECT_EQ(kernels->size(), 3u);
}

} // namespace
} // namespace lowbit::compiler

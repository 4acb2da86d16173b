// What `lowbit compile` writes, on hand-built kernels (the compiler cannot
// yet make one with dynamic shared memory): kernels.json and the database
// must carry a kernel's dynamic shared bytes to every reader, and a kernel
// whose shared memory exceeds an arch's per-block maximum is skipped there.
#include "compiler/KernelSetOutput.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/unit/tuning_db/TestSupport.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace lowbit::compiler {
namespace {

using db::testing::TempDir;

constexpr const char *kLayout = "lbwl1;bits=4;tile=1x32;basis=4,1,2,8,16";

CompiledKernel kernel(const std::string &name, int64_t dynamicSharedBytes) {
  CompiledKernel k;
  k.spec.name = "p4096";
  k.spec.n = 4096;
  k.spec.k = 4096;
  k.problem = k.spec.name;
  k.name = name;
  k.arch = "sm_90a";
  k.family = "mma";
  k.schedule = "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, "
               "split_k = 8>";
  k.weightLayout = kLayout;
  k.blockThreads = 256;
  k.gridTile = {64, 8, 8};
  k.registers = 96;
  k.sharedBytes = 2048;
  k.dynamicSharedBytes = dynamicSharedBytes;
  std::string image = "\x7f" "ELF cubin of " + name; // distinct cubins, distinct ids
  k.cubin.assign(image.begin(), image.end());
  k.ptx = ".target sm_90a";
  k.source = "// " + name;
  return k;
}

KernelSetReport twoKernels() {
  KernelSetReport report;
  report.problems = {"p4096"};
  report.kernels = {kernel("lb_ring", 100000), kernel("lb_plain", 0)};
  return report;
}

TEST(KernelSetOutput, ManifestRoundTripsDynamicSharedBytes) {
  TempDir dir;
  ASSERT_TRUE(writeManifest(twoKernels(), dir.path()).ok());
  std::ifstream file(dir.file("kernels.json"));
  nlohmann::json manifest = nlohmann::json::parse(file);
  EXPECT_EQ(manifest["kernels"][0]["dynamic_shared_bytes"], 100000);
  EXPECT_EQ(manifest["kernels"][1]["dynamic_shared_bytes"], 0);

  Expected<std::vector<kernels::KernelEntry>> read = kernels::readKernelSet(dir.path());
  ASSERT_TRUE(read.ok()) << read.error();
  ASSERT_EQ(read->size(), 2u);
  EXPECT_EQ((*read)[0].dynamicSharedBytes, 100000);
  EXPECT_EQ((*read)[0].sharedBytes, 2048);
  EXPECT_EQ((*read)[1].dynamicSharedBytes, 0);
  // And on to the launch: what BenchFixture and the GPU tests pass.
  Expected<kernels::LaunchShape> shape = kernels::launchShape((*read)[0], 5, /*persistentBlocks=*/0);
  ASSERT_TRUE(shape.ok()) << shape.error();
  EXPECT_EQ(shape->dynamicSharedBytes, 100000u);
}

// Kernel sets written before dynamic shared memory have no such field.
TEST(KernelSetOutput, ManifestWithoutTheFieldReadsAsZero) {
  TempDir dir;
  ASSERT_TRUE(writeManifest(twoKernels(), dir.path()).ok());
  nlohmann::json manifest;
  {
    std::ifstream file(dir.file("kernels.json"));
    manifest = nlohmann::json::parse(file);
  }
  for (nlohmann::json &k : manifest["kernels"])
    k.erase("dynamic_shared_bytes");
  std::ofstream(dir.file("kernels.json")) << manifest.dump();
  Expected<std::vector<kernels::KernelEntry>> read = kernels::readKernelSet(dir.path());
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ((*read)[0].dynamicSharedBytes, 0);
  EXPECT_EQ(kernels::launchShape((*read)[0], 1, /*persistentBlocks=*/0)->dynamicSharedBytes, 0u);
}

TEST(KernelSetOutput, DatabaseRoundTripsDynamicSharedBytes) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  std::ostringstream diagnostics;
  ASSERT_TRUE(writeDatabase(twoKernels(), path, diagnostics).ok()) << diagnostics.str();
  db::Database database = db::testing::openOrDie(path);
  kernels::ProblemDesc problem = kernelEntryOf(kernel("lb_ring", 0)).problem;
  auto rows = database.kernelsForProblem(
      db::problemIdForSignature(core::signature(problem)), /*withBlobs=*/false);
  ASSERT_TRUE(rows.ok()) << rows.error();
  ASSERT_EQ(rows->size(), 2u);
  int seen = 0;
  for (const db::KernelRecord &row : *rows) {
    int64_t expected = row.entry == "lb_ring" ? 100000 : 0;
    EXPECT_EQ(row.launch.dynamicSharedBytes, expected) << row.entry;
    EXPECT_EQ(row.sharedBytes, 2048) << row.entry;
    // What the runtime's plan builder, DispatchBench and the tuner read.
    Expected<kernels::KernelEntry> entry = kernels::kernelEntry(row);
    ASSERT_TRUE(entry.ok()) << entry.error();
    EXPECT_EQ(entry->dynamicSharedBytes, expected) << row.entry;
    ++seen;
  }
  EXPECT_EQ(seen, 2);
}

// The problem reaches kernels.json and the database as readable keys and
// comes back as the same typed problem, quantized zero codes included, with
// the signature (and so the problem id) of its canonical text.
TEST(KernelSetOutput, ProblemsRoundTripThroughTheManifestAndTheDatabase) {
  KernelSetReport report = twoKernels();
  for (CompiledKernel &k : report.kernels) {
    k.spec.activation = core::Activation::BF16;
    k.spec.code = formats::DataFormat::signedInt(8);
    k.spec.scheme.scale = formats::DataFormat::f32();
    k.spec.scheme.granularity = formats::Granularity::PerChannel;
    k.spec.scheme.groupSize = 0;
  }
  report.kernels[1].spec.code = formats::DataFormat::unsignedInt(2);
  report.kernels[1].spec.scheme.zero = formats::ZeroMode::SubtractCode;
  report.kernels[1].spec.scheme.zeroCodes = formats::DataFormat::unsignedInt(4);
  TempDir dir;
  ASSERT_TRUE(writeManifest(report, dir.path()).ok());
  std::ifstream file(dir.file("kernels.json"));
  nlohmann::json manifest = nlohmann::json::parse(file);
  EXPECT_EQ(manifest["kernels"][1]["weight"], "uint2");
  EXPECT_EQ(manifest["kernels"][1]["zero"], "quantized");
  EXPECT_EQ(manifest["kernels"][1]["zero_codes"], "uint4");
  EXPECT_FALSE(manifest["kernels"][0].contains("zero_codes"));
  Expected<std::vector<kernels::KernelEntry>> read = kernels::readKernelSet(dir.path());
  ASSERT_TRUE(read.ok()) << read.error();
  std::string path = dir.file("kernels.db");
  std::ostringstream diagnostics;
  ASSERT_TRUE(writeDatabase(report, path, diagnostics).ok()) << diagnostics.str();
  db::Database database = db::testing::openOrDie(path);
  for (size_t i = 0; i < 2; ++i) {
    const core::Problem &want = report.kernels[i].spec;
    EXPECT_TRUE((*read)[i].problem.sameAs(want)) << core::signature((*read)[i].problem);
    EXPECT_EQ((*read)[i].problem.name, "p4096");
    auto rows = database.kernelsForProblem(db::problemIdForSignature(core::signature(want)),
                                           /*withBlobs=*/false);
    ASSERT_TRUE(rows.ok()) << rows.error();
    ASSERT_EQ(rows->size(), 1u);
    Expected<kernels::KernelEntry> entry = kernels::kernelEntry(rows->front());
    ASSERT_TRUE(entry.ok()) << entry.error();
    EXPECT_TRUE(entry->problem.sameAs(want)) << core::signature(entry->problem);
  }
}

// Rows written before the typed model stored the spec's default group size
// (128) with other granularities; the signature printed 0, and still does.
TEST(KernelSetOutput, OldRowsWithAGroupSizeForChannelScalesKeepTheirId) {
  KernelSetReport report = twoKernels();
  report.kernels.resize(1);
  report.kernels[0].spec.scheme.granularity = formats::Granularity::PerChannel;
  report.kernels[0].spec.scheme.groupSize = 0;
  TempDir dir;
  ASSERT_TRUE(writeManifest(report, dir.path()).ok());
  nlohmann::json manifest;
  {
    std::ifstream file(dir.file("kernels.json"));
    manifest = nlohmann::json::parse(file);
  }
  manifest["kernels"][0]["group_size"] = 128;
  std::ofstream(dir.file("kernels.json")) << manifest.dump();
  Expected<std::vector<kernels::KernelEntry>> read = kernels::readKernelSet(dir.path());
  ASSERT_TRUE(read.ok()) << read.error();
  EXPECT_EQ(core::signature((*read)[0].problem),
            "lowbit.qmatmul.v1;n=4096;k=4096;act=f16;weight=uint4;scale=f16;"
            "granularity=channel;group=0;zero=none");
}

// A kernel that was not made is recorded as a failed candidate with its
// reason, a spilled one is not stored, and a kernel compiled later for the
// same (problem, arch, schedule) clears the record.
TEST(KernelSetOutput, DatabaseRecordsFailedKernelsUntilTheyCompile) {
  TempDir dir;
  std::string path = dir.file("kernels.db");
  KernelSetReport report = twoKernels();
  CompiledKernel spilled = kernel("lb_spills", 0);
  spilled.schedule = "#lb.schedule<family = gemv>";
  spilled.spillBytes = 16;
  report.kernels.push_back(spilled);
  report.failed.push_back({spilled.spec, spilled.name, spilled.arch, spilled.schedule, "spill",
                           "spills 16 bytes"});
  report.failed.push_back({spilled.spec, "lb_broken", "sm_80", "#lb.schedule<family = mma>",
                           "compile", "nvrtc: error: expected a ';'"});
  std::ostringstream diagnostics;
  ASSERT_TRUE(writeDatabase(report, path, diagnostics).ok()) << diagnostics.str();
  const std::string problemId = db::problemIdForSignature(core::signature(spilled.spec));
  {
    Expected<db::Database> database = db::Database::open(path);
    ASSERT_TRUE(database.ok()) << database.error();
    auto kernels = database->kernelsForProblem(problemId);
    ASSERT_TRUE(kernels.ok());
    EXPECT_EQ(kernels->size(), 2u); // not the spilled one
    auto failures = database->candidateFailures(problemId);
    ASSERT_TRUE(failures.ok()) << failures.error();
    ASSERT_EQ(failures->size(), 2u);
    EXPECT_EQ((*failures)[0].arch, "sm_80");
    EXPECT_EQ((*failures)[0].stage, "compile");
    EXPECT_EQ((*failures)[0].reason, "nvrtc: error: expected a ';'");
    EXPECT_EQ((*failures)[0].entry, "lb_broken");
    EXPECT_EQ((*failures)[1].stage, "spill");
    EXPECT_NE((*failures)[1].compilerVersion.find("lowbit"), std::string::npos);
  }

  KernelSetReport fixed;
  fixed.problems = {"p4096"};
  CompiledKernel now = kernel("lb_spills", 0);
  now.schedule = spilled.schedule; // compiles without spilling this time
  fixed.kernels = {now};
  ASSERT_TRUE(writeDatabase(fixed, path, diagnostics).ok()) << diagnostics.str();
  Expected<db::Database> database = db::Database::open(path);
  ASSERT_TRUE(database.ok());
  auto failures = database->candidateFailures(problemId);
  ASSERT_TRUE(failures.ok());
  ASSERT_EQ(failures->size(), 1u);
  EXPECT_EQ(failures->front().entry, "lb_broken");
}

TEST(KernelSetOutput, KernelsOverAnArchsSharedMemoryAreSkippedThere) {
  CompiledKernel ring = kernel("lb_ring", 100000); // 102048 bytes in all
  std::ostringstream diagnostics;
  EXPECT_TRUE(launchableOn(ring, nvrtc::Arch::Sm90a, diagnostics));
  EXPECT_TRUE(launchableOn(ring, nvrtc::Arch::Sm80, diagnostics));
  EXPECT_EQ(diagnostics.str(), "");
  EXPECT_FALSE(launchableOn(ring, nvrtc::Arch::Sm86, diagnostics));
  EXPECT_EQ(diagnostics.str(), "skipped lb_ring for sm_86: needs 102048 bytes of shared memory "
                               "per block; sm_86 allows at most 101376\n");
  // Static shared memory counts too, though dynamic is what pushes past it.
  CompiledKernel fits = kernel("lb_fits", 101376 - 2048);
  EXPECT_TRUE(launchableOn(fits, nvrtc::Arch::Sm89, diagnostics));
  fits.sharedBytes += 1;
  EXPECT_FALSE(launchableOn(fits, nvrtc::Arch::Sm89, diagnostics));
}

TEST(KernelSetOutput, TableShowsStaticAndDynamicSharedMemory) {
  std::ostringstream table;
  printKernelSetReport(twoKernels(), table);
  std::string text = table.str();
  EXPECT_NE(text.find("smem   dsmem"), std::string::npos) << text;
  std::string ringRow = text.substr(text.find("lb_ring"));
  ringRow = ringRow.substr(0, ringRow.find('\n'));
  EXPECT_NE(ringRow.find("    2048  100000"), std::string::npos) << ringRow;
  EXPECT_NE(text.find("2 kernels for 1 problems, 0 failures"), std::string::npos) << text;
}

// A persistent wgmma kernel's name passed the 58-character column and ran
// into its arch ("..._persistentsm_90a").
TEST(KernelSetOutput, TableKeepsLongNamesApartFromTheirArch) {
  KernelSetReport report = twoKernels();
  const std::string longName =
      "bf16_q2_k_uint2_uint8_codes_g16_sb256_1536x4096__wgmma_t32x256x64_w1x4_s8_k1_persistent";
  report.kernels[0].name = longName;
  std::ostringstream table;
  printKernelSetReport(report, table);
  std::string text = table.str();
  EXPECT_NE(text.find(longName + "  " + report.kernels[0].arch), std::string::npos) << text;
}

} // namespace
} // namespace lowbit::compiler

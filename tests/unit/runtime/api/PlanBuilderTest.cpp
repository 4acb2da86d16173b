// Plan building without a device: which kernel serves each M range, the
// tier, image selection (cubin, PTX fallback), layout agreement and the
// errors a bad database must produce.
#include "runtime/api/KernelDatabases.h"
#include "runtime/api/PlanBuilder.h"
#include "runtime/kernels/KernelRecordCodec.h"
#include "tests/unit/runtime/api/RuntimeTestSupport.h"
#include "tuning_db/Sqlite.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace lowbit::api::testing {
namespace {

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

class PlanBuilderTest : public ::testing::Test {
protected:
  void SetUp() override { path = dir.file("kernels.db"); }

  Result<PlanSpec> build(const db::DeviceFingerprint &device,
                         const kernels::ProblemDesc &problem = w4a16Problem()) {
    auto database = db::Database::open(path, {db::OpenMode::ReadOnly});
    EXPECT_TRUE(database.ok()) << database.error();
    if (!database)
      return apiError(LOWBIT_STATUS_INTERNAL_ERROR, database.error());
    return buildPlanSpec({&*database}, problem, device);
  }

  std::string problemId() const {
    return db::problemIdForSignature(core::signature(w4a16Problem()));
  }

  TempDir dir;
  std::string path;
};

TEST_F(PlanBuilderTest, UntunedDeviceUsesTheHeuristicForEveryM) {
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"gemv90a", "sm_90a", "gemv"});
    addKernel(database, w4a16Problem(), {"gemv80", "sm_80", "gemv"});
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->tier, db::Tier::Heuristic);
  ASSERT_EQ(spec->ranges.size(), 1u); // one gemv for all bands: merged
  EXPECT_EQ(spec->ranges[0].mLo, 1);
  EXPECT_EQ(spec->ranges[0].mHi, -1);
  const PlannedKernel &kernel = spec->kernels[spec->ranges[0].kernel];
  EXPECT_EQ(kernel.arch, "sm_90a"); // the closest arch
  EXPECT_FALSE(kernel.fromPtx);
  std::vector<char> cubin = fakeCubin("gemv90a");
  EXPECT_EQ(kernel.image, std::vector<uint8_t>(cubin.begin(), cubin.end()));
  EXPECT_EQ(spec->ranges[0].databasePath, path);
  EXPECT_EQ(spec->layoutIdHex, kernel.layoutId);
  EXPECT_EQ(spec->weightBytes, 4096 * 4096 / 2);
  EXPECT_EQ(spec->scaleBytes, 4096 * 32 * 2);
  EXPECT_EQ(spec->zeroBytes, 0);
  EXPECT_EQ(spec->workspaceBytes, 0);
  EXPECT_EQ(spec->rangeIndex(1), 0);
  EXPECT_EQ(spec->rangeIndex(1 << 20), 0);
}

TEST_F(PlanBuilderTest, TunedTableGivesItsRangesAndTier) {
  std::string small, large;
  {
    db::Database database = openOrDie(path);
    small = addKernel(database, w4a16Problem(), {"small", "sm_90a", "gemv"});
    large = addKernel(database, w4a16Problem(), {"large", "sm_90a", "mma", kLayoutA, 16});
    ASSERT_TRUE(database.putDevice(h100()).ok());
    ASSERT_TRUE(database.setDispatch(problemId(), h100().id(),
                                     {{1, 9, small}, {9, std::nullopt, large}})
                    .ok());
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->tier, db::Tier::ExactDevice);
  ASSERT_EQ(spec->ranges.size(), 2u);
  EXPECT_EQ(spec->kernels[spec->ranges[0].kernel].id, small);
  EXPECT_EQ(spec->kernels[spec->ranges[1].kernel].id, large);
  EXPECT_EQ(spec->ranges[0].mHi, 9);
  EXPECT_EQ(spec->rangeIndex(8), 0);
  EXPECT_EQ(spec->rangeIndex(9), 1);
  EXPECT_EQ(spec->kernels[spec->ranges[1].kernel].geometry.rowsPerBlock, 16);

  // Another H100 configuration (a driver update): same cc and SMs.
  db::DeviceFingerprint updated = h100();
  updated.driverVersion = "590.1";
  Result<PlanSpec> near = build(updated);
  ASSERT_TRUE(near.ok()) << near.error().message;
  EXPECT_EQ(near->tier, db::Tier::SameCcAndSmCount);

  // A device the database never saw falls to the heuristic and says so.
  db::DeviceFingerprint other = h100();
  other.smCount = 114;
  other.ccMinor = 0;
  other.name = "NVIDIA H100 PCIe";
  Result<PlanSpec> sameCc = build(other);
  ASSERT_TRUE(sameCc.ok());
  EXPECT_EQ(sameCc->tier, db::Tier::SameCc);
}

// The launch's parameters come from the plan's copy of kernelArguments; an
// act-order gather moves 16-bit values, so it takes no quantized x.
TEST_F(PlanBuilderTest, KeepsTheKernelArgumentsAndRefusesActOrderForQuantizedX) {
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"w4a16", "sm_90a", "gemv"});
    addKernel(database, w4a8Problem(), {"w4a8", "sm_90a", "gemv"});
  }
  auto argumentsOf = [](const PlanSpec &spec) {
    const PlannedKernel &kernel = spec.kernels.front();
    return std::vector<core::KernelArgument>(kernel.arguments.begin(),
                                             kernel.arguments.begin() + kernel.argumentCount);
  };
  Result<PlanSpec> f16 = build(h100());
  ASSERT_TRUE(f16.ok()) << f16.error().message;
  EXPECT_EQ(argumentsOf(*f16), core::kernelArguments(w4a16Problem(), core::Schedule()));
  Result<PlanSpec> s8 = build(h100(), w4a8Problem());
  ASSERT_TRUE(s8.ok()) << s8.error().message;
  EXPECT_EQ(argumentsOf(*s8), core::kernelArguments(w4a8Problem(), core::Schedule()));
  EXPECT_EQ(s8->kernels.front().argumentCount, 6);

  const size_t kernels = s8->kernels.size();
  ApiStatus permuted = addColumnPermutation(*s8);
  EXPECT_EQ(permuted.status(), LOWBIT_STATUS_UNSUPPORTED);
  EXPECT_TRUE(contains(permuted.error().message, "act-order with s8 activations"))
      << permuted.error().message;
  EXPECT_FALSE(s8->permutedColumns);
  EXPECT_EQ(s8->kernels.size(), kernels);
  EXPECT_TRUE(addColumnPermutation(*f16).ok());
  EXPECT_TRUE(f16->permutedColumns);
}

TEST_F(PlanBuilderTest, UnknownProblemIsReportedWithItsSignature) {
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"gemv", "sm_90a", "gemv"});
  }
  Result<PlanSpec> spec = build(h100(), w4a16Problem(4096, 8192));
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().status, LOWBIT_STATUS_UNKNOWN_PROBLEM);
  EXPECT_TRUE(contains(spec.error().message, "k=8192")) << spec.error().message;
  EXPECT_TRUE(contains(spec.error().message, "lowbit compile")) << spec.error().message;
}

TEST_F(PlanBuilderTest, KernelsForAnotherArchGiveNoKernel) {
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"hopper", "sm_90a", "gemv"});
  }
  Result<PlanSpec> spec = build(a100());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().status, LOWBIT_STATUS_NO_KERNEL) << spec.error().message;
}

TEST_F(PlanBuilderTest, NewerDeviceJitsThePtx) {
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"ampere", "sm_80", "gemv"});
  }
  Result<PlanSpec> spec = build(future());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  const PlannedKernel &kernel = spec->kernels[0];
  EXPECT_TRUE(kernel.fromPtx);
  ASSERT_FALSE(kernel.image.empty());
  EXPECT_EQ(kernel.image.back(), 0) << "PTX must reach the driver NUL-terminated";
  EXPECT_EQ(spec->tier, db::Tier::Heuristic);
}

TEST_F(PlanBuilderTest, CorruptCubinFallsBackToPtxAndSaysSo) {
  {
    db::Database database = openOrDie(path);
    FakeKernel kernel{"broken", "sm_90a", "gemv"};
    kernel.corruptCubin = true;
    addKernel(database, w4a16Problem(), kernel);
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_TRUE(spec->kernels[0].fromPtx);
  EXPECT_TRUE(contains(spec->notesText, "not a CUDA ELF image")) << spec->notesText;
}

TEST_F(PlanBuilderTest, CorruptCubinWithoutPtxIsAnError) {
  {
    db::Database database = openOrDie(path);
    FakeKernel kernel{"broken", "sm_90a", "gemv"};
    kernel.corruptCubin = true;
    kernel.withPtx = false;
    addKernel(database, w4a16Problem(), kernel);
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().status, LOWBIT_STATUS_CORRUPT_KERNEL);
  EXPECT_TRUE(contains(spec.error().message, "not a CUDA ELF image")) << spec.error().message;
}

// Issue 19: four bytes flipped inside a stored cubin passed
// lowbit_plan_create, which reported the original kernel id although the
// id is the cubin's sha256.
TEST_F(PlanBuilderTest, AlteredCubinIsNeverLoadedUnderItsId) {
  for (bool withPtx : {true, false}) {
    std::remove(path.c_str());
    {
      db::Database database = openOrDie(path);
      FakeKernel kernel{"altered", "sm_90a", "gemv"};
      kernel.withPtx = withPtx;
      addKernel(database, w4a16Problem(), kernel);
    }
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    char *message = nullptr;
    int code = sqlite3_exec(
        raw, "UPDATE kernels SET cubin = substr(cubin, 1, 40) || X'DEADBEEF' || substr(cubin, 45)",
        nullptr, nullptr, &message);
    EXPECT_EQ(code, SQLITE_OK) << (message ? message : "");
    sqlite3_free(message);
    sqlite3_close(raw);
    Result<PlanSpec> spec = build(h100());
    if (withPtx) {
      ASSERT_TRUE(spec.ok()) << spec.error().message;
      EXPECT_TRUE(spec->kernels[0].fromPtx);
      EXPECT_TRUE(contains(spec->notesText, "not to its id (altered after it was stored)"))
          << spec->notesText;
    } else {
      ASSERT_FALSE(spec.ok());
      EXPECT_EQ(spec.error().status, LOWBIT_STATUS_CORRUPT_KERNEL);
      EXPECT_TRUE(contains(spec.error().message, "not to its id")) << spec.error().message;
    }
  }
}

TEST_F(PlanBuilderTest, CubinCheckWantsACudaElfImage) {
  std::vector<char> good = fakeCubin("x");
  EXPECT_TRUE(looksLikeCubin(std::vector<uint8_t>(good.begin(), good.end())));
  EXPECT_FALSE(looksLikeCubin({}));
  std::vector<uint8_t> truncated(good.begin(), good.begin() + 20);
  EXPECT_FALSE(looksLikeCubin(truncated));
  std::vector<uint8_t> x86(good.begin(), good.end());
  x86[18] = 62; // EM_X86_64
  EXPECT_FALSE(looksLikeCubin(x86));
  std::vector<uint8_t> text{'h', 'e', 'l', 'l', 'o'};
  text.resize(80, ' ');
  EXPECT_FALSE(looksLikeCubin(text));
}

TEST_F(PlanBuilderTest, MixedLayoutsAreReconciledWhenASubstituteExists) {
  std::string small, largeB, largeA;
  {
    db::Database database = openOrDie(path);
    small = addKernel(database, w4a16Problem(), {"small", "sm_90a", "gemv", kLayoutA});
    largeB = addKernel(database, w4a16Problem(), {"largeB", "sm_90a", "mma", kLayoutB, 16});
    largeA = addKernel(database, w4a16Problem(), {"largeA", "sm_90a", "mma", kLayoutA, 16});
    ASSERT_TRUE(database.putDevice(h100()).ok());
    ASSERT_TRUE(database.setDispatch(problemId(), h100().id(),
                                     {{1, 9, small}, {9, std::nullopt, largeB}})
                    .ok());
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->ranges.size(), 2u);
  EXPECT_EQ(spec->kernels[spec->ranges[1].kernel].id, largeA); // same family, layout A
  for (const PlannedKernel &k : spec->kernels)
    EXPECT_EQ(k.layoutId, spec->layoutIdHex);
  EXPECT_TRUE(contains(spec->notesText, "replaced by")) << spec->notesText;
}

TEST_F(PlanBuilderTest, MixedLayoutsPreferALayoutWithSameFamilySubstitutes) {
  std::string smallA, smallB, largeB;
  {
    db::Database database = openOrDie(path);
    smallA = addKernel(database, w4a16Problem(), {"smallA", "sm_90a", "gemv", kLayoutA});
    smallB = addKernel(database, w4a16Problem(), {"smallB", "sm_90a", "gemv", kLayoutB});
    largeB = addKernel(database, w4a16Problem(), {"largeB", "sm_90a", "mma", kLayoutB, 16});
    ASSERT_TRUE(database.putDevice(h100()).ok());
    ASSERT_TRUE(database.setDispatch(problemId(), h100().id(),
                                     {{1, 9, smallA}, {9, std::nullopt, largeB}})
                    .ok());
  }
  // Layout A has no mma kernel, layout B has a gemv: B keeps both families.
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->ranges.size(), 2u);
  EXPECT_EQ(spec->kernels[spec->ranges[0].kernel].id, smallB);
  EXPECT_EQ(spec->kernels[spec->ranges[1].kernel].id, largeB);
  EXPECT_EQ(spec->kernels[spec->ranges[0].kernel].layoutId, spec->layoutIdHex);
}

TEST_F(PlanBuilderTest, MixedLayoutsFallBackToTheLargeMKernelsLayout) {
  std::string small, large;
  {
    db::Database database = openOrDie(path);
    small = addKernel(database, w4a16Problem(), {"small", "sm_90a", "gemv", kLayoutA});
    large = addKernel(database, w4a16Problem(), {"large", "sm_90a", "mma", kLayoutB, 16});
    ASSERT_TRUE(database.putDevice(h100()).ok());
    ASSERT_TRUE(database.setDispatch(problemId(), h100().id(),
                                     {{1, 9, small}, {9, std::nullopt, large}})
                    .ok());
  }
  // No same-family substitute in either layout: the mma kernel (the large
  // M's layout) serves every M; a gemv serving large M would be far slower.
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->ranges.size(), 1u) << "one kernel, merged into one range";
  EXPECT_EQ(spec->kernels[0].id, large);
  EXPECT_TRUE(contains(spec->notesText, "replaced by")) << spec->notesText;
  EXPECT_TRUE(contains(spec->notesText, "gemv")) << spec->notesText;
}

TEST_F(PlanBuilderTest, SubstitutesPreferAnMTileNearTheRange) {
  std::string gemv, mma16, mma128;
  {
    db::Database database = openOrDie(path);
    gemv = addKernel(database, w4a16Problem(), {"gemv", "sm_90a", "gemv", kLayoutA});
    mma16 = addKernel(database, w4a16Problem(), {"mma16", "sm_90a", "mma", kLayoutB, 16});
    mma128 = addKernel(database, w4a16Problem(), {"mma128", "sm_90a", "mma", kLayoutB, 128});
  }
  // The untuned heuristic picks gemv for M < 9 and one mma for the rest; the
  // M < 9 range then gets the mma whose tile is nearest small M.
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->tier, db::Tier::Heuristic);
  EXPECT_EQ(spec->kernels[spec->ranges[static_cast<size_t>(spec->rangeIndex(1))].kernel].id,
            mma16);
  for (const PlannedRange &range : spec->ranges)
    EXPECT_EQ(spec->kernels[range.kernel].layoutId, spec->layoutIdHex);
}

TEST_F(PlanBuilderTest, RowsWithBadLaunchDataAreCorrupt) {
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"gemv", "sm_90a", "gemv"});
    auto update = db::sql::Statement::prepare(
        database.handle(), "UPDATE kernels SET schedule_json = '{\"encoding\": 7}'");
    ASSERT_TRUE(update.ok());
    ASSERT_TRUE(update->run().ok());
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().status, LOWBIT_STATUS_CORRUPT_KERNEL) << spec.error().message;
  EXPECT_TRUE(contains(spec.error().message, "encoding")) << spec.error().message;
}

TEST_F(PlanBuilderTest, ShapesTheLayoutCannotTileAreRejected) {
  kernels::ProblemDesc odd = w4a16Problem(4096, 4096 + 16); // K not a multiple of 32
  odd.scheme.groupSize = 16;
  {
    db::Database database = openOrDie(path);
    addKernel(database, odd, {"gemv", "sm_90a", "gemv"});
  }
  Result<PlanSpec> spec = build(h100(), odd);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().status, LOWBIT_STATUS_INVALID_SHAPE) << spec.error().message;
}

TEST_F(PlanBuilderTest, LaunchGeometryMatchesLaunchShape) {
  kernels::KernelEntry entry;
  entry.problem = w4a16Problem();
  entry.name = "k";
  entry.blockThreads = 128;
  entry.gridTile = {4, 8, 2};
  entry.schedule = "#lb.schedule<family = mma, tile = [8, 4, 256], warps = [1, 1], stages = 1, "
                   "split_k = 8, cluster_k = 2>";
  entry.dynamicSharedBytes = 150 * 1024; // a split-K ring, past the 48 KiB default
  Result<LaunchGeometry> geometry = launchGeometry(entry, /*smCount=*/132);
  ASSERT_TRUE(geometry.ok()) << geometry.error().message;
  EXPECT_EQ(geometry->dynamicSharedBytes, 150u * 1024);
  for (int64_t m : {1, 7, 8, 9, 64, 300, 65535 * 8}) {
    Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m, 132);
    ASSERT_TRUE(shape.ok()) << m;
    EXPECT_EQ(geometry->gridXFor(m), shape->grid[0]);
    EXPECT_EQ(geometry->gridY(m), shape->grid[1]) << m;
    EXPECT_EQ(geometry->gridZ, shape->grid[2]);
    EXPECT_EQ(geometry->blockThreads, shape->block);
    EXPECT_EQ(geometry->dynamicSharedBytes, shape->dynamicSharedBytes);
    EXPECT_LE(m, geometry->maxM);
  }
  EXPECT_FALSE(kernels::launchShape(entry, geometry->maxM + 1, 132).ok());
  for (int64_t implausible : {int64_t{-1}, kernels::kMaxPlausibleDynamicSharedBytes + 1}) {
    kernels::KernelEntry corrupt = entry;
    corrupt.dynamicSharedBytes = implausible;
    Result<LaunchGeometry> bad = launchGeometry(corrupt, 132);
    ASSERT_FALSE(bad.ok()) << implausible;
    EXPECT_EQ(bad.error().status, LOWBIT_STATUS_CORRUPT_KERNEL);
    EXPECT_NE(bad.error().message.find("not plausible"), std::string::npos)
        << bad.error().message;
  }
  entry.gridTile = {3, 1, 1}; // 4096 % 3 != 0
  EXPECT_FALSE(launchGeometry(entry, 132).ok());
  kernels::KernelEntry unreadable = entry;
  unreadable.gridTile = {4, 8, 1};
  unreadable.schedule = "#lb.schedule<family = mma>";
  EXPECT_EQ(launchGeometry(unreadable, 132).error().status, LOWBIT_STATUS_CORRUPT_KERNEL);
}

// scheduler = persistent: min(SMs, tiles) blocks along x walk the tiles,
// whatever M; without a device (0 SMs) a block a tile.
TEST_F(PlanBuilderTest, PersistentKernelsLaunchABlockAnSmUpToTheTiles) {
  kernels::KernelEntry entry;
  entry.problem = w4a16Problem(); // N = 4096: 16 column tiles of 256
  entry.name = "k";
  entry.blockThreads = 384;
  entry.gridTile = {256, 128, 1};
  entry.schedule = "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, 8], "
                   "stages = 8, split_k = 1, scheduler = persistent>";
  Result<LaunchGeometry> geometry = launchGeometry(entry, /*smCount=*/132);
  ASSERT_TRUE(geometry.ok()) << geometry.error().message;
  EXPECT_TRUE(geometry->persistent);
  const std::pair<int64_t, unsigned> blocks[] = {
      {1, 16}, {128, 16}, {129, 32}, {1024, 128}, {1025, 132}, {4096, 132}, {65535 * 128, 132}};
  for (auto [m, expected] : blocks) {
    Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m, 132);
    ASSERT_TRUE(shape.ok()) << shape.error();
    EXPECT_EQ(shape->grid[0], expected) << m;
    EXPECT_EQ(shape->grid[1], 1u) << m;
    EXPECT_EQ(shape->grid[2], 1u) << m;
    EXPECT_EQ(geometry->gridXFor(m), expected) << m;
    EXPECT_EQ(geometry->gridY(m), 1u) << m;
  }
  EXPECT_EQ(kernels::launchShape(entry, 4096, 0)->grid[0], 32u * 16) << "a block a tile";
  // The kernel reads its tile index in 32 bits.
  Expected<kernels::LaunchShape> tooMany = kernels::launchShape(entry, int64_t{1} << 36, 132);
  ASSERT_FALSE(tooMany.ok());
  EXPECT_NE(tooMany.error().find("at most 2^31 - 1"), std::string::npos) << tooMany.error();
  entry.gridTile = {256, 128, 2};
  Expected<kernels::LaunchShape> clustered = kernels::launchShape(entry, 1, 132);
  ASSERT_FALSE(clustered.ok());
  EXPECT_NE(clustered.error().find("walks tiles but splits K"), std::string::npos)
      << clustered.error();
}

// scheduler = stream_k: min(SMs, tiles x K tiles) blocks, so fewer tiles
// than SMs still fill them; the workspace holds every block's tile of f32
// partials, then a flag a consumer warp. The plan's geometry says the same
// as the launch shape, and needs the device's SM count to size it.
TEST_F(PlanBuilderTest, StreamKKernelsFillTheSmsAndNameTheirWorkspace) {
  kernels::KernelEntry entry;
  entry.problem = w4a16Problem(); // 16 column tiles of 256; K = 4096: 64 K tiles
  entry.name = "k";
  entry.blockThreads = 384;
  entry.gridTile = {256, 128, 1};
  entry.schedule = "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, 8], "
                   "stages = 8, split_k = 1, scheduler = stream_k>";
  Result<LaunchGeometry> geometry = launchGeometry(entry, 132);
  ASSERT_TRUE(geometry.ok()) << geometry.error().message;
  EXPECT_TRUE(geometry->streamK() && geometry->persistent);
  for (auto [m, blocks] : {std::pair<int64_t, unsigned>{1, 132}, {4096, 132}}) {
    Expected<kernels::LaunchShape> shape = kernels::launchShape(entry, m, 132);
    ASSERT_TRUE(shape.ok()) << shape.error();
    EXPECT_EQ(shape->grid[0], blocks) << m;
    EXPECT_EQ(geometry->gridXFor(m), blocks) << m;
    EXPECT_EQ(geometry->flagOffset(m), shape->flagOffset) << m;
    EXPECT_EQ(geometry->flagBytes(m), shape->flagBytes) << m;
    EXPECT_EQ(geometry->workspaceBytes(m), shape->workspaceBytes) << m;
    EXPECT_TRUE(shape->schedule.streamK());
    EXPECT_EQ(shape->flagOffset, int64_t{blocks} * 128 * 256 * 4) << m;
    EXPECT_EQ(shape->flagBytes, int64_t{blocks} * 8 * 4) << m;
    EXPECT_EQ(shape->workspaceBytes, shape->flagOffset + shape->flagBytes) << m;
  }
  // One column tile of 64 K tiles: up to 64 blocks, a K tile each.
  entry.problem = w4a16Problem(256, 4096);
  EXPECT_EQ(kernels::launchShape(entry, 1, 132)->grid[0], 64u);
  EXPECT_EQ(launchGeometry(entry, 132)->gridXFor(1), 64u);
  EXPECT_EQ(kernels::launchShape(entry, 1, 0)->grid[0], 1u) << "no device: a block a tile";
  Result<LaunchGeometry> unsized = launchGeometry(entry, 0);
  ASSERT_FALSE(unsized.ok());
  EXPECT_EQ(unsized.error().status, LOWBIT_STATUS_UNSUPPORTED);
  EXPECT_NE(unsized.error().message.find("sized by the device's SM count"), std::string::npos)
      << unsized.error().message;
  entry.schedule = "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, 8], "
                   "stages = 8, split_k = 1, scheduler = persistent>";
  EXPECT_EQ(kernels::launchShape(entry, 1, 132)->workspaceBytes, 0);
}

// A row's launch.dynamicSharedBytes survives plan building (kernelEntry and
// launchGeometry), so LoadedPlan opts in and Matmul passes it.
TEST_F(PlanBuilderTest, PlannedKernelKeepsTheRowsDynamicSharedMemory) {
  {
    db::Database database = openOrDie(path);
    FakeKernel ring{"ring", "sm_90a", "mma", kLayoutA, 16};
    ring.dynamicSharedBytes = 100000;
    addKernel(database, w4a16Problem(), ring);
  }
  Result<PlanSpec> spec = build(h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  ASSERT_EQ(spec->kernels.size(), 1u);
  EXPECT_EQ(spec->kernels[0].entry.dynamicSharedBytes, 100000);
  EXPECT_EQ(spec->kernels[0].geometry.dynamicSharedBytes, 100000u);
}

// -- opening databases --

TEST(KernelDatabasesTest, NewerSchemaIsRefused) {
  TempDir dir;
  std::string path = dir.file("new.db");
  {
    db::Database database = openOrDie(path);
    addKernel(database, w4a16Problem(), {"gemv"});
    ASSERT_TRUE(db::sql::exec(database.handle(), "PRAGMA user_version = 99").ok());
  }
  Result<KernelDatabases> opened = openKernelDatabases(path.c_str(), nullptr);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.error().status, LOWBIT_STATUS_DATABASE_TOO_NEW);
  EXPECT_TRUE(contains(opened.error().message, "v99")) << opened.error().message;
  Result<KernelDatabases> asUser = openKernelDatabases(nullptr, path.c_str());
  ASSERT_FALSE(asUser.ok());
  EXPECT_EQ(asUser.error().status, LOWBIT_STATUS_DATABASE_TOO_NEW);
}

TEST(KernelDatabasesTest, MissingAndCorruptFiles) {
  TempDir dir;
  std::string system = dir.file("system.db");
  {
    db::Database database = openOrDie(system);
    addKernel(database, w4a16Problem(), {"gemv"});
  }
  // A user database not created yet is skipped with a note.
  Result<KernelDatabases> opened =
      openKernelDatabases(system.c_str(), dir.file("user.db").c_str());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  EXPECT_EQ(opened->owned.size(), 1u);
  ASSERT_EQ(opened->notes.size(), 1u);
  EXPECT_TRUE(contains(opened->notes[0], "does not exist yet"));

  Result<KernelDatabases> missing = openKernelDatabases(dir.file("nope.db").c_str(), nullptr);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().status, LOWBIT_STATUS_DATABASE_ERROR);

  std::string garbage = dir.file("garbage.db");
  std::ofstream(garbage) << "this is not a database, just some text that is long enough";
  Result<KernelDatabases> corrupt = openKernelDatabases(garbage.c_str(), nullptr);
  ASSERT_FALSE(corrupt.ok());
  EXPECT_EQ(corrupt.error().status, LOWBIT_STATUS_DATABASE_ERROR);
  std::ifstream stillThere(garbage);
  EXPECT_TRUE(stillThere.good()) << "the runtime must never move or delete a file";

  Result<KernelDatabases> none = openKernelDatabases(nullptr, "");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().status, LOWBIT_STATUS_INVALID_ARGUMENT);
}

TEST(KernelDatabasesTest, UserDatabaseTakesPrecedence) {
  TempDir dir;
  std::string system = dir.file("system.db"), user = dir.file("user.db");
  {
    db::Database database = openOrDie(system);
    addKernel(database, w4a16Problem(), {"system", "sm_90a", "gemv"});
  }
  std::string tuned;
  {
    db::Database database = openOrDie(user);
    tuned = addKernel(database, w4a16Problem(), {"user", "sm_90a", "mma", kLayoutA, 16});
    ASSERT_TRUE(database.putDevice(h100()).ok());
    ASSERT_TRUE(database
                    .setDispatch(db::problemIdForSignature(
                                     core::signature(w4a16Problem())),
                                 h100().id(), {{1, std::nullopt, tuned}})
                    .ok());
  }
  Result<KernelDatabases> opened = openKernelDatabases(system.c_str(), user.c_str());
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Result<PlanSpec> spec = buildPlanSpec(opened->view(), w4a16Problem(), h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->tier, db::Tier::ExactDevice);
  EXPECT_EQ(spec->kernels[0].id, tuned);
  EXPECT_EQ(spec->ranges[0].databasePath, user);
}

} // namespace
} // namespace lowbit::api::testing

namespace lowbit::api::testing {
namespace {

// The kernel set the GPU tests use, as `lowbit compile` wrote it (when the
// compiler was built): plans for an H100-class device must come out whole,
// with one weight layout, before any GPU is involved.
TEST(CompiledTestDatabase, PlansForAnUntunedHopper) {
  std::string path;
  if (const char *env = std::getenv("LOWBIT_RUNTIME_TEST_DB")) {
    path = env;
  } else {
    char exe[4096];
    ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    std::string self = length > 0 ? std::string(exe, static_cast<size_t>(length)) : ".";
    path = self.substr(0, self.find_last_of('/')) + "/../kernels/runtime-tests.db";
  }
  if (!std::ifstream(path).good())
    GTEST_SKIP() << "no compiled test database at " << path << " (LOWBIT_BUILD_COMPILER=OFF?)";
  Result<KernelDatabases> opened = openKernelDatabases(path.c_str(), nullptr);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  Result<PlanSpec> spec = buildPlanSpec(opened->view(), w4a16Problem(), h100());
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->tier, db::Tier::Heuristic);
  for (const PlannedRange &range : spec->ranges) {
    const PlannedKernel &kernel = spec->kernels[range.kernel];
    std::printf("  M %lld..%lld: %s (%s, %s, M tile %lld)\n", static_cast<long long>(range.mLo),
                static_cast<long long>(range.mHi), kernel.name.c_str(), kernel.family.c_str(),
                kernel.arch.c_str(), static_cast<long long>(kernel.geometry.rowsPerBlock));
    EXPECT_EQ(kernel.layoutId, spec->layoutIdHex);
    EXPECT_EQ(kernel.arch, "sm_90a");
    EXPECT_FALSE(kernel.fromPtx);
    EXPECT_TRUE(looksLikeCubin(kernel.image));
  }
  if (!spec->notesText.empty())
    std::printf("  notes:\n%s\n", spec->notesText.c_str());
}

} // namespace
} // namespace lowbit::api::testing

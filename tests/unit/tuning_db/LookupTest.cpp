#include "TestSupport.h"

#include "core/Problem.h"
#include "tuning_db/Catalog.h"
#include "tuning_db/Commands.h"
#include "tuning_db/Lookup.h"

#include <gtest/gtest.h>

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;

// One problem with kernels for several archs and families; an H100 tuned.
class LookupTest : public ::testing::Test {
protected:
  void SetUp() override {
    path = dir.file("kernels.db");
    db = std::make_unique<Database>(openOrDie(path));
    auto id = db->putProblem("int4 g128 f16 N=4096 K=4096");
    ASSERT_TRUE(id.ok());
    problem = *id;
    gemv80 = put(makeKernel(problem, "g80", "sm_80", "gemv"));
    mma80 = put(makeKernel(problem, "m80", "sm_80", "mma"));
    mma86 = put(makeKernel(problem, "m86", "sm_86", "mma"));
    mma90a = put(makeKernel(problem, "m90a", "sm_90a", "mma"));
    wgmma90a = put(makeKernel(problem, "w90a", "sm_90a", "wgmma"));
    ASSERT_TRUE(db->putDevice(h100()).ok());
    ASSERT_TRUE(db->setDispatch(problem, h100().id(),
                                {{1, 9, gemv80}, {9, 128, mma90a}, {128, std::nullopt, wgmma90a}})
                    .ok());
  }

  std::string put(const KernelRecord &k) {
    auto id = db->putKernel(k);
    EXPECT_TRUE(id.ok()) << id.error();
    return id ? *id : std::string();
  }

  // A stream-K wgmma kernel of the problem, which takes the caller's
  // workspace.
  std::string putStreamKKernel() {
    return put(makeSm90aKernel(
        problem, "sk", "wgmma",
        "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, 8], stages = 8, "
        "split_k = 1, scheduler = stream_k>",
        "persistent", 384, 168, 0, 200000));
  }

  // A W4 problem of the typed model, whose signature gives the heuristic N
  // and K.
  std::string putShape(int64_t n, int64_t k) {
    core::Problem shape;
    shape.name = "w4";
    shape.n = n;
    shape.k = k;
    shape.code = formats::DataFormat::unsignedInt(4);
    auto added = db->putProblem(core::signature(shape));
    EXPECT_TRUE(added.ok()) << added.error();
    return added ? *added : std::string();
  }

  Expected<Choice> lookupIn(const DeviceFingerprint &device, int64_t m) {
    return lookup({db.get()}, problem, device, m);
  }

  TempDir dir;
  std::string path;
  std::unique_ptr<Database> db;
  std::string problem, gemv80, mma80, mma86, mma90a, wgmma90a;
};

TEST_F(LookupTest, ExactFingerprintUsesItsTable) {
  auto small = lookupIn(h100(), 4);
  ASSERT_TRUE(small.ok()) << small.error();
  EXPECT_EQ(small->kernelId, gemv80);
  EXPECT_EQ(small->tier, Tier::ExactDevice);
  EXPECT_EQ(small->mLo, 1);
  EXPECT_EQ(small->mHi, 9);
  EXPECT_EQ(small->deviceId, h100().id());
  EXPECT_EQ(small->databasePath, path);
  auto middle = lookupIn(h100(), 127);
  ASSERT_TRUE(middle.ok());
  EXPECT_EQ(middle->kernelId, mma90a);
  auto large = lookupIn(h100(), 1 << 20);
  ASSERT_TRUE(large.ok());
  EXPECT_EQ(large->kernelId, wgmma90a);
  EXPECT_FALSE(large->mHi.has_value());
}

TEST_F(LookupTest, SameCcAndSmCountAfterADriverUpdate) {
  DeviceFingerprint updated = h100();
  updated.driverVersion = "590.10";
  auto choice = lookupIn(updated, 16);
  ASSERT_TRUE(choice.ok()) << choice.error();
  EXPECT_EQ(choice->tier, Tier::SameCcAndSmCount);
  EXPECT_EQ(choice->kernelId, mma90a);
  EXPECT_EQ(choice->deviceId, h100().id());
}

TEST_F(LookupTest, SameCcForAnotherSmCount) {
  DeviceFingerprint pcie = h100();
  pcie.name = "NVIDIA H100 PCIe";
  pcie.smCount = 114;
  auto choice = lookupIn(pcie, 200);
  ASSERT_TRUE(choice.ok()) << choice.error();
  EXPECT_EQ(choice->tier, Tier::SameCc);
  EXPECT_EQ(choice->kernelId, wgmma90a);
}

TEST_F(LookupTest, SimilarDeviceIsPreferredWithinATier) {
  DeviceFingerprint other = h100();
  other.name = "NVIDIA H100 NVL";
  other.smCount = 132;
  other.l2Bytes = 1;
  other.memoryClockKhz = 1;
  ASSERT_TRUE(db->putDevice(other).ok());
  ASSERT_TRUE(db->setDispatch(problem, other.id(), {{1, std::nullopt, mma90a}}).ok());
  DeviceFingerprint updated = h100(); // closer to the tuned h100 than to `other`
  updated.driverVersion = "590.10";
  auto choice = lookupIn(updated, 2);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->deviceId, h100().id());
  EXPECT_EQ(choice->kernelId, gemv80);
}

TEST_F(LookupTest, HeuristicPicksFamilyByMAndClosestArch) {
  // A100 (8.0): nothing tuned for 8.x; sm_86 and sm_90a kernels cannot run.
  auto resolution = resolve({db.get()}, problem, a100());
  ASSERT_TRUE(resolution.ok()) << resolution.error();
  EXPECT_EQ(resolution->tier, Tier::Heuristic);
  // The mma family is preferred at every M, so the three bands merge.
  ASSERT_EQ(resolution->ranges.size(), 1u);
  EXPECT_EQ(resolution->ranges[0].kernelId, mma80);
  EXPECT_EQ(resolution->ranges[0].mLo, 1);
  EXPECT_FALSE(resolution->ranges[0].mHi.has_value());

  // RTX 4090 (8.9): the sm_86 mma is the closest arch <= 8.9.
  auto ada = lookupIn(rtx4090(), 64);
  ASSERT_TRUE(ada.ok()) << ada.error();
  EXPECT_EQ(ada->tier, Tier::Heuristic);
  EXPECT_EQ(ada->kernelId, mma86);
  EXPECT_EQ(ada->mLo, 1);
}

// Within a family, and when the fill cannot tell kernels apart (here N is
// unknown: the signature is not the typed model's), the heuristic prefers
// the block tile M that suits each band, whatever their ids: 8 rows up to
// M = 8, 16 up to 96, 32 up to 256, the largest from 257.
TEST_F(LookupTest, HeuristicPrefersTheTileMThatSuitsEachBand) {
  auto added = db->putProblem("int4 g128 f16 N=8192 K=8192");
  ASSERT_TRUE(added.ok());
  std::string problem2 = *added;
  auto withTile = [&](const std::string &tag, int tileM) {
    KernelRecord k = makeKernel(problem2, tag, "sm_90a", "mma");
    k.launch.gridRule = "n_tile=64;m_tile=" + std::to_string(tileM) + ";split_k=1";
    return put(k);
  };
  std::vector<std::string> ids = {withTile("t8", 8), withTile("t16", 16), withTile("t128", 128),
                                  withTile("t32", 32)};
  auto resolution = resolve({db.get()}, problem2, h100());
  ASSERT_TRUE(resolution.ok()) << resolution.error();
  ASSERT_EQ(resolution->ranges.size(), 4u);
  EXPECT_EQ(resolution->ranges[0].kernelId, ids[0]); // M 1..8: no gemv, the 8-row mma
  EXPECT_EQ(resolution->ranges[0].mHi, 9);
  EXPECT_EQ(resolution->ranges[1].kernelId, ids[1]); // both 16-row bands, merged
  EXPECT_EQ(resolution->ranges[1].mHi, 97);
  EXPECT_EQ(resolution->ranges[2].kernelId, ids[3]);
  EXPECT_EQ(resolution->ranges[2].mHi, 257);
  EXPECT_EQ(resolution->ranges[3].kernelId, ids[2]);
}

// At N = 3584, M = 16, a 16-row tile of 2 warps with 8 blocks along K puts
// 2 blocks (4 warps) on an SM and waits on its loads; an 8-row tile of 8
// warps with 2 blocks has 2 row blocks and 16 warps an SM. The estimate
// takes the second although its tile fits the band less well: what the
// H200's tuned table chose (1.65x faster there).
TEST_F(LookupTest, HeuristicFillsTheDeviceBeforeFittingTheTile) {
  std::string shape = putShape(3584, 18944);
  auto kernel = [&](const std::string &tag, const std::string &rule, int threads) {
    KernelRecord k = makeKernel(shape, tag, "sm_90a", "mma");
    k.launch.gridRule = rule;
    k.launch.blockX = threads;
    return put(k);
  };
  std::string thin = kernel("t16c8", "n_tile=128;m_tile=16;split_k=8", 64);
  std::string full = kernel("t8c2", "n_tile=64;m_tile=8;split_k=2", 256);
  Expected<Choice> at16 = lookup({db.get()}, shape, h100(), 16);
  ASSERT_TRUE(at16.ok()) << at16.error();
  EXPECT_EQ(at16->kernelId, full);
  EXPECT_NE(at16->kernelId, thin);
}

// Among kernels of one tile M, the estimate takes the one whose grid fills
// the SMs, with the fewest blocks along K that do. A block of 4 warps and
// 48 KiB of shared memory lets an SM hold 4 (16 warps): at N = 3584 the 56
// column tiles need 8 blocks a tile to give 132 SMs that many; at N = 28672
// the 448 tiles fill them unsplit, and a split only adds waves and
// reduction.
TEST_F(LookupTest, HeuristicSplitsKAcrossBlocksOnlyWhereNLeavesSmsIdle) {
  for (int64_t n : {int64_t{3584}, int64_t{28672}}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    std::string shape = putShape(n, 8192);
    auto withBlocksAlongK = [&](int blocks) {
      KernelRecord k = makeKernel(shape, "z" + std::to_string(blocks) + "n" + std::to_string(n),
                                  "sm_90a", "mma");
      k.launch.gridRule = "n_tile=64;m_tile=8;split_k=" + std::to_string(blocks);
      return put(k);
    };
    std::vector<std::string> ids = {withBlocksAlongK(1), withBlocksAlongK(2),
                                    withBlocksAlongK(4), withBlocksAlongK(8)};
    auto resolution = resolve({db.get()}, shape, h100());
    ASSERT_TRUE(resolution.ok()) << resolution.error();
    ASSERT_FALSE(resolution->ranges.empty());
    EXPECT_EQ(resolution->ranges[0].kernelId, n == 3584 ? ids[3] : ids[0]);
  }
}

// At M = 64 a 16-row tile decodes the weights in 4 row blocks, a 32-row
// tile in 2: where both grids keep the SMs busy the taller tile does less
// work, although 16 rows is the band's tile. Where N leaves SMs idle
// either way, one block's work decides, and the 16-row tile's is smaller.
TEST_F(LookupTest, HeuristicTakesTheTallerTileAtM64WhereItsGridFillsTheSms) {
  for (int64_t n : {int64_t{4096}, int64_t{512}}) {
    SCOPED_TRACE("N = " + std::to_string(n));
    std::string shape = putShape(n, 4096);
    auto withTile = [&](int tileM) {
      KernelRecord k = makeKernel(shape, "t" + std::to_string(tileM) + "n" + std::to_string(n),
                                  "sm_90a", "mma");
      k.launch.gridRule = "n_tile=64;m_tile=" + std::to_string(tileM) + ";split_k=2";
      return put(k);
    };
    std::string t16 = withTile(16), t32 = withTile(32);
    Expected<Choice> at64 = lookup({db.get()}, shape, h100(), 64);
    ASSERT_TRUE(at64.ok()) << at64.error();
    EXPECT_EQ(at64->kernelId, n == 4096 ? t32 : t16);
    Expected<Choice> at16 = lookup({db.get()}, shape, h100(), 16);
    ASSERT_TRUE(at16.ok()) << at16.error();
    EXPECT_EQ(at16->kernelId, t16); // one row block either way: the shorter tile
  }
}

// The heuristic never guesses a kernel that takes the caller's workspace:
// with a stream-K wgmma kernel the only wgmma of the set, large M goes to
// the mma kernel (only a tuned table dispatches stream-K).
TEST_F(LookupTest, HeuristicSkipsKernelsThatTakeAWorkspace) {
  const std::string streamK = putStreamKKernel();
  KernelFilter keep = [&](const KernelRecord &k) { return k.id == streamK || k.id == mma90a; };
  auto resolution = resolveUntuned({db.get()}, problem, h100(), keep);
  ASSERT_TRUE(resolution.ok()) << resolution.error();
  for (const Choice &choice : resolution->ranges)
    EXPECT_EQ(choice.kernelId, mma90a) << "M from " << choice.mLo;
}

// From M = 257 each band weighs the wgmma tiles at its own M. At N = K =
// 4096 (16 column tiles of 256, one block of 384 threads an SM): at M = 384
// 96-row blocks (4 row blocks, 64 blocks) are cheaper than 128-row ones in
// the same single wave; at M = 1024 the 128-row tile's 128 blocks still fit
// one wave where the 96-row tile's 176 take two, and from there on the
// 128-row tile keeps needing fewer waves.
TEST_F(LookupTest, HeuristicWeighsLargeMTilesAtEachBandsM) {
  std::string shape = putShape(4096, 4096);
  auto wgmma = [&](int tileM, int dynamicShared) {
    KernelRecord k = makeKernel(shape, "w" + std::to_string(tileM), "sm_90a", "wgmma");
    k.launch.gridRule = "n_tile=256;m_tile=" + std::to_string(tileM) + ";split_k=1";
    k.launch.blockX = 384;
    k.registers = 168;
    k.sharedBytes = 128;
    k.launch.dynamicSharedBytes = dynamicShared;
    return put(k);
  };
  std::string t96 = wgmma(96, 164864), t128 = wgmma(128, 197632);
  for (int64_t m : {int64_t{300}, int64_t{512}}) {
    Expected<Choice> choice = lookup({db.get()}, shape, h100(), m);
    ASSERT_TRUE(choice.ok()) << choice.error();
    EXPECT_EQ(choice->kernelId, t96) << "M = " << m;
  }
  for (int64_t m : {int64_t{1024}, int64_t{2048}, int64_t{4096}, int64_t{16384}}) {
    Expected<Choice> choice = lookup({db.get()}, shape, h100(), m);
    ASSERT_TRUE(choice.ok()) << choice.error();
    EXPECT_EQ(choice->kernelId, t128) << "M = " << m;
  }
}

// From M = 33 to 256 the split-K mma and wgmma are ranked together by the
// estimate. The launches are the default schedules' for 14336 x 4096 W4
// g128 on sm_90a: the split-K mma t32x64x128 k4 (128 threads, 32 KiB
// static shared) and wgmma t64x256 w1x8 s8 c2 (384 threads of which 256
// decode, and share layout tiles, 193 KiB of rings). On an H100 they ran
// 35.9 and 25.6 us at M = 64, 116.2 and 94.3 at M = 256 (the tuned table's
// picks there were the wgmma one and a 128-row wgmma tile); the mma still
// serves M = 16.
TEST_F(LookupTest, HeuristicWeighsWgmmaAgainstTheSplitKMmaFromM33) {
  std::string shape = putShape(14336, 4096);
  KernelRecord mma = makeSm90aKernel(
      shape, "t32k4", "mma",
      "#lb.schedule<family = mma, tile = [32, 64, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "n_tile=64;m_tile=32;split_k=1", 128, 186, 32768, 0);
  KernelRecord wgmma = makeSm90aKernel(
      shape, "t64c2", "wgmma",
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 8], stages = 8, "
      "split_k = 1, cluster_k = 2>",
      "n_tile=256;m_tile=64;split_k=2", 384, 168, 128, 197632);
  std::string mmaId = put(mma), wgmmaId = put(wgmma);
  for (int64_t m : {int64_t{64}, int64_t{256}}) {
    Expected<Choice> choice = lookup({db.get()}, shape, h100(), m);
    ASSERT_TRUE(choice.ok()) << choice.error();
    EXPECT_EQ(choice->kernelId, wgmmaId) << "M = " << m;
  }
  Expected<Choice> at16 = lookup({db.get()}, shape, h100(), 16);
  ASSERT_TRUE(at16.ok()) << at16.error();
  EXPECT_EQ(at16->kernelId, mmaId);
}

TEST_F(LookupTest, HeuristicSkipsKernelsThatFailedEveryCheck) {
  ASSERT_TRUE(db->putDevice(rtx4090()).ok());
  ASSERT_TRUE(db->addResult(makeResult(mma86, rtx4090().id(), 64, 3.0, /*passed=*/false)).ok());
  auto resolution = resolve({db.get()}, problem, rtx4090());
  ASSERT_TRUE(resolution.ok());
  auto choice = resolution->at(64);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->kernelId, mma80);
  bool noted = false;
  for (const std::string &note : resolution->notes)
    noted = noted || note.find("failed the reference check") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST_F(LookupTest, HeuristicUsesPtxForANewerMajorAndFailsWhenNothingRuns) {
  DeviceFingerprint blackwell = h100();
  blackwell.ccMajor = 10;
  blackwell.smCount = 148;
  auto choice = lookupIn(blackwell, 4);
  ASSERT_TRUE(choice.ok()) << choice.error();
  EXPECT_EQ(choice->tier, Tier::Heuristic);
  // PTX of the newest portable arch, sm_86; sm_90a code is not portable.
  EXPECT_EQ(choice->kernelId, mma86);

  DeviceFingerprint turing = a100();
  turing.ccMajor = 7;
  turing.ccMinor = 5;
  auto none = lookupIn(turing, 4);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("can run on device"), std::string::npos) << none.error();
}

TEST_F(LookupTest, RejectsNonPositiveMAndUnknownProblems) {
  for (int64_t m : {0, -1, -1000}) {
    auto choice = lookupIn(h100(), m);
    ASSERT_FALSE(choice.ok());
    EXPECT_NE(choice.error().find("M must be >= 1"), std::string::npos);
  }
  auto unknown = lookup({db.get()}, problemIdForSignature("nothing"), h100(), 4);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().find("unknown problem"), std::string::npos);
  auto resolution = resolve({db.get()}, problem, h100());
  ASSERT_TRUE(resolution.ok());
  EXPECT_FALSE(resolution->at(0).ok());
}

TEST_F(LookupTest, MalformedTableIsSkippedWithANote) {
  // Written around the validation, as a hand edit or a buggy tool would.
  auto drop = sql::Statement::prepare(
      db->handle(), "DELETE FROM dispatch WHERE device_id = ?1 AND m_lo = 9");
  ASSERT_TRUE(drop.ok());
  ASSERT_TRUE(drop->bind(1, h100().id()).run().ok());
  auto resolution = resolve({db.get()}, problem, h100());
  ASSERT_TRUE(resolution.ok()) << resolution.error();
  EXPECT_EQ(resolution->tier, Tier::Heuristic);
  ASSERT_FALSE(resolution->notes.empty());
  EXPECT_NE(resolution->notes[0].find("not covered"), std::string::npos) << resolution->notes[0];
  auto choice = resolution->at(1000);
  ASSERT_TRUE(choice.ok());
  EXPECT_EQ(choice->kernelId, wgmma90a); // heuristic: wgmma for large M on sm_90
}

// A tuned range whose kernel takes the caller's workspace (stream-K at M
// 64-255, the dense path from 256) names the kernel that measured best
// there without one: at every point of the range, or (a kernel measured at
// one point of two) with the missing point counted as twice the fastest.
TEST_F(LookupTest, WorkspaceRangesNameTheirBestMeasuredKernelWithoutOne) {
  const std::string streamK = putStreamKKernel();
  const std::string dense = put(makeKernel(problem, "dq", "sm_90a", "dequant"));
  const std::string id = h100().id();
  for (const ResultRecord &r :
       {makeResult(streamK, id, 64, 30), makeResult(streamK, id, 128, 50),
        makeResult(mma90a, id, 64, 40), makeResult(mma90a, id, 128, 70),
        makeResult(wgmma90a, id, 64, 45), makeResult(wgmma90a, id, 128, 60),
        makeResult(gemv80, id, 64, 20, /*passed=*/false), makeResult(dense, id, 1024, 200),
        makeResult(wgmma90a, id, 1024, 260), makeResult(mma90a, id, 4096, 900),
        makeResult(wgmma90a, id, 4096, 800)})
    ASSERT_TRUE(db->addResult(r).ok());
  ASSERT_TRUE(
      db->setDispatch(problem, id, {{1, 64, mma90a}, {64, 256, streamK}, {256, std::nullopt, dense}})
          .ok());
  auto resolution = resolve({db.get()}, problem, h100());
  ASSERT_TRUE(resolution.ok()) << resolution.error();
  ASSERT_EQ(resolution->ranges.size(), 3u);
  EXPECT_EQ(resolution->ranges[0].fallbackKernelId, "") << "mma takes no workspace";
  // Against the fastest at 64 (mma 40; gemv failed) and 128 (wgmma 60): mma
  // log(40/40) + log(70/60) = 0.154, wgmma log(45/40) + log(60/60) = 0.118.
  EXPECT_EQ(resolution->ranges[1].fallbackKernelId, wgmma90a);
  // 1024: only wgmma (mma counts log 2 there); 4096: wgmma 800, mma 900.
  EXPECT_EQ(resolution->ranges[2].fallbackKernelId, wgmma90a);
}

TEST_F(LookupTest, CatalogUserDatabaseTakesPrecedence) {
  std::string systemPath = dir.file("system.db");
  ASSERT_TRUE(exportDatabase(*db, systemPath).ok());

  std::string userPath = dir.file("user.db");
  {
    Database user = openOrDie(userPath);
    auto id = user.putProblem("int4 g128 f16 N=4096 K=4096");
    ASSERT_TRUE(id.ok());
    ASSERT_EQ(*id, problem);
    auto local = user.putKernel(makeKernel(problem, "user-tuned", "sm_90a", "mma"));
    ASSERT_TRUE(local.ok());
    ASSERT_TRUE(user.putDevice(h100()).ok());
    // Not open-ended: refused.
    EXPECT_FALSE(user.setDispatch(problem, h100().id(), {{1, 64, *local}}).ok());
    // A table names kernels of its own database, so the system's gemv kernel
    // is copied in first.
    auto gemv = db->findKernel(gemv80);
    ASSERT_TRUE(gemv.ok() && gemv->has_value());
    ASSERT_TRUE(user.putKernel(**gemv).ok());
    ASSERT_TRUE(
        user.setDispatch(problem, h100().id(), {{1, 64, *local}, {64, std::nullopt, gemv80}})
            .ok());
  }

  CatalogOptions options;
  options.systemPath = systemPath;
  options.userPath = userPath;
  auto catalog = Catalog::open(options);
  ASSERT_TRUE(catalog.ok()) << catalog.error();
  EXPECT_TRUE(catalog->notes().empty());
  ASSERT_EQ(catalog->databases().size(), 2u);
  EXPECT_EQ(catalog->databases()[0]->path(), userPath);
  EXPECT_TRUE(catalog->databases()[1]->readOnly());
  ASSERT_NE(catalog->userDatabase(), nullptr);

  auto choice = catalog->lookup(problem, h100(), 16);
  ASSERT_TRUE(choice.ok()) << choice.error();
  EXPECT_EQ(choice->databasePath, userPath);
  EXPECT_EQ(choice->mHi, 64);
  EXPECT_NE(choice->kernelId, mma90a);
  auto kernel = catalog->findKernel(choice->kernelId);
  ASSERT_TRUE(kernel.ok() && kernel->has_value());
  EXPECT_EQ((*kernel)->entry, "lowbit_mma_user-tuned");

  // A stronger tier beats precedence: the system's exact table wins over a
  // user table that only matches by compute capability.
  std::string otherUserPath = dir.file("user-pcie.db");
  DeviceFingerprint pcie = h100();
  pcie.smCount = 114;
  {
    Database user = openOrDie(otherUserPath);
    ASSERT_TRUE(user.putProblem("int4 g128 f16 N=4096 K=4096").ok());
    auto local = user.putKernel(makeKernel(problem, "pcie", "sm_90a", "mma"));
    ASSERT_TRUE(local.ok());
    ASSERT_TRUE(user.putDevice(pcie).ok());
    ASSERT_TRUE(user.setDispatch(problem, pcie.id(), {{1, std::nullopt, *local}}).ok());
  }
  auto mixed = Catalog::open(CatalogOptions{systemPath, otherUserPath, {}, 10000, false});
  ASSERT_TRUE(mixed.ok()) << mixed.error();
  auto fromSystem = mixed->lookup(problem, h100(), 16);
  ASSERT_TRUE(fromSystem.ok());
  EXPECT_EQ(fromSystem->databasePath, systemPath);
  EXPECT_EQ(fromSystem->kernelId, mma90a);
  EXPECT_EQ(fromSystem->tier, Tier::ExactDevice);
  auto onPcie = mixed->lookup(problem, pcie, 16);
  ASSERT_TRUE(onPcie.ok());
  EXPECT_EQ(onPcie->databasePath, otherUserPath);
  EXPECT_EQ(onPcie->tier, Tier::ExactDevice);

  auto systemOnly = Catalog::open(CatalogOptions{systemPath, "", {}, 10000, false});
  ASSERT_TRUE(systemOnly.ok());
  EXPECT_EQ(systemOnly->userDatabase(), nullptr);
}

TEST_F(LookupTest, CatalogLeavesOutAnUnopenableDatabaseWithANote) {
  CatalogOptions options;
  options.systemPath = dir.file("missing-system.db");
  options.userPath = dir.file("new-user.db");
  auto catalog = Catalog::open(options);
  ASSERT_TRUE(catalog.ok()) << catalog.error();
  ASSERT_EQ(catalog->databases().size(), 1u);
  ASSERT_EQ(catalog->notes().size(), 1u);
  EXPECT_NE(catalog->notes()[0].find("system database"), std::string::npos);

  options.requireAll = true;
  EXPECT_FALSE(Catalog::open(options).ok());
  auto nothing = Catalog::open(CatalogOptions{dir.file("a.db"), "", {}, 10000, false});
  ASSERT_FALSE(nothing.ok());
  EXPECT_NE(nothing.error().find("no such file"), std::string::npos);
  EXPECT_FALSE(Catalog::open(CatalogOptions{}).ok());
}

} // namespace
} // namespace lowbit::db

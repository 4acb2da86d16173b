#include "TestSupport.h"

#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"
#include "tuning_db/Lookup.h"
#include "tuning_db/Schema.h"
#include "tuning_db/Sha256.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;

int64_t rawInteger(const std::string &path, const char *sqlText) {
  sqlite3 *raw = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto value = sql::queryInteger(raw, sqlText);
  sqlite3_close(raw);
  EXPECT_TRUE(value.ok()) << value.error();
  return value ? *value : -1;
}

void rawExec(const std::string &path, const char *sqlText) {
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  Status s = sql::exec(raw, sqlText);
  sqlite3_close(raw);
  ASSERT_TRUE(s.ok()) << s.error();
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Hex(std::string()),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex(std::string("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256Hex(std::string("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_TRUE(isSha256Hex(sha256Hex(std::string("x"))));
  EXPECT_FALSE(isSha256Hex("ABC"));
}

TEST(Schema, NewDatabaseHasIdentityVersionAndTables) {
  TempDir dir;
  std::string path = dir.file("new.db");
  {
    Database db = openOrDie(path);
    EXPECT_FALSE(db.readOnly());
    EXPECT_TRUE(db.notes().empty());
    EXPECT_EQ(db.fileSchemaVersion(), kSchemaVersion);
  }
  EXPECT_EQ(rawInteger(path, "PRAGMA application_id"), kApplicationId);
  EXPECT_EQ(rawInteger(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(rawInteger(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name "
                             "IN ('meta','devices','problems','kernels','results','dispatch',"
                             "'candidate_failures')"),
            7);
  EXPECT_EQ(rawInteger(path, "SELECT count(*) FROM meta WHERE key = 'lowbit_version'"), 1);
  EXPECT_EQ(rawInteger(path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"), 1);
  // Reopening an up-to-date file changes nothing.
  Database again = openOrDie(path);
  EXPECT_TRUE(again.notes().empty());
}

TEST(Schema, MigratesAV1FileForwardKeepingRows) {
  TempDir dir;
  std::string path = dir.file("old.db");
  std::string problemId = problemIdForSignature("old-problem");
  std::string kernelId = sha256Hex(std::string("old cubin"));
  {
    sqlite3 *raw = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
    ASSERT_TRUE(migrate(raw, 1).ok());
    // The statements are finalized before the close (an open statement
    // makes sqlite3_close fail and leak the connection: LeakSanitizer).
    {
      auto insertProblem =
          sql::Statement::prepare(raw, "INSERT INTO problems(id, signature) VALUES (?1, ?2)");
      ASSERT_TRUE(insertProblem.ok());
      ASSERT_TRUE(insertProblem->bind(1, problemId).bind(2, "old-problem").run().ok());
      auto insertKernel = sql::Statement::prepare(
          raw, "INSERT INTO kernels(id, problem_id, arch, family, entry, schedule_json, "
               "weight_layout, source_hash, compiler_version, cubin, ptx, registers, "
               "shared_bytes, spill_bytes, created_at) VALUES (?1, ?2, 'sm_80', 'mma', 'k', '{}', "
               "'l', 's', 'v0.0', ?3, NULL, 64, 0, 0, 'then')");
      ASSERT_TRUE(insertKernel.ok());
      std::string cubin = "old cubin";
      ASSERT_TRUE(insertKernel->bind(1, kernelId)
                      .bind(2, problemId)
                      .bindBlob(3, std::vector<uint8_t>(cubin.begin(), cubin.end()))
                      .run()
                      .ok());
    }
    ASSERT_EQ(sqlite3_close(raw), SQLITE_OK);
  }
  EXPECT_EQ(rawInteger(path, "PRAGMA user_version"), 1);

  // Read-only: migrated in memory, the file untouched.
  {
    Database readOnly = openOrDie(path, OpenMode::ReadOnly);
    ASSERT_EQ(readOnly.notes().size(), 1u);
    EXPECT_NE(readOnly.notes()[0].find("migrated in memory"), std::string::npos);
    auto kernel = readOnly.findKernel(kernelId);
    ASSERT_TRUE(kernel.ok()) << kernel.error();
    ASSERT_TRUE(kernel->has_value());
    EXPECT_FALSE((*kernel)->launch.known());
  }
  EXPECT_EQ(rawInteger(path, "PRAGMA user_version"), 1);

  {
    Database db = openOrDie(path);
    EXPECT_EQ(db.fileSchemaVersion(), kSchemaVersion);
    auto kernel = db.findKernel(kernelId);
    ASSERT_TRUE(kernel.ok()) << kernel.error();
    ASSERT_TRUE(kernel->has_value());
    EXPECT_EQ((*kernel)->problemId, problemId);
    EXPECT_EQ((*kernel)->registers, 64);
    EXPECT_EQ((*kernel)->launch.blockX, 0); // v2 default: unknown launch config
    EXPECT_EQ((*kernel)->stackBytes, 0);
  }
  EXPECT_EQ(rawInteger(path, "PRAGMA user_version"), kSchemaVersion);
  EXPECT_EQ(rawInteger(path, "SELECT count(*) FROM kernels"), 1);
  const std::string currentVersion = "SELECT value = '" + std::to_string(kSchemaVersion) +
                                     "' FROM meta WHERE key = 'schema_version'";
  EXPECT_EQ(rawInteger(path, currentVersion.c_str()), 1);
  EXPECT_EQ(rawInteger(path, "SELECT count(*) FROM candidate_failures"), 0);
}

TEST(Schema, EmptyV0FileBecomesCurrentSchema) {
  TempDir dir;
  std::string path = dir.file("v0.db");
  rawExec(path, "PRAGMA user_version = 0"); // a valid, empty SQLite file
  Database db = openOrDie(path);
  EXPECT_EQ(db.fileSchemaVersion(), kSchemaVersion);
  EXPECT_TRUE(db.notes().empty());
}

TEST(Schema, NewerSchemaIsOpenedReadOnlyAndRefusesWrites) {
  TempDir dir;
  std::string path = dir.file("future.db");
  {
    Database db = openOrDie(path);
    ASSERT_TRUE(db.putProblem("p").ok());
  }
  rawExec(path, "PRAGMA user_version = 99");
  Database db = openOrDie(path);
  EXPECT_TRUE(db.readOnly());
  EXPECT_EQ(db.fileSchemaVersion(), 99);
  EXPECT_NE(db.readOnlyReason().find("newer"), std::string::npos) << db.readOnlyReason();
  auto problems = db.problems();
  ASSERT_TRUE(problems.ok()) << problems.error();
  EXPECT_EQ(problems->size(), 1u);
  auto id = db.putProblem("q");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().find("schema v99"), std::string::npos) << id.error();
  EXPECT_NE(id.error().find("read-only"), std::string::npos) << id.error();
  EXPECT_FALSE(db.putDevice(h100()).ok());
  EXPECT_EQ(rawInteger(path, "PRAGMA user_version"), 99);
  EXPECT_EQ(rawInteger(path, "SELECT count(*) FROM problems"), 1);
}

TEST(Database, ReadOnlyModeRefusesWritesAndMissingFiles) {
  TempDir dir;
  std::string path = dir.file("ro.db");
  { Database db = openOrDie(path); }
  Database db = openOrDie(path, OpenMode::ReadOnly);
  EXPECT_TRUE(db.readOnly());
  auto id = db.putProblem("p");
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.error().find("read-only"), std::string::npos);

  OpenOptions options;
  options.mode = OpenMode::ReadOnly;
  auto missing = Database::open(dir.file("missing.db"), options);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("no such file"), std::string::npos);
}

TEST(Database, RowsRoundTripAndWritesAreValidated) {
  TempDir dir;
  Database db = openOrDie(dir.file("rows.db"));
  auto problemId = db.putProblem("int4 g128 f16 N=4096 K=4096");
  ASSERT_TRUE(problemId.ok()) << problemId.error();
  EXPECT_EQ(*problemId, problemIdForSignature("int4 g128 f16 N=4096 K=4096"));
  ASSERT_TRUE(db.putDevice(h100()).ok());
  ASSERT_TRUE(db.putDevice(h100()).ok()); // idempotent

  KernelRecord k = makeKernel(*problemId, "a", "sm_90a", "wgmma");
  auto kernelId = db.putKernel(k);
  ASSERT_TRUE(kernelId.ok()) << kernelId.error();
  EXPECT_EQ(*kernelId, sha256Hex(k.cubin));
  EXPECT_TRUE(db.putKernel(k).ok()); // the same cubin again

  auto stored = db.findKernel(*kernelId);
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->cubin, k.cubin);
  EXPECT_EQ((*stored)->ptx, k.ptx);
  EXPECT_EQ((*stored)->launch.blockX, 128);
  EXPECT_EQ((*stored)->launch.gridRule, k.launch.gridRule);
  EXPECT_EQ((*stored)->launch.dynamicSharedBytes, 32768);
  auto withoutBlobs = db.findKernel(*kernelId, false);
  ASSERT_TRUE(withoutBlobs.ok() && withoutBlobs->has_value());
  EXPECT_TRUE((*withoutBlobs)->cubin.empty());

  KernelRecord wrongId = k;
  wrongId.id = std::string(64, 'a');
  EXPECT_NE(db.putKernel(wrongId).error().find("not the sha256"), std::string::npos);
  KernelRecord orphan = makeKernel(problemIdForSignature("nope"), "b", "sm_80", "mma");
  EXPECT_NE(orphan.problemId, *problemId);
  auto orphanId = db.putKernel(orphan);
  ASSERT_FALSE(orphanId.ok());
  EXPECT_NE(orphanId.error().find("unknown problem"), std::string::npos);
  KernelRecord badArch = makeKernel(*problemId, "c", "compute_80", "mma");
  EXPECT_NE(db.putKernel(badArch).error().find("invalid arch"), std::string::npos);
  KernelRecord noLaunch = makeKernel(*problemId, "d", "sm_80", "mma");
  noLaunch.launch.blockX = 0;
  EXPECT_NE(db.putKernel(noLaunch).error().find("launch configuration"), std::string::npos);
  KernelRecord sameCubinOtherEntry = k;
  sameCubinOtherEntry.entry = "other";
  EXPECT_NE(db.putKernel(sameCubinOtherEntry).error().find("already stored"), std::string::npos);

  std::string deviceId = h100().id();
  ASSERT_TRUE(db.addResults({makeResult(*kernelId, deviceId, 1, 5.0),
                             makeResult(*kernelId, deviceId, 1, 4.0, false)})
                  .ok());
  auto results = db.results(*kernelId, deviceId);
  ASSERT_TRUE(results.ok());
  ASSERT_EQ(results->size(), 2u);
  EXPECT_TRUE((*results)[0].passed); // passing sorts first
  EXPECT_FALSE(results->front().measuredAt.empty());
  EXPECT_NE(db.addResult(makeResult(*kernelId, deviceId, 0, 1.0)).error().find("M must be >= 1"),
            std::string::npos);
  EXPECT_NE(db.addResult(makeResult(*kernelId, std::string(64, '0'), 1, 1.0))
                .error()
                .find("unknown device"),
            std::string::npos);
  // A failed batch leaves nothing behind.
  EXPECT_FALSE(db.addResults({makeResult(*kernelId, deviceId, 2, 1.0),
                              makeResult(std::string(64, 'f'), deviceId, 2, 1.0)})
                   .ok());
  auto after = db.results(*kernelId, deviceId);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), 2u);

  ASSERT_TRUE(db.setDispatch(*problemId, deviceId, {{1, std::nullopt, *kernelId}}).ok());
  auto ranges = db.dispatchRanges(*problemId, deviceId);
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_FALSE(ranges->front().mHi.has_value());
  auto unknownKernel = db.setDispatch(*problemId, deviceId, {{1, std::nullopt, std::string(64, 'e')}});
  EXPECT_NE(unknownKernel.error().find("unknown kernel"), std::string::npos);
  auto gap = db.setDispatch(*problemId, deviceId, {{1, 8, *kernelId}, {9, std::nullopt, *kernelId}});
  EXPECT_NE(gap.error().find("not covered"), std::string::npos) << gap.error();
  // A refused table leaves the old one in place.
  auto still = db.dispatchRanges(*problemId, deviceId);
  ASSERT_TRUE(still.ok());
  EXPECT_EQ(still->size(), 1u);

  auto secondProblem = db.putProblem("other");
  ASSERT_TRUE(secondProblem.ok());
  auto crossProblem = db.setDispatch(*secondProblem, deviceId, {{1, std::nullopt, *kernelId}});
  EXPECT_NE(crossProblem.error().find("belongs to problem"), std::string::npos);
}

// A candidate that failed to compile has a row of its own: one per (problem,
// arch, schedule), the latest attempt's, gone once it compiles.
TEST(Database, CandidateFailuresAreKeptPerScheduleUntilTheyCompile) {
  TempDir dir;
  Database db = openOrDie(dir.file("failures.db"));
  auto problemId = db.putProblem("p");
  ASSERT_TRUE(problemId.ok()) << problemId.error();
  CandidateFailureRecord f{*problemId, "sm_90a", "#lb.schedule<family = mma>", "k_mma",
                           "compile", "error: expected a ';'", "lowbit 0.1.0", ""};
  ASSERT_TRUE(db.putCandidateFailure(f).ok());
  CandidateFailureRecord spill = f;
  spill.arch = "sm_80";
  spill.stage = "spill";
  spill.reason = "spills 64 bytes";
  ASSERT_TRUE(db.putCandidateFailure(spill).ok());
  f.reason = "error: a later attempt";
  ASSERT_TRUE(db.putCandidateFailure(f).ok()); // replaces, does not add

  auto all = db.candidateFailures(*problemId);
  ASSERT_TRUE(all.ok()) << all.error();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].arch, "sm_80");
  EXPECT_EQ((*all)[0].stage, "spill");
  EXPECT_EQ((*all)[1].reason, "error: a later attempt");
  EXPECT_FALSE((*all)[1].createdAt.empty());
  auto hopper = db.candidateFailures(*problemId, "sm_90a");
  ASSERT_TRUE(hopper.ok());
  ASSERT_EQ(hopper->size(), 1u);
  EXPECT_EQ(hopper->front().entry, "k_mma");

  CandidateFailureRecord orphan = f;
  orphan.problemId = problemIdForSignature("nope");
  EXPECT_NE(db.putCandidateFailure(orphan).error().find("unknown problem"), std::string::npos);
  CandidateFailureRecord badStage = f;
  badStage.stage = "launch";
  EXPECT_NE(db.putCandidateFailure(badStage).error().find("neither compile nor spill"),
            std::string::npos);
  CandidateFailureRecord noReason = f;
  noReason.reason.clear();
  EXPECT_FALSE(db.putCandidateFailure(noReason).ok());

  ASSERT_TRUE(db.clearCandidateFailure(*problemId, "sm_90a", f.schedule).ok());
  auto left = db.candidateFailures(*problemId);
  ASSERT_TRUE(left.ok());
  ASSERT_EQ(left->size(), 1u);
  EXPECT_EQ(left->front().arch, "sm_80");
}

TEST(Database, TransactionsRollBackAsAWhole) {
  TempDir dir;
  Database db = openOrDie(dir.file("tx.db"));
  Status status = db.transaction([&]() -> Status {
    if (auto id = db.putProblem("inside"); !id)
      return makeError(id.error());
    return makeError("stop");
  });
  EXPECT_FALSE(status.ok());
  auto problems = db.problems();
  ASSERT_TRUE(problems.ok());
  EXPECT_TRUE(problems->empty());
  EXPECT_TRUE(db.transaction([&]() -> Status { return db.putDevice(a100()); }).ok());
  auto devices = db.devices();
  ASSERT_TRUE(devices.ok());
  EXPECT_EQ(devices->size(), 1u);
}

TEST(Ranges, ValidationRequiresDisjointContiguousFromOneAndOpenEnded) {
  EXPECT_TRUE(validateRanges({{1, 9, "a"}, {9, 257, "b"}, {257, std::nullopt, "c"}}).ok());
  EXPECT_TRUE(validateRanges({{9, std::nullopt, "b"}, {1, 9, "a"}}).ok()); // order-free
  EXPECT_NE(validateRanges({}).error().find("none given"), std::string::npos);
  EXPECT_NE(validateRanges({{2, std::nullopt, "a"}}).error().find("start at 1"),
            std::string::npos);
  EXPECT_NE(validateRanges({{1, 9, "a"}, {8, std::nullopt, "b"}}).error().find("overlaps"),
            std::string::npos);
  EXPECT_NE(validateRanges({{1, 9, "a"}, {10, std::nullopt, "b"}}).error().find("not covered"),
            std::string::npos);
  EXPECT_NE(validateRanges({{1, 9, "a"}, {9, 20, "b"}}).error().find("open-ended"),
            std::string::npos);
  EXPECT_NE(validateRanges({{1, std::nullopt, "a"}, {9, std::nullopt, "b"}}).error().find(
                "not the last"),
            std::string::npos);
  EXPECT_NE(validateRanges({{1, 1, "a"}, {1, std::nullopt, "b"}}).error().find("empty"),
            std::string::npos);
  EXPECT_NE(validateRanges({{1, std::nullopt, ""}}).error().find("no kernel"), std::string::npos);
}

TEST(Arch, ParsingAndCompatibility) {
  auto a = parseArch("sm_90a");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->number, 90);
  EXPECT_TRUE(a->archSpecific);
  EXPECT_EQ(parseArch("sm_120")->number, 120);
  EXPECT_FALSE(parseArch("sm_").ok());
  EXPECT_FALSE(parseArch("sm_8x").ok());
  EXPECT_FALSE(parseArch("compute_80").ok());

  EXPECT_EQ(runnableOn(*parseArch("sm_80"), true, 86), Runnable::Cubin);
  EXPECT_EQ(runnableOn(*parseArch("sm_86"), true, 80), Runnable::No);
  EXPECT_EQ(runnableOn(*parseArch("sm_80"), true, 90), Runnable::PtxOnly);
  EXPECT_EQ(runnableOn(*parseArch("sm_80"), false, 90), Runnable::No);
  EXPECT_EQ(runnableOn(*parseArch("sm_90a"), true, 90), Runnable::Cubin);
  EXPECT_EQ(runnableOn(*parseArch("sm_90a"), true, 100), Runnable::No);
}

TEST(Fingerprint, KeyIsStableVersionedAndLeavesOutTheUuid) {
  DeviceFingerprint a = h100();
  DeviceFingerprint b = h100();
  b.uuid = "ffffffffffffffffffffffffffffffff";
  EXPECT_EQ(a.canonicalKey(), b.canonicalKey());
  EXPECT_EQ(a.id(), b.id());
  EXPECT_TRUE(isSha256Hex(a.id()));
  EXPECT_EQ(a.canonicalKey(),
            "lowbit-device-v1|name=NVIDIA H100 80GB HBM3|cc=9.0|sms=132|l2=50331648|"
            "smem_optin=232448|memclk_khz=2619000|bus_bits=5120|driver=580.95.05|cuda=13000");
  b.driverVersion = "590.1";
  EXPECT_NE(a.id(), b.id());
  DeviceFingerprint tricky = h100();
  tricky.name = "x|cc=1.0";
  EXPECT_NE(tricky.canonicalKey().find("x%7Ccc%3D1.0"), std::string::npos);
  EXPECT_EQ(a.computeCapability(), 90);
}

TEST(Fingerprint, ReadingWithoutADriverIsAClearError) {
  auto fingerprint = readFingerprint(0);
  if (fingerprint.ok()) {
    // A GPU host: the fields must be plausible.
    EXPECT_GE(fingerprint->ccMajor, 5);
    EXPECT_GT(fingerprint->smCount, 0);
    EXPECT_EQ(fingerprint->uuid.size(), 32u);
    GTEST_SKIP() << "a CUDA driver is present; the no-driver path cannot be exercised here";
  }
  EXPECT_NE(fingerprint.error().find("fingerprint"), std::string::npos) << fingerprint.error();
  auto outOfRange = readFingerprint(1000);
  EXPECT_FALSE(outOfRange.ok());
}

} // namespace
} // namespace lowbit::db

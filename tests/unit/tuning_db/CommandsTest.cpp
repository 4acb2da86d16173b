#include "TestSupport.h"

#include "tuning_db/Commands.h"
#include "tuning_db/Schema.h"
#include "tuning_db/Sha256.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;
namespace fs = std::filesystem;

constexpr const char *kSignature = "nf4 g64 bf16 N=8192 K=2048";

struct Fixture {
  std::string problem, kernel;
};

// A database with one problem, one kernel and one device (h100).
Fixture populate(Database &db, const std::string &kernelTag = "shared") {
  Fixture f;
  auto problem = db.putProblem(kSignature);
  EXPECT_TRUE(problem.ok());
  f.problem = *problem;
  auto kernel = db.putKernel(makeKernel(f.problem, kernelTag, "sm_90a", "mma"));
  EXPECT_TRUE(kernel.ok()) << kernel.error();
  f.kernel = *kernel;
  EXPECT_TRUE(db.putDevice(h100()).ok());
  return f;
}

std::optional<ResultRecord> best(const Database &db, const std::string &kernel, int64_t m) {
  auto results = db.results(kernel, h100().id());
  EXPECT_TRUE(results.ok());
  std::optional<ResultRecord> out;
  for (const ResultRecord &r : *results)
    if (r.m == m && (!out || betterResult(r, *out)))
      out = r;
  return out;
}

bool contains(const std::string &text, const std::string &part) {
  return text.find(part) != std::string::npos;
}

TEST(Merge, KeepsTheBetterResultAndCopiesWhatIsMissing) {
  TempDir dir;
  Database a = openOrDie(dir.file("a.db"));
  Database b = openOrDie(dir.file("b.db"));
  Fixture fa = populate(a);
  Fixture fb = populate(b);
  ASSERT_EQ(fa.kernel, fb.kernel);
  std::string onlyInB = *b.putKernel(makeKernel(fb.problem, "only-b", "sm_80", "gemv"));
  ASSERT_TRUE(b.putDevice(rtx4090()).ok());

  ASSERT_TRUE(a.addResult(makeResult(fa.kernel, h100().id(), 16, 10.0, true, "a1")).ok());
  ASSERT_TRUE(a.addResult(makeResult(fa.kernel, h100().id(), 64, 3.0, true, "a1")).ok());
  ASSERT_TRUE(b.addResults({makeResult(fb.kernel, h100().id(), 16, 8.0, true, "b1"),
                            makeResult(fb.kernel, h100().id(), 16, 1.0, false, "b-fail"),
                            makeResult(fb.kernel, h100().id(), 32, 5.0, true, "b1"),
                            makeResult(fb.kernel, h100().id(), 64, 4.0, true, "b1")})
                  .ok());
  ASSERT_TRUE(b.setDispatch(fb.problem, rtx4090().id(), {{1, std::nullopt, onlyInB}}).ok());

  auto report = mergeFrom(a, b);
  ASSERT_TRUE(report.ok()) << report.error();
  EXPECT_EQ(report->kernelsAdded, 1);
  EXPECT_EQ(report->devicesAdded, 1);
  EXPECT_EQ(report->problemsAdded, 0);
  EXPECT_EQ(report->resultsAdded, 2); // M=16 (8 < 10) and M=32 (new)
  EXPECT_EQ(report->resultsKept, 1);  // M=64: a's 3.0 beats b's 4.0
  EXPECT_EQ(report->dispatchAdded, 1);
  EXPECT_TRUE(report->conflicts.empty());
  EXPECT_TRUE(contains(report->text(), "2 results added"));

  EXPECT_EQ(best(a, fa.kernel, 16)->medianUs, 8.0);
  EXPECT_EQ(best(a, fa.kernel, 16)->runId, "b1"); // the failing 1.0 never wins
  EXPECT_EQ(best(a, fa.kernel, 32)->medianUs, 5.0);
  EXPECT_EQ(best(a, fa.kernel, 64)->medianUs, 3.0);
  auto copied = a.findKernel(onlyInB);
  ASSERT_TRUE(copied.ok() && copied->has_value());
  EXPECT_EQ(sha256Hex((*copied)->cubin), onlyInB);
  auto ranges = a.dispatchRanges(fa.problem, rtx4090().id());
  ASSERT_TRUE(ranges.ok());
  EXPECT_EQ(ranges->size(), 1u);

  // Merging again adds nothing new.
  auto again = mergeFrom(a, b);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->resultsAdded, 0);
  EXPECT_EQ(again->kernelsAdded, 0);
  EXPECT_EQ(again->dispatchSame, 1);
}

// A failed candidate travels with its problem, and doctor counts it.
TEST(Merge, CopiesFailedCandidatesAndDoctorCountsThem) {
  TempDir dir;
  std::string bPath = dir.file("b.db");
  {
    Database a = openOrDie(dir.file("a.db"));
    Database b = openOrDie(bPath);
    Fixture fb = populate(b);
    ASSERT_TRUE(b.putCandidateFailure({fb.problem, "sm_90a", "#lb.schedule<family = gemv>", "k",
                                       "compile", "nvrtc: error", "v", ""})
                    .ok());
    auto report = mergeFrom(a, b);
    ASSERT_TRUE(report.ok()) << report.error();
    EXPECT_EQ(report->candidateFailuresAdded, 1);
    EXPECT_TRUE(contains(report->text(), "1 failed candidates"));
    auto copied = a.candidateFailures(fb.problem);
    ASSERT_TRUE(copied.ok()) << copied.error();
    ASSERT_EQ(copied->size(), 1u);
    EXPECT_EQ(copied->front().reason, "nvrtc: error");
  }
  DoctorReport report = doctor(bPath);
  EXPECT_TRUE(report.healthy) << report.text();
  EXPECT_TRUE(contains(report.text(), "failed candidates: 1")) << report.text();
}

TEST(Merge, ConflictingDispatchKeepsTheDestinationsAndSaysSo) {
  TempDir dir;
  Database a = openOrDie(dir.file("a.db"));
  Fixture fa = populate(a);
  std::string other;
  {
    Database b = openOrDie(dir.file("b.db"));
    Fixture fb = populate(b);
    other = *b.putKernel(makeKernel(fb.problem, "b-kernel", "sm_90a", "wgmma"));
    ASSERT_TRUE(b.setDispatch(fb.problem, h100().id(), {{1, std::nullopt, other}}).ok());
  }
  ASSERT_TRUE(a.setDispatch(fa.problem, h100().id(), {{1, std::nullopt, fa.kernel}}).ok());
  auto reports = mergeFiles(a, {dir.file("b.db")});
  ASSERT_TRUE(reports.ok()) << reports.error();
  ASSERT_EQ(reports->size(), 1u);
  ASSERT_EQ((*reports)[0].conflicts.size(), 1u);
  EXPECT_TRUE(contains((*reports)[0].conflicts[0], "kept the destination's"));
  auto ranges = a.dispatchRanges(fa.problem, h100().id());
  ASSERT_TRUE(ranges.ok());
  ASSERT_EQ(ranges->size(), 1u);
  EXPECT_EQ(ranges->front().kernelId, fa.kernel);

  EXPECT_FALSE(mergeFiles(a, {dir.file("missing.db")}).ok());
  Database readOnly = openOrDie(dir.file("b.db"), OpenMode::ReadOnly);
  Database source = openOrDie(dir.file("a.db"), OpenMode::ReadOnly);
  EXPECT_TRUE(contains(mergeFrom(readOnly, source).error(), "read-only"));
}

TEST(Export, MakesAConsistentSingleFileCopy) {
  TempDir dir;
  Database a = openOrDie(dir.file("a.db"));
  Fixture f = populate(a);
  ASSERT_TRUE(a.addResult(makeResult(f.kernel, h100().id(), 1, 2.0)).ok());
  std::string out = dir.file("export.db");
  Status status = exportDatabase(a, out);
  ASSERT_TRUE(status.ok()) << status.error();
  EXPECT_FALSE(fs::exists(out + "-wal"));

  Database copy = openOrDie(out, OpenMode::ReadOnly);
  auto kernel = copy.findKernel(f.kernel);
  ASSERT_TRUE(kernel.ok() && kernel->has_value());
  EXPECT_EQ(sha256Hex((*kernel)->cubin), f.kernel);
  auto results = copy.results(f.kernel);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(results->size(), 1u);

  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open_v2(out.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto mode = sql::Statement::prepare(raw, "PRAGMA journal_mode");
  ASSERT_TRUE(mode.ok() && mode->step());
  EXPECT_EQ(mode->text(0), "delete");
  mode = sql::Statement();
  sqlite3_close(raw);

  // A read-only (system) database exports too.
  std::string second = dir.file("export-of-export.db");
  Status fromReadOnly = exportDatabase(copy, second);
  ASSERT_TRUE(fromReadOnly.ok()) << fromReadOnly.error();
  EXPECT_TRUE(doctor(second).healthy);

  Status overwrite = exportDatabase(a, out);
  ASSERT_FALSE(overwrite.ok());
  EXPECT_TRUE(contains(overwrite.error(), "exists"));
}

TEST(Doctor, HealthyDatabase) {
  TempDir dir;
  {
    Database a = openOrDie(dir.file("a.db"));
    Fixture f = populate(a);
    ASSERT_TRUE(a.setDispatch(f.problem, h100().id(), {{1, std::nullopt, f.kernel}}).ok());
  }
  DoctorReport report = doctor(dir.file("a.db"));
  EXPECT_TRUE(report.healthy) << report.text();
  EXPECT_TRUE(report.errors.empty());
  EXPECT_TRUE(contains(report.text(), "integrity_check: ok"));
  EXPECT_TRUE(contains(report.text(), "schema: v" + std::to_string(kSchemaVersion)));
  EXPECT_TRUE(contains(report.text(), "kernels: 1"));
}

TEST(Doctor, ReportsDanglingReferencesBadIdsAndBadTables) {
  TempDir dir;
  std::string path = dir.file("a.db");
  std::string problem, kernel;
  {
    Database a = openOrDie(path);
    Fixture f = populate(a);
    problem = f.problem;
    kernel = f.kernel;
  }
  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &raw), SQLITE_OK);
  // Written around the library, foreign keys off, like a hand edit would be.
  auto insert = sql::Statement::prepare(
      raw, "INSERT INTO dispatch(problem_id, device_id, m_lo, m_hi, kernel_id) "
           "VALUES (?1, ?2, 1, 8, ?3)");
  ASSERT_TRUE(insert.ok());
  ASSERT_TRUE(insert->bind(1, problem).bind(2, h100().id()).bind(3, std::string(64, 'd')).run().ok());
  auto result = sql::Statement::prepare(
      raw, "INSERT INTO results(kernel_id, device_id, m, median_us, passed, run_id, "
           "measured_at) VALUES (?1, ?2, 4, 1.0, 1, 'r', 't')");
  ASSERT_TRUE(result.ok());
  ASSERT_TRUE(result->bind(1, kernel).bind(2, std::string(64, 'e')).run().ok());
  auto tamper = sql::Statement::prepare(raw, "UPDATE kernels SET cubin = x'00' WHERE id = ?1");
  ASSERT_TRUE(tamper.ok());
  ASSERT_TRUE(tamper->bind(1, kernel).run().ok());
  insert = sql::Statement();
  result = sql::Statement();
  tamper = sql::Statement();
  sqlite3_close(raw);

  DoctorReport report = doctor(path);
  EXPECT_FALSE(report.healthy);
  std::string text = report.text();
  EXPECT_TRUE(contains(text, "dispatch with unknown kernel")) << text;
  EXPECT_TRUE(contains(text, "result with unknown device")) << text;
  EXPECT_TRUE(contains(text, "not the sha256 of its cubin")) << text;
  EXPECT_TRUE(contains(text, "must be open-ended")) << text;
  EXPECT_TRUE(contains(text, "NOT healthy")) << text;
}

TEST(Doctor, ReportsFilesThatAreNotUsable) {
  TempDir dir;
  EXPECT_FALSE(doctor(dir.file("missing.db")).healthy);
  {
    std::ofstream file(dir.file("text.db"));
    file << "not a database at all, just some text that is long enough";
  }
  DoctorReport text = doctor(dir.file("text.db"));
  EXPECT_FALSE(text.healthy);
  EXPECT_TRUE(contains(text.text(), "not an SQLite database"));
  EXPECT_TRUE(fs::exists(dir.file("text.db"))); // doctor never moves files

  sqlite3 *raw = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("old.db").c_str(), &raw), SQLITE_OK);
  ASSERT_TRUE(migrate(raw, 1).ok());
  sqlite3_close(raw);
  DoctorReport old = doctor(dir.file("old.db"));
  EXPECT_TRUE(old.healthy) << old.text();
  EXPECT_TRUE(contains(old.text(), "older")) << old.text();
}

TEST(Reports, ListShowAndExplain) {
  TempDir dir;
  Database a = openOrDie(dir.file("a.db"));
  Fixture f = populate(a);
  ASSERT_TRUE(a.setDispatch(f.problem, h100().id(), {{1, std::nullopt, f.kernel}}).ok());
  ASSERT_TRUE(a.addResult(makeResult(f.kernel, h100().id(), 8, 2.5)).ok());
  std::vector<const Database *> dbs{&a};

  auto list = listText(dbs);
  ASSERT_TRUE(list.ok()) << list.error();
  EXPECT_TRUE(contains(*list, kSignature)) << *list;
  EXPECT_TRUE(contains(*list, f.kernel.substr(0, 12)));
  EXPECT_TRUE(contains(*list, "[1, inf)"));
  EXPECT_TRUE(contains(*list, "NVIDIA H100"));

  auto kernel = showText(dbs, f.kernel.substr(0, 10));
  ASSERT_TRUE(kernel.ok()) << kernel.error();
  EXPECT_TRUE(contains(*kernel, "kernel " + f.kernel));
  EXPECT_TRUE(contains(*kernel, "\"stages\":3"));
  EXPECT_TRUE(contains(*kernel, "median 2.5 us"));
  auto problem = showText(dbs, f.problem);
  ASSERT_TRUE(problem.ok()) << problem.error();
  EXPECT_TRUE(contains(*problem, kSignature));
  auto device = showText(dbs, h100().id());
  ASSERT_TRUE(device.ok()) << device.error();
  EXPECT_TRUE(contains(*device, "compute capability:   9.0"));
  EXPECT_FALSE(showText(dbs, "zzzzzz").ok());
  EXPECT_FALSE(showText(dbs, "ab").ok());

  auto explain = explainText(dbs, f.problem.substr(0, 8), h100(), 100);
  ASSERT_TRUE(explain.ok()) << explain.error();
  EXPECT_TRUE(contains(*explain, "tier:  exact device")) << *explain;
  EXPECT_TRUE(contains(*explain, "range: [1, inf)"));
  EXPECT_FALSE(explainText(dbs, f.problem, h100(), 0).ok());
  auto unknown = explainText(dbs, problemIdForSignature("x"), h100(), 4);
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.error(), "unknown problem"));
}

} // namespace
} // namespace lowbit::db

#include "TestSupport.h"

#include "tuning_db/Database.h"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;

// Each child inserts its results one transaction at a time, so the two
// processes contend for the write lock on every row.
int childMain(const std::string &path, const std::string &kernelId, const std::string &deviceId,
              int child, int count) {
  auto db = Database::open(path);
  if (!db)
    return 2;
  for (int i = 0; i < count; ++i) {
    ResultRecord r = makeResult(kernelId, deviceId, 1 + i, 1.0 + i, true,
                                "child-" + std::to_string(child));
    if (!db->addResult(r))
      return 3;
  }
  return 0;
}

TEST(Concurrency, TwoProcessesWritingAtOnceLoseNothing) {
  TempDir dir;
  std::string path = dir.file("shared.db");
  std::string kernelId, deviceId = h100().id();
  {
    Database db = openOrDie(path);
    auto problem = db.putProblem("p");
    ASSERT_TRUE(problem.ok());
    auto kernel = db.putKernel(makeKernel(*problem, "k", "sm_90a", "wgmma"));
    ASSERT_TRUE(kernel.ok());
    kernelId = *kernel;
    ASSERT_TRUE(db.putDevice(h100()).ok());
  } // no connection may cross fork()

  constexpr int kRowsPerChild = 300;
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0)
      _exit(childMain(path, kernelId, deviceId, c, kRowsPerChild));
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2: open failed, 3: a write failed";
  }

  Database db = openOrDie(path);
  auto results = db.results(kernelId);
  ASSERT_TRUE(results.ok()) << results.error();
  EXPECT_EQ(results->size(), size_t(2 * kRowsPerChild));
  int fromFirst = 0;
  for (const ResultRecord &r : *results)
    fromFirst += r.runId == "child-0";
  EXPECT_EQ(fromFirst, kRowsPerChild);
}

} // namespace
} // namespace lowbit::db

namespace lowbit::db {
namespace {
using namespace lowbit::db::testing;

// Several processes creating the same new database at once: each migration
// step must run once, and nobody may mistake a half-made file for a bad one.
TEST(Concurrency, ProcessesCreatingOneNewFileAgree) {
  TempDir dir;
  std::string path = dir.file("new.db");
  constexpr int kChildren = 6;
  pid_t children[kChildren];
  for (int c = 0; c < kChildren; ++c) {
    children[c] = fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      auto db = Database::open(path);
      if (!db)
        _exit(2);
      if (!db->notes().empty())
        _exit(4); // something was set aside
      if (!db->putProblem("problem " + std::to_string(c)))
        _exit(3);
      _exit(0);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "2: open failed, 3: write failed, 4: set aside";
  }
  EXPECT_TRUE(filesStartingWith(dir.path(), "new.db.corrupt-").empty());
  Database db = openOrDie(path);
  auto problems = db.problems();
  ASSERT_TRUE(problems.ok());
  EXPECT_EQ(problems->size(), size_t(kChildren));
}

} // namespace
} // namespace lowbit::db

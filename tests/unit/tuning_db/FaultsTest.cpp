// A disk that fills up while a database is written: the write gets an error
// (never a crash), and what was committed before is all still there. The
// child process writes under RLIMIT_FSIZE, which makes every write past the
// limit fail with EFBIG, as a full disk fails with ENOSPC.
#include "tests/unit/tuning_db/TestSupport.h"
#include "tuning_db/Commands.h"

#include <gtest/gtest.h>

#include <csignal>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

namespace lowbit::db::testing {
namespace {

// Child exit codes.
constexpr int kWriteRefused = 0, kWriteSucceeded = 1, kOpenFailed = 2, kNoMessage = 3;

int64_t fileBytes(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 ? static_cast<int64_t>(info.st_size) : -1;
}

TEST(Faults, AFullDiskRefusesTheWriteAndLosesNothing) {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  std::string keptId;
  {
    Database database = openOrDie(path);
    Expected<std::string> problem = database.putProblem("sig-kept");
    ASSERT_TRUE(problem.ok()) << problem.error();
    Expected<std::string> kept = database.putKernel(makeKernel(*problem, "kept", "sm_90a", "gemv"));
    ASSERT_TRUE(kept.ok()) << kept.error();
    keptId = *kept;
  }
  const int64_t before = fileBytes(path);
  ASSERT_GT(before, 0);

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Room for a little more than the file, not for a 4 MB cubin.
    std::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit {};
    ::getrlimit(RLIMIT_FSIZE, &limit);
    limit.rlim_cur = static_cast<rlim_t>(before + 64 * 1024);
    ::setrlimit(RLIMIT_FSIZE, &limit);
    Expected<Database> database = Database::open(path);
    if (!database.ok())
      ::_exit(kOpenFailed);
    Expected<std::string> problem = database->putProblem("sig-big");
    Status status = problem.ok() ? Status::success() : makeError(problem.error());
    if (status.ok()) {
      KernelRecord big = makeKernel(*problem, "big", "sm_90a", "mma");
      big.cubin.resize(4 << 20, 0x5a);
      Expected<std::string> added = database->putKernel(big);
      status = added.ok() ? Status::success() : makeError(added.error());
    }
    if (status.ok())
      ::_exit(kWriteSucceeded);
    ::_exit(status.error().empty() ? kNoMessage : kWriteRefused);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << "the writer died of signal " << WTERMSIG(wstatus);
  EXPECT_EQ(WEXITSTATUS(wstatus), kWriteRefused);

  DoctorReport report = doctor(path);
  EXPECT_TRUE(report.healthy) << report.text();
  Database database = openOrDie(path, OpenMode::ReadOnly);
  Expected<std::optional<KernelRecord>> kept = database.findKernel(keptId);
  ASSERT_TRUE(kept.ok()) << kept.error();
  EXPECT_TRUE(kept->has_value()) << "a row committed before the full disk is gone";
  // The problem row may have committed on its own; its kernel must not have.
  Expected<std::vector<ProblemRecord>> problems = database.problems();
  ASSERT_TRUE(problems.ok()) << problems.error();
  for (const ProblemRecord &problem : *problems)
    if (problem.id == problemIdForSignature("sig-big")) {
      Expected<std::vector<KernelRecord>> kernels = database.kernelsForProblem(problem.id);
      ASSERT_TRUE(kernels.ok()) << kernels.error();
      EXPECT_TRUE(kernels->empty()) << "half a kernel was committed";
    }
}

} // namespace
} // namespace lowbit::db::testing

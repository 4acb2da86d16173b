// Databases on a disk that fills up, and on a read-only filesystem. A full
// disk: the write gets an error (never a crash), and what was committed
// before is all still there; the child process writes under RLIMIT_FSIZE,
// which makes every write past the limit fail with EFBIG, as a full disk
// fails with ENOSPC. A read-only filesystem (a read-only bind mount in a
// child's own mount namespace): the database opens read-only and answers,
// opening it to write is a clear error, and the file is untouched.
#include "tests/unit/tuning_db/TestSupport.h"
#include "tuning_db/Commands.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sched.h>
#include <sys/mount.h>
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

// A database (closed again, so in WAL mode with no -wal or -shm beside it)
// holding one committed kernel, whose id is `keptId`.
void writeOneKernel(const std::string &path, std::string &keptId) {
  Database database = openOrDie(path);
  Expected<std::string> problem = database.putProblem("sig-kept");
  ASSERT_TRUE(problem.ok()) << problem.error();
  Expected<std::string> kept = database.putKernel(makeKernel(*problem, "kept", "sm_90a", "gemv"));
  ASSERT_TRUE(kept.ok()) << kept.error();
  keptId = *kept;
}

TEST(Faults, AFullDiskRefusesTheWriteAndLosesNothing) {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  std::string keptId;
  ASSERT_NO_FATAL_FAILURE(writeOneKernel(path, keptId));
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

std::string contents(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

constexpr int kReadOnlyWorks = 0, kCannotMount = 10, kReadOnlyOpenFailed = 11,
              kLookupFailed = 12, kWritableOpenSucceeded = 13, kUnclearError = 14;

TEST(Faults, AReadOnlyFilesystemStillServesAndRefusesWritesClearly) {
  TempDir dir;
  const std::string path = dir.file("kernels.db");
  std::string keptId;
  ASSERT_NO_FATAL_FAILURE(writeOneKernel(path, keptId));
  const std::string before = contents(path);

  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A private mount namespace, so the read-only mount is the child's alone.
    if (::unshare(CLONE_NEWNS) != 0 ||
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
        ::mount(dir.path().c_str(), dir.path().c_str(), nullptr, MS_BIND, nullptr) != 0 ||
        ::mount(nullptr, dir.path().c_str(), nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY,
                nullptr) != 0)
      ::_exit(kCannotMount);
    Expected<Database> readOnly = Database::open(path, OpenOptions{OpenMode::ReadOnly});
    if (!readOnly.ok()) {
      std::fprintf(stderr, "read-only open: %s\n", readOnly.error().c_str());
      ::_exit(kReadOnlyOpenFailed);
    }
    Expected<std::optional<KernelRecord>> kept = readOnly->findKernel(keptId);
    if (!kept.ok() || !kept->has_value())
      ::_exit(kLookupFailed);
    Expected<Database> writable = Database::open(path);
    if (writable.ok()) {
      // Opening may succeed where SQLite defers the write; the first write
      // must then fail.
      Expected<std::string> added = writable->putProblem("sig-new");
      if (added.ok())
        ::_exit(kWritableOpenSucceeded);
      ::_exit(added.error().find("read") == std::string::npos ? kUnclearError : kReadOnlyWorks);
    }
    ::_exit(writable.error().find("read") == std::string::npos ? kUnclearError : kReadOnlyWorks);
  }
  int wstatus = 0;
  ASSERT_EQ(::waitpid(child, &wstatus, 0), child);
  ASSERT_TRUE(WIFEXITED(wstatus)) << "the child died of signal " << WTERMSIG(wstatus);
  if (WEXITSTATUS(wstatus) == kCannotMount)
    GTEST_SKIP() << "no private mount namespace here (needs CAP_SYS_ADMIN)";
  EXPECT_EQ(WEXITSTATUS(wstatus), kReadOnlyWorks);
  EXPECT_EQ(contents(path), before) << "the read-only database's file changed";
  EXPECT_TRUE(doctor(path).healthy);
}

} // namespace
} // namespace lowbit::db::testing

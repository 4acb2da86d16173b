// The statuses and messages a bad call or a bad kernel database must give
// through the C API with a real driver.
#include "tests/gpu/runtime/RuntimeGpuFixture.h"

#include "tuning_db/Database.h"
#include "tuning_db/Sqlite.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace lowbit::testing {
namespace {

TEST_F(RuntimeGpu, BadCallsGetClearStatuses) {
  ASSERT_NE(context, nullptr);
  SplitMix rng{5};
  PreparedProblem p;
  prepare(*api, context, hostExampleProblem(), rng, p);
  if (HasFatalFailure())
    return;
  DeviceBuffer x(*api, 300 * 4096 * 2 + 64), y(*api, 300 * 4096 * 2 + 64);
  void *xp = reinterpret_cast<void *>(x.get()), *yp = reinterpret_cast<void *>(y.get());
  void *sp = reinterpret_cast<void *>(p.scales->get());
  auto matmul = [&](int64_t m, void *xArg, const lowbit_weights *w, void *yArg) {
    return lowbit_matmul(p.plan, m, xArg, w, sp, nullptr, yArg, nullptr, 0, nullptr);
  };
  EXPECT_EQ(matmul(0, xp, &p.w, yp), LOWBIT_STATUS_INVALID_SHAPE);
  EXPECT_EQ(matmul(-4, xp, &p.w, yp), LOWBIT_STATUS_INVALID_SHAPE);
  EXPECT_EQ(matmul(1, static_cast<char *>(xp) + 2, &p.w, yp), LOWBIT_STATUS_MISALIGNED);
  EXPECT_EQ(matmul(1, xp, &p.w, static_cast<char *>(yp) + 8), LOWBIT_STATUS_MISALIGNED);
  EXPECT_EQ(matmul(1, nullptr, &p.w, yp), LOWBIT_STATUS_INVALID_ARGUMENT);
  lowbit_weights foreign = p.w;
  foreign.layout_id ^= 0x5A5A;
  EXPECT_EQ(matmul(1, xp, &foreign, yp), LOWBIT_STATUS_LAYOUT_MISMATCH);
  EXPECT_NE(std::string(lowbit_last_error()).find("layout"), std::string::npos);
  LOWBIT_CU_ASSERT(api, api->cuCtxSynchronize()); // nothing was launched by the failures

  lowbit_problem unknown = hostExampleProblem();
  unknown.n = 1234;
  lowbit_plan *plan = nullptr;
  EXPECT_EQ(lowbit_plan_create(context, &unknown, &plan), LOWBIT_STATUS_UNKNOWN_PROBLEM);
  EXPECT_EQ(plan, nullptr);

  lowbit_context_options options;
  std::memset(&options, 0, sizeof(options));
  options.struct_size = sizeof(options);
  options.system_db_path = database.c_str();
  options.device_ordinal = 4096;
  lowbit_context *none = nullptr;
  EXPECT_EQ(lowbit_context_create(&options, &none), LOWBIT_STATUS_NO_DEVICE);
}

// A copy of the test database, changed with SQL, in a scratch directory.
class DatabaseCopy {
public:
  explicit DatabaseCopy(const std::string &source) {
    dir_ =
        std::filesystem::temp_directory_path() / ("lowbit-runtime-gpu-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "copy.db").string();
    std::filesystem::copy_file(source, path_, std::filesystem::copy_options::overwrite_existing);
  }
  ~DatabaseCopy() {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  void exec(const char *sql) {
    auto database = db::Database::open(path_);
    ASSERT_TRUE(database.ok()) << database.error();
    Status s = db::sql::exec(database->handle(), sql);
    ASSERT_TRUE(s.ok()) << s.error();
  }
  const std::string &path() const { return path_; }

private:
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(RuntimeGpu, BadDatabasesGetClearStatuses) {
  lowbit_problem problem = hostExampleProblem();
  {
    DatabaseCopy copy(database);
    copy.exec("PRAGMA user_version = 99");
    lowbit_context_options options;
    std::memset(&options, 0, sizeof(options));
    options.struct_size = sizeof(options);
    options.system_db_path = copy.path().c_str();
    lowbit_context *newer = nullptr;
    EXPECT_EQ(lowbit_context_create(&options, &newer), LOWBIT_STATUS_DATABASE_TOO_NEW);
    EXPECT_NE(std::string(lowbit_last_error()).find("v99"), std::string::npos);
  }
  {
    // Broken cubins, PTX kept: the plan JITs the PTX and says so.
    DatabaseCopy copy(database);
    copy.exec("UPDATE kernels SET cubin = X'7F454C46'");
    lowbit_context *ctx = openContext(copy.path());
    ASSERT_NE(ctx, nullptr);
    lowbit_plan *plan = nullptr;
    LOWBIT_OK(lowbit_plan_create(ctx, &problem, &plan));
    lowbit_choice choice;
    std::memset(&choice, 0, sizeof(choice));
    choice.struct_size = sizeof(choice);
    LOWBIT_OK(lowbit_plan_explain(plan, 1, &choice));
    EXPECT_EQ(choice.jit_from_ptx, 1);
    EXPECT_NE(std::string(choice.notes).find("not a CUDA ELF image"), std::string::npos)
        << choice.notes;
    lowbit_plan_destroy(plan);
    lowbit_context_destroy(ctx);
  }
  {
    // Broken cubins and no PTX: the plan cannot be made.
    DatabaseCopy copy(database);
    copy.exec("UPDATE kernels SET cubin = X'7F454C46', ptx = NULL");
    lowbit_context *ctx = openContext(copy.path());
    ASSERT_NE(ctx, nullptr);
    lowbit_plan *plan = nullptr;
    EXPECT_EQ(lowbit_plan_create(ctx, &problem, &plan), LOWBIT_STATUS_CORRUPT_KERNEL);
    EXPECT_EQ(plan, nullptr);
    lowbit_context_destroy(ctx);
  }
}

} // namespace
} // namespace lowbit::testing

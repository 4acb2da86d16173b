// A kernel database file from elsewhere, mutated: opened read-only (the
// runtime's path) and read through every query the runtime and `lowbit db`
// make, including the dispatch lookup. Each gets rows or an error, never a
// crash or a sanitizer report. The seed corpus is a real database made by
// lowbit_fuzz_database_seed (scripts/fuzz.sh).
#include "tuning_db/Database.h"
#include "tuning_db/Lookup.h"

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

namespace {

std::string scratchPath() {
  return "/tmp/lowbit-fuzz-db-" + std::to_string(getpid()) + ".db";
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string path = scratchPath();
  {
    std::ofstream file(path, std::ios::binary | std::ios::trunc);
    file.write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(size));
  }
  for (const char *suffix : {"-wal", "-shm", "-journal"})
    std::remove((path + suffix).c_str());
  auto database = lowbit::db::Database::open(path, {lowbit::db::OpenMode::ReadOnly});
  if (database) {
    auto problems = database->problems();
    auto devices = database->devices();
    if (problems)
      for (const auto &problem : *problems) {
        (void)database->kernelsForProblem(problem.id);
        if (devices)
          for (const auto &device : *devices) {
            (void)database->dispatchRanges(problem.id, device.id);
            (void)lowbit::db::resolve({&*database}, problem.id, device.fingerprint);
          }
      }
    (void)database->matchIdPrefix("0");
  }
  std::remove(path.c_str());
  return 0;
}

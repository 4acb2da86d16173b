// The databases a process reads kernels from: an optional read-only system
// database and an optional writable user database that takes precedence.
#pragma once

#include "core/support/Expected.h"
#include "tuning_db/Database.h"
#include "tuning_db/Lookup.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lowbit::db {

struct CatalogOptions {
  std::string systemPath; // opened read-only; empty: none
  std::string userPath;   // opened read-write (created if missing); empty: none
  OpenOptions userOptions; // mode is forced to ReadWrite
  int systemBusyTimeoutMs = 10000;
  // With false, a database that cannot be opened is left out with a note,
  // as long as one database opens; with true, it is an error.
  bool requireAll = false;
};

class Catalog {
public:
  static Expected<Catalog> open(const CatalogOptions &options);
  // Takes databases already open, highest precedence first (tests, tools).
  static Expected<Catalog> fromDatabases(std::vector<Database> databases);

  Catalog(Catalog &&) noexcept = default;
  Catalog &operator=(Catalog &&) noexcept = default;

  // Highest precedence first: the user database, then the system one.
  std::vector<const Database *> databases() const;
  // The writable user database, or null when there is none (or it was
  // opened read-only because its schema is newer).
  Database *userDatabase();
  // Set-aside reports, skipped databases and in-memory migrations.
  const std::vector<std::string> &notes() const { return notes_; }

  Expected<Resolution> resolve(const std::string &problemId,
                               const DeviceFingerprint &device) const;
  Expected<Choice> lookup(const std::string &problemId, const DeviceFingerprint &device,
                          int64_t m) const;

  // The first database (by precedence) that holds the row.
  Expected<std::optional<KernelRecord>> findKernel(const std::string &kernelId,
                                                   bool withBlobs = true) const;
  Expected<std::optional<ProblemRecord>> findProblem(const std::string &problemId) const;

private:
  Catalog() = default;
  std::vector<std::unique_ptr<Database>> databases_;
  Database *user_ = nullptr;
  std::vector<std::string> notes_;
};

} // namespace lowbit::db

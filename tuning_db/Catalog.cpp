#include "tuning_db/Catalog.h"

namespace lowbit::db {

Expected<Catalog> Catalog::open(const CatalogOptions &options) {
  if (options.systemPath.empty() && options.userPath.empty())
    return makeError("no kernel database given: set a system and/or a user database path");
  Catalog catalog;
  std::vector<std::string> failures;

  if (!options.userPath.empty()) {
    OpenOptions userOptions = options.userOptions;
    userOptions.mode = OpenMode::ReadWrite;
    auto user = Database::open(options.userPath, userOptions);
    if (user) {
      catalog.notes_.insert(catalog.notes_.end(), user->notes().begin(), user->notes().end());
      if (user->readOnly())
        catalog.notes_.push_back(user->readOnlyReason());
      catalog.databases_.push_back(std::make_unique<Database>(std::move(*user)));
      if (!catalog.databases_.back()->readOnly())
        catalog.user_ = catalog.databases_.back().get();
    } else {
      failures.push_back("user database: " + user.error());
    }
  }
  if (!options.systemPath.empty()) {
    OpenOptions systemOptions;
    systemOptions.mode = OpenMode::ReadOnly;
    systemOptions.busyTimeoutMs = options.systemBusyTimeoutMs;
    auto system = Database::open(options.systemPath, systemOptions);
    if (system) {
      catalog.notes_.insert(catalog.notes_.end(), system->notes().begin(),
                            system->notes().end());
      catalog.databases_.push_back(std::make_unique<Database>(std::move(*system)));
    } else {
      failures.push_back("system database: " + system.error());
    }
  }
  if (!failures.empty() && (options.requireAll || catalog.databases_.empty())) {
    std::string message = "cannot open the kernel databases:";
    for (const std::string &failure : failures)
      message += "\n  " + failure;
    return makeError(message);
  }
  for (const std::string &failure : failures)
    catalog.notes_.push_back("left out " + failure);
  return catalog;
}

Expected<Catalog> Catalog::fromDatabases(std::vector<Database> databases) {
  if (databases.empty() || databases.size() > 2)
    return makeError("a catalog holds one or two databases, got " +
                     std::to_string(databases.size()));
  Catalog catalog;
  for (Database &db : databases) {
    catalog.notes_.insert(catalog.notes_.end(), db.notes().begin(), db.notes().end());
    catalog.databases_.push_back(std::make_unique<Database>(std::move(db)));
  }
  if (!catalog.databases_.front()->readOnly())
    catalog.user_ = catalog.databases_.front().get();
  return catalog;
}

std::vector<const Database *> Catalog::databases() const {
  std::vector<const Database *> out;
  for (const auto &db : databases_)
    out.push_back(db.get());
  return out;
}

Database *Catalog::userDatabase() { return user_; }

Expected<Resolution> Catalog::resolve(const std::string &problemId,
                                      const DeviceFingerprint &device) const {
  return db::resolve(databases(), problemId, device);
}

Expected<Choice> Catalog::lookup(const std::string &problemId, const DeviceFingerprint &device,
                                 int64_t m) const {
  return db::lookup(databases(), problemId, device, m);
}

Expected<std::optional<KernelRecord>> Catalog::findKernel(const std::string &kernelId,
                                                          bool withBlobs) const {
  for (const auto &db : databases_) {
    auto kernel = db->findKernel(kernelId, withBlobs);
    if (!kernel || *kernel)
      return kernel;
  }
  return std::optional<KernelRecord>();
}

Expected<std::optional<ProblemRecord>> Catalog::findProblem(const std::string &problemId) const {
  for (const auto &db : databases_) {
    auto problem = db->findProblem(problemId);
    if (!problem || *problem)
      return problem;
  }
  return std::optional<ProblemRecord>();
}

} // namespace lowbit::db

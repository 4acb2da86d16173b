#include "runtime/api/KernelDatabases.h"

#include "tuning_db/Schema.h"

#include <sys/stat.h>

namespace lowbit::api {
namespace {

bool fileExists(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0;
}

Result<std::unique_ptr<db::Database>> openOne(const std::string &path, const char *role) {
  db::OpenOptions options;
  options.mode = db::OpenMode::ReadOnly;
  Expected<db::Database> database = db::Database::open(path, options);
  if (!database)
    return apiError(LOWBIT_STATUS_DATABASE_ERROR,
                    std::string(role) + " database: " + database.error());
  if (database->fileSchemaVersion() > db::kSchemaVersion)
    return apiError(LOWBIT_STATUS_DATABASE_TOO_NEW,
                    std::string(role) + " database `" + path + "` has schema v" +
                        std::to_string(database->fileSchemaVersion()) +
                        ", newer than this liblowbit_runtime knows (v" +
                        std::to_string(db::kSchemaVersion) +
                        "); link a newer lowbit runtime or export the kernels with the "
                        "lowbit that wrote it");
  return std::make_unique<db::Database>(std::move(*database));
}

} // namespace

std::vector<const db::Database *> KernelDatabases::view() const {
  std::vector<const db::Database *> out;
  for (const auto &database : owned)
    out.push_back(database.get());
  return out;
}

Result<KernelDatabases> openKernelDatabases(const char *systemPath, const char *userPath) {
  std::string system = systemPath ? systemPath : "";
  std::string user = userPath ? userPath : "";
  if (system.empty() && user.empty())
    return apiError(LOWBIT_STATUS_INVALID_ARGUMENT,
                    "lowbit_context_options: give system_db_path and/or user_db_path");
  KernelDatabases databases;
  if (!user.empty()) {
    if (!fileExists(user)) {
      databases.notes.push_back("user database `" + user +
                                "` does not exist yet (nothing tuned on this machine); skipped");
    } else {
      auto opened = openOne(user, "user");
      if (!opened)
        return std::move(opened).takeError();
      databases.owned.push_back(std::move(*opened));
    }
  }
  if (!system.empty()) {
    if (!fileExists(system))
      return apiError(LOWBIT_STATUS_DATABASE_ERROR,
                      "system database `" + system + "` does not exist");
    auto opened = openOne(system, "system");
    if (!opened)
      return std::move(opened).takeError();
    databases.owned.push_back(std::move(*opened));
  }
  if (databases.owned.empty())
    return apiError(LOWBIT_STATUS_DATABASE_ERROR,
                    "no kernel database to read: the user database `" + user +
                        "` does not exist and no system database was given");
  for (const auto &database : databases.owned)
    databases.notes.insert(databases.notes.end(), database->notes().begin(),
                           database->notes().end());
  return databases;
}

} // namespace lowbit::api

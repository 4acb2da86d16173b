// `lowbit db ...`: inspect and maintain kernel databases. Databases are
// opened read-only except by `merge` (the destination).
#include "compiler/tools/lowbit/Command.h"

#include "tuning_db/Commands.h"
#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"

#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

namespace lowbit::cli {
namespace {

struct DbOptions {
  std::vector<std::string> paths;
  std::string id;
  std::string problem;
  int64_t m = 0;
  std::string destination;
  bool defaultsOnly = false;
  double tolerance = 1.15;
};

// Opens each path read-only; notes (a file set aside, an old schema) go to
// stderr so they are never silent.
Expected<std::vector<db::Database>> openAll(const std::vector<std::string> &paths) {
  std::vector<db::Database> databases;
  for (const std::string &path : paths) {
    db::OpenOptions options;
    options.mode = db::OpenMode::ReadOnly;
    Expected<db::Database> database = db::Database::open(path, options);
    if (!database.ok())
      return makeError(path + ": " + database.error());
    for (const std::string &note : database->notes())
      std::cerr << path << ": " << note << "\n";
    databases.push_back(std::move(database).value());
  }
  return databases;
}

int report(const Expected<std::string> &text) {
  if (!text.ok()) {
    std::cerr << "lowbit db: " << text.error() << "\n";
    return 1;
  }
  std::cout << *text;
  return 0;
}

int withDatabases(const std::vector<std::string> &paths,
                  const std::function<Expected<std::string>(
                      const std::vector<const db::Database *> &)> &action) {
  Expected<std::vector<db::Database>> databases = openAll(paths);
  if (!databases.ok())
    return report(makeError(databases.error()));
  std::vector<const db::Database *> pointers;
  for (const db::Database &database : *databases)
    pointers.push_back(&database);
  return report(action(pointers));
}

} // namespace

void addDbCommand(CLI::App &app) {
  auto options = std::make_shared<DbOptions>();
  CLI::App *db = app.add_subcommand("db", "inspect and maintain kernel databases");
  db->require_subcommand(1);

  CLI::App *ls = db->add_subcommand("ls", "problems, kernels and M ranges per device");
  ls->add_option("databases", options->paths, "database files (highest precedence first)")
      ->required();
  ls->callback([options] {
    setExitCode(withDatabases(options->paths, [](auto &dbs) { return db::listText(dbs); }));
  });

  CLI::App *show = db->add_subcommand("show", "one kernel or problem, by id or id prefix");
  show->add_option("id", options->id)->required();
  show->add_option("databases", options->paths)->required();
  show->callback([options] {
    setExitCode(withDatabases(options->paths, [&](auto &dbs) {
      return db::showText(dbs, options->id);
    }));
  });

  CLI::App *explain = db->add_subcommand(
      "explain", "which kernel serves M for a problem on this GPU, and from which tier");
  explain->add_option("--problem", options->problem, "problem id or prefix")->required();
  explain->add_option("--m", options->m, "rows of X")->required();
  explain->add_option("databases", options->paths)->required();
  explain->callback([options] {
    Expected<db::DeviceFingerprint> device = db::readFingerprint();
    if (!device.ok()) {
      std::cerr << "lowbit db explain: " << device.error() << "\n";
      setExitCode(1);
      return;
    }
    setExitCode(withDatabases(options->paths, [&](auto &dbs) {
      return db::explainText(dbs, options->problem, *device, options->m);
    }));
  });

  CLI::App *heuristic = db->add_subcommand(
      "heuristic", "how close the untuned heuristic lands to the fastest measured kernels "
                   "(no GPU: the tuned device is in the database)");
  heuristic->add_flag("--defaults", options->defaultsOnly,
                      "choose among the default schedules' kernels only (what lowbit compile "
                      "gives an untuned device)");
  heuristic
      ->add_option("--tolerance", options->tolerance,
                   "a point counts as close when the heuristic's kernel takes at most this "
                   "times the fastest measured time")
      ->check(CLI::Range(1.0, 100.0))
      ->capture_default_str();
  heuristic->add_option("databases", options->paths, "tuned databases")->required();
  heuristic->callback([options] {
    setExitCode(withDatabases(options->paths, [&](auto &dbs) {
      return db::heuristicCheckText(dbs, {options->defaultsOnly, options->tolerance});
    }));
  });

  CLI::App *merge = db->add_subcommand(
      "merge", "merge databases into DEST, keeping the better measured result");
  merge->add_option("destination", options->destination)->required();
  merge->add_option("sources", options->paths)->required();
  merge->callback([options] {
    Expected<db::Database> destination = db::Database::open(options->destination);
    if (!destination.ok()) {
      setExitCode(report(makeError(destination.error())));
      return;
    }
    for (const std::string &note : destination->notes())
      std::cerr << options->destination << ": " << note << "\n";
    Expected<std::vector<db::MergeReport>> merged = db::mergeFiles(*destination, options->paths);
    if (!merged.ok()) {
      setExitCode(report(makeError(merged.error())));
      return;
    }
    for (const db::MergeReport &one : *merged)
      std::cout << one.text();
    setExitCode(0);
  });

  CLI::App *exportCommand = db->add_subcommand("export", "a consistent copy of a database");
  exportCommand->add_option("source", options->id)->required();
  exportCommand->add_option("destination", options->destination)->required();
  exportCommand->callback([options] {
    Expected<std::vector<db::Database>> source = openAll({options->id});
    if (!source.ok()) {
      setExitCode(report(makeError(source.error())));
      return;
    }
    Status exported = db::exportDatabase(source->front(), options->destination);
    setExitCode(report(exported.ok() ? Expected<std::string>("exported to " +
                                                            options->destination + "\n")
                                     : Expected<std::string>(makeError(exported.error()))));
  });

  CLI::App *doctor = db->add_subcommand("doctor", "integrity and consistency check");
  doctor->add_option("database", options->id)->required();
  doctor->callback([options] {
    db::DoctorReport result = db::doctor(options->id);
    std::cout << result.text();
    setExitCode(result.healthy ? 0 : 1);
  });
}

} // namespace lowbit::cli

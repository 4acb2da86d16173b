// The operations behind `lowbit db <subcommand>`. Each returns text (or a
// report) for the CLI to print; none prints, exits or throws.
#pragma once

#include "core/support/Expected.h"
#include "tuning_db/Catalog.h"
#include "tuning_db/Database.h"
#include "tuning_db/Fingerprint.h"

#include <string>
#include <vector>

namespace lowbit::db {

// `ls`: per database, its problems with their kernels and, per device, the
// dispatch ranges; then the devices.
Expected<std::string> listText(const std::vector<const Database *> &databases);

// `show ID`: a kernel, problem or device by full id or unique prefix (at
// least 4 hex digits), searched in every database.
Expected<std::string> showText(const std::vector<const Database *> &databases,
                               const std::string &idOrPrefix);

// `explain --problem P --m N`: the kernel chosen for M on `device`, its range,
// the tier that answered and any entries skipped on the way. P may be a
// unique prefix of a problem id.
Expected<std::string> explainText(const std::vector<const Database *> &databases,
                                  const std::string &problemId, const DeviceFingerprint &device,
                                  int64_t m);

// `heuristic`: for each device with measurements in the databases, and
// each problem and M measured on it, the kernel the built-in heuristic picks
// (db::resolveUntuned: as if nothing had been measured; with `defaultsOnly`
// from the default schedules' kernels only, what `lowbit compile` gives an
// untuned device), its measured time against the fastest measured kernel's,
// and how many points land within `tolerance` of it. A pick that only
// failed the reference check is named as such, and a problem with no kernel
// the heuristic may pick gets a row saying so. Needs no GPU: the device's
// fingerprint is in the database.
struct HeuristicCheckOptions {
  bool defaultsOnly = false;
  double tolerance = 1.15;
};
Expected<std::string> heuristicCheckText(const std::vector<const Database *> &databases,
                                         const HeuristicCheckOptions &options);

// `merge`: copies rows from other databases into `destination`, one
// transaction per source. Problems, devices and kernels are added when
// missing (ids are verified, never recomputed). For each (kernel, device, M)
// the source's best result (passing beats failing, then lowest median) is
// added only when it beats the destination's best; worse rows are not
// copied. A dispatch table is copied when the destination has none for that
// (problem, device); when both have different tables, the destination's is
// kept and the conflict reported: choosing ranges is the tuner's job.
struct MergeReport {
  std::string source;
  int problemsAdded = 0;
  int devicesAdded = 0;
  int kernelsAdded = 0;
  int resultsAdded = 0;    // source result better than the destination's best
  int resultsKept = 0;     // destination already as good or better
  int dispatchAdded = 0;
  int dispatchSame = 0;
  int candidateFailuresAdded = 0; // copied, replacing the destination's record of the same one
  std::vector<std::string> conflicts; // rows not merged, and why

  std::string text() const;
};
Expected<MergeReport> mergeFrom(Database &destination, const Database &source);
// Opens each path read-only and merges it; stops at the first failure.
Expected<std::vector<MergeReport>> mergeFiles(Database &destination,
                                              const std::vector<std::string> &sourcePaths);

// `export`: a consistent single-file copy (VACUUM INTO, in rollback-journal
// mode so it can ship as a read-only system database). Refuses to overwrite.
Status exportDatabase(const Database &source, const std::string &destinationPath);

// `doctor`: integrity_check, schema version, dangling references, kernel ids
// that are not the sha256 of their cubin, malformed dispatch tables, kernels
// without launch configuration. Never modifies the file.
struct DoctorReport {
  bool healthy = false;              // no errors (warnings allowed)
  std::vector<std::string> errors;   // the file or a row cannot be trusted
  std::vector<std::string> warnings; // usable, but worth attention
  std::vector<std::string> info;     // counts, versions

  std::string text() const;
};
DoctorReport doctor(const std::string &path);

} // namespace lowbit::db

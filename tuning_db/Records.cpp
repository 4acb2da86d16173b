#include "tuning_db/Records.h"

#include "tuning_db/Sha256.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace lowbit::db {

std::string problemIdForSignature(const std::string &signature) { return sha256Hex(signature); }

bool betterResult(const ResultRecord &a, const ResultRecord &b) {
  if (a.passed != b.passed)
    return a.passed;
  return a.medianUs < b.medianUs;
}

std::string formatRange(int64_t lo, std::optional<int64_t> hi) {
  return "[" + std::to_string(lo) + ", " + (hi ? std::to_string(*hi) : std::string("inf")) + ")";
}

Status validateRanges(const std::vector<DispatchRange> &input) {
  if (input.empty())
    return makeError("invalid dispatch ranges: none given; they must cover every M >= 1");
  std::vector<DispatchRange> ranges = input;
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const DispatchRange &a, const DispatchRange &b) { return a.mLo < b.mLo; });
  if (ranges.front().mLo != 1)
    return makeError("invalid dispatch ranges: the first range starts at M = " +
                     std::to_string(ranges.front().mLo) + ", it must start at 1");
  for (size_t i = 0; i < ranges.size(); ++i) {
    const DispatchRange &r = ranges[i];
    std::string which = "range " + formatRange(r.mLo, r.mHi);
    if (r.kernelId.empty())
      return makeError("invalid dispatch ranges: " + which + " has no kernel");
    bool last = i + 1 == ranges.size();
    if (!r.mHi) {
      if (!last)
        return makeError("invalid dispatch ranges: " + which +
                         " is open-ended but is not the last range");
      continue;
    }
    if (*r.mHi <= r.mLo)
      return makeError("invalid dispatch ranges: " + which + " is empty");
    if (last)
      return makeError("invalid dispatch ranges: the last range " + which +
                       " must be open-ended (no upper bound) so every M is covered");
    const DispatchRange &next = ranges[i + 1];
    if (next.mLo < *r.mHi)
      return makeError("invalid dispatch ranges: " + which + " overlaps " +
                       formatRange(next.mLo, next.mHi));
    if (next.mLo > *r.mHi)
      return makeError("invalid dispatch ranges: M in " + formatRange(*r.mHi, next.mLo) +
                       " is not covered");
  }
  return Status::success();
}

Expected<Arch> parseArch(const std::string &arch) {
  auto bad = [&] {
    return makeError("invalid arch `" + arch + "`: expected sm_<digits> with an optional "
                                               "`a` suffix, such as sm_80 or sm_90a");
  };
  if (arch.size() < 5 || arch.compare(0, 3, "sm_") != 0)
    return bad();
  size_t end = arch.size();
  Arch result;
  if (arch.back() == 'a') {
    result.archSpecific = true;
    --end;
  }
  if (end - 3 > 4)
    return bad();
  for (size_t i = 3; i < end; ++i) {
    if (arch[i] < '0' || arch[i] > '9')
      return bad();
    result.number = result.number * 10 + (arch[i] - '0');
  }
  return result;
}

std::optional<core::Schedule> kernelSchedule(const KernelRecord &kernel) {
  nlohmann::json record = nlohmann::json::parse(kernel.scheduleJson, nullptr, false);
  if (!record.is_object() || !record.contains("schedule") || !record["schedule"].is_string())
    return std::nullopt;
  Expected<core::Schedule> schedule = core::parseSchedule(record["schedule"].get<std::string>());
  return schedule ? std::optional<core::Schedule>(*schedule) : std::nullopt;
}

} // namespace lowbit::db

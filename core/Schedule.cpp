#include "core/Schedule.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>
#include <vector>

namespace lowbit::core {

const char *familyName(Family family) {
  switch (family) {
  case Family::Gemv: return "gemv";
  case Family::Mma: return "mma";
  case Family::GemvTiled: return "gemv_tiled";
  case Family::Wgmma: return "wgmma";
  case Family::Dequant: return "dequant";
  }
  return "?";
}

Expected<Family> parseFamily(const std::string &name) {
  if (name == "gemv")
    return Family::Gemv;
  if (name == "mma")
    return Family::Mma;
  if (name == "gemv_tiled")
    return Family::GemvTiled;
  if (name == "wgmma")
    return Family::Wgmma;
  if (name == "dequant")
    return Family::Dequant;
  return makeError("unknown kernel family '" + name +
                   "' (known: gemv, gemv_tiled, mma, wgmma and dequant)");
}

const char *tileSchedulerName(TileScheduler scheduler) {
  switch (scheduler) {
  case TileScheduler::Grid: return "grid";
  case TileScheduler::Persistent: return "persistent";
  case TileScheduler::StreamK: return "stream_k";
  }
  return "?";
}

Expected<TileScheduler> parseTileScheduler(const std::string &name) {
  if (name == "grid")
    return TileScheduler::Grid;
  if (name == "persistent")
    return TileScheduler::Persistent;
  if (name == "stream_k")
    return TileScheduler::StreamK;
  return makeError("unknown tile scheduler '" + name + "' (known: grid, persistent and stream_k)");
}

std::string Schedule::text() const {
  std::ostringstream os;
  os << "#lb.schedule<family = " << familyName(family) << ", tile = [" << tileM << ", " << tileN
     << ", " << tileK << "], warps = [" << warpsM << ", " << warpsN << "], stages = " << stages
     << ", split_k = " << splitK;
  if (clusterK != 1)
    os << ", cluster_k = " << clusterK;
  if (scheduler != TileScheduler::Grid)
    os << ", scheduler = " << tileSchedulerName(scheduler);
  os << ">";
  return os.str();
}

namespace {

std::string stripSpaces(const std::string &text) {
  std::string out;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c)))
      out += c;
  return out;
}

Expected<std::vector<int64_t>> parseIntegers(const std::string &text) {
  std::vector<int64_t> values;
  std::string body = text;
  if (body.size() >= 2 && body.front() == '[' && body.back() == ']')
    body = body.substr(1, body.size() - 2);
  std::stringstream stream(body);
  std::string item;
  while (std::getline(stream, item, ',')) {
    if (item.empty())
      return makeError("empty number in '" + text + "'");
    size_t used = 0;
    int64_t value = 0;
    try {
      value = std::stoll(item, &used);
    } catch (...) {
      used = 0;
    }
    if (used != item.size())
      return makeError("'" + item + "' is not an integer");
    values.push_back(value);
  }
  return values;
}

// Splits "a=1,tile=[1,2,3],b=x" at the commas outside brackets.
std::vector<std::string> splitFields(const std::string &body) {
  std::vector<std::string> fields;
  std::string current;
  int depth = 0;
  for (char c : body) {
    if (c == '[')
      ++depth;
    if (c == ']')
      --depth;
    if (c == ',' && depth == 0) {
      fields.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty())
    fields.push_back(current);
  return fields;
}

} // namespace

Expected<Schedule> parseSchedule(const std::string &text) {
  const std::string prefix = "#lb.schedule<";
  std::string compact = stripSpaces(text);
  auto bad = [&](const std::string &why) { return makeError("bad schedule '" + text + "': " + why); };
  if (compact.compare(0, prefix.size(), prefix) != 0 || compact.back() != '>')
    return bad("expected #lb.schedule<...>");
  std::string body = compact.substr(prefix.size(), compact.size() - prefix.size() - 1);

  std::map<std::string, std::string> values;
  for (const std::string &field : splitFields(body)) {
    size_t eq = field.find('=');
    if (eq == std::string::npos)
      return bad("field '" + field + "' has no '='");
    if (!values.emplace(field.substr(0, eq), field.substr(eq + 1)).second)
      return bad("field '" + field.substr(0, eq) + "' appears twice");
  }
  for (const char *required : {"family", "tile", "warps", "stages"})
    if (!values.count(required))
      return bad(std::string("missing '") + required + "'");

  Schedule s;
  auto family = parseFamily(values["family"]);
  if (!family)
    return bad(family.error());
  s.family = *family;
  for (const auto &[key, value] : values) {
    if (key == "family")
      continue;
    if (key == "scheduler") {
      auto scheduler = parseTileScheduler(value);
      if (!scheduler)
        return bad(scheduler.error());
      s.scheduler = *scheduler;
      continue;
    }
    auto numbers = parseIntegers(value);
    if (!numbers)
      return bad(key + ": " + numbers.error());
    const std::vector<int64_t> &n = *numbers;
    if (key == "tile" && n.size() == 3) {
      s.tileM = n[0], s.tileN = n[1], s.tileK = n[2];
    } else if (key == "warps" && n.size() == 2) {
      s.warpsM = n[0], s.warpsN = n[1];
    } else if (key == "stages" && n.size() == 1) {
      s.stages = n[0];
    } else if (key == "split_k" && n.size() == 1) {
      s.splitK = n[0];
    } else if (key == "cluster_k" && n.size() == 1) {
      s.clusterK = n[0];
    } else {
      return bad("unexpected field or arity: '" + key + " = " + value + "'");
    }
  }
  return s;
}

// The runtime's built-in heuristic (no tuned table) takes, per M band, the
// kernel whose tile M suits the band (tuning_db/Lookup.cpp): the 8-row
// split-K mma for M <= 8, the 16-row one up to 256. gemv_tiled, the split-K
// mma and the staged mma share one weight layout, so a plan built from them
// serves every M from one packed copy. The cluster_k ones (sm_90 and up)
// are what the heuristic takes when N gives fewer column tiles than SMs;
// the wgmma ones split K so that M = 64 fills the SMs on sm_90a (H100,
// 2026-12-06: 28672 x 8192 106 -> 75 us, 8192 x 8192 101 -> 41 us), and
// the tile-sharing one (tile N 256 over two warpgroups, tile M 128) is the
// large-M one, with K split across clusters of 2 at tile M 128 and 64 for
// N of 8192 and less (H100, M = 256: 4096 x 14336 115 -> 73 us, 8192 x
// 8192 70 -> 62, 4096 x 4096 31 -> 25). (Tile M 96 stays in the tuner's
// space only: the untuned heuristic took it for 6144 x 4096 at M = 1024
// and it ran 197 us, 0.36x cuBLAS, on an H100.)
// The gemv ones with 2 or 4 rows of W a warp are the fastest at M = 1 and 2
// on the H200 (docs/measurements, 2026-12-03 gemv rows), through a table or
// a plan that fixes the gemv layout.
const std::vector<Schedule> &defaultSchedules() {
  // One schedule a line, whole, so each reads (and greps) as the dialect spells it.
  // clang-format off
  static const char *const texts[] = {
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 2, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 2, split_k = 16>",
      "#lb.schedule<family = gemv_tiled, tile = [2, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [4, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = gemv_tiled, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 4>",
      "#lb.schedule<family = mma, tile = [16, 64, 256], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 8>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 16>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 8>",
      "#lb.schedule<family = mma, tile = [8, 64, 128], warps = [1, 1], stages = 1, split_k = 16>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 8, cluster_k = 2>",
      "#lb.schedule<family = mma, tile = [8, 64, 256], warps = [1, 1], stages = 1, split_k = 4, cluster_k = 4>",
      "#lb.schedule<family = mma, tile = [16, 64, 128], warps = [1, 1], stages = 2, split_k = 8, cluster_k = 2>",
      "#lb.schedule<family = mma, tile = [16, 128, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = mma, tile = [16, 128, 128], warps = [1, 1], stages = 2, split_k = 4>",
      "#lb.schedule<family = mma, tile = [32, 64, 128], warps = [1, 1], stages = 1, split_k = 4>",
      "#lb.schedule<family = mma, tile = [32, 128, 128], warps = [1, 1], stages = 1, split_k = 2>",
      "#lb.schedule<family = mma, tile = [64, 128, 64], warps = [2, 2], stages = 3, split_k = 1>",
      "#lb.schedule<family = mma, tile = [128, 128, 64], warps = [4, 2], stages = 2, split_k = 1>",
      "#lb.schedule<family = wgmma, tile = [64, 512, 64], warps = [1, 8], stages = 8, split_k = 1>",
      "#lb.schedule<family = wgmma, tile = [48, 512, 64], warps = [1, 8], stages = 8, split_k = 1>",
      "#lb.schedule<family = wgmma, tile = [32, 512, 64], warps = [1, 8], stages = 8, split_k = 1>",
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 4], stages = 8, split_k = 1>",
      "#lb.schedule<family = wgmma, tile = [64, 512, 64], warps = [1, 8], stages = 8, split_k = 1, cluster_k = 2>",
      "#lb.schedule<family = wgmma, tile = [64, 512, 64], warps = [1, 8], stages = 6, split_k = 1, cluster_k = 4>",
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 4], stages = 8, split_k = 1, cluster_k = 4>",
      "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, 8], stages = 8, split_k = 1>",
      "#lb.schedule<family = wgmma, tile = [128, 256, 64], warps = [1, 8], stages = 4, split_k = 1, cluster_k = 2>",
      "#lb.schedule<family = wgmma, tile = [64, 256, 64], warps = [1, 8], stages = 8, split_k = 1, cluster_k = 2>",
      "#lb.schedule<family = gemv, tile = [1, 4, 4096], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [1, 16, 4096], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [1, 16, 2048], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [1, 8, 8192], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [2, 16, 2048], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = gemv, tile = [4, 4, 2048], warps = [1, 4], stages = 1, split_k = 1>",
      "#lb.schedule<family = dequant, tile = [1, 64, 128], warps = [1, 1], stages = 1, split_k = 8>",
  };
  // clang-format on
  // ScheduleTest checks that every text parses, so none is dropped here.
  static const std::vector<Schedule> schedules = [] {
    std::vector<Schedule> parsed;
    for (const char *text : texts)
      if (Expected<Schedule> schedule = parseSchedule(text))
        parsed.push_back(*schedule);
    return parsed;
  }();
  return schedules;
}

bool isDefaultSchedule(const Schedule &schedule) {
  const std::vector<Schedule> &defaults = defaultSchedules();
  return std::find(defaults.begin(), defaults.end(), schedule) != defaults.end();
}

} // namespace lowbit::core

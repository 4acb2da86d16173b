#include "compiler/tuner/Ranges.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <sstream>

namespace lowbit::tuner {

std::vector<int64_t> defaultMPoints() {
  return {1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096};
}

namespace {

Expected<int64_t> parsePositive(const std::string &text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos ||
      text.size() > 12)
    return makeError("'" + text + "' is not a positive integer");
  int64_t v = std::stoll(text);
  if (v < 1)
    return makeError("M must be >= 1, got " + text);
  return v;
}

} // namespace

Expected<std::vector<int64_t>> parseMPoints(const std::string &text) {
  std::set<int64_t> values;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    item.erase(std::remove_if(item.begin(), item.end(), ::isspace), item.end());
    size_t dash = item.find('-');
    if (dash == std::string::npos) {
      auto v = parsePositive(item);
      if (!v)
        return makeError("M points '" + text + "': " + v.error());
      values.insert(*v);
      continue;
    }
    auto lo = parsePositive(item.substr(0, dash));
    auto hi = parsePositive(item.substr(dash + 1));
    if (!lo || !hi)
      return makeError("M points '" + text + "': " + (!lo ? lo.error() : hi.error()));
    if (*lo > *hi)
      return makeError("M points '" + text + "': range " + item + " is empty");
    for (int64_t m = *lo; m <= *hi; m *= 2)
      values.insert(m);
  }
  if (values.empty())
    return makeError("M points '" + text + "': no values");
  return std::vector<int64_t>(values.begin(), values.end());
}

namespace {

// Best passing median per (M, kernel).
using Table = std::map<int64_t, std::map<std::string, double>>;

Table tabulate(const std::vector<TimedPoint> &points) {
  Table table;
  for (const TimedPoint &p : points) {
    if (!p.passed || !(p.medianUs > 0) || p.m < 1)
      continue;
    auto [it, inserted] = table[p.m].emplace(p.kernelId, p.medianUs);
    if (!inserted)
      it->second = std::min(it->second, p.medianUs);
  }
  return table;
}

double bestAt(const std::map<std::string, double> &row) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto &[kernel, us] : row)
    best = std::min(best, us);
  return best;
}

struct Run {
  std::string kernel;
  size_t first = 0, last = 0; // indices into the measured M points
};

// The first M of run B's range (rule 3 in Ranges.h).
int64_t boundary(const Table &table, int64_t a, int64_t b, const std::string &kernelA,
                 const std::string &kernelB) {
  const auto &rowA = table.at(a), &rowB = table.at(b);
  auto has = [](const std::map<std::string, double> &row, const std::string &k) {
    return row.count(k) > 0;
  };
  int64_t chosen = static_cast<int64_t>(std::ceil(std::sqrt(double(a) * double(b))));
  if (has(rowA, kernelA) && has(rowA, kernelB) && has(rowB, kernelA) && has(rowB, kernelB)) {
    // d(m) = tA(m) - tB(m) on straight lines between a and b; B takes over
    // where d turns positive.
    double da = rowA.at(kernelA) - rowA.at(kernelB);
    double db = rowB.at(kernelA) - rowB.at(kernelB);
    if (da <= 0 && db > 0) {
      double crossing = double(a) + double(b - a) * (-da) / (db - da);
      chosen = static_cast<int64_t>(std::floor(crossing)) + 1;
    }
  }
  return std::clamp(chosen, a + 1, b);
}

} // namespace

Expected<std::vector<db::DispatchRange>> deriveRanges(const std::vector<TimedPoint> &points,
                                                      const RangeOptions &options) {
  if (options.tolerance < 0)
    return makeError("range tolerance must be >= 0");
  Table table = tabulate(points);
  if (table.empty())
    return makeError("no passing measurements to derive dispatch ranges from");
  std::vector<int64_t> ms;
  std::vector<double> best;
  for (const auto &[m, row] : table) {
    ms.push_back(m);
    best.push_back(bestAt(row));
  }
  auto acceptable = [&](size_t i, const std::string &kernel) {
    const auto &row = table.at(ms[i]);
    auto it = row.find(kernel);
    return it != row.end() && it->second <= best[i] * (1 + options.tolerance);
  };

  // Rule 2: greedy runs, each as long as possible.
  std::vector<Run> runs;
  for (size_t i = 0; i < ms.size();) {
    Run chosen;
    size_t chosenReach = 0;
    double chosenMeanRatio = 0;
    for (const auto &[kernel, us] : table.at(ms[i])) {
      if (!acceptable(i, kernel))
        continue;
      size_t reach = i;
      while (reach + 1 < ms.size() && acceptable(reach + 1, kernel))
        ++reach;
      double ratioSum = 0;
      for (size_t j = i; j <= reach; ++j)
        ratioSum += table.at(ms[j]).at(kernel) / best[j];
      double meanRatio = ratioSum / double(reach - i + 1);
      // Kernels come in id order, so strict comparisons keep the smaller id.
      bool better = chosen.kernel.empty() || reach > chosenReach ||
                    (reach == chosenReach && meanRatio < chosenMeanRatio);
      if (better) {
        chosen = {kernel, i, reach};
        chosenReach = reach;
        chosenMeanRatio = meanRatio;
      }
    }
    runs.push_back(chosen);
    i = chosen.last + 1;
  }

  // Rules 3 and 4.
  std::vector<db::DispatchRange> ranges;
  for (size_t r = 0; r < runs.size(); ++r) {
    db::DispatchRange range;
    range.kernelId = runs[r].kernel;
    range.mLo = r == 0 ? 1 : *ranges.back().mHi;
    if (r + 1 < runs.size())
      range.mHi = boundary(table, ms[runs[r].last], ms[runs[r + 1].first], runs[r].kernel,
                           runs[r + 1].kernel);
    if (!ranges.empty() && ranges.back().kernelId == range.kernelId) {
      ranges.back().mHi = range.mHi;
      continue;
    }
    ranges.push_back(range);
  }
  if (Status valid = db::validateRanges(ranges); !valid)
    return makeError("derived dispatch ranges are invalid (a tuner bug): " + valid.error());
  return ranges;
}

std::vector<RangeCheck> checkRanges(const std::vector<db::DispatchRange> &ranges,
                                    const std::vector<TimedPoint> &points) {
  std::vector<RangeCheck> checks;
  for (const auto &[m, row] : tabulate(points)) {
    RangeCheck c;
    c.m = m;
    double best = std::numeric_limits<double>::infinity();
    for (const auto &[kernel, us] : row)
      if (us < best)
        best = us, c.best = kernel;
    c.bestUs = best;
    for (const db::DispatchRange &r : ranges)
      if (r.contains(m))
        c.chosen = r.kernelId;
    auto it = row.find(c.chosen);
    if (it != row.end())
      c.chosenUs = it->second;
    c.ratio = it == row.end() ? std::numeric_limits<double>::infinity() : it->second / best;
    checks.push_back(c);
  }
  return checks;
}

} // namespace lowbit::tuner

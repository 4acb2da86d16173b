// Sweep progress for people: candidates done of total, the ETA, and the best
// kernels so far against cuBLAS. On a terminal one bar is rewritten in place
// with '\r'; into a log file (or CI) a plain line is written at most every
// `lineIntervalSeconds` and on the last update, so logs stay short.
#pragma once

#include "compiler/tuner/Sweep.h"

#include <ostream>
#include <string>

namespace lowbit::tuner {

// "[#######.............]  7/20 candidates  35%  ETA 2m05s  vs cuBLAS 1.84x (worst 0.97x)  p · k · M=16"
// without the bar and the current item when `withBar` is false.
std::string formatProgressLine(const SweepProgress &progress, bool withBar, int barWidth = 20);

// "1h02m", "2m05s", "9s"; "?" for an unknown (negative) duration.
std::string formatDuration(double seconds);

// Seconds left, from the pace of this invocation's measurements; negative
// when nothing was measured yet (so there is no pace).
double estimateRemainingSeconds(const SweepProgress &progress);

class ProgressPrinter : public SweepObserver {
public:
  ProgressPrinter(std::ostream &out, bool isTty, double lineIntervalSeconds = 10)
      : out_(out), isTty_(isTty), lineIntervalSeconds_(lineIntervalSeconds) {}
  void onProgress(const SweepProgress &progress) override;
  // Ends the bar's line on a terminal; call once after the sweep.
  void finish();

private:
  std::ostream &out_;
  bool isTty_;
  double lineIntervalSeconds_;
  double lastLineAt_ = -1;
  size_t lastWidth_ = 0;
  bool barShown_ = false;
};

} // namespace lowbit::tuner

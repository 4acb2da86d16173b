#include "compiler/tuner/Progress.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace lowbit::tuner {

std::string formatDuration(double seconds) {
  if (seconds < 0 || !std::isfinite(seconds))
    return "?";
  long total = static_cast<long>(std::lround(seconds));
  long h = total / 3600, m = total % 3600 / 60, s = total % 60;
  char text[32];
  if (h > 0)
    std::snprintf(text, sizeof text, "%ldh%02ldm", h, m);
  else if (m > 0)
    std::snprintf(text, sizeof text, "%ldm%02lds", m, s);
  else
    std::snprintf(text, sizeof text, "%lds", s);
  return text;
}

double estimateRemainingSeconds(const SweepProgress &p) {
  // Skipped (resumed) points cost nothing, so the pace is this invocation's
  // measurements only.
  if (p.measuredNow <= 0 || p.elapsedSeconds <= 0)
    return -1;
  double perPoint = p.elapsedSeconds / double(p.measuredNow);
  return perPoint * double(std::max<int64_t>(0, p.pointsTotal - p.pointsDone));
}

std::string formatProgressLine(const SweepProgress &p, bool withBar, int barWidth) {
  std::ostringstream os;
  double fraction = p.pointsTotal > 0 ? double(p.pointsDone) / double(p.pointsTotal) : 1.0;
  if (withBar) {
    int filled = static_cast<int>(fraction * barWidth);
    os << '[' << std::string(size_t(filled), '#') << std::string(size_t(barWidth - filled), '.')
       << "]  ";
  }
  os << p.candidatesDone << '/' << p.candidatesTotal << " candidates  "
     << static_cast<int>(fraction * 100) << "%  ETA "
     << (p.pointsDone >= p.pointsTotal ? std::string("0s")
                                       : formatDuration(estimateRemainingSeconds(p)));
  if (p.geomeanSpeedup) {
    char text[64];
    std::snprintf(text, sizeof text, "  vs cuBLAS %.2fx (worst %.2fx)", *p.geomeanSpeedup,
                  p.worstSpeedup.value_or(*p.geomeanSpeedup));
    os << text;
  }
  if (!p.current.empty())
    os << "  " << p.current;
  return os.str();
}

void ProgressPrinter::onProgress(const SweepProgress &p) {
  if (isTty_) {
    std::string line = formatProgressLine(p, true);
    // Pad over the previous line's tail: '\r' moves back but does not erase.
    size_t width = line.size();
    if (width < lastWidth_)
      line += std::string(lastWidth_ - width, ' ');
    lastWidth_ = width;
    out_ << '\r' << line << std::flush;
    barShown_ = true;
    return;
  }
  bool last = p.finished || p.pointsDone >= p.pointsTotal;
  if (lastLineAt_ >= 0 && p.elapsedSeconds - lastLineAt_ < lineIntervalSeconds_ && !last)
    return;
  lastLineAt_ = p.elapsedSeconds;
  out_ << formatProgressLine(p, false) << '\n';
}

void ProgressPrinter::finish() {
  if (isTty_ && barShown_)
    out_ << '\n' << std::flush;
  barShown_ = false;
}

} // namespace lowbit::tuner

#include "compiler/tuner/Report.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

namespace lowbit::tuner {

std::vector<ReportRow> reportRows(const std::vector<BestPoint> &best, double copyGBs) {
  std::vector<ReportRow> rows;
  for (const BestPoint &b : best) {
    ReportRow r;
    r.problem = b.problem.name.empty() ? b.problemId.substr(0, 12) : b.problem.name;
    r.problemId = b.problemId;
    r.n = b.problem.n;
    r.k = b.problem.k;
    r.m = b.m;
    r.kernelId = b.kernelId;
    r.schedule = b.schedule;
    r.medianUs = b.medianUs;
    double bytes = idealBytes(b.problem, b.m).total();
    double flops = problemFlops(b.problem, b.m);
    if (b.medianUs > 0) {
      r.gbps = bytes / b.medianUs / 1e3;   // bytes per µs = MB/s
      r.tflops = flops / b.medianUs / 1e6; // flops per µs = MFLOP/s
    }
    r.copyFraction = copyGBs > 0 ? r.gbps / copyGBs : 0;
    r.intensity = bytes > 0 ? flops / bytes : 0;
    r.cublasUs = b.referenceUs;
    if (b.referenceUs && b.medianUs > 0)
      r.speedup = *b.referenceUs / b.medianUs;
    if (!b.servedKernelId.empty()) {
      r.servedKernelId = b.servedKernelId;
      r.servedUs = b.servedUs;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

namespace {

std::string csvField(const std::string &value) {
  if (value.find_first_of(",\"\n\r") == std::string::npos)
    return value;
  std::string quoted = "\"";
  for (char c : value)
    quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string number(double v, int precision = 4) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*g", precision + 2, v);
  return text;
}

std::string optionalNumber(const std::optional<double> &v) { return v ? number(*v) : ""; }

} // namespace

void writeCsv(const std::vector<ReportRow> &rows, std::ostream &out) {
  out << "problem,problem_id,n,k,m,kernel,schedule,median_us,gbps,copy_pct,tflops,cublas_us,"
         "speedup,served_kernel,served_us\n";
  for (const ReportRow &r : rows)
    out << csvField(r.problem) << ',' << r.problemId << ',' << r.n << ',' << r.k << ',' << r.m
        << ',' << r.kernelId << ',' << csvField(r.schedule) << ',' << number(r.medianUs) << ','
        << number(r.gbps) << ',' << number(r.copyFraction * 100) << ',' << number(r.tflops)
        << ',' << optionalNumber(r.cublasUs) << ',' << optionalNumber(r.speedup) << ','
        << r.servedKernelId << ',' << optionalNumber(r.servedUs) << '\n';
}

void writeJson(const std::vector<ReportRow> &rows, double copyGBs, std::ostream &out,
               const std::vector<FailedCandidate> &failed) {
  nlohmann::json doc;
  doc["copy_gbs"] = copyGBs;
  doc["rows"] = nlohmann::json::array();
  for (const ReportRow &r : rows) {
    nlohmann::json j = {{"problem", r.problem},   {"problem_id", r.problemId},
                        {"n", r.n},               {"k", r.k},
                        {"m", r.m},               {"kernel", r.kernelId},
                        {"schedule", r.schedule}, {"median_us", r.medianUs},
                        {"gbps", r.gbps},         {"copy_pct", r.copyFraction * 100},
                        {"tflops", r.tflops},     {"intensity", r.intensity}};
    j["cublas_us"] = r.cublasUs ? nlohmann::json(*r.cublasUs) : nlohmann::json(nullptr);
    j["speedup"] = r.speedup ? nlohmann::json(*r.speedup) : nlohmann::json(nullptr);
    j["served_kernel"] =
        r.servedKernelId.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.servedKernelId);
    j["served_us"] = r.servedUs ? nlohmann::json(*r.servedUs) : nlohmann::json(nullptr);
    doc["rows"].push_back(std::move(j));
  }
  doc["failed_candidates"] = nlohmann::json::array();
  for (const FailedCandidate &f : failed)
    doc["failed_candidates"].push_back({{"problem", f.problem},
                                        {"problem_id", f.record.problemId},
                                        {"arch", f.record.arch},
                                        {"schedule", f.record.schedule},
                                        {"entry", f.record.entry},
                                        {"stage", f.record.stage},
                                        {"reason", f.record.reason}});
  out << doc.dump(2) << '\n';
}

namespace {

std::string xmlEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

const char *color(size_t i) {
  static const char *palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                  "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"};
  return palette[i % (sizeof palette / sizeof palette[0])];
}

// A plot area and its axis mapping; `logX`/`logY` map through log2/log10.
struct Panel {
  double left, top, width, height;
  double x0, x1, y0, y1; // data range, in axis units (already logged)
  double px(double x) const { return left + (x - x0) / (x1 - x0) * width; }
  double py(double y) const { return top + height - (y - y0) / (y1 - y0) * height; }
};

void text(std::ostream &out, double x, double y, const std::string &s, const char *anchor = "middle",
          int size = 11) {
  out << "<text x=\"" << number(x) << "\" y=\"" << number(y) << "\" font-size=\"" << size
      << "\" text-anchor=\"" << anchor << "\">" << xmlEscape(s) << "</text>\n";
}

void line(std::ostream &out, double x1, double y1, double x2, double y2, const char *stroke,
          const char *extra = "") {
  out << "<line x1=\"" << number(x1) << "\" y1=\"" << number(y1) << "\" x2=\"" << number(x2)
      << "\" y2=\"" << number(y2) << "\" stroke=\"" << stroke << "\" " << extra << "/>\n";
}

void frame(std::ostream &out, const Panel &p, const std::string &title, const std::string &xLabel,
           const std::string &yLabel) {
  out << "<rect x=\"" << number(p.left) << "\" y=\"" << number(p.top) << "\" width=\""
      << number(p.width) << "\" height=\"" << number(p.height)
      << "\" fill=\"none\" stroke=\"#333\"/>\n";
  text(out, p.left + p.width / 2, p.top - 10, title, "middle", 13);
  text(out, p.left + p.width / 2, p.top + p.height + 34, xLabel);
  out << "<text x=\"" << number(p.left - 42) << "\" y=\"" << number(p.top + p.height / 2)
      << "\" font-size=\"11\" text-anchor=\"middle\" transform=\"rotate(-90 "
      << number(p.left - 42) << ' ' << number(p.top + p.height / 2) << ")\">"
      << xmlEscape(yLabel) << "</text>\n";
}

void polyline(std::ostream &out, const std::vector<std::pair<double, double>> &points,
              const char *stroke, const char *extra = "") {
  out << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"1.5\" " << extra
      << " points=\"";
  for (const auto &[x, y] : points)
    out << number(x) << ',' << number(y) << ' ';
  out << "\"/>\n";
}

void speedupPanel(std::ostream &out, const Panel &p,
                  const std::map<std::string, std::vector<const ReportRow *>> &byProblem,
                  const std::vector<std::string> &order) {
  frame(out, p, "speedup over cuBLAS f16", "M (log2)", "speedup (x)");
  for (int e = int(std::ceil(p.x0)); e <= int(std::floor(p.x1)); ++e) {
    line(out, p.px(e), p.top + p.height, p.px(e), p.top + p.height + 4, "#333");
    text(out, p.px(e), p.top + p.height + 16, std::to_string(int64_t(1) << e));
  }
  for (double y = 0; y <= p.y1 + 1e-9; y += p.y1 > 6 ? 1.0 : 0.5) {
    line(out, p.left - 4, p.py(y), p.left, p.py(y), "#333");
    text(out, p.left - 6, p.py(y) + 4, number(y, 1), "end");
  }
  line(out, p.left, p.py(1), p.left + p.width, p.py(1), "#888", "stroke-dasharray=\"4 3\"");
  text(out, p.left + p.width - 4, p.py(1) - 4, "cuBLAS", "end", 10);
  for (size_t i = 0; i < order.size(); ++i) {
    std::vector<std::pair<double, double>> points;
    for (const ReportRow *r : byProblem.at(order[i]))
      if (r->speedup)
        points.emplace_back(p.px(std::log2(double(r->m))), p.py(*r->speedup));
    if (points.empty())
      continue;
    polyline(out, points, color(i));
    for (const auto &[x, y] : points)
      out << "<circle cx=\"" << number(x) << "\" cy=\"" << number(y) << "\" r=\"2.5\" fill=\""
          << color(i) << "\"/>\n";
  }
}

// The roofline's y value (TFLOP/s or GB/s) of a row, and of the roof at an
// intensity. GB/s x flop/B = GFLOP/s, hence the 1e3s.
double rooflineY(const SvgOptions &o, const ReportRow &r) {
  return o.roofline == Roofline::Flops ? r.tflops : r.gbps;
}
double roofAt(const SvgOptions &o, double intensity) {
  return o.roofline == Roofline::Flops
             ? std::min(o.peakTflops, intensity * o.copyGBs / 1e3)
             : std::min(o.copyGBs, o.peakTflops * 1e3 / intensity);
}

void rooflinePanel(std::ostream &out, const Panel &p, const SvgOptions &o,
                   const std::map<std::string, std::vector<const ReportRow *>> &byProblem,
                   const std::vector<std::string> &order) {
  const bool flops = o.roofline == Roofline::Flops;
  frame(out, p, flops ? "roofline" : "bandwidth roofline (copy kernel roof)",
        "flops per byte (log2)", flops ? "TFLOP/s (log10)" : "achieved GB/s (log10)");
  for (int e = int(std::ceil(p.x0)); e <= int(std::floor(p.x1)); e += 2)
    text(out, p.px(e), p.top + p.height + 16, number(std::pow(2.0, e), 3));
  for (int e = int(std::ceil(p.y0)); e <= int(std::floor(p.y1)); ++e)
    text(out, p.left - 6, p.py(e) + 4, number(std::pow(10.0, e), 3), "end");
  std::vector<std::pair<double, double>> roof;
  for (int i = 0; i <= 64; ++i) {
    double x = p.x0 + (p.x1 - p.x0) * i / 64.0;
    double y = std::clamp(std::log10(roofAt(o, std::pow(2.0, x))), p.y0, p.y1);
    roof.emplace_back(p.px(x), p.py(y));
  }
  polyline(out, roof, "#444", "stroke-dasharray=\"6 3\"");
  if (!flops)
    text(out, p.left + 4, p.py(std::clamp(std::log10(o.copyGBs), p.y0, p.y1)) - 4,
         "copy " + number(o.copyGBs, 2) + " GB/s", "start", 10);
  for (size_t i = 0; i < order.size(); ++i)
    for (const ReportRow *r : byProblem.at(order[i]))
      if (rooflineY(o, *r) > 0 && r->intensity > 0)
        out << "<circle cx=\"" << number(p.px(std::clamp(std::log2(r->intensity), p.x0, p.x1)))
            << "\" cy=\"" << number(p.py(std::clamp(std::log10(rooflineY(o, *r)), p.y0, p.y1)))
            << "\" r=\"3\" fill=\"" << color(i) << "\"/>\n";
}

} // namespace

void writeSvg(const std::vector<ReportRow> &rows, const SvgOptions &o, std::ostream &out) {
  std::map<std::string, std::vector<const ReportRow *>> byProblem;
  std::vector<std::string> order;
  double minM = 1, maxM = 2, maxSpeedup = 1.5, minIntensity = 1, maxIntensity = 2;
  // The roofline's y range: up to its ceiling, down to the slowest row.
  const double ceiling = o.roofline == Roofline::Flops ? o.peakTflops : o.copyGBs;
  double minY = o.roofline == Roofline::Flops ? 0.1 : 10, maxY = ceiling;
  bool first = true;
  for (const ReportRow &r : rows) {
    if (!byProblem.count(r.problem))
      order.push_back(r.problem);
    byProblem[r.problem].push_back(&r);
    if (first) {
      minM = maxM = double(r.m);
      minIntensity = maxIntensity = std::max(r.intensity, 1e-3);
      first = false;
    }
    minM = std::min(minM, double(r.m));
    maxM = std::max(maxM, double(r.m));
    if (r.speedup)
      maxSpeedup = std::max(maxSpeedup, *r.speedup);
    if (r.intensity > 0) {
      minIntensity = std::min(minIntensity, r.intensity);
      maxIntensity = std::max(maxIntensity, r.intensity);
    }
    if (rooflineY(o, r) > 0) {
      minY = std::min(minY, rooflineY(o, r));
      maxY = std::max(maxY, rooflineY(o, r));
    }
  }
  double mLo = std::floor(std::log2(std::max(1.0, minM)));
  double mHi = std::max(mLo + 1, std::ceil(std::log2(std::max(1.0, maxM))));
  double iLo = std::floor(std::log2(minIntensity)) - 1;
  double iHi = std::max(iLo + 2, std::ceil(std::log2(maxIntensity)) + 1);
  double tLo = std::floor(std::log10(minY));
  double tHi = std::ceil(std::log10(std::max(maxY, minY * 10)));

  double panelWidth = (o.width - 200) / 2.0, panelHeight = o.height - 150;
  Panel speed{70, 50, panelWidth, panelHeight, mLo, mHi, 0, std::ceil(maxSpeedup * 1.1 * 2) / 2};
  Panel roof{70 + panelWidth + 90, 50, panelWidth, panelHeight, iLo, iHi, tLo, tHi};

  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << o.width << "\" height=\""
      << o.height << "\" viewBox=\"0 0 " << o.width << ' ' << o.height
      << "\" font-family=\"sans-serif\">\n";
  out << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  text(out, o.width / 2.0, 20, o.title, "middle", 15);
  speedupPanel(out, speed, byProblem, order);
  rooflinePanel(out, roof, o, byProblem, order);
  // Legend under the panels, one entry per problem.
  double x = 70, y = o.height - 30;
  for (size_t i = 0; i < order.size(); ++i) {
    out << "<rect x=\"" << number(x) << "\" y=\"" << number(y - 9) << "\" width=\"10\" "
        << "height=\"10\" fill=\"" << color(i) << "\"/>\n";
    text(out, x + 14, y, order[i], "start");
    x += 24 + 7.0 * double(order[i].size());
  }
  out << "</svg>\n";
}

} // namespace lowbit::tuner

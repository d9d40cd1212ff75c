#include "svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <utility>

namespace tw::bench {
namespace {

// Colour-blind-safe palette (Okabe & Ito), cycled.
constexpr const char* kPalette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                    "#E69F00", "#56B4E9", "#F0E442", "#000000"};
constexpr size_t kPaletteSize = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr size_t kMaxMarkers = 200;  // per series; more points are drawn as a line only

// Plot-area margins, pixels. The right margin holds the legend.
constexpr double kLeft = 72, kRight = 180, kTop = 48, kBottom = 56;

std::string Escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // Control bytes are not allowed in XML 1.0 text.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n') {
          out += ' ';
        } else {
          out += c;
        }
    }
  }
  return out;
}

// A pixel coordinate: finite and bounded, two decimals.
std::string Px(double v) {
  if (!std::isfinite(v)) v = 0;
  v = std::clamp(v, -1e6, 1e6);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

// A tick label: up to 6 significant digits, no "-0".
std::string Label(double v) {
  if (v == 0 || std::fabs(v) < 1e-12) v = 0;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

struct Range {
  double lo = 0;
  double hi = 1;
};

bool Usable(double v, bool log_scale) { return std::isfinite(v) && (!log_scale || v > 0); }

// The axis range from the usable values, widened to whole ticks; fixed ends
// from the Axis win.
Range AxisRange(const std::vector<double>& values, const Axis& axis) {
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (!Usable(v, axis.log_scale)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  // A linear axis of non-negative data starts at 0, so bars and lines are not
  // read as bigger differences than they are.
  if (!axis.log_scale && lo <= hi && lo > 0) lo = 0;
  if (axis.min && Usable(*axis.min, axis.log_scale)) lo = *axis.min;
  if (axis.max && Usable(*axis.max, axis.log_scale)) hi = *axis.max;
  if (!(lo <= hi)) {  // no data
    lo = axis.log_scale ? 1 : 0;
    hi = axis.log_scale ? 10 : 1;
  }
  if (lo == hi) {
    if (axis.log_scale) {
      lo /= 10;
      hi *= 10;
    } else {
      double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
  }
  if (axis.log_scale) {
    if (!axis.min) lo = std::pow(10.0, std::floor(std::log10(lo)));
    if (!axis.max) hi = std::pow(10.0, std::ceil(std::log10(hi)));
  } else {
    std::vector<double> t = AxisTicks(lo, hi, false);
    if (t.size() >= 2) {
      double step = t[1] - t[0];
      if (!axis.min) lo = std::floor(lo / step + 1e-9) * step;
      if (!axis.max) hi = std::ceil(hi / step - 1e-9) * step;
    }
  }
  return {lo, hi};
}

struct Frame {
  double width, height;
  Range x, y;
  bool x_log, y_log;

  double plot_w() const { return width - kLeft - kRight; }
  double plot_h() const { return height - kTop - kBottom; }
  static double Frac(double v, Range r, bool log_scale) {
    if (log_scale) return (std::log10(v) - std::log10(r.lo)) / (std::log10(r.hi) - std::log10(r.lo));
    return (v - r.lo) / (r.hi - r.lo);
  }
  double X(double v) const { return kLeft + Frac(v, x, x_log) * plot_w(); }
  double Y(double v) const { return kTop + plot_h() - Frac(v, y, y_log) * plot_h(); }
};

struct Polyline {
  std::string name;
  std::vector<std::pair<double, double>> points;  // data coordinates, all usable
};

std::string Render(const std::string& title, const Axis& x_axis, const Axis& y_axis, const Frame& f,
                   const std::vector<Polyline>& lines, bool markers, size_t skipped) {
  std::string s;
  const std::string w = Px(f.width), h = Px(f.height);
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
       "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"" + Px(f.width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" +
       Escape(title) + "</text>\n";
  if (skipped > 0) {
    s += "<text x=\"" + Px(f.width / 2) + "\" y=\"40\" text-anchor=\"middle\" fill=\"#888888\">" +
         std::to_string(skipped) + " values not drawn (not finite, or not positive on a log axis)</text>\n";
  }
  const std::string px0 = Px(kLeft), px1 = Px(kLeft + f.plot_w());
  const std::string py0 = Px(kTop), py1 = Px(kTop + f.plot_h());
  s += "<defs><clipPath id=\"plot\"><rect x=\"" + px0 + "\" y=\"" + py0 + "\" width=\"" + Px(f.plot_w()) +
       "\" height=\"" + Px(f.plot_h()) + "\"/></clipPath></defs>\n";

  // Grid, ticks and tick labels.
  s += "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  std::vector<double> xt = AxisTicks(f.x.lo, f.x.hi, f.x_log);
  std::vector<double> yt = AxisTicks(f.y.lo, f.y.hi, f.y_log);
  for (double t : xt) {
    s += "<line x1=\"" + Px(f.X(t)) + "\" y1=\"" + py0 + "\" x2=\"" + Px(f.X(t)) + "\" y2=\"" + py1 + "\"/>\n";
  }
  for (double t : yt) {
    s += "<line x1=\"" + px0 + "\" y1=\"" + Px(f.Y(t)) + "\" x2=\"" + px1 + "\" y2=\"" + Px(f.Y(t)) + "\"/>\n";
  }
  s += "</g>\n<g fill=\"#333333\">\n";
  for (double t : xt) {
    s += "<text x=\"" + Px(f.X(t)) + "\" y=\"" + Px(kTop + f.plot_h() + 16) + "\" text-anchor=\"middle\">" +
         Label(t) + "</text>\n";
  }
  for (double t : yt) {
    s += "<text x=\"" + Px(kLeft - 6) + "\" y=\"" + Px(f.Y(t) + 4) + "\" text-anchor=\"end\">" + Label(t) +
         "</text>\n";
  }
  s += "</g>\n";
  // Axes and their labels.
  s += "<rect x=\"" + px0 + "\" y=\"" + py0 + "\" width=\"" + Px(f.plot_w()) + "\" height=\"" + Px(f.plot_h()) +
       "\" fill=\"none\" stroke=\"#333333\"/>\n";
  s += "<text x=\"" + Px(kLeft + f.plot_w() / 2) + "\" y=\"" + Px(f.height - 14) +
       "\" text-anchor=\"middle\">" + Escape(x_axis.label) + (f.x_log ? " (log)" : "") + "</text>\n";
  const std::string ylx = Px(18), yly = Px(kTop + f.plot_h() / 2);
  s += "<text x=\"" + ylx + "\" y=\"" + yly + "\" text-anchor=\"middle\" transform=\"rotate(-90 " + ylx + " " +
       yly + ")\">" + Escape(y_axis.label) + (f.y_log ? " (log)" : "") + "</text>\n";

  // Series, clipped to the plot area.
  s += "<g clip-path=\"url(#plot)\" fill=\"none\" stroke-width=\"2\">\n";
  for (size_t i = 0; i < lines.size(); i++) {
    const char* colour = kPalette[i % kPaletteSize];
    if (lines[i].points.empty()) continue;
    s += "<polyline stroke=\"" + std::string(colour) + "\" points=\"";
    for (size_t k = 0; k < lines[i].points.size(); k++) {
      if (k) s += ' ';
      s += Px(f.X(lines[i].points[k].first)) + "," + Px(f.Y(lines[i].points[k].second));
    }
    s += "\"/>\n";
    if (markers && lines[i].points.size() <= kMaxMarkers) {
      for (const auto& [x, y] : lines[i].points) {
        s += "<circle cx=\"" + Px(f.X(x)) + "\" cy=\"" + Px(f.Y(y)) + "\" r=\"3\" fill=\"" + colour +
             "\" stroke=\"none\"/>\n";
      }
    }
  }
  s += "</g>\n";

  // Legend.
  s += "<g>\n";
  for (size_t i = 0; i < lines.size(); i++) {
    double y = kTop + 10 + 20.0 * static_cast<double>(i);
    double x = kLeft + f.plot_w() + 14;
    s += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(y) + "\" x2=\"" + Px(x + 22) + "\" y2=\"" + Px(y) +
         "\" stroke=\"" + kPalette[i % kPaletteSize] + "\" stroke-width=\"3\"/>\n";
    s += "<text x=\"" + Px(x + 28) + "\" y=\"" + Px(y + 4) + "\">" + Escape(lines[i].name) + "</text>\n";
  }
  s += "</g>\n</svg>\n";
  return s;
}

Frame MakeFrame(const ChartSize& size, Range x, Range y, bool x_log, bool y_log) {
  Frame f;
  f.width = std::max(size.width_px, 320);
  f.height = std::max(size.height_px, 200);
  f.x = x;
  f.y = y;
  f.x_log = x_log;
  f.y_log = y_log;
  return f;
}

}  // namespace

std::vector<double> AxisTicks(double lo, double hi, bool log_scale, int target) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || target < 1) return ticks;
  if (log_scale) {
    if (lo <= 0) return ticks;
    int e0 = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
    int e1 = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
    int stride = std::max(1, (e1 - e0 + 1 + 9) / 10);  // at most about 10 labels
    for (int e = e0; e <= e1; e += stride) ticks.push_back(std::pow(10.0, e));
    return ticks;
  }
  double raw = (hi - lo) / target;
  if (!std::isfinite(raw) || raw <= 0) return ticks;  // a range too wide (or narrow) for doubles
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  if (!std::isfinite(step) || step <= 0) return ticks;
  double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; i < 1000; i++) {
    double t = first + step * i;
    if (t > hi + step * 1e-9) break;
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::string RenderLineChart(const LineChart& chart) {
  std::vector<double> xs, ys;
  size_t skipped = 0;
  std::vector<Polyline> lines;
  for (const Series& s : chart.series) {
    Polyline p{s.name, {}};
    size_t n = std::min(s.x.size(), s.y.size());
    for (size_t i = 0; i < n; i++) {
      if (!Usable(s.x[i], chart.x_axis.log_scale) || !Usable(s.y[i], chart.y_axis.log_scale)) {
        skipped++;
        continue;
      }
      p.points.emplace_back(s.x[i], s.y[i]);
      xs.push_back(s.x[i]);
      ys.push_back(s.y[i]);
    }
    lines.push_back(std::move(p));
  }
  Frame f = MakeFrame(chart.size, AxisRange(xs, chart.x_axis), AxisRange(ys, chart.y_axis),
                      chart.x_axis.log_scale, chart.y_axis.log_scale);
  return Render(chart.title, chart.x_axis, chart.y_axis, f, lines, chart.markers, skipped);
}

std::string RenderCdfChart(const CdfChart& chart) {
  std::vector<double> xs;
  size_t skipped = 0;
  std::vector<Polyline> lines;
  for (const SampleSet& set : chart.sets) {
    std::vector<double> v;
    for (double x : set.samples) {
      if (Usable(x, chart.x_axis.log_scale)) {
        v.push_back(x);
      } else {
        skipped++;
      }
    }
    std::sort(v.begin(), v.end());
    Polyline p{set.name, {}};
    const double n = static_cast<double>(v.size());
    for (size_t i = 0; i < v.size(); i++) {
      // Empirical CDF as a step: up from i/n to (i+1)/n at each sample.
      p.points.emplace_back(v[i], static_cast<double>(i) / n);
      p.points.emplace_back(v[i], static_cast<double>(i + 1) / n);
    }
    xs.insert(xs.end(), v.begin(), v.end());
    lines.push_back(std::move(p));
  }
  Axis y_axis{"fraction of samples <= x", false, 0.0, 1.0};
  Frame f = MakeFrame(chart.size, AxisRange(xs, chart.x_axis), Range{0, 1}, chart.x_axis.log_scale, false);
  return Render(chart.title, chart.x_axis, y_axis, f, lines, false, skipped);
}

std::string RenderHistogram(const HistogramChart& chart) {
  const bool log_x = chart.x_axis.log_scale;
  const size_t bins = std::max<size_t>(1, chart.bins);
  std::vector<double> all;
  size_t skipped = 0;
  for (const SampleSet& set : chart.sets) {
    for (double x : set.samples) {
      if (Usable(x, log_x)) {
        all.push_back(x);
      } else {
        skipped++;
      }
    }
  }
  Range xr = AxisRange(all, chart.x_axis);
  auto to_unit = [&](double v) { return Frame::Frac(v, xr, log_x); };
  auto edge = [&](size_t i) {
    double t = static_cast<double>(i) / static_cast<double>(bins);
    return log_x ? std::pow(10.0, std::log10(xr.lo) + t * (std::log10(xr.hi) - std::log10(xr.lo)))
                 : xr.lo + t * (xr.hi - xr.lo);
  };
  std::vector<Polyline> lines;
  double y_max = 0;
  for (const SampleSet& set : chart.sets) {
    std::vector<double> counts(bins, 0.0);
    double total = 0;
    for (double x : set.samples) {
      if (!Usable(x, log_x)) continue;
      double u = to_unit(x);
      if (u < 0 || u > 1) continue;  // outside a fixed range
      size_t b = std::min(bins - 1, static_cast<size_t>(u * static_cast<double>(bins)));
      counts[b] += 1;
      total += 1;
    }
    if (chart.normalize && total > 0) {
      for (double& c : counts) c /= total;
    }
    Polyline p{set.name, {}};
    p.points.emplace_back(edge(0), 0.0);
    for (size_t b = 0; b < bins; b++) {
      p.points.emplace_back(edge(b), counts[b]);
      p.points.emplace_back(edge(b + 1), counts[b]);
      y_max = std::max(y_max, counts[b]);
    }
    p.points.emplace_back(edge(bins), 0.0);
    lines.push_back(std::move(p));
  }
  Axis y_axis{chart.normalize ? "fraction of samples" : "samples", false, 0.0, std::nullopt};
  Range yr = AxisRange({0.0, y_max > 0 ? y_max : 1.0}, y_axis);
  Frame f = MakeFrame(chart.size, xr, yr, log_x, false);
  return Render(chart.title, chart.x_axis, y_axis, f, lines, false, skipped);
}

}  // namespace tw::bench

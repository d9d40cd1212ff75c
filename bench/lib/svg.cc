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

// Layout, pixels. The plot area's margins: the left one widens for wide y
// tick labels, the top one for a wrapped title, the right one (the legend
// column) for long legend names. Text keeps kPad from the document's edges.
constexpr double kLeft = 72, kRight = 180, kTop = 48, kBottom = 56;
constexpr double kPad = 8;
constexpr double kTextPx = 12;          // ticks, axis labels, legend (the document's font-size)
constexpr double kTitlePx = 16;         // a title on one or two lines
constexpr double kTitleSmallPx = 13;    // a title that needs more lines at 16 px
constexpr double kLegendSwatch = 42;    // legend: gap, 22 px line, gap, then the name
constexpr double kLegendMaxShare = 0.4; // of the chart's width, for the legend column
constexpr double kLegendLinePx = 14;    // between the lines of one wrapped legend name

// Advance widths of the printable ASCII characters (32..126) in 1/1000 em:
// the larger of DejaVu Sans's and Arial's (= Liberation Sans, Helvetica), the
// fonts "sans-serif" usually resolves to, so an estimate is never short.
constexpr short kAsciiWidth[95] = {
    318, 401, 460, 838, 636, 950, 780, 275, 390, 390, 500, 838, 318, 361, 318, 337,   //  !"#$%&'()*+,-./
    636, 636, 636, 636, 636, 636, 636, 636, 636, 636, 337, 337, 838, 838, 838, 556,   // 0-9 :;<=>?
    1015, 684, 686, 722, 770, 667, 611, 778, 752, 295, 500, 667, 557, 863, 748, 787,  // @A-O
    667, 787, 722, 667, 611, 732, 684, 989, 685, 667, 685, 390, 337, 390, 838, 556,   // P-Z [\]^_
    500, 613, 635, 550, 635, 615, 352, 635, 634, 278, 278, 579, 278, 974, 634, 612,   // `a-o
    635, 635, 411, 521, 392, 634, 592, 818, 592, 592, 525, 636, 337, 636, 838,        // p-z {|}~
};

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

// Splits `text` at spaces into lines of at most `room` pixels at `font_px`,
// each line as full as it can be. A word wider than `room` gets a line of its
// own (drawn squeezed, see Text).
std::vector<std::string> WrapGreedy(std::string_view text, double font_px, double room) {
  std::vector<std::string> lines;
  std::string line;
  size_t i = 0;
  while (i <= text.size()) {
    size_t sp = text.find(' ', i);
    if (sp == std::string_view::npos) sp = text.size();
    std::string_view word = text.substr(i, sp - i);
    i = sp + 1;
    if (word.empty()) continue;
    std::string joined = line.empty() ? std::string(word) : line + " " + std::string(word);
    if (line.empty() || TextWidthPx(joined, font_px) <= room) {
      line = std::move(joined);
    } else {
      lines.push_back(std::move(line));
      line = std::string(word);
    }
  }
  if (!line.empty() || lines.empty()) lines.push_back(std::move(line));
  return lines;
}

// The same number of lines as WrapGreedy, but balanced: wrapped at the
// narrowest room that needs no more lines, so a title does not end on a line
// of one word.
std::vector<std::string> Wrap(std::string_view text, double font_px, double room) {
  std::vector<std::string> lines = WrapGreedy(text, font_px, room);
  if (lines.size() < 2) return lines;
  double lo = 0, hi = room;
  for (int i = 0; i < 24; i++) {  // to well under a pixel
    const double mid = (lo + hi) / 2;
    if (WrapGreedy(text, font_px, mid).size() <= lines.size()) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return WrapGreedy(text, font_px, hi);
}

// One <text> element. `attrs` are written as given (anchor, fill, transform);
// text estimated wider than `room` gets textLength = room, so the viewer
// squeezes it into the room rather than letting it run off the document.
std::string Text(double x, double y, const std::string& attrs, double font_px, std::string_view text,
                 double room) {
  std::string s = "<text x=\"" + Px(x) + "\" y=\"" + Px(y) + "\"" + attrs;
  if (font_px != kTextPx) s += " font-size=\"" + Label(font_px) + "\"";
  if (room > 0 && TextWidthPx(text, font_px) > room) {
    s += " textLength=\"" + Px(room) + "\" lengthAdjust=\"spacingAndGlyphs\"";
  }
  return s + ">" + Escape(text) + "</text>\n";
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
      double pad = axis.integer ? 1 : lo == 0 ? 1 : std::fabs(lo) * 0.1;
      lo -= pad;
      hi += pad;
    }
  }
  if (axis.log_scale) {
    if (!axis.min) lo = std::pow(10.0, std::floor(std::log10(lo)));
    if (!axis.max) hi = std::pow(10.0, std::ceil(std::log10(hi)));
  } else {
    std::vector<double> t = AxisTicks(lo, hi, false, 6, axis.integer);
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
  Axis x_axis, y_axis;  // labels, scales and integer flags
  // Margins around the plot area (Layout sets them from the text).
  double left = kLeft, right = kRight, top = kTop, bottom = kBottom;

  double plot_w() const { return width - left - right; }
  double plot_h() const { return height - top - bottom; }
  static double Frac(double v, Range r, bool log_scale) {
    if (log_scale) return (std::log10(v) - std::log10(r.lo)) / (std::log10(r.hi) - std::log10(r.lo));
    return (v - r.lo) / (r.hi - r.lo);
  }
  double X(double v) const { return left + Frac(v, x, x_axis.log_scale) * plot_w(); }
  double Y(double v) const { return top + plot_h() - Frac(v, y, y_axis.log_scale) * plot_h(); }
};

struct Polyline {
  std::string name;
  std::vector<std::pair<double, double>> points;  // data coordinates, all usable
};

// Where the text goes: the title's lines, the legend's names (each wrapped),
// and the margins and document height that make room for them.
struct Layout {
  double title_px = kTitlePx;
  std::vector<std::string> title_lines;
  std::vector<double> title_y;                   // baselines
  double note_y = 0;                             // the "values not drawn" line, if any
  std::vector<std::vector<std::string>> legend;  // per series, its name's lines
  double legend_room = 0;                        // pixels for a legend name's line
};

Layout LayOut(const std::string& title, const std::vector<Polyline>& lines, size_t skipped, Frame* f) {
  Layout l;
  const double text_room = f->width - 2 * kPad;
  l.title_lines = Wrap(title, kTitlePx, text_room);
  if (l.title_lines.size() > 2) {
    l.title_px = kTitleSmallPx;
    l.title_lines = Wrap(title, kTitleSmallPx, text_room);
  }
  double y = kPad + l.title_px;  // 24 for one line at 16 px
  for (size_t i = 0; i < l.title_lines.size(); i++) {
    if (i) y += std::round(l.title_px * 1.25);
    l.title_y.push_back(y);
  }
  if (skipped > 0) {
    y += 16;
    l.note_y = y;
  }
  f->top = std::max(kTop, y + 12);

  // The legend column: as wide as the longest name, within the chart's share;
  // longer names wrap.
  double widest = 0;
  for (const Polyline& p : lines) widest = std::max(widest, TextWidthPx(p.name, kTextPx));
  const double max_right = std::max(kRight, kLegendMaxShare * f->width);
  f->right = std::clamp(kLegendSwatch + widest + kPad, kRight, max_right);
  l.legend_room = f->right - kLegendSwatch - kPad;
  double legend_bottom = f->top;
  for (size_t i = 0; i < lines.size(); i++) {
    l.legend.push_back(Wrap(lines[i].name, kTextPx, l.legend_room));
    legend_bottom += 20 + kLegendLinePx * static_cast<double>(l.legend.back().size() - 1);
  }
  // The document grows to hold a legend longer than the plot.
  f->height = std::max(f->height, legend_bottom + kPad);

  // The left margin holds the y tick labels and, left of them, the y label.
  double widest_tick = 0;
  for (double t : AxisTicks(f->y.lo, f->y.hi, f->y_axis.log_scale, 6, f->y_axis.integer)) {
    widest_tick = std::max(widest_tick, TextWidthPx(Label(t), kTextPx));
  }
  f->left = std::max(kLeft, widest_tick + 6 + 24);
  return l;
}

std::string Render(const std::string& title, const Frame& frame_in, const std::vector<Polyline>& lines,
                   bool markers, size_t skipped) {
  Frame frame = frame_in;
  const Layout l = LayOut(title, lines, skipped, &frame);
  const Frame& f = frame;
  std::string s;
  const std::string w = Px(f.width), h = Px(f.height);
  s += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + w + "\" height=\"" + h +
       "\" viewBox=\"0 0 " + w + " " + h + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + w + "\" height=\"" + h + "\" fill=\"#ffffff\"/>\n";
  for (size_t i = 0; i < l.title_lines.size(); i++) {
    s += Text(f.width / 2, l.title_y[i], " text-anchor=\"middle\"", l.title_px, l.title_lines[i],
              f.width - 2 * kPad);
  }
  if (skipped > 0) {
    s += Text(f.width / 2, l.note_y, " text-anchor=\"middle\" fill=\"#888888\"", kTextPx,
              std::to_string(skipped) + " values not drawn (not finite, or not positive on a log axis)",
              f.width - 2 * kPad);
  }
  const double plot_r = f.left + f.plot_w(), plot_b = f.top + f.plot_h();
  const std::string px0 = Px(f.left), px1 = Px(plot_r);
  const std::string py0 = Px(f.top), py1 = Px(plot_b);
  s += "<defs><clipPath id=\"plot\"><rect x=\"" + px0 + "\" y=\"" + py0 + "\" width=\"" + Px(f.plot_w()) +
       "\" height=\"" + Px(f.plot_h()) + "\"/></clipPath></defs>\n";

  // Grid: minor lines (log axes) under the labelled ones; then tick labels.
  const Axis &xa = f.x_axis, &ya = f.y_axis;
  std::vector<double> xt = AxisTicks(f.x.lo, f.x.hi, xa.log_scale, 6, xa.integer);
  std::vector<double> yt = AxisTicks(f.y.lo, f.y.hi, ya.log_scale, 6, ya.integer);
  std::vector<double> xm = AxisMinorTicks(f.x.lo, f.x.hi, xa.log_scale, xa.integer);
  std::vector<double> ym = AxisMinorTicks(f.y.lo, f.y.hi, ya.log_scale, ya.integer);
  if (!xm.empty() || !ym.empty()) {
    s += "<g stroke=\"#f2f2f2\" stroke-width=\"1\">\n";
    for (double t : xm) {
      s += "<line x1=\"" + Px(f.X(t)) + "\" y1=\"" + py0 + "\" x2=\"" + Px(f.X(t)) + "\" y2=\"" + py1 + "\"/>\n";
    }
    for (double t : ym) {
      s += "<line x1=\"" + px0 + "\" y1=\"" + Px(f.Y(t)) + "\" x2=\"" + px1 + "\" y2=\"" + Px(f.Y(t)) + "\"/>\n";
    }
    s += "</g>\n";
  }
  s += "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
  for (double t : xt) {
    s += "<line x1=\"" + Px(f.X(t)) + "\" y1=\"" + py0 + "\" x2=\"" + Px(f.X(t)) + "\" y2=\"" + py1 + "\"/>\n";
  }
  for (double t : yt) {
    s += "<line x1=\"" + px0 + "\" y1=\"" + Px(f.Y(t)) + "\" x2=\"" + px1 + "\" y2=\"" + Px(f.Y(t)) + "\"/>\n";
  }
  s += "</g>\n<g fill=\"#333333\">\n";
  for (double t : xt) {
    s += "<text x=\"" + Px(f.X(t)) + "\" y=\"" + Px(plot_b + 16) + "\" text-anchor=\"middle\">" + Label(t) +
         "</text>\n";
  }
  for (double t : yt) {
    s += "<text x=\"" + Px(f.left - 6) + "\" y=\"" + Px(f.Y(t) + 4) + "\" text-anchor=\"end\">" + Label(t) +
         "</text>\n";
  }
  s += "</g>\n";
  // Axes and their labels, each kept within the document.
  s += "<rect x=\"" + px0 + "\" y=\"" + py0 + "\" width=\"" + Px(f.plot_w()) + "\" height=\"" + Px(f.plot_h()) +
       "\" fill=\"none\" stroke=\"#333333\"/>\n";
  const double xlx = f.left + f.plot_w() / 2;
  s += Text(xlx, f.height - 14, " text-anchor=\"middle\"", kTextPx, xa.label + (xa.log_scale ? " (log)" : ""),
            2 * (std::min(xlx, f.width - xlx) - kPad));
  const double ylx = 18, yly = f.top + f.plot_h() / 2;
  s += Text(ylx, yly, " text-anchor=\"middle\" transform=\"rotate(-90 " + Px(ylx) + " " + Px(yly) + ")\"", kTextPx,
            ya.label + (ya.log_scale ? " (log)" : ""), 2 * (std::min(yly, f.height - yly) - kPad));

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

  // Legend: a swatch and the name's lines, one entry under the other.
  s += "<g>\n";
  double y = f.top + 10;
  for (size_t i = 0; i < lines.size(); i++) {
    const double x = plot_r + 14;
    s += "<line x1=\"" + Px(x) + "\" y1=\"" + Px(y) + "\" x2=\"" + Px(x + 22) + "\" y2=\"" + Px(y) +
         "\" stroke=\"" + kPalette[i % kPaletteSize] + "\" stroke-width=\"3\"/>\n";
    for (const std::string& line : l.legend[i]) {
      s += Text(x + 28, y + 4, "", kTextPx, line, l.legend_room);
      y += kLegendLinePx;
    }
    y += 20 - kLegendLinePx;
  }
  s += "</g>\n</svg>\n";
  return s;
}

Frame MakeFrame(const ChartSize& size, Range x, Range y, const Axis& x_axis, const Axis& y_axis) {
  Frame f;
  f.width = std::max(size.width_px, 320);
  f.height = std::max(size.height_px, 200);
  f.x = x;
  f.y = y;
  f.x_axis = x_axis;
  f.y_axis = y_axis;
  return f;
}

// n x 10^e, computed so that 0.2, 0.3, ... come out as their nearest doubles.
double Decade(int n, int e) { return e >= 0 ? n * std::pow(10.0, e) : n / std::pow(10.0, -e); }

bool Near(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)); }

}  // namespace

double TextWidthPx(std::string_view utf8, double font_px) {
  double em = 0;  // in 1/1000 em
  for (unsigned char c : utf8) {
    if (c >= 32 && c < 127) {
      em += kAsciiWidth[c - 32];
    } else if ((c & 0xC0) != 0x80) {  // the first byte of any other character
      em += 1000;
    }
  }
  return em / 1000 * font_px;
}

std::vector<double> AxisTicks(double lo, double hi, bool log_scale, int target, bool integer) {
  std::vector<double> ticks;
  if (!std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || target < 1) return ticks;
  if (log_scale) {
    if (lo <= 0) return ticks;
    const double decades = std::log10(hi) - std::log10(lo);
    if (decades > 3 + 1e-9) {  // powers of ten only
      int e0 = static_cast<int>(std::ceil(std::log10(lo) - 1e-9));
      int e1 = static_cast<int>(std::floor(std::log10(hi) + 1e-9));
      int stride = std::max(1, (e1 - e0 + 1 + 9) / 10);  // at most about 10 labels
      for (int e = e0; e <= e1; e += stride) {
        if (!integer || e >= 0) ticks.push_back(std::pow(10.0, e));
      }
      return ticks;
    }
    // A few decades: label within each one as well.
    static const int k125[] = {1, 2, 5}, k1235[] = {1, 2, 3, 5};
    const bool one = decades <= 1 + 1e-9;
    const int* m = one ? k1235 : k125;
    const int mn = one ? 4 : 3;
    const int e0 = static_cast<int>(std::floor(std::log10(lo))) - 1;
    const int e1 = static_cast<int>(std::ceil(std::log10(hi))) + 1;
    for (int e = e0; e <= e1; e++) {
      for (int i = 0; i < mn; i++) {
        double t = Decade(m[i], e);
        if ((t >= lo || Near(t, lo)) && (t <= hi || Near(t, hi)) && (!integer || t >= 1)) ticks.push_back(t);
      }
    }
    // Less than a decade between two of those: linear steps inside it.
    if (ticks.size() < 2) return AxisTicks(lo, hi, false, target, integer);
    return ticks;
  }
  double raw = (hi - lo) / target;
  if (!std::isfinite(raw) || raw <= 0) return ticks;  // a range too wide (or narrow) for doubles
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double norm = raw / mag;
  double step = (norm < 1.5 ? 1 : norm < 3 ? 2 : norm < 7 ? 5 : 10) * mag;
  if (integer) step = std::max(step, 1.0);  // 1, 2, 5 x 10^k >= 1: whole numbers
  if (!std::isfinite(step) || step <= 0) return ticks;
  double first = std::ceil(lo / step - 1e-9) * step;
  for (int i = 0; i < 1000; i++) {
    double t = first + step * i;
    if (t > hi + step * 1e-9) break;
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
  }
  return ticks;
}

std::vector<double> AxisMinorTicks(double lo, double hi, bool log_scale, bool integer) {
  std::vector<double> minor;
  if (!log_scale || !std::isfinite(lo) || !std::isfinite(hi) || !(lo < hi) || lo <= 0) return minor;
  if (std::log10(hi) - std::log10(lo) > 10 + 1e-9) return minor;
  const std::vector<double> major = AxisTicks(lo, hi, true, 6, integer);
  const int e0 = static_cast<int>(std::floor(std::log10(lo)));
  const int e1 = static_cast<int>(std::ceil(std::log10(hi)));
  for (int e = e0; e <= e1; e++) {
    for (int n = 1; n <= 9; n++) {
      double t = Decade(n, e);
      if (t < lo && !Near(t, lo)) continue;
      if (t > hi && !Near(t, hi)) continue;
      if (integer && t < 1) continue;
      if (std::none_of(major.begin(), major.end(), [&](double m) { return Near(m, t); })) minor.push_back(t);
    }
  }
  return minor;
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
  Frame f = MakeFrame(chart.size, AxisRange(xs, chart.x_axis), AxisRange(ys, chart.y_axis), chart.x_axis,
                      chart.y_axis);
  return Render(chart.title, f, lines, chart.markers, skipped);
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
  Frame f = MakeFrame(chart.size, AxisRange(xs, chart.x_axis), Range{0, 1}, chart.x_axis, y_axis);
  return Render(chart.title, f, lines, false, skipped);
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
  // A count axis has whole-number ticks; a fraction axis does not.
  Axis y_axis{chart.normalize ? "fraction of samples" : "samples", false, 0.0, std::nullopt, !chart.normalize};
  Range yr = AxisRange({0.0, y_max > 0 ? y_max : 1.0}, y_axis);
  Frame f = MakeFrame(chart.size, xr, yr, chart.x_axis, y_axis);
  return Render(chart.title, f, lines, false, skipped);
}

}  // namespace tw::bench

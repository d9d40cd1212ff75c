// SVG charts for the bench reports, written here (no plotting library): a
// line chart (several series, axes with "nice" 1-2-5 ticks or log-10 ticks,
// labels, legend, title), an empirical CDF chart of raw samples, and a
// histogram. Each returns one standalone SVG document as a string.
//
// Input that cannot be drawn never breaks the document: NaN/inf values are
// skipped (and counted in a note under the title), an empty chart gets a unit
// range, values <= 0 are skipped on a log axis. A linear axis whose values
// are all >= 0 starts at 0 unless Axis::min says otherwise. All text is XML-escaped; all
// numbers written are finite.
//
// No text is cut off at the document's edges: there is no font engine here, so
// text widths are estimated from per-character advance widths (the wider of
// DejaVu Sans and Arial/Liberation Sans, the usual "sans-serif" fonts; any
// other character counts as one em). A title too wide for the chart wraps at
// spaces (and shrinks when it needs more than two lines); the legend column
// widens to its longest name, up to 40% of the chart, and longer names wrap;
// the left margin widens to the widest y tick label. A word that still does not
// fit is drawn with textLength, which makes the viewer squeeze it into the room
// there is. The document grows taller when the legend needs it.
//
// Thread-safety: pure functions; any thread. Allocation: the output string,
// O(points). Never does I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tw::bench {

struct Axis {
  std::string label;             // e.g. "time to first token (ms)"
  bool log_scale = false;        // base 10; values <= 0 are skipped
  std::optional<double> min;     // fixed range ends; otherwise from the data
  std::optional<double> max;
  bool integer = false;          // the quantity is a count (streams, batch size, k):
                                 // ticks only at whole numbers, steps of at least 1
};

struct Series {
  std::string name;              // legend text
  std::vector<double> x;         // x[i], y[i] is one point; the shorter length is used
  std::vector<double> y;
};

struct ChartSize {
  int width_px = 800;
  int height_px = 480;
};

struct LineChart {
  std::string title;
  Axis x_axis;
  Axis y_axis;
  std::vector<Series> series;
  bool markers = true;           // a small circle on every point (up to 200 per series)
  ChartSize size;
};

struct SampleSet {
  std::string name;
  std::vector<double> samples;   // raw values, any order
};

struct CdfChart {
  std::string title;
  Axis x_axis;                   // the y axis is the fraction 0..1
  std::vector<SampleSet> sets;
  ChartSize size;
};

struct HistogramChart {
  std::string title;
  Axis x_axis;                   // log_scale is honoured for the bin edges
  std::vector<SampleSet> sets;   // drawn as outlined step curves, one per set
  size_t bins = 30;
  bool normalize = false;        // y is a fraction of each set instead of a count
  ChartSize size;
};

std::string RenderLineChart(const LineChart& chart);
std::string RenderCdfChart(const CdfChart& chart);
std::string RenderHistogram(const HistogramChart& chart);

// Labelled tick positions for [lo, hi]. Linear: "nice" steps (1, 2, 5 x
// 10^k), about `target` of them; with `integer`, whole numbers only (a step of
// at least 1). Log: 1, 2, 3, 5 x 10^k when the range spans at most one decade,
// 1, 2, 5 x 10^k up to three decades, powers of ten beyond that (every other
// one, or fewer, past ten decades); with `integer`, none below 1. Exposed for
// tests.
std::vector<double> AxisTicks(double lo, double hi, bool log_scale, int target = 6, bool integer = false);

// The unlabelled minor ticks of a log axis: each n x 10^k (n = 1..9) in
// [lo, hi] that AxisTicks does not label; none on a linear axis or past ten
// decades. Exposed for tests.
std::vector<double> AxisMinorTicks(double lo, double hi, bool log_scale, bool integer = false);

// Estimated width in pixels of UTF-8 text drawn at `font_px` in the charts'
// font (see above). Never below the width the usual sans-serif fonts draw.
// Exposed for tests.
double TextWidthPx(std::string_view utf8, double font_px);

}  // namespace tw::bench

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
// Thread-safety: pure functions; any thread. Allocation: the output string,
// O(points). Never does I/O.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tw::bench {

struct Axis {
  std::string label;             // e.g. "time to first token (ms)"
  bool log_scale = false;        // base 10; values <= 0 are skipped
  std::optional<double> min;     // fixed range ends; otherwise from the data
  std::optional<double> max;
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

// Tick positions for [lo, hi]: linear "nice" steps (1, 2, 5 x 10^k), about
// `target` of them, or powers of ten on a log axis. Exposed for tests.
std::vector<double> AxisTicks(double lo, double hi, bool log_scale, int target = 6);

}  // namespace tw::bench

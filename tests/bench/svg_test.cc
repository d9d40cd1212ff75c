// The bench's SVG charts: each document is checked by a small XML reader
// written here (balanced tags, quoted attributes, only the five predefined
// entities, numeric attributes finite), and its content is checked against the
// input: one polyline per series, legend names escaped, ticks where the 1-2-5
// rule puts them, hostile values (NaN, inf, <= 0 on a log axis) skipped, no
// text running off the document, whole-number ticks on integer axes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../../bench/lib/svg.h"

namespace tw::bench {
namespace {

struct XmlReport {
  std::string error;                  // "" when well-formed
  std::map<std::string, int> counts;  // elements by name
  std::vector<std::string> texts;     // text nodes (entities left as written)
};

bool FiniteNumber(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(v);
}

bool EntitiesOk(const std::string& s) {
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '<') return false;
    if (s[i] != '&') continue;
    bool ok = false;
    for (const char* e : {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"}) {
      if (s.compare(i, std::char_traits<char>::length(e), e) == 0) ok = true;
    }
    if (!ok) return false;
  }
  return true;
}

// Splits "a,b c,d" (points) or "0 0 800 480" (viewBox) into numbers.
bool AllFinite(const std::string& list) {
  std::string cur;
  for (char c : list + " ") {
    if (c == ' ' || c == ',') {
      if (!cur.empty() && !FiniteNumber(cur)) return false;
      cur.clear();
    } else {
      cur += c;
    }
  }
  return true;
}

XmlReport ReadXml(const std::string& doc) {
  XmlReport r;
  std::vector<std::string> stack;
  size_t i = 0;
  auto fail = [&](const std::string& why) {
    r.error = why + " at offset " + std::to_string(i);
    return r;
  };
  if (doc.rfind("<?xml ", 0) == 0) i = doc.find("?>") + 2;
  while (i < doc.size()) {
    size_t lt = doc.find('<', i);
    std::string text = doc.substr(i, lt == std::string::npos ? std::string::npos : lt - i);
    if (!EntitiesOk(text)) return fail("bad text \"" + text + "\"");
    if (text.find_first_not_of(" \n") != std::string::npos) {
      if (stack.empty()) return fail("text outside the root");
      r.texts.push_back(text);
    }
    if (lt == std::string::npos) break;
    i = lt + 1;
    bool closing = doc[i] == '/';
    if (closing) i++;
    size_t name_end = doc.find_first_of(" />", i);
    if (name_end == std::string::npos) return fail("unterminated tag");
    std::string name = doc.substr(i, name_end - i);
    if (name.empty()) return fail("empty tag name");
    i = name_end;
    if (closing) {
      if (doc[i] != '>') return fail("junk in closing tag");
      if (stack.empty() || stack.back() != name) return fail("unbalanced </" + name + ">");
      stack.pop_back();
      i++;
      continue;
    }
    if (stack.empty() && r.counts.size() > 0) return fail("second root element");
    r.counts[name]++;
    // Attributes.
    while (true) {
      while (i < doc.size() && doc[i] == ' ') i++;
      if (i >= doc.size()) return fail("unterminated tag");
      if (doc.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      if (doc[i] == '>') {
        stack.push_back(name);
        i++;
        break;
      }
      size_t eq = doc.find('=', i);
      if (eq == std::string::npos || doc[eq + 1] != '"') return fail("unquoted attribute");
      std::string attr = doc.substr(i, eq - i);
      size_t close = doc.find('"', eq + 2);
      if (close == std::string::npos) return fail("unterminated attribute");
      std::string value = doc.substr(eq + 2, close - eq - 2);
      if (!EntitiesOk(value)) return fail("bad attribute value");
      static const char* kNumeric[] = {"x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height"};
      for (const char* n : kNumeric) {
        if (attr == n && !FiniteNumber(value)) return fail(attr + "=\"" + value + "\" is not a finite number");
      }
      if ((attr == "points" || attr == "viewBox") && !AllFinite(value)) return fail(attr + " has a bad number");
      i = close + 1;
    }
  }
  if (!stack.empty()) return fail("unclosed <" + stack.back() + ">");
  if (r.counts["svg"] != 1) return fail("not exactly one <svg>");
  return r;
}

bool HasText(const XmlReport& r, const std::string& t) {
  for (const std::string& s : r.texts) {
    if (s == t) return true;
  }
  return false;
}

TEST(Svg, ReaderCatchesBrokenDocuments) {
  // The checker itself must fail on what it is meant to catch.
  EXPECT_EQ(ReadXml("<svg><g></svg>").error.substr(0, 15), "unbalanced </sv");
  EXPECT_NE(ReadXml("<svg><rect x=\"nan\"/></svg>").error, "");
  EXPECT_NE(ReadXml("<svg><text>a & b</text></svg>").error, "");
  EXPECT_NE(ReadXml("<svg><polyline points=\"1,2 inf,3\"/></svg>").error, "");
  EXPECT_NE(ReadXml("<svg><g>").error, "");
  EXPECT_EQ(ReadXml("<svg><g a=\"1\"><text>x &amp; y</text></g></svg>").error, "");
}

TEST(Svg, LineChartIsWellFormedWithEverySeriesAndEscapedText) {
  LineChart c;
  c.title = "TTFT <p50> & p99";
  c.x_axis.label = "concurrent streams";
  c.y_axis.label = "ms";
  c.series.push_back({"p50", {1, 2, 4, 8}, {10, 12, 15, 30}});
  c.series.push_back({"p99 \"tail\"", {1, 2, 4, 8}, {20, 25, 40, 95}});
  c.series.push_back({"empty", {}, {}});
  std::string svg = RenderLineChart(c);
  XmlReport r = ReadXml(svg);
  ASSERT_EQ(r.error, "") << svg;
  EXPECT_EQ(r.counts["polyline"], 2);  // the empty series draws no line
  EXPECT_EQ(r.counts["circle"], 8);
  EXPECT_TRUE(HasText(r, "TTFT &lt;p50&gt; &amp; p99"));
  EXPECT_TRUE(HasText(r, "p99 &quot;tail&quot;"));
  EXPECT_TRUE(HasText(r, "empty"));  // still in the legend
  // y data 10..95: 1-2-5 ticks of 20 from 0 to 100.
  for (const char* t : {"0", "20", "40", "60", "80", "100"}) EXPECT_TRUE(HasText(r, t)) << t;
  EXPECT_FALSE(HasText(r, "120"));
}

TEST(Svg, HostileValuesAreSkippedAndCounted) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  LineChart c;
  c.title = "bad";
  c.y_axis.log_scale = true;
  c.series.push_back({"s", {1, 2, 3, 4, 5}, {nan, inf, -1, 0, 100}});
  std::string svg = RenderLineChart(c);
  XmlReport r = ReadXml(svg);
  ASSERT_EQ(r.error, "") << svg;
  EXPECT_TRUE(HasText(r, "4 values not drawn (not finite, or not positive on a log axis)"));
  // A chart with nothing at all still renders.
  LineChart empty;
  r = ReadXml(RenderLineChart(empty));
  EXPECT_EQ(r.error, "");
  // Extreme magnitudes stay finite in the document.
  LineChart wide;
  wide.series.push_back({"w", {-1e308, 1e308}, {-1e308, 1e308}});
  r = ReadXml(RenderLineChart(wide));
  EXPECT_EQ(r.error, "");
}

TEST(Svg, CdfAndHistogram) {
  CdfChart cdf;
  cdf.title = "inter-token gap";
  cdf.x_axis.label = "ms";
  cdf.x_axis.log_scale = true;
  cdf.sets.push_back({"sse", {5, 1, 50, 10, 500}});
  cdf.sets.push_back({"ws", {2, 3, 4}});
  std::string svg = RenderCdfChart(cdf);
  XmlReport r = ReadXml(svg);
  ASSERT_EQ(r.error, "") << svg;
  EXPECT_EQ(r.counts["polyline"], 2);
  for (const char* t : {"1", "10", "100", "1000"}) EXPECT_TRUE(HasText(r, t)) << t;  // decades
  for (const char* t : {"0", "0.2", "1"}) EXPECT_TRUE(HasText(r, t)) << t;         // the fraction axis

  HistogramChart h;
  h.title = "queue wait";
  h.x_axis.label = "ms";
  h.bins = 4;
  h.sets.push_back({"a", {0, 1, 1, 2, 3, 3, 3, 4}});
  svg = RenderHistogram(h);
  r = ReadXml(svg);
  ASSERT_EQ(r.error, "") << svg;
  EXPECT_EQ(r.counts["polyline"], 1);
  EXPECT_TRUE(HasText(r, "samples"));
}

TEST(Svg, AxisTicks) {
  EXPECT_EQ(AxisTicks(0, 100, false), (std::vector<double>{0, 20, 40, 60, 80, 100}));
  EXPECT_EQ(AxisTicks(0, 1, false), (std::vector<double>{0, 0.2, 0.4, 0.6000000000000001, 0.8, 1}));
  EXPECT_EQ(AxisTicks(1, 10000, true), (std::vector<double>{1, 10, 100, 1000, 10000}));
  EXPECT_EQ(AxisTicks(-5, 5, false), (std::vector<double>{-4, -2, 0, 2, 4}));
  EXPECT_TRUE(AxisTicks(1, 1, false).empty());
  EXPECT_TRUE(AxisTicks(0, std::numeric_limits<double>::infinity(), false).empty());
}

// ---- text that fits, log ticks, integer axes --------------------------------

// One <text> element: its position, anchor, size, squeeze and content.
struct TextEl {
  double x = 0, y = 0;
  std::string anchor = "start";
  double font_px = 12;
  double text_length = 0;  // 0: none
  bool rotated = false;
  std::string text;        // entities decoded
};

std::string Unescape(std::string s) {
  for (auto [e, c] : {std::pair{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&apos;", "'"}, {"&amp;", "&"}}) {
    for (size_t p = s.find(e); p != std::string::npos; p = s.find(e, p + 1)) s.replace(p, std::strlen(e), c);
  }
  return s;
}

std::string Attr(const std::string& tag, const std::string& name) {
  size_t p = tag.find(" " + name + "=\"");
  if (p == std::string::npos) return "";
  p += name.size() + 3;
  return tag.substr(p, tag.find('"', p) - p);
}

std::vector<TextEl> Texts(const std::string& svg) {
  std::vector<TextEl> out;
  for (size_t p = svg.find("<text "); p != std::string::npos; p = svg.find("<text ", p + 1)) {
    size_t gt = svg.find('>', p), end = svg.find("</text>", p);
    std::string tag = svg.substr(p, gt - p);
    TextEl t;
    t.x = std::atof(Attr(tag, "x").c_str());
    t.y = std::atof(Attr(tag, "y").c_str());
    if (!Attr(tag, "text-anchor").empty()) t.anchor = Attr(tag, "text-anchor");
    if (!Attr(tag, "font-size").empty()) t.font_px = std::atof(Attr(tag, "font-size").c_str());
    t.text_length = std::atof(Attr(tag, "textLength").c_str());
    t.rotated = !Attr(tag, "transform").empty();
    t.text = Unescape(svg.substr(gt + 1, end - gt - 1));
    out.push_back(t);
  }
  return out;
}

double DocWidth(const std::string& svg) { return std::atof(Attr(svg.substr(svg.find("<svg ")), "width").c_str()); }

// Every unrotated text's estimated extent (its textLength when squeezed) lies
// inside [0, width]; "" when so, else the first offender.
std::string Overflow(const std::string& svg) {
  const double width = DocWidth(svg);
  for (const TextEl& t : Texts(svg)) {
    if (t.rotated) continue;
    double w = t.text_length > 0 ? t.text_length : TextWidthPx(t.text, t.font_px);
    double x0 = t.anchor == "middle" ? t.x - w / 2 : t.anchor == "end" ? t.x - w : t.x;
    if (x0 < -0.01 || x0 + w > width + 0.01) {
      return "\"" + t.text + "\" spans " + std::to_string(x0) + ".." + std::to_string(x0 + w) + " of " +
             std::to_string(width);
    }
  }
  return "";
}

// The unrotated texts at font size `px` inside the box from (min_x, 0) to
// (inf, max_y), joined with spaces in document order.
std::string Joined(const std::string& svg, double px, double min_x = 0, double max_y = 1e9) {
  std::string s;
  for (const TextEl& t : Texts(svg)) {
    if (t.font_px != px || t.x < min_x || t.y > max_y || t.rotated) continue;
    s += (s.empty() ? "" : " ") + t.text;
  }
  return s;
}

TEST(Svg, TextWidthsAreThoseOfTheWiderUsualFont) {
  EXPECT_DOUBLE_EQ(TextWidthPx("0123456789", 10), 63.6);  // DejaVu Sans digits: 0.636 em
  EXPECT_DOUBLE_EQ(TextWidthPx("il", 1000), 556);          // Arial's i and l are wider than DejaVu's
  EXPECT_DOUBLE_EQ(TextWidthPx("\xe2\x86\x92", 12), 12);      // any other character: one em
  EXPECT_DOUBLE_EQ(TextWidthPx("", 12), 0);
}

TEST(Svg, LongTitleAndLegendNamesStayInsideTheDocument) {
  // The engine overlap chart's title and series names, at the default 800 px.
  LineChart c;
  c.title = "Aggregate throughput vs simultaneous streams (gpt2 (12 layers, 768 wide, 1024 positions, "
            "random weights: weights_tool random --shape gpt2))";
  c.x_axis.label = "streams (each 64 new tokens)";
  c.x_axis.log_scale = true;
  c.y_axis.label = "tokens/s (all streams)";
  const std::vector<double> xs = {1, 2, 4, 8, 16, 32};
  c.series.push_back({"concurrent (continuous batching)", xs, {53, 122, 279, 366, 511, 630}});
  c.series.push_back({"back to back (one at a time)", xs, {61, 63, 85, 68, 71, 66}});
  c.series.push_back({"10x back to back (the target at 32 streams)", xs, {614, 631, 852, 677, 712, 664}});
  c.series.push_back({"concurrent at the machine's floors", xs, {68, 136, 265, 506, 860, 860}});
  std::string svg = RenderLineChart(c);
  ASSERT_EQ(ReadXml(svg).error, "") << svg;
  EXPECT_EQ(Overflow(svg), "") << svg;
  // Nothing is dropped: the title's lines read as the title, the legend's as its names.
  EXPECT_EQ(Joined(svg, 16), c.title);
  std::string legend;
  for (const Series& s : c.series) legend += (legend.empty() ? "" : " ") + s.name;
  EXPECT_EQ(Joined(svg, 12, 500, 400), legend);  // the legend column: right of x = 500, above the x ticks
  // A legend name wider than the column's share wraps instead.
  c.series[0].name = "a legend name long enough that it cannot fit beside the plot on one line at all";
  svg = RenderLineChart(c);
  EXPECT_EQ(Overflow(svg), "") << svg;
  EXPECT_NE(Joined(svg, 12, 500, 400).find("a legend name long enough"), std::string::npos);
}

TEST(Svg, ATitleThatNeedsManyLinesShrinksAndAWordTooLongIsSqueezed) {
  LineChart c;
  c.size.width_px = 320;
  c.title = "a title of many words that cannot fit on two lines of a narrow chart at sixteen pixels, so it "
            "shrinks";
  c.series.push_back({"Supercalifragilisticexpialidocious_and_more_without_a_space", {1, 2}, {1, 2}});
  std::string svg = RenderLineChart(c);
  ASSERT_EQ(ReadXml(svg).error, "") << svg;
  EXPECT_EQ(Overflow(svg), "") << svg;
  EXPECT_EQ(Joined(svg, 13), c.title);  // smaller type, every word kept
  bool squeezed = false;
  for (const TextEl& t : Texts(svg)) squeezed |= t.text == c.series[0].name && t.text_length > 0;
  EXPECT_TRUE(squeezed) << svg;
  // A legend taller than the chart makes the document taller, not cut off.
  LineChart many;
  many.size.height_px = 200;
  for (int i = 0; i < 20; i++) many.series.push_back({"series " + std::to_string(i), {1, 2}, {1, 2}});
  svg = RenderLineChart(many);
  double height = std::atof(Attr(svg.substr(svg.find("<svg ")), "height").c_str());
  for (const TextEl& t : Texts(svg)) EXPECT_LE(t.y, height) << t.text;
}

TEST(Svg, LogAxesSpanningFewDecadesAreLabelledWithinEachDecade) {
  EXPECT_EQ(AxisTicks(10, 1000, true), (std::vector<double>{10, 20, 50, 100, 200, 500, 1000}));
  EXPECT_EQ(AxisTicks(1, 1000, true), (std::vector<double>{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000}));
  EXPECT_EQ(AxisTicks(1, 10, true), (std::vector<double>{1, 2, 3, 5, 10}));
  EXPECT_EQ(AxisTicks(0.01, 0.1, true), (std::vector<double>{0.01, 0.02, 0.03, 0.05, 0.1}));
  EXPECT_EQ(AxisTicks(60, 90, true), (std::vector<double>{60, 65, 70, 75, 80, 85, 90}));  // inside a decade
  // Wider ranges: powers of ten labelled, the rest as unlabelled minor ticks.
  EXPECT_EQ(AxisTicks(1, 1e5, true), (std::vector<double>{1, 10, 100, 1000, 1e4, 1e5}));
  std::vector<double> minor = AxisMinorTicks(1, 1e5, true);
  ASSERT_EQ(minor.size(), 5u * 8u);
  EXPECT_EQ(minor.front(), 2);
  EXPECT_EQ(AxisMinorTicks(10, 1000, true),
            (std::vector<double>{30, 40, 60, 70, 80, 90, 300, 400, 600, 700, 800, 900}));
  EXPECT_TRUE(AxisMinorTicks(0, 100, false).empty());

  // The overlap chart's TTFT axis: 17..280 ms is drawn over 10..1000.
  LineChart c;
  c.y_axis.log_scale = true;
  c.x_axis.log_scale = true;
  c.series.push_back({"p50", {1, 2, 4, 8, 16, 32}, {17, 21, 36, 65, 68, 280}});
  std::string svg = RenderLineChart(c);
  XmlReport r = ReadXml(svg);
  ASSERT_EQ(r.error, "") << svg;
  for (const char* t : {"10", "20", "50", "100", "200", "500", "1000"}) EXPECT_TRUE(HasText(r, t)) << t;
  for (const char* t : {"1", "2", "5"}) EXPECT_TRUE(HasText(r, t)) << t;  // the streams axis, 1..100
}

TEST(Svg, IntegerAxesHaveOnlyWholeNumberTicks) {
  EXPECT_EQ(AxisTicks(0, 4, false), (std::vector<double>{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4}));
  EXPECT_EQ(AxisTicks(0, 4, false, 6, true), (std::vector<double>{0, 1, 2, 3, 4}));
  EXPECT_EQ(AxisTicks(0.5, 3.5, false, 6, true), (std::vector<double>{1, 2, 3}));
  EXPECT_EQ(AxisTicks(0, 40, false, 6, true), (std::vector<double>{0, 5, 10, 15, 20, 25, 30, 35, 40}));
  EXPECT_EQ(AxisTicks(0.1, 10, true, 6, true), (std::vector<double>{1, 2, 5, 10}));

  // The slow-readers charts: k = 0, 1, 2, 4 stalled readers.
  LineChart c;
  c.x_axis.integer = true;
  c.series.push_back({"drop_slow", {0, 1, 2, 4}, {41.6, 18.9, 19.6, 20.7}});
  std::string svg = RenderLineChart(c);
  XmlReport r = ReadXml(svg);
  ASSERT_EQ(r.error, "") << svg;
  for (const char* t : {"0", "1", "2", "3", "4"}) EXPECT_TRUE(HasText(r, t)) << t;
  for (const char* t : {"0.5", "1.5", "2.5", "3.5"}) EXPECT_FALSE(HasText(r, t)) << t;
  // One value: the axis is padded by one either side, not by a fraction.
  LineChart one;
  one.x_axis.integer = true;
  one.series.push_back({"s", {-3}, {1}});
  r = ReadXml(RenderLineChart(one));
  for (const char* t : {"-4", "-3", "-2"}) EXPECT_TRUE(HasText(r, t)) << t;
  EXPECT_FALSE(HasText(r, "-2.8"));
  // A histogram's count axis is an integer axis: bins of 0, 1 and 3 samples.
  HistogramChart h;
  h.bins = 3;
  h.sets.push_back({"a", {10, 20, 30, 30}});
  r = ReadXml(RenderHistogram(h));
  for (const char* t : {"0", "1", "2", "3"}) EXPECT_TRUE(HasText(r, t)) << t;
  EXPECT_FALSE(HasText(r, "0.5"));
  EXPECT_FALSE(HasText(r, "1.5"));
}

}  // namespace
}  // namespace tw::bench

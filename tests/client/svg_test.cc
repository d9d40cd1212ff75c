// The bench's SVG charts: each document is checked by a small XML reader
// written here (balanced tags, quoted attributes, only the five predefined
// entities, numeric attributes finite), and its content is checked against the
// input: one polyline per series, legend names escaped, ticks where the 1-2-5
// rule puts them, hostile values (NaN, inf, <= 0 on a log axis) skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <string>
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
  EXPECT_EQ(AxisTicks(1, 1000, true), (std::vector<double>{1, 10, 100, 1000}));
  EXPECT_EQ(AxisTicks(-5, 5, false), (std::vector<double>{-4, -2, 0, 2, 4}));
  EXPECT_TRUE(AxisTicks(1, 1, false).empty());
  EXPECT_TRUE(AxisTicks(0, std::numeric_limits<double>::infinity(), false).empty());
}

}  // namespace
}  // namespace tw::bench

// Metrics registry (src/common/metrics.h); lives with the net tests because
// the server is its first user.
#include "common/metrics.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace tw {
namespace {

TEST(MetricsTest, RendersPrometheusTextFormat) {
  Metrics m;
  Counter* c = m.AddCounter("http_accepted_total", "Accepted.");
  Gauge* g = m.AddGauge("tokenwire_connections", "Open \\ connections\nnow.");
  LabeledCounter* l = m.AddLabeledCounter("requests_total", "By code.", "code");
  Histogram* h = m.AddHistogram("ttft_seconds", "TTFT.", {0.5, 0.1, 1});
  c->Inc(3);
  g->Set(5);
  g->Add(-2);
  l->With("404")->Inc();
  l->With("200")->Inc(2);
  l->With("a\"b")->Inc();
  h->Observe(0.05);
  h->Observe(0.1);   // le is inclusive
  h->Observe(0.7);
  h->Observe(30);
  EXPECT_EQ(m.RenderPrometheus(),
            "# HELP tokenwire_http_accepted_total Accepted.\n"
            "# TYPE tokenwire_http_accepted_total counter\n"
            "tokenwire_http_accepted_total 3\n"
            "# HELP tokenwire_connections Open \\\\ connections\\nnow.\n"
            "# TYPE tokenwire_connections gauge\n"
            "tokenwire_connections 3\n"
            "# HELP tokenwire_requests_total By code.\n"
            "# TYPE tokenwire_requests_total counter\n"
            "tokenwire_requests_total{code=\"200\"} 2\n"
            "tokenwire_requests_total{code=\"404\"} 1\n"
            "tokenwire_requests_total{code=\"a\\\"b\"} 1\n"
            "# HELP tokenwire_ttft_seconds TTFT.\n"
            "# TYPE tokenwire_ttft_seconds histogram\n"
            "tokenwire_ttft_seconds_bucket{le=\"0.1\"} 2\n"
            "tokenwire_ttft_seconds_bucket{le=\"0.5\"} 2\n"
            "tokenwire_ttft_seconds_bucket{le=\"1\"} 3\n"
            "tokenwire_ttft_seconds_bucket{le=\"+Inf\"} 4\n"
            "tokenwire_ttft_seconds_sum 30.85\n"
            "tokenwire_ttft_seconds_count 4\n");
}

TEST(MetricsTest, RegisteringTwiceReturnsTheSameMetricUnlessTheKindDiffers) {
  Metrics m;
  Counter* a = m.AddCounter("x_total", "X.");
  EXPECT_EQ(m.AddCounter("tokenwire_x_total", "X."), a);
  EXPECT_EQ(m.AddGauge("x_total", "X."), nullptr);
}

TEST(MetricsTest, ConcurrentUpdatesAreNotLost) {
  Metrics m;
  Counter* c = m.AddCounter("n_total", "N.");
  LabeledCounter* l = m.AddLabeledCounter("codes_total", "C.", "code");
  Histogram* h = m.AddHistogram("h", "H.", {1, 2});
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&, t] {
      for (int i = 0; i < 10000; ++i) {
        c->Inc();
        l->With(t % 2 ? "200" : "500")->Inc();
        h->Observe(1.5);
      }
    });
  }
  for (auto& t : ts) t.join();
  EXPECT_EQ(c->value(), 40000u);
  EXPECT_EQ(l->With("200")->value(), 20000u);
  EXPECT_EQ(h->count(), 40000u);
  EXPECT_EQ(h->bucket_count(1), 40000u);
  EXPECT_DOUBLE_EQ(h->sum(), 60000.0);
}

TEST(MetricsTest, LabelValuesAreBounded) {
  Metrics m;
  LabeledCounter* l = m.AddLabeledCounter("bounded_total", "B.", "k");
  for (size_t i = 0; i < LabeledCounter::kMaxLabelValues + 10; ++i) l->With(std::to_string(i))->Inc();
  auto snap = l->Snapshot();
  EXPECT_LE(snap.size(), LabeledCounter::kMaxLabelValues + 1);
  uint64_t other = 0;
  for (auto& [k, v] : snap) if (k == "other") other = v;
  EXPECT_EQ(other, 10u);
}

}  // namespace
}  // namespace tw

// Metrics: a tiny Prometheus-style registry (counters, gauges, histograms).
//
// Threads: every method may be called from any thread. Updates (Inc, Add, Set,
// Observe) are lock-free atomics; registration, creating a new label value and
// RenderPrometheus() take the registry mutex.
// Allocation: one object per registered metric and per label value, never on
// the update path. The number of label values of one counter is bounded by
// `max_label_values` (further values are folded into label value "other").
// Never: removes a metric (pointers returned by Add* stay valid for the
// registry's lifetime), throws, or blocks on I/O.
//
// Names: every metric name starts with "tokenwire_"; Add* prepends it when the
// given name lacks it. Registering a name twice returns the existing metric
// (so several components may share one registry), provided the kind matches;
// otherwise nullptr.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/mutex.h"

namespace tw {

class Counter {
 public:
  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

class Gauge {
 public:
  void Set(int64_t v) { value_.store(v, std::memory_order_relaxed); }
  void Add(int64_t d) { value_.fetch_add(d, std::memory_order_relaxed); }
  int64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> value_{0};
};

// Fixed upper bounds (ascending, finite); an implicit +Inf bucket follows.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  const std::vector<double>& upper_bounds() const { return bounds_; }
  // Non-cumulative count of bucket i (i == bounds().size() is +Inf).
  uint64_t bucket_count(size_t i) const { return counts_[i].load(std::memory_order_relaxed); }
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }
  double sum() const { return sum_.load(std::memory_order_relaxed); }

 private:
  std::vector<double> bounds_;
  std::unique_ptr<std::atomic<uint64_t>[]> counts_;  // bounds_.size() + 1
  std::atomic<uint64_t> count_{0};
  std::atomic<double> sum_{0.0};
};

// A counter with one label (e.g. code="404"). With(value) is a short mutex-held
// map lookup; callers on hot paths may keep the returned Counter*.
class LabeledCounter {
 public:
  static constexpr size_t kMaxLabelValues = 64;  // max_label_values
  explicit LabeledCounter(std::string label_name) : label_(std::move(label_name)) {}
  Counter* With(std::string_view label_value);
  const std::string& label_name() const { return label_; }
  // Snapshot of (label value, count), sorted by label value.
  std::vector<std::pair<std::string, uint64_t>> Snapshot() const;

 private:
  std::string label_;
  mutable Mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>, std::less<>> values_ TW_GUARDED_BY(mu_);
};

class Metrics {
 public:
  Counter* AddCounter(std::string name, std::string help);
  LabeledCounter* AddLabeledCounter(std::string name, std::string help, std::string label_name);
  Gauge* AddGauge(std::string name, std::string help);
  Histogram* AddHistogram(std::string name, std::string help, std::vector<double> upper_bounds);

  // Text exposition format 0.0.4: "# HELP", "# TYPE", then samples; metrics in
  // registration order.
  std::string RenderPrometheus() const;

 private:
  enum class Kind { kCounter, kLabeledCounter, kGauge, kHistogram };
  struct Entry {
    std::string name, help;
    Kind kind;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<LabeledCounter> labeled;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  Entry* FindOrAdd(std::string name, std::string help, Kind kind, bool* created)
      TW_REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<Entry>> entries_ TW_GUARDED_BY(mu_);
};

}  // namespace tw

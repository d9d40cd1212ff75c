#include "common/metrics.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace tw {
namespace {

constexpr std::string_view kPrefix = "tokenwire_";

void AppendDouble(std::string* out, double v) {
  if (std::isinf(v)) {
    *out += v > 0 ? "+Inf" : "-Inf";
    return;
  }
  if (std::isnan(v)) {
    *out += "NaN";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  out->append(buf, r.ptr);
}

// HELP text escapes backslash and newline; label values also escape '"'.
void AppendEscaped(std::string* out, std::string_view s, bool quote) {
  for (char c : s) {
    if (c == '\\') *out += "\\\\";
    else if (c == '\n') *out += "\\n";
    else if (quote && c == '"') *out += "\\\"";
    else *out += c;
  }
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  std::sort(bounds_.begin(), bounds_.end());
  bounds_.erase(std::unique(bounds_.begin(), bounds_.end()), bounds_.end());
  while (!bounds_.empty() && !std::isfinite(bounds_.back())) bounds_.pop_back();
  counts_ = std::make_unique<std::atomic<uint64_t>[]>(bounds_.size() + 1);
  for (size_t i = 0; i <= bounds_.size(); ++i) counts_[i].store(0);
}

void Histogram::Observe(double v) {
  size_t i = std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin();  // first le >= v
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

Counter* LabeledCounter::With(std::string_view label_value) {
  MutexLock lock(mu_);
  auto it = values_.find(label_value);
  if (it != values_.end()) return it->second.get();
  if (values_.size() >= kMaxLabelValues) label_value = "other";
  auto& slot = values_[std::string(label_value)];
  if (!slot) slot = std::make_unique<Counter>();
  return slot.get();
}

std::vector<std::pair<std::string, uint64_t>> LabeledCounter::Snapshot() const {
  MutexLock lock(mu_);
  std::vector<std::pair<std::string, uint64_t>> out;
  for (const auto& [k, c] : values_) out.emplace_back(k, c->value());
  return out;
}

Metrics::Entry* Metrics::FindOrAdd(std::string name, std::string help, Kind kind, bool* created) {
  if (name.compare(0, kPrefix.size(), kPrefix) != 0) name = std::string(kPrefix) + name;
  *created = false;
  for (auto& e : entries_) {
    if (e->name == name) return e->kind == kind ? e.get() : nullptr;
  }
  auto e = std::make_unique<Entry>();
  e->name = std::move(name);
  e->help = std::move(help);
  e->kind = kind;
  entries_.push_back(std::move(e));
  *created = true;
  return entries_.back().get();
}

Counter* Metrics::AddCounter(std::string name, std::string help) {
  MutexLock lock(mu_);
  bool created;
  Entry* e = FindOrAdd(std::move(name), std::move(help), Kind::kCounter, &created);
  if (!e) return nullptr;
  if (created) e->counter = std::make_unique<Counter>();
  return e->counter.get();
}

LabeledCounter* Metrics::AddLabeledCounter(std::string name, std::string help,
                                           std::string label_name) {
  MutexLock lock(mu_);
  bool created;
  Entry* e = FindOrAdd(std::move(name), std::move(help), Kind::kLabeledCounter, &created);
  if (!e) return nullptr;
  if (created) e->labeled = std::make_unique<LabeledCounter>(std::move(label_name));
  return e->labeled.get();
}

Gauge* Metrics::AddGauge(std::string name, std::string help) {
  MutexLock lock(mu_);
  bool created;
  Entry* e = FindOrAdd(std::move(name), std::move(help), Kind::kGauge, &created);
  if (!e) return nullptr;
  if (created) e->gauge = std::make_unique<Gauge>();
  return e->gauge.get();
}

Histogram* Metrics::AddHistogram(std::string name, std::string help,
                                 std::vector<double> upper_bounds) {
  MutexLock lock(mu_);
  bool created;
  Entry* e = FindOrAdd(std::move(name), std::move(help), Kind::kHistogram, &created);
  if (!e) return nullptr;
  if (created) e->histogram = std::make_unique<Histogram>(std::move(upper_bounds));
  return e->histogram.get();
}

std::string Metrics::RenderPrometheus() const {
  MutexLock lock(mu_);
  std::string out;
  for (const auto& e : entries_) {
    out += "# HELP ";
    out += e->name;
    out += ' ';
    AppendEscaped(&out, e->help, false);
    out += "\n# TYPE ";
    out += e->name;
    switch (e->kind) {
      case Kind::kCounter:
        out += " counter\n" + e->name + ' ' + std::to_string(e->counter->value()) + '\n';
        break;
      case Kind::kLabeledCounter:
        out += " counter\n";
        for (const auto& [value, n] : e->labeled->Snapshot()) {
          out += e->name + '{' + e->labeled->label_name() + "=\"";
          AppendEscaped(&out, value, true);
          out += "\"} " + std::to_string(n) + '\n';
        }
        break;
      case Kind::kGauge:
        out += " gauge\n" + e->name + ' ' + std::to_string(e->gauge->value()) + '\n';
        break;
      case Kind::kHistogram: {
        out += " histogram\n";
        const Histogram& h = *e->histogram;
        uint64_t cumulative = 0;
        for (size_t i = 0; i <= h.upper_bounds().size(); ++i) {
          cumulative += h.bucket_count(i);
          out += e->name + "_bucket{le=\"";
          AppendDouble(&out, i < h.upper_bounds().size() ? h.upper_bounds()[i] : INFINITY);
          out += "\"} " + std::to_string(cumulative) + '\n';
        }
        out += e->name + "_sum ";
        AppendDouble(&out, h.sum());
        out += '\n' + e->name + "_count " + std::to_string(cumulative) + '\n';  // equals the +Inf bucket
        break;
      }
    }
  }
  return out;
}

}  // namespace tw

#include "stream/stream.h"

#include <algorithm>

namespace tw::stream {

const char* EventTypeName(EventType t) {
  switch (t) {
    case EventType::kStart: return "start";
    case EventType::kToken: return "token";
    case EventType::kDone: return "done";
    case EventType::kError: return "error";
  }
  return "unknown";
}

Stream::Stream(std::string id, const StreamLimits& limits, Notifier* notifier,
               Clock::time_point arrival)
    : id_(std::move(id)), limits_(limits), notifier_(notifier), created_(arrival) {
  if (limits_.resume_window_events == 0) const_cast<StreamLimits&>(limits_).resume_window_events = 1;
}

void Stream::MarkDirtyLocked() {
  if (notifier_ != nullptr && !dirty.exchange(true)) notifier_->MarkDirty(shared_from_this());
}

uint64_t Stream::Append(EventType type, std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  return AppendLocked(type, std::move(data));
}

uint64_t Stream::AppendLocked(EventType type, std::string data) {
  if (finished_) return 0;
  if (type == EventType::kToken) {
    const StreamMetrics& m = limits_.metrics;
    Clock::time_point now = Clock::now();
    Histogram* h = last_token_at_ == Clock::time_point{} ? m.ttft_seconds : m.inter_token_seconds;
    Clock::time_point since = last_token_at_ == Clock::time_point{} ? created_ : last_token_at_;
    if (h) h->Observe(std::chrono::duration<double>(now - since).count());
    if (m.tokens_generated) m.tokens_generated->Inc();
    last_token_at_ = now;
  }
  if (type == EventType::kToken && limits_.lab_pad_bytes > 0 && !data.empty() && data.back() == '}') {
    data.pop_back();
    data += ",\"pad\":\"";
    data.append(limits_.lab_pad_bytes, '.');
    data += "\"}";
  }
  auto ev = std::make_shared<Event>();
  ev->seq = ++head_seq_;
  ev->type = type;
  ev->data = std::move(data);
  bytes_held_ += ev->data.size();
  ring_.push_back(std::move(ev));
  TrimLocked();
  peak_bytes_held_ = std::max(peak_bytes_held_, bytes_held_);
  MarkDirtyLocked();
  return head_seq_;
}

void Stream::Hold() {
  std::lock_guard<std::mutex> lock(mu_);
  held_ = true;
}

void Stream::ReleaseHold() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!held_) return;
  held_ = false;
  TrimLocked();
}

void Stream::TrimLocked() {
  if (held_) return;
  const bool keep = limits_.keep_untaken_events;
  const uint64_t taken = delivered_through_.load();
  while (ring_.size() > 1) {
    bool over_cap = (limits_.max_bytes_held > 0 && bytes_held_ > limits_.max_bytes_held) ||
                    (keep && ring_.size() > limits_.max_untaken_events);
    // Beyond the window, an event goes unless `unbounded` keeps it for a
    // subscriber that has not taken it.
    bool over_window = ring_.size() > limits_.resume_window_events && (!keep || ring_.front()->seq <= taken);
    if (!over_cap && !over_window) break;
    bytes_held_ -= ring_.front()->data.size();
    ring_.pop_front();
  }
}

void Stream::Finish(EventType type, std::string data) {
  std::lock_guard<std::mutex> lock(mu_);
  if (finished_) return;
  AppendLocked(type, std::move(data));
  finished_ = true;
  finished_at_ = Clock::now();
  MarkDirtyLocked();
}

Stream::AttachResult Stream::Attach(const void* subscriber, uint64_t after_seq,
                                    uint64_t* oldest_available) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t oldest = head_seq_ - ring_.size() + 1;  // == head+1 when empty
  if (oldest_available) *oldest_available = oldest;
  if (after_seq + 1 < oldest) return AttachResult::kWindowExceeded;
  if (subscribers_.size() >= limits_.max_subscribers) return AttachResult::kTooManySubscribers;
  subscribers_.push_back(subscriber);
  // Whatever is in the ring after the cursor is the backlog; whatever is
  // appended after this point is live. Both are read the same way.
  MarkDirtyLocked();
  return AttachResult::kOk;
}

size_t Stream::Detach(const void* subscriber) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = std::find(subscribers_.begin(), subscribers_.end(), subscriber);
  if (it != subscribers_.end()) subscribers_.erase(it);
  return subscribers_.size();
}

bool Stream::ReadFrom(uint64_t from, size_t max_events, std::vector<EventPtr>* out,
                      bool* finished) const {
  out->clear();
  std::lock_guard<std::mutex> lock(mu_);
  if (finished) *finished = finished_;
  uint64_t oldest = head_seq_ - ring_.size() + 1;
  if (from < oldest) return false;
  for (uint64_t seq = from; seq <= head_seq_ && out->size() < max_events; seq++) {
    out->push_back(ring_[seq - oldest]);
  }
  return true;
}

uint64_t Stream::head_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return head_seq_;
}
uint64_t Stream::oldest_seq() const {
  std::lock_guard<std::mutex> lock(mu_);
  return head_seq_ - ring_.size() + 1;
}
bool Stream::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_;
}
bool Stream::producer_exited() const { return finished(); }
size_t Stream::bytes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_held_;
}
size_t Stream::peak_bytes_held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_bytes_held_;
}
size_t Stream::event_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ring_.size();
}
size_t Stream::subscriber_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return subscribers_.size();
}
Clock::time_point Stream::finished_at() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_at_;
}

void Stream::SetDeliveredThrough(uint64_t seq) {
  delivered_through_.store(seq);
  if (limits_.keep_untaken_events) {
    std::lock_guard<std::mutex> lock(mu_);
    TrimLocked();
  }
  std::lock_guard<std::mutex> lock(listener_mu_);
  if (listener_) listener_();
}

void Stream::SetDeliveryListener(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(listener_mu_);
  listener_ = std::move(fn);
}

void Notifier::MarkDirty(std::shared_ptr<Stream> s) {
  bool post = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(std::move(s));
    if (!scheduled_) scheduled_ = post = true;
  }
  if (post) post_([this] { RunDrain(); });
}

void Notifier::RunDrain() {
  std::vector<std::shared_ptr<Stream>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(pending_);
    scheduled_ = false;
  }
  // Clear each flag before draining, so an append that races with this drain
  // queues the stream again rather than being missed.
  for (auto& s : batch) s->dirty.store(false);
  drain_(batch);
}

}  // namespace tw::stream

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

const char* FinishReasonName(FinishReason r) {
  switch (r) {
    case FinishReason::kLength: return "length";
    case FinishReason::kStop: return "stop";
    case FinishReason::kEos: return "eos";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kError: return "error";
  }
  return "error";
}

Event Event::Start(int prompt_tokens) {
  Event e;
  e.type = EventType::kStart;
  e.prompt_tokens = prompt_tokens;
  return e;
}

Event Event::Token(int index, int32_t token, std::string text) {
  Event e;
  e.type = EventType::kToken;
  e.index = index;
  e.token = token;
  e.text = std::move(text);
  return e;
}

Event Event::Done(FinishReason reason, int prompt_tokens, int completion_tokens) {
  Event e;
  e.type = EventType::kDone;
  e.finish_reason = reason;
  e.prompt_tokens = prompt_tokens;
  e.completion_tokens = completion_tokens;
  return e;
}

Event Event::Error(ApiError error) {
  Event e;
  e.type = EventType::kError;
  e.finish_reason = FinishReason::kError;
  e.error = std::make_shared<const ApiError>(std::move(error));
  return e;
}

namespace {

StreamLimits Checked(StreamLimits l) {
  l.resume_window_events = std::max<size_t>(l.resume_window_events, 1);
  l.stream_interval = std::max(l.stream_interval, 1);
  return l;
}

int64_t Nanos(Clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

}  // namespace

Stream::Stream(std::string id, const StreamLimits& limits, Notifier* notifier,
               Clock::time_point arrival)
    : id_(std::move(id)),
      limits_(Checked(limits)),
      lab_(limits_.lab.get()),
      notifier_(notifier),
      created_(arrival) {}

size_t Stream::EventBytes(const Event& e) {
  size_t n = sizeof(Event) + e.text.size() + e.lab_pad_bytes + (e.error ? e.error->message.size() : 0);
  if (e.logprobs) {
    // The alternatives: often most of a token event's memory (20 of them is
    // about a kilobyte).
    const TokenLogprobs& l = *e.logprobs;
    n += sizeof(TokenLogprobs) + l.sampled.bytes.size() + l.top.capacity() * sizeof(TokenLogprob);
    for (const TokenLogprob& t : l.top) n += t.bytes.size();
  }
  return n;
}

void Stream::MarkDirtyLocked() {
  if (notifier_ != nullptr && !dirty.exchange(true)) notifier_->MarkDirty(shared_from_this());
}

uint64_t Stream::Append(Event event) {
  MutexLock lock(mu_);
  return AppendLocked(std::move(event));
}

uint64_t Stream::AppendLocked(Event event) {
  if (finished_) return 0;
  bool announce = true;
  if (event.type == EventType::kToken) {
    const StreamMetrics& m = limits_.metrics;
    Clock::time_point now = Clock::now();
    const bool first = last_token_at_ == Clock::time_point{};
    Histogram* h = first ? m.ttft_seconds : m.inter_token_seconds;
    if (h) h->Observe(std::chrono::duration<double>(now - (first ? created_ : last_token_at_)).count());
    if (m.tokens_generated) m.tokens_generated->Inc();
    tokens_appended_++;
    if (first) first_token_at_ = now;
    last_token_at_ = now;
    if (lab_ != nullptr) event.lab_pad_bytes = lab_->pad_bytes;
    // --stream-interval: after the first token (TTFT is never delayed),
    // announce every N-th; the hub's timer bounds how long one is held.
    if (limits_.stream_interval > 1 && !first) {
      if (held_since_ns_.load(std::memory_order_acquire) == 0) {
        tokens_held_ = 0;  // nothing held (or TakeHeld took it): a new group
        held_since_ns_.store(Nanos(now), std::memory_order_release);
      }
      announce = ++tokens_held_ >= limits_.stream_interval;
    }
  }
  if (announce) {
    tokens_held_ = 0;
    held_since_ns_.store(0, std::memory_order_release);
  }
  auto ev = std::make_shared<Event>(std::move(event));
  ev->seq = ++head_seq_;
  bytes_held_ += EventBytes(*ev);
  ring_.push_back(std::move(ev));
  TrimLocked();
  peak_bytes_held_ = std::max(peak_bytes_held_, bytes_held_);
  if (announce) MarkDirtyLocked();
  return head_seq_;
}

bool Stream::TakeHeld(Clock::time_point now, Clock::duration min_age) {
  int64_t since = held_since_ns_.load(std::memory_order_acquire);
  if (since == 0 || Nanos(now) - since < std::chrono::duration_cast<std::chrono::nanoseconds>(min_age).count()) {
    return false;
  }
  return held_since_ns_.compare_exchange_strong(since, 0, std::memory_order_acq_rel);
}

void Stream::Hold() {
  MutexLock lock(mu_);
  held_ = true;
}

void Stream::ReleaseHold() {
  MutexLock lock(mu_);
  if (!held_) return;
  held_ = false;
  TrimLocked();
}

void Stream::TrimLocked() {
  if (held_) return;
  if (lab_ == nullptr) {
    while (ring_.size() > limits_.resume_window_events) {
      bytes_held_ -= EventBytes(*ring_.front());
      ring_.pop_front();
    }
    return;
  }
  const bool keep = lab_->keep_untaken_events;
  const uint64_t taken = delivered_through_.load();
  while (ring_.size() > 1) {
    bool over_cap = (lab_->max_bytes_held > 0 && bytes_held_ > lab_->max_bytes_held) ||
                    (keep && ring_.size() > lab_->max_untaken_events);
    // Beyond the window, an event goes unless `unbounded` keeps it for a
    // subscriber that has not taken it.
    bool over_window = ring_.size() > limits_.resume_window_events && (!keep || ring_.front()->seq <= taken);
    if (!over_cap && !over_window) break;
    bytes_held_ -= EventBytes(*ring_.front());
    ring_.pop_front();
  }
}

void Stream::Finish(Event event) {
  MutexLock lock(mu_);
  if (finished_) return;
  AppendLocked(std::move(event));
  finished_ = true;
  finished_at_ = Clock::now();
  MarkDirtyLocked();
}

Stream::AttachResult Stream::Attach(const void* subscriber, uint64_t after_seq,
                                    uint64_t* oldest_available, uint64_t* head) {
  MutexLock lock(mu_);
  uint64_t oldest = head_seq_ - ring_.size() + 1;  // == head+1 when empty
  if (oldest_available) *oldest_available = oldest;
  if (head) *head = head_seq_;
  // Checked first: after_seq + 1 below cannot wrap around.
  if (after_seq > head_seq_) return AttachResult::kPastHead;
  if (after_seq + 1 < oldest) return AttachResult::kWindowExceeded;
  if (subscribers_.size() >= limits_.max_subscribers) return AttachResult::kTooManySubscribers;
  subscribers_.push_back(subscriber);
  // Whatever is in the ring after the cursor is the backlog; whatever is
  // appended after this point is live. Both are read the same way.
  MarkDirtyLocked();
  return AttachResult::kOk;
}

size_t Stream::Detach(const void* subscriber) {
  MutexLock lock(mu_);
  auto it = std::find(subscribers_.begin(), subscribers_.end(), subscriber);
  if (it != subscribers_.end()) subscribers_.erase(it);
  return subscribers_.size();
}

bool Stream::ReadFrom(uint64_t from, size_t max_events, std::vector<EventPtr>* out,
                      bool* finished) const {
  out->clear();
  MutexLock lock(mu_);
  if (finished) *finished = finished_;
  uint64_t oldest = head_seq_ - ring_.size() + 1;
  if (from < oldest) return false;
  for (uint64_t seq = from; seq <= head_seq_ && out->size() < max_events; seq++) {
    out->push_back(ring_[seq - oldest]);
  }
  return true;
}

uint64_t Stream::head_seq() const {
  MutexLock lock(mu_);
  return head_seq_;
}
uint64_t Stream::oldest_seq() const {
  MutexLock lock(mu_);
  return head_seq_ - ring_.size() + 1;
}
bool Stream::finished() const {
  MutexLock lock(mu_);
  return finished_;
}
bool Stream::producer_exited() const { return finished(); }
size_t Stream::bytes_held() const {
  MutexLock lock(mu_);
  return bytes_held_;
}
size_t Stream::peak_bytes_held() const {
  MutexLock lock(mu_);
  return peak_bytes_held_;
}
size_t Stream::event_count() const {
  MutexLock lock(mu_);
  return ring_.size();
}
size_t Stream::subscriber_count() const {
  MutexLock lock(mu_);
  return subscribers_.size();
}
uint64_t Stream::tokens_appended() const {
  MutexLock lock(mu_);
  return tokens_appended_;
}

Clock::time_point Stream::first_token_at() const {
  MutexLock lock(mu_);
  return first_token_at_;
}

Clock::time_point Stream::finished_at() const {
  MutexLock lock(mu_);
  return finished_at_;
}
EventPtr Stream::terminal_event() const {
  MutexLock lock(mu_);
  if (!finished_ || ring_.empty()) return nullptr;
  return ring_.back();
}

void Stream::SetDeliveredThrough(uint64_t seq) {
  delivered_through_.store(seq);
  if (lab_ != nullptr && lab_->keep_untaken_events) {
    MutexLock lock(mu_);
    TrimLocked();
  }
  MutexLock lock(listener_mu_);
  if (listener_) listener_();
}

void Stream::SetDeliveryListener(std::function<void()> fn) {
  MutexLock lock(listener_mu_);
  listener_ = std::move(fn);
}

void Notifier::MarkDirty(std::shared_ptr<Stream> s) {
  bool post = false;
  {
    MutexLock lock(mu_);
    pending_.push_back(std::move(s));
    if (!scheduled_) scheduled_ = post = true;
  }
  if (post) post_([this] { RunDrain(); });
}

void Notifier::RunDrain() {
  draining_.clear();
  {
    MutexLock lock(mu_);
    draining_.swap(pending_);  // both keep their capacity across drains
    scheduled_ = false;
  }
  // Clear each flag before draining, so an append that races with this drain
  // queues the stream again rather than being missed.
  for (auto& s : draining_) s->dirty.store(false);
  drain_(draining_);
  draining_.clear();
}

}  // namespace tw::stream

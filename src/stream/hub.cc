#include "stream/hub.h"

#include <algorithm>

#include "common/random.h"
#include "net/event_loop.h"

namespace tw::stream {

const char* PolicyName(Policy p) {
  switch (p) {
    case Policy::kDropSlow: return "drop_slow";
    case Policy::kPauseProducer: return "pause_producer";
    case Policy::kPauseThenCancel: return "pause_then_cancel";
    case Policy::kNaive: return "naive";
    case Policy::kUnbounded: return "unbounded";
  }
  return "unknown";
}

bool ParsePolicy(std::string_view s, Policy* out, bool allow_lab) {
  if (s == "drop_slow") *out = Policy::kDropSlow;
  else if (s == "pause_producer") *out = Policy::kPauseProducer;
  else if (s == "pause_then_cancel") *out = Policy::kPauseThenCancel;
  else if (allow_lab && s == "naive") *out = Policy::kNaive;
  else if (allow_lab && s == "unbounded") *out = Policy::kUnbounded;
  else return false;
  return true;
}

bool IsLabPolicy(Policy p) { return p == Policy::kNaive || p == Policy::kUnbounded; }

ApiError SubscriberEnd(ErrorCode code, std::string message, uint64_t resume_from) {
  ApiError e = ApiError::Make(code, std::move(message));
  e.resume_from = static_cast<int64_t>(resume_from);
  return e;
}

ApiError ResumePastHeadError(std::string_view stream_id, uint64_t after, uint64_t head, bool finished) {
  std::string m = "event " + std::to_string(after) + " does not exist: stream '" + std::string(stream_id) +
                  (finished ? "' finished with event " : "' has produced events up to ") +
                  std::to_string(head) + "; resume after an event id you received";
  return ApiError::Make(ErrorCode::kInvalidRequest, std::move(m));
}

StreamHub::StreamHub(net::EventLoop* loop, ProducerControl* producer, const HubOptions& options)
    : loop_(loop),
      producer_(producer),
      options_(options),
      notifier_(
          [loop, alive = std::weak_ptr<bool>(alive_)](std::function<void()> fn) {
            loop->Post([alive, fn = std::move(fn)] {
              if (alive.lock()) fn();
            });
          },
          [this](std::vector<std::shared_ptr<Stream>>& dirty) { Drain(dirty); }) {
  batch_.reserve(std::max<size_t>(options_.write_batch_events, 1));
  if (options_.stream_interval > 1) {
    held_timer_ = loop_->AddRepeatingTimer(std::max<int64_t>(options_.stream_interval_bound_ms / 2, 1),
                                           [this] { DeliverHeld(); });
  }
}

StreamHub::~StreamHub() {
  alive_.reset();
  StopTimer(&held_timer_);
  StopTimer(&enforce_timer_);
  for (auto& [id, e] : entries_) {
    StopTimer(&e.linger_timer);
    StopTimer(&e.stall_timer);
    StopTimer(&e.retain_timer);
  }
}

std::string StreamHub::NewId() {
  std::string id = "s_";
  if (!instance_tag_.empty()) id += instance_tag_ + "_";
  return id + RandomHex(16);
}

std::shared_ptr<Stream> StreamHub::Create(Policy policy, std::string request_id) {
  if (entries_.size() >= options_.max_streams) return nullptr;
  std::string id = NewId();
  StreamLimits limits = options_.stream_limits;
  if (IsLabPolicy(policy)) {
    // The lab policies' options ride on the stream's one lab gate (with the
    // server's --lab-pad-bytes, if any, from stream_limits.lab).
    auto lab = std::make_shared<LabStreamOptions>(limits.lab ? *limits.lab : LabStreamOptions{});
    if (policy == Policy::kUnbounded) {
      lab->keep_untaken_events = true;
      lab->max_untaken_events = options_.lab_unbounded_max_events;
      lab->max_bytes_held = options_.lab_unbounded_max_bytes;
    } else {
      lab->waits_for_readers = true;
    }
    limits.lab = std::move(lab);
  }
  auto s = std::make_shared<Stream>(id, limits, &notifier_);
  s->Hold();  // until its creator attaches or it is declared detached
  Entry& e = entries_[id];
  e.stream = s;
  e.policy = policy;
  e.lab = IsLabPolicy(policy);
  e.request_id = std::move(request_id);
  counters_.streams_created++;
  return s;
}

void StreamHub::StartDetached(const std::shared_ptr<Stream>& s) {
  s->ReleaseHold();
  Entry* e = EntryFor(*s);
  if (e == nullptr || !e->subs.empty()) return;
  StartLinger(*e);
  ApplyPolicy(*e);  // pause_producer: nobody attached yet, so paused
  PublishDelivered(*e);
}

std::shared_ptr<Stream> StreamHub::Find(std::string_view id) const {
  auto it = entries_.find(std::string(id));
  return it == entries_.end() ? nullptr : it->second.stream;
}

void StreamHub::Abandon(const std::shared_ptr<Stream>& s) {
  auto it = entries_.find(s->id());
  if (it == entries_.end()) return;
  StopTimer(&it->second.linger_timer);
  StopTimer(&it->second.stall_timer);
  StopTimer(&it->second.retain_timer);
  entries_.erase(it);
  erasures_++;
  // It never existed for anyone: created - finished counts live streams.
  counters_.streams_created--;
}

StreamHub::Entry* StreamHub::EntryFor(const Stream& s) {
  auto it = entries_.find(s.id());
  return it == entries_.end() ? nullptr : &it->second;
}

StreamHub::Entry* StreamHub::EntryForSub(Subscription* sub, size_t* index) {
  auto it = sub_index_.find(sub);
  if (it == sub_index_.end()) return nullptr;
  auto e = entries_.find(it->second);
  if (e == entries_.end()) return nullptr;
  for (size_t i = 0; i < e->second.subs.size(); i++) {
    if (e->second.subs[i].transport == sub) {
      *index = i;
      return &e->second;
    }
  }
  return nullptr;
}

Stream::AttachResult StreamHub::Attach(const std::shared_ptr<Stream>& s, Subscription* sub,
                                       uint64_t after_seq, uint64_t* oldest_available,
                                       uint64_t* head) {
  Entry* e = EntryFor(*s);
  uint64_t oldest = 0;
  Stream::AttachResult r =
      e ? s->Attach(sub, after_seq, &oldest, head) : Stream::AttachResult::kWindowExceeded;
  if (oldest_available) *oldest_available = oldest;
  if (r == Stream::AttachResult::kWindowExceeded) {
    counters_.resumes_window_exceeded++;
    return r;
  }
  if (r != Stream::AttachResult::kOk) return r;
  LogIf(options_.log, LogLevel::kDebug, "attach", {{"stream", s->id()}, {"after", after_seq}});
  if (after_seq > 0) {
    counters_.resumes_ok++;
    e->resumes++;
  }
  // Stream::Attach refused a cursor beyond the head (kPastHead).
  e->subs.push_back(Sub{sub, after_seq + 1, s->head_seq()});
  sub_index_[sub] = s->id();
  StopTimer(&e->linger_timer);
  // Deliver the backlog now rather than at the next append; then the window
  // applies (what the subscriber could not take counts as its lag).
  Service(*e);
  s->ReleaseHold();
  return r;
}

void StreamHub::Detach(Subscription* sub) {
  size_t index = 0;
  Entry* e = EntryForSub(sub, &index);
  if (e == nullptr) {
    sub_index_.erase(sub);
    return;
  }
  RemoveSub(*e, index);
  ApplyPolicy(*e);
  PublishDelivered(*e);
}

void StreamHub::OnWritable(Subscription* sub) {
  size_t index = 0;
  Entry* e = EntryForSub(sub, &index);
  if (e != nullptr) Service(*e);
}

void StreamHub::RemoveSub(Entry& e, size_t index) {
  Subscription* t = e.subs[index].transport;
  e.subs.erase(e.subs.begin() + static_cast<long>(index));
  sub_index_.erase(t);
  size_t left = e.stream->Detach(t);
  if (left == 0 && !e.stream->finished()) StartLinger(e);
  if (e.finish_order != 0) Account(e);  // its reader may have cached more wire bytes
}

void StreamHub::StopTimer(uint64_t* id) {
  if (*id != 0) {
    loop_->CancelTimer(*id);
    *id = 0;
  }
}

void StreamHub::StartLinger(Entry& e) {
  if (e.linger_timer != 0 || e.stream->finished() || shutting_down_) return;
  if (options_.linger_ms <= 0) {
    CancelGeneration(e, "linger");
    return;
  }
  std::string id = e.stream->id();
  e.linger_timer = loop_->AddTimer(options_.linger_ms, [this, id] {
    auto it = entries_.find(id);
    if (it == entries_.end()) return;
    Entry& en = it->second;
    en.linger_timer = 0;
    if (en.subs.empty() && !en.stream->finished()) {
      CancelGeneration(en, "linger");
    }
  });
}

void StreamHub::CancelGeneration(Entry& e, const char* reason) {
  if (e.cancel_sent || e.stream->finished()) return;
  e.cancel_sent = true;
  e.cancel_at = Clock::now();
  e.cancel_reason = reason;
  LogIf(options_.log, LogLevel::kInfo, "cancel",
        {{"stream", e.stream->id()}, {"reason", reason}, {"request_id", RequestIdField(e)}});
  producer_->Cancel(e.stream->id());
}

void StreamHub::EndSlow(Entry& e, size_t index, const ApiError& end) {
  Subscription* t = e.subs[index].transport;
  counters_.slow_client_detaches++;
  e.detaches++;
  LogIf(options_.log, LogLevel::kInfo, "detach",
        {{"stream", e.stream->id()},
         {"reason", "slow_client"},
         {"policy", PolicyName(e.policy)},
         {"resume_from", end.resume_from},
         {"request_id", RequestIdField(e)}});
  RemoveSub(e, index);
  t->End(end);
}

// A stream's request id as a log field: absent when it has none.
std::string_view StreamHub::RequestIdField(const Entry& e) {
  return e.request_id.empty() ? std::string_view() : std::string_view(e.request_id);
}

void StreamHub::LogOutcome(const Entry& e) {
  if (options_.log == nullptr || !options_.log->Enabled(LogLevel::kInfo)) return;
  using Ms = std::chrono::duration<double, std::milli>;
  const EventPtr last = e.stream->terminal_event();
  const Clock::time_point first = e.stream->first_token_at();
  const bool error = last && last->type == EventType::kError;
  std::string_view error_type;  // absent unless the stream ended with an error event
  if (error && last->error) error_type = last->error->type();
  options_.log->Log(
      LogLevel::kInfo, "stream",
      {{"stream", e.stream->id()},
       {"request_id", RequestIdField(e)},
       {"finish_reason", error ? "error" : FinishReasonName(last ? last->finish_reason : FinishReason::kCancelled)},
       {"error", error_type},
       {"prompt_tokens", last ? last->prompt_tokens : 0},
       {"tokens", last ? last->completion_tokens : 0},
       {"ttft_ms", first == Clock::time_point{} ? std::optional<double>()
                                                 : Ms(first - e.stream->created()).count()},
       {"duration_ms", Ms(e.stream->finished_at() - e.stream->created()).count()},
       {"policy", PolicyName(e.policy)},
       {"resumes", e.resumes},
       {"detaches", e.detaches},
       {"cancel", e.cancel_reason}});
}

void StreamHub::Forget(const Entry& e) {
  const uint64_t made = e.stream->tokens_appended();
  counters_.tokens_never_delivered += made > e.tokens_taken ? made - e.tokens_taken : 0;
  if (e.finish_order != 0) {
    retained_bytes_ -= e.retained_bytes;
    retained_order_.erase(e.finish_order);
  }
}

void StreamHub::Cancel(const std::shared_ptr<Stream>& s, std::function<void()> on_exit, CancelCause cause) {
  Entry* e = EntryFor(*s);
  if (e == nullptr || e->stream->finished()) {
    if (on_exit) on_exit();
    return;
  }
  if (on_exit) e->exit_waiters.push_back(std::move(on_exit));
  const char* reason = cause == CancelCause::kClientGone ? "client_gone"
                       : cause == CancelCause::kSibling  ? "sibling"
                       : cause == CancelCause::kWsCancel ? "ws_cancel"
                                                         : "delete";
  CancelGeneration(*e, reason);
}

void StreamHub::Drain(std::vector<std::shared_ptr<Stream>>& dirty) {
  for (auto& s : dirty) {
    Entry* e = EntryFor(*s);
    if (e != nullptr && e->stream == s) Service(*e);
  }
}

void StreamHub::Service(Entry& e) {
  // Keep the stream alive across callbacks; a transport's callback could
  // erase entries (erasures_ tells), so `e` is re-checked after each.
  std::shared_ptr<Stream> keep = e.stream;
  bool capped = false;
  for (size_t i = 0; i < e.subs.size();) {
    const uint64_t erasures = erasures_;
    bool still = DeliverTo(e, i, &capped);
    if (erasures != erasures_ && EntryFor(*keep) != &e) return;
    if (still) i++;
  }
  if (capped) ContinueLater(e);
  if (keep->finished()) {
    HandleExit(e);
  } else {
    ApplyPolicy(e);
    PublishDelivered(e);
  }
}

void StreamHub::ContinueLater(Entry& e) {
  if (e.continue_posted) return;
  e.continue_posted = true;
  std::weak_ptr<Stream> weak = e.stream;
  loop_->AddTimer(0, [this, weak] {
    std::shared_ptr<Stream> s = weak.lock();
    Entry* en = s ? EntryFor(*s) : nullptr;
    if (en == nullptr || en->stream != s) return;
    en->continue_posted = false;
    Service(*en);
  });
}

void StreamHub::DeliverHeld() {
  const Clock::time_point now = Clock::now();
  const auto half = std::chrono::milliseconds(std::max<int64_t>(options_.stream_interval_bound_ms / 2, 1));
  for (auto it = entries_.begin(); it != entries_.end();) {
    Entry& e = it->second;
    ++it;  // Service may erase e (retention 0), never another entry
    if (!e.subs.empty() && e.stream->TakeHeld(now, half)) Service(e);
  }
}

bool StreamHub::DeliverTo(Entry& e, size_t index, bool* capped) {
  std::vector<EventPtr>& batch = batch_;
  const size_t cap = std::max<size_t>(options_.write_batch_events, 1);
  size_t max_events = cap;
  {
    Sub& sub = e.subs[index];
    if (sub.iteration != loop_->iteration()) {
      sub.iteration = loop_->iteration();
      sub.handed = 0;
    }
    if (sub.handed >= cap) {
      *capped = true;  // its budget for this iteration is spent
      return true;
    }
    max_events = cap - sub.handed;
    bool finished = false;
    if (!e.stream->ReadFrom(sub.cursor, max_events, &batch, &finished)) {
      // The cursor fell out of the resume window (only possible if the lag
      // bound is not below the window): end with resume_from so the client
      // learns exactly where it stands; a resume there gets 409.
      ApiError end = SubscriberEnd(ErrorCode::kSlowClient, "subscriber fell behind the resume window",
                                   sub.cursor - 1);
      end.retryable = false;
      EndSlow(e, index, end);
      return false;
    }
    if (batch.empty() && finished) {
      // Finished and nothing left after the cursor: this subscriber resumed
      // after the terminal event; there is nothing more to send.
      Subscription* t = sub.transport;
      RemoveSub(e, index);
      t->Complete();
      return false;
    }
  }
  bool no_room = false;
  e.subs[index].transport->stream_shared_ = e.subs.size() > 1;
  for (const EventPtr& ev : batch) {
    Sub& s = e.subs[index];
    DeliverResult r = s.transport->Deliver(*ev);
    if (r == DeliverResult::kNoRoom) {
      no_room = true;
      break;
    }
    if (r == DeliverResult::kGone) {
      RemoveSub(e, index);
      batch.clear();
      return false;
    }
    s.cursor = ev->seq + 1;
    s.handed++;
    if (ev->type == EventType::kToken && ev->seq > e.max_token_seq_taken) {
      counters_.tokens_delivered++;
      e.tokens_taken++;
      e.max_token_seq_taken = ev->seq;
    }
    if (ev->terminal()) {
      Subscription* t = s.transport;
      RemoveSub(e, index);
      batch.clear();
      t->Complete();
      return false;
    }
  }
  Sub& sub = e.subs[index];
  sub.transport->EndBatch();
  sub.full = no_room;
  // A full batch taken whole: there may be more; the rest waits for the next
  // iteration (fairness), unless this was all there is.
  if (!no_room && batch.size() == max_events && sub.cursor <= e.stream->head_seq()) *capped = true;
  batch.clear();
  if (!no_room) return true;
  uint64_t lag = LagOf(sub, e.stream->head_seq());
  if (e.policy == Policy::kDropSlow && lag > options_.subscriber_lag_events) {
    ApiError end = SubscriberEnd(ErrorCode::kSlowClient,
                                 "the client read more slowly than the stream was produced; resume from "
                                 "resume_from",
                                 sub.cursor - 1);
    EndSlow(e, index, end);
    return false;
  }
  return true;
}

void StreamHub::PublishDelivered(Entry& e) {
  if (!e.lab) return;
  uint64_t through = e.stream->head_seq();
  for (const Sub& s : e.subs) through = std::min(through, s.cursor - 1);
  e.stream->SetDeliveredThrough(through);
}

void StreamHub::ApplyPolicy(Entry& e) {
  // Only the pause policies pause; drop_slow acts in DeliverTo, and the lab
  // policies never pause anyone.
  if (e.policy != Policy::kPauseProducer && e.policy != Policy::kPauseThenCancel) return;
  if (e.stream->finished() || e.cancel_sent) return;
  uint64_t head = e.stream->head_seq();
  uint64_t max_lag = 0;
  for (const Sub& s : e.subs) {
    if (s.full) max_lag = std::max<uint64_t>(max_lag, LagOf(s, head));
  }
  bool over = e.subs.empty() || max_lag > options_.subscriber_lag_events;
  bool under = !e.subs.empty() && max_lag <= options_.subscriber_lag_events / 2;
  if (!e.paused && over) {
    e.paused = true;
    counters_.pauses++;
    producer_->SetPaused(e.stream->id(), true);
    if (e.policy == Policy::kPauseThenCancel && !e.subs.empty()) {
      std::string id = e.stream->id();
      e.stall_timer = loop_->AddTimer(options_.stall_timeout_ms, [this, id] {
        auto it = entries_.find(id);
        if (it == entries_.end()) return;
        it->second.stall_timer = 0;
        if (it->second.paused && !it->second.stream->finished()) {
          CancelGeneration(it->second, "stall");
        }
      });
    }
  } else if (e.paused && under) {
    e.paused = false;
    counters_.unpauses++;
    StopTimer(&e.stall_timer);
    producer_->SetPaused(e.stream->id(), false);
  }
}

void StreamHub::HandleExit(Entry& e) {
  if (e.exit_handled) return;
  e.exit_handled = true;
  if (e.cancel_sent && options_.cancel_latency_seconds) {
    options_.cancel_latency_seconds->Observe(
        std::chrono::duration<double>(e.stream->finished_at() - e.cancel_at).count());
  }
  StopTimer(&e.linger_timer);
  StopTimer(&e.stall_timer);
  LogOutcome(e);
  // The outcome is the terminal event's finish reason (an error event counts
  // as "error"); a cancelled one counts under the reason of its cancel.
  if (const EventPtr last = e.stream->terminal_event()) {
    counters_.outcomes[static_cast<int>(last->finish_reason)]++;
    if (last->finish_reason == FinishReason::kCancelled) {
      const std::string_view why = e.cancel_reason ? e.cancel_reason : "";
      uint64_t* c = why == "linger"        ? &counters_.linger_cancels
                    : why == "stall"       ? &counters_.stall_cancels
                    : why == "client_gone" ? &counters_.client_gone_cancels
                    : why == "sibling"     ? &counters_.sibling_cancels
                    : why == "shutdown"    ? &counters_.shutdown_cancels
                    : why == "ws_cancel"   ? &counters_.ws_cancels
                                           : &counters_.delete_cancels;  // DELETE, or a cancel from outside the hub
      ++*c;
    }
  }
  auto waiters = std::move(e.exit_waiters);
  e.exit_waiters.clear();
  std::string id = e.stream->id();
  if (options_.retain_ms <= 0 && e.subs.empty()) {
    Forget(e);
    entries_.erase(id);
    erasures_++;
  } else {
    e.retain_progress = CursorSum(e);
    e.retain_timer = loop_->AddTimer(std::max<int64_t>(options_.retain_ms, 0),
                                      [this, id] { RetainExpired(id); });
    e.finish_order = ++next_finish_order_;
    retained_order_[e.finish_order] = id;
    Account(e);
  }
  for (auto& w : waiters) w();
}

uint64_t StreamHub::CursorSum(const Entry& e) {
  uint64_t sum = 0;
  for (const Sub& s : e.subs) sum += s.cursor;
  return sum;
}

void StreamHub::RetainExpired(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return;
  Entry& en = it->second;
  en.retain_timer = 0;
  // A subscriber still reading the tail (its cursor moved during the last
  // period) keeps the stream for another period; one that took nothing for a
  // whole period is ended, so a stalled reader cannot pin a stream forever.
  uint64_t progress = CursorSum(en);
  if (!en.subs.empty() && progress != en.retain_progress) {
    en.retain_progress = progress;
    en.retain_timer = loop_->AddTimer(std::max<int64_t>(options_.retain_ms, 1),
                                      [this, id] { RetainExpired(id); });
    return;
  }
  Expire(it);
}

void StreamHub::Expire(std::unordered_map<std::string, Entry>::iterator it) {
  Entry& en = it->second;
  StopTimer(&en.retain_timer);
  for (Sub& s : en.subs) sub_index_.erase(s.transport);
  std::vector<Sub> subs = std::move(en.subs);
  Forget(en);
  entries_.erase(it);
  erasures_++;
  for (Sub& s : subs) s.transport->End(SubscriberEnd(ErrorCode::kExpired, "the stream expired", s.cursor - 1));
}

void StreamHub::Account(Entry& e) {
  if (e.finish_order == 0) return;  // not retained
  size_t n = e.stream->bytes_held();
  std::vector<EventPtr> all;  // not batch_: a delivery may be using it
  if (e.stream->ReadFrom(e.stream->oldest_seq(), SIZE_MAX, &all)) {
    for (const EventPtr& ev : all) {
      for (const std::string& w : ev->wire) n += w.capacity();
    }
  }
  retained_bytes_ = retained_bytes_ - e.retained_bytes + n;
  e.retained_bytes = n;
  if (retained_bytes_ > options_.max_retained_bytes && enforce_timer_ == 0) {
    // From the loop, not from inside a delivery: forgetting streams erases
    // entries, which the caller may be iterating over.
    enforce_timer_ = loop_->AddTimer(0, [this] {
      enforce_timer_ = 0;
      EnforceRetainedBound();
    });
  }
}

void StreamHub::EnforceRetainedBound() {
  while (retained_bytes_ > options_.max_retained_bytes && !retained_order_.empty()) {
    auto it = entries_.find(retained_order_.begin()->second);
    if (it == entries_.end()) {  // cannot happen: Forget removes it from the order
      retained_order_.erase(retained_order_.begin());
      continue;
    }
    counters_.retained_evictions++;
    LogIf(options_.log, LogLevel::kInfo, "evict",
          {{"stream", it->first}, {"retained_bytes", retained_bytes_}, {"max", options_.max_retained_bytes}});
    Expire(it);
  }
}

void StreamHub::BeginShutdown() {
  shutting_down_ = true;
  std::vector<std::string> ids;
  for (auto& [id, e] : entries_) ids.push_back(id);
  for (const std::string& id : ids) {
    auto it = entries_.find(id);
    if (it == entries_.end()) continue;
    Entry& e = it->second;
    if (e.stream->finished()) continue;
    std::vector<Sub> subs = std::move(e.subs);
    e.subs.clear();
    for (Sub& s : subs) {
      sub_index_.erase(s.transport);
      e.stream->Detach(s.transport);
    }
    PublishDelivered(e);
    CancelGeneration(e, "shutdown");
    for (Sub& s : subs) {
      s.transport->End(SubscriberEnd(ErrorCode::kShuttingDown, "the server is shutting down", s.cursor - 1));
    }
  }
}

Policy StreamHub::policy_of(const Stream& s) const {
  auto it = entries_.find(s.id());
  return it == entries_.end() ? options_.policy : it->second.policy;
}

bool StreamHub::paused(const Stream& s) const {
  auto it = entries_.find(s.id());
  return it != entries_.end() && it->second.paused;
}

size_t StreamHub::live_streams() const {
  size_t n = 0;
  for (const auto& [id, e] : entries_) n += e.stream->finished() ? 0 : 1;
  return n;
}

size_t StreamHub::subscriber_count() const { return sub_index_.size(); }

size_t StreamHub::bytes_held() const {
  size_t n = retained_bytes_;
  for (const auto& [id, e] : entries_) n += e.finish_order != 0 ? 0 : e.stream->bytes_held();
  return n;
}

}  // namespace tw::stream

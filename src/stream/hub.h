// StreamHub: the I/O thread's side of every stream — the registry, the
// subscribers and their cursors, and the policies of DESIGN.md §7.
//
// The hub owns, per stream: its policy, its subscribers (transport-neutral:
// SSE and WebSocket deliveries implement Subscription), the linger timer that
// cancels a stream nobody is attached to, the stall timer of
// pause_then_cancel, the callbacks waiting for the producer to exit (DELETE),
// and the retention timer that forgets a finished stream after --retain-ms.
//
// Delivery: when a producer appends, the Notifier wakes the I/O thread and
// Drain() hands each subscriber the events after its cursor, until its
// transport has no room. A subscriber's lag is the events it has not taken
// yet among those appended since it attached (a client resuming far behind
// is not penalised for the backlog it is replaying, which the ring holds
// anyway; only for falling further behind the live head). Policies act on lag:
//   drop_slow          lag > subscriber_lag_events: detach with slow_client
//                      (resume_from = last event taken); generation goes on.
//   pause_producer     lag over the bound (or nobody attached): the backend
//                      pauses the sequence; it resumes when every subscriber
//                      is back under half the bound.
//   pause_then_cancel  as pause_producer, but a pause longer than
//                      stall_timeout_ms cancels the generation.
// Two lab policies (only with --lab, for the engine bench, to show why they
// are wrong; DECISIONS.md "Lab policies"):
//   naive              nobody is detached or paused; the hub publishes how far
//                      every subscriber has read (Stream::SetDeliveredThrough)
//                      and the engine's step loop waits until every
//                      subscriber of every naive stream has taken the last
//                      event: one stalled reader stalls every stream.
//   unbounded          nobody is detached or paused, and the stream's ring
//                      keeps, beyond the resume window, every event some
//                      subscriber has not taken (the hub publishes how far
//                      they all read): memory grows with the slowest
//                      reader's lag, up to lab_unbounded_max_events /
//                      lab_unbounded_max_bytes per stream (a safety cap so a
//                      bench cannot exhaust the machine, not a policy).
// The lab policies' state is behind one gate (an entry's `lab` flag, from
// Stream::is_lab()): the production path never publishes delivery positions.
// Cancellation (DELETE, linger expiry, stall, shutdown) goes through one
// idempotent path: ProducerControl::Cancel, then the producer finishes the
// stream.
//
// Fairness: a subscriber is handed at most `write_batch_events` events per
// loop iteration; a longer backlog (a resume far behind) continues in the
// next iteration, so one fast reader cannot starve the others. With
// stream_interval > 1 a repeating timer (every stream_interval_bound_ms / 2)
// delivers token events a producer has held for half the bound or more
// (Stream::TakeHeld): no token waits longer than the bound.
//
// Threads: I/O thread only (the loop that runs Drain). Memory: one entry per
// live or retained stream, bounded by max_streams.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/api_error.h"
#include "common/log.h"
#include "stream/producer.h"
#include "stream/stream.h"

namespace tw::net {
class EventLoop;
}

namespace tw::stream {

enum class Policy {
  kDropSlow,
  kPauseProducer,
  kPauseThenCancel,
  kNaive,      // lab only: the engine waits for the slowest reader
  kUnbounded,  // lab only: keep every event for the slowest reader
};
const char* PolicyName(Policy p);
// The three production policies; with allow_lab also "naive" and "unbounded".
bool ParsePolicy(std::string_view s, Policy* out, bool allow_lab = false);
bool IsLabPolicy(Policy p);

struct HubOptions {
  Policy policy = Policy::kDropSlow;
  size_t subscriber_lag_events = 256;
  int64_t stall_timeout_ms = 250;
  int64_t linger_ms = 5000;
  int64_t retain_ms = 60000;
  size_t max_streams = 4096;  // live + retained
  // The most bytes retained (finished) streams may hold, their events and
  // the wire bytes cached with them; beyond, the streams that finished first
  // are forgotten early (their subscribers end with `expired`).
  size_t max_retained_bytes = size_t{1} << 30;
  StreamLimits stream_limits;
  // Lab policy `unbounded`: the safety caps of each of its streams' rings
  // (events, payload bytes), so a bench cannot exhaust memory.
  size_t lab_unbounded_max_events = size_t{1} << 20;
  size_t lab_unbounded_max_bytes = size_t{256} << 20;
  Histogram* cancel_latency_seconds = nullptr;  // cancel wish -> producer exit
  size_t write_batch_events = 64;  // events per subscriber per service (--write-batch-events)
  // Says each stream's outcome, each slow-client detach and each cancel
  // (and why); null: nothing is logged.
  Logger* log = nullptr;
  int stream_interval = 1;         // --stream-interval (also in stream_limits)
  int64_t stream_interval_bound_ms = 10;  // --stream-interval-bound-ms: most a token is held
};

// What a transport reports when offered an event.
enum class DeliverResult { kTaken, kNoRoom, kGone };

// A subscriber-level ending (DESIGN.md §5: an error without an id): an
// ApiError (slow_client, shutting_down, expired) whose resume_from names the
// last event the subscriber took.
ApiError SubscriberEnd(ErrorCode code, std::string message, uint64_t resume_from);
// The refusal of a resume after an event that does not exist
// (Stream::AttachResult::kPastHead): invalid_request (400) naming the
// stream's last event.
ApiError ResumePastHeadError(std::string_view stream_id, uint64_t after, uint64_t head, bool finished);

// Implemented by transports (SSE response, WebSocket stream slot).
class Subscription {
 public:
  virtual ~Subscription() = default;
  // Offer one event; kNoRoom means nothing was written. kTaken may mean
  // "accepted into the transport's batch" (see EndBatch).
  virtual DeliverResult Deliver(const Event& event) = 0;
  // The hub has offered what it will in this service: a transport that
  // gathers the events it took into one write does that write now.
  virtual void EndBatch() {}

  // Whether the stream had other subscribers when the hub began offering
  // events (set by the hub): a format then caches an event's bytes for them
  // (stream::Event::wire); a lone subscriber's bytes go straight out.
  bool stream_shared() const { return stream_shared_; }

 private:
  friend class StreamHub;
  bool stream_shared_ = false;
  // The terminal event was delivered: end the response normally.
  virtual void Complete() = 0;
  // Ended by the server without a terminal event (no id on the wire);
  // end.resume_from is the last event taken.
  virtual void End(const ApiError& end) = 0;
};

struct HubCounters {
  uint64_t streams_created = 0;
  uint64_t slow_client_detaches = 0;
  uint64_t pauses = 0;
  uint64_t unpauses = 0;
  // Streams that ended cancelled, by why the hub cancelled them (counted
  // when the stream ends, and only if it ended cancelled: a cancel that lost
  // the race with the stream's own end counts nowhere). Their sum is
  // outcomes[kCancelled].
  uint64_t stall_cancels = 0;
  uint64_t linger_cancels = 0;
  uint64_t delete_cancels = 0;
  uint64_t ws_cancels = 0;     // by a WebSocket client's cancel op
  uint64_t client_gone_cancels = 0;  // a non-streamed request's client left (nothing can resume it)
  uint64_t sibling_cancels = 0;      // another choice of the same response ended it
  uint64_t shutdown_cancels = 0;
  uint64_t resumes_ok = 0;
  uint64_t resumes_window_exceeded = 0;
  uint64_t resumes_not_found = 0;
  // Token events: generated (the streams' metric) = delivered +
  // never_delivered + those of registered streams not taken yet; so at rest
  // (no stream registered) generated = delivered + never_delivered.
  uint64_t tokens_delivered = 0;        // taken by a socket (the first time, per stream)
  uint64_t tokens_never_delivered = 0;  // of streams forgotten (retention over) with no one having taken them
  uint64_t retained_evictions = 0;      // retained streams forgotten early (max_retained_bytes)
  uint64_t outcomes[kFinishReasons] = {};  // streams by finish reason (error events: kError)
};

// Why a caller cancels a generation (Cancel): the cancel counter it adds to
// and the reason the stream's log record names.
enum class CancelCause {
  kDelete,      // DELETE /v1/streams/{id}, a refused launch's siblings
  kWsCancel,    // a WebSocket client's cancel op
  kClientGone,  // the client of a non-streamed request left: nobody can resume it
  kSibling,     // another choice of the same n-choice response ended the response
};

class StreamHub {
 public:
  StreamHub(net::EventLoop* loop, ProducerControl* producer, const HubOptions& options);
  ~StreamHub();

  // The notifier producers signal through (wired to EventLoop::Post).
  Notifier* notifier() { return &notifier_; }
  const HubOptions& options() const { return options_; }

  // Creates and registers a stream with an unguessable id ("s_" + 128 random
  // bits in hex, with the optional instance tag: "s_<tag>_<hex>"). Returns
  // nullptr if max_streams are registered. Nothing runs for it until it is
  // either attached (Attach) or declared detached (StartDetached), which the
  // caller does after Backend::Submit accepted it. The stream is created held
  // (Stream::Hold): no event is evicted before that attach or StartDetached,
  // however fast the producer starts. `request_id`: the X-Request-Id of the
  // request that made it, for its log records ("" = none).
  std::shared_ptr<Stream> Create(Policy policy, std::string request_id = {});
  // A stream created without a subscriber (POST /v1/streams): the linger
  // timer and the policies apply from now.
  void StartDetached(const std::shared_ptr<Stream>& s);
  // Registered stream (live or retained), or nullptr.
  std::shared_ptr<Stream> Find(std::string_view id) const;
  // Forgets a stream that was created but whose Submit was refused.
  void Abandon(const std::shared_ptr<Stream>& s);

  // Attaches `sub` to read events after `after_seq`. On kWindowExceeded,
  // *oldest_available names the oldest event still held; on kPastHead, *head
  // names the stream's last event. A resume at the head of a finished stream
  // (after its terminal event) is kOk and completes `sub` at once (inside
  // this call) with nothing delivered.
  Stream::AttachResult Attach(const std::shared_ptr<Stream>& s, Subscription* sub,
                              uint64_t after_seq, uint64_t* oldest_available,
                              uint64_t* head = nullptr);
  // The transport went away (client closed, connection error). Never calls
  // back into `sub`.
  void Detach(Subscription* sub);
  // The transport has room again (its socket drained).
  void OnWritable(Subscription* sub);

  // Cancels the generation (idempotent: only the first cancel counts).
  // `on_exit` runs on the I/O thread once the producer has exited (at once
  // if it already has).
  void Cancel(const std::shared_ptr<Stream>& s, std::function<void()> on_exit,
              CancelCause cause = CancelCause::kDelete);

  // Shutdown: every live stream's subscribers get `shutting_down` (with
  // resume_from), every generation is cancelled.
  void BeginShutdown();

  Policy policy_of(const Stream& s) const;
  bool paused(const Stream& s) const;
  size_t live_streams() const;  // registered and not finished
  size_t registered_streams() const { return entries_.size(); }
  size_t subscriber_count() const;
  // Bytes the streams hold: live streams' events (ring), and retained
  // streams' events with their cached wire bytes (retained_bytes()).
  size_t bytes_held() const;
  size_t retained_bytes() const { return retained_bytes_; }
  const HubCounters& counters() const { return counters_; }
  void CountResumeNotFound() { counters_.resumes_not_found++; }
  void set_instance_tag(std::string tag) { instance_tag_ = std::move(tag); }

 private:
  struct Sub {
    Subscription* transport;
    uint64_t cursor;       // next seq to offer
    uint64_t attach_head;  // head when it attached: backlog before it is not lag
    bool full = false;     // its transport had no room at the last delivery
    uint64_t iteration = 0;  // the loop iteration of `handed`
    size_t handed = 0;       // events handed to it in that iteration
  };
  // Live events (appended after it attached) the subscriber has not taken.
  // The policies act on it only while the transport has no room (s.full): a
  // subscriber handed less than there is (write_batch_events) is not slow.
  static uint64_t LagOf(const Sub& s, uint64_t head) {
    uint64_t from = std::max(s.cursor, s.attach_head + 1);
    return head + 1 > from ? head + 1 - from : 0;
  }
  struct Entry {
    std::shared_ptr<Stream> stream;
    Policy policy;
    std::vector<Sub> subs;
    bool paused = false;
    bool cancel_sent = false;
    bool exit_handled = false;
    uint64_t max_token_seq_taken = 0;  // highest seq of a token event any subscriber took
    uint64_t tokens_taken = 0;         // token events counted as delivered
    size_t retained_bytes = 0;         // finished: its events + cached wire bytes (in retained_bytes_)
    uint64_t finish_order = 0;         // finished: its place in retained_order_
    uint64_t linger_timer = 0;
    uint64_t stall_timer = 0;
    uint64_t retain_timer = 0;
    Clock::time_point cancel_at{};
    uint64_t retain_progress = 0;  // sum of cursors when the retain timer was armed
    bool lab = false;               // a lab policy's stream (Stream::is_lab)
    bool continue_posted = false;   // a capped delivery continues next iteration
    uint32_t resumes = 0;           // attaches after an event (the outcome's log line)
    uint32_t detaches = 0;          // subscribers ended as slow clients
    const char* cancel_reason = nullptr;  // "delete", "ws_cancel", "linger", "stall", "shutdown", "client_gone", "sibling"
    std::string request_id;               // of the request that made it: in its log records
    std::vector<std::function<void()>> exit_waiters;
  };

  void Drain(std::vector<std::shared_ptr<Stream>>& dirty);
  void Service(Entry& e);
  // Offers events to one subscriber; returns false if it was removed. Sets
  // *capped when it stopped at write_batch_events with more to deliver.
  bool DeliverTo(Entry& e, size_t sub_index, bool* capped);
  // A capped delivery: service the entry again in the next loop iteration.
  void ContinueLater(Entry& e);
  // stream_interval: delivers the streams whose held tokens are due.
  void DeliverHeld();
  void ApplyPolicy(Entry& e);
  // naive, unbounded: publishes how far every subscriber has read (the
  // engine's gate; what the ring may evict).
  void PublishDelivered(Entry& e);
  void RemoveSub(Entry& e, size_t index);
  void StartLinger(Entry& e);
  void StopTimer(uint64_t* id);
  void CancelGeneration(Entry& e, const char* reason);
  // A subscriber ended as a slow client (drop_slow, or out of the window).
  void EndSlow(Entry& e, size_t index, const ApiError& end);
  void LogOutcome(const Entry& e);
  static std::string_view RequestIdField(const Entry& e);
  // An entry is about to be erased: its tokens no one took are never
  // delivered, and its retained bytes are released.
  void Forget(const Entry& e);
  // A finished entry's bytes (events and cached wire bytes; I/O thread, so
  // the wire caches are stable) into retained_bytes_; then the bound.
  void Account(Entry& e);
  // While retained_bytes_ > max_retained_bytes: forgets the retained
  // streams that finished first.
  void EnforceRetainedBound();
  // Erases a retained entry now; its subscribers end with `expired`.
  void Expire(std::unordered_map<std::string, Entry>::iterator it);
  void HandleExit(Entry& e);
  void RetainExpired(const std::string& id);
  static uint64_t CursorSum(const Entry& e);
  Entry* EntryFor(const Stream& s);
  Entry* EntryForSub(Subscription* sub, size_t* index);
  std::string NewId();

  net::EventLoop* const loop_;
  ProducerControl* const producer_;
  const HubOptions options_;
  // Declared before notifier_, whose post function holds a weak reference to
  // it: posted drains that outlive the hub do nothing.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  Notifier notifier_;
  std::unordered_map<std::string, Entry> entries_;
  std::unordered_map<Subscription*, std::string> sub_index_;  // sub -> stream id
  HubCounters counters_;
  std::string instance_tag_;
  bool shutting_down_ = false;
  uint64_t erasures_ = 0;         // entries erased so far (Service's liveness check)
  uint64_t held_timer_ = 0;       // stream_interval > 1: DeliverHeld's repeating timer
  std::vector<EventPtr> batch_;   // DeliverTo's scratch
  // Retained (finished) streams: their bytes, and their ids in the order
  // they finished (the first to be forgotten when over max_retained_bytes).
  size_t retained_bytes_ = 0;
  std::map<uint64_t, std::string> retained_order_;
  uint64_t next_finish_order_ = 0;
  uint64_t enforce_timer_ = 0;    // EnforceRetainedBound is posted (0: not)
};

}  // namespace tw::stream

// Stream: one generation's events, sequence-numbered, in a fixed-capacity ring.
//
// This is the resume window of DESIGN.md §5/§7. The producer (a backend's
// thread) appends typed events (stream/event.h); every event gets the next
// sequence number, starting at 1, with no gaps. The ring keeps the newest
// `resume_window_events` events; older ones are evicted. Subscribers (SSE or
// WebSocket deliveries, owned by the I/O thread) each keep their own cursor:
// the next sequence number they will hand to their socket. Delivery is always
// "read the ring from my cursor", so an event is delivered live or found in
// the backlog, never both and never neither; a cursor that falls out of the
// window is detected (a resume there is refused with 409, never served with a
// hole).
//
// Wake-ups: an append marks the stream dirty once (the Notifier coalesces
// the dirty streams of a burst into one wake-up of the I/O thread). With
// stream_interval N > 1 (--stream-interval), a stream's token events after
// its first are marked in groups of up to N: the others are held (not
// announced) until the group is full, a non-token event comes, or the hub's
// interval timer finds the oldest held one older than half its bound
// (TakeHeld). Resume ids stay per event; only the wake-ups are grouped.
//
// Threads: Append/Finish may be called from any one producer thread; all
// other methods are for the I/O thread, except the read-only getters which
// may be called from anywhere. State below is protected by mu_.
//
// Memory: at most `resume_window_events` events plus bookkeeping (bytes_held()
// counts each event's fixed part and its text; the I/O thread may add, per
// event, its encoding in each of stream::kWireFormats formats) — except under
// the lab policy `unbounded`, whose ring also keeps every event a subscriber
// has not taken, up to its caps (the newest event is always kept).
// peak_bytes_held() reports the most ever held.
//
// Lab policies (DECISIONS.md "Lab policies") sit behind one gate: the
// `lab` options pointer, null for every production stream, which is the only
// lab state Append reads. Under `unbounded` the I/O thread publishes how far
// every subscriber has read (SetDeliveredThrough) and the ring evicts by it;
// under `naive` (waits_for_readers()) the producer reads it as a gate
// (ReadersCaughtUp) and may register a listener called after each
// publication, so it can sleep instead of polling.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"
#include "common/mutex.h"
#include "stream/event.h"

namespace tw::stream {

class Notifier;

// Optional measurements a stream feeds as its producer appends (vLLM's
// definitions: time to first token from arrival, inter-token latency between
// successive tokens of one request). Any pointer may be null.
struct StreamMetrics {
  Histogram* ttft_seconds = nullptr;
  Histogram* inter_token_seconds = nullptr;
  Counter* tokens_generated = nullptr;
};

// The lab policies' stream options (only with --lab; never on a production
// stream).
struct LabStreamOptions {
  // `unbounded`: events some subscriber has not taken yet (see
  // SetDeliveredThrough) are kept beyond the window, so memory grows with
  // the slowest reader's lag, up to the two safety caps.
  bool keep_untaken_events = false;
  size_t max_untaken_events = 0;  // with keep_untaken_events: most events held
  size_t max_bytes_held = 0;      // event bytes held at most (0 = no byte cap)
  // --lab-pad-bytes (the engine bench): every token event carries a "pad"
  // field of this many bytes on the wire, so backpressure appears with small
  // socket buffers and short streams. 0 = off.
  uint32_t pad_bytes = 0;
  // `naive`: the producer waits for the readers (ReadersCaughtUp).
  bool waits_for_readers = false;
};

struct StreamLimits {
  size_t resume_window_events = 4096;  // at least 1
  size_t max_subscribers = 8;
  // Token events announced in groups of up to this many (1: each at once);
  // see the file comment.
  int stream_interval = 1;
  StreamMetrics metrics;
  std::shared_ptr<const LabStreamOptions> lab;  // null: a production stream
};

using Clock = std::chrono::steady_clock;

class Stream : public std::enable_shared_from_this<Stream> {
 public:
  // Create with std::make_shared (the notifier needs shared_from_this).
  // `arrival`: when the request arrived (TTFT is measured from it).
  Stream(std::string id, const StreamLimits& limits, Notifier* notifier,
         Clock::time_point arrival = Clock::now());
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  const std::string& id() const { return id_; }
  Clock::time_point created() const { return created_; }

  // ---- producer side (one producer thread) -------------------------------
  // Appends a non-terminal event (start or token); returns its sequence
  // number, or 0 if the stream is already finished (the event is dropped).
  uint64_t Append(Event event);
  // Appends the terminal event (done or error) and marks the producer as
  // exited, atomically: whoever sees producer_exited() also finds the
  // terminal event in the ring. Idempotent: a second call does nothing.
  void Finish(Event event);

  // ---- I/O thread --------------------------------------------------------
  enum class AttachResult { kOk, kWindowExceeded, kTooManySubscribers, kPastHead };
  // Registers a subscriber that will next read event `after_seq + 1`.
  // Under the same lock as Append: fails with kWindowExceeded (and sets
  // *oldest_available) if event after_seq + 1 has been evicted, and with
  // kPastHead (and sets *head) if event after_seq does not exist (a client
  // claiming to have seen more than was produced). after_seq equal to the
  // head is a resume at the head: on a finished stream, after its terminal
  // event, with nothing left to send.
  AttachResult Attach(const void* subscriber, uint64_t after_seq, uint64_t* oldest_available,
                      uint64_t* head = nullptr);
  // Removes a subscriber; returns the number left.
  size_t Detach(const void* subscriber);

  // Copies (shared pointers to) events with seq >= from, at most max_events,
  // into *out (cleared first; its capacity is reused). Returns false if event
  // `from` was already evicted (out empty). *finished (optional) says, under
  // the same lock, whether the terminal event has been appended: "nothing
  // after `from` and finished" is then a consistent fact, not two separate
  // reads with an append in between.
  bool ReadFrom(uint64_t from, size_t max_events, std::vector<EventPtr>* out,
                bool* finished = nullptr) const;

  // stream_interval > 1: if some token event is held (not yet announced) and
  // the oldest held one is at least `min_age` old at `now`, forgets the hold
  // and returns true (the caller delivers).
  bool TakeHeld(Clock::time_point now, Clock::duration min_age);

  uint64_t head_seq() const;     // last appended sequence number (0 = none)
  uint64_t oldest_seq() const;   // oldest still in the ring (head+1 if empty)
  bool finished() const;         // terminal event appended
  bool producer_exited() const;  // same moment as finished(), see Finish()
  size_t bytes_held() const;
  size_t peak_bytes_held() const;  // most event bytes held at any moment
  size_t event_count() const;
  size_t subscriber_count() const;
  Clock::time_point finished_at() const;
  // When the first token event was appended (zero if none yet).
  Clock::time_point first_token_at() const;
  uint64_t tokens_appended() const;  // token events ever appended (evicted ones too)
  // The terminal event, or null while the stream runs.
  EventPtr terminal_event() const;

  // ---- creator hold ---------------------------------------------------------
  // A stream is submitted to its producer before its creator's subscriber
  // attaches (the submit may still be refused, and a refusal must be
  // answered before any byte of the stream). Until ReleaseHold(), nothing is
  // evicted, so a fast producer cannot push event 1 out of a small resume
  // window in that gap (the creator would get 409 resume_window_exceeded on
  // its own stream). The hub holds every stream it creates and releases the
  // hold once the creator has attached (after delivering the backlog) or the
  // stream was declared detached. While held the ring may exceed the window
  // by what the producer appended in the gap (at most max_new_tokens + 2
  // events).
  void Hold();
  void ReleaseHold();

  // ---- lab policies (through limits.lab) ------------------------------------
  bool is_lab() const { return lab_ != nullptr; }
  // `naive`: the producer waits for its readers.
  bool waits_for_readers() const { return lab_ != nullptr && lab_->waits_for_readers; }
  // I/O thread: every subscriber has taken the events up to `seq` (with no
  // subscriber: the head). Trims the ring (keep_untaken_events), then calls
  // the listener, if any, outside mu_.
  void SetDeliveredThrough(uint64_t seq);
  uint64_t delivered_through() const { return delivered_through_.load(); }
  // Any thread: every event appended so far has been taken by every reader.
  bool ReadersCaughtUp() const { return delivered_through_.load() >= head_seq(); }
  // Producer thread: `fn` runs (on the I/O thread) after each
  // SetDeliveredThrough. Passing nullptr clears it and returns only once no
  // call of the old listener is in progress, so whatever it points to may
  // then be destroyed.
  void SetDeliveryListener(std::function<void()> fn);

  // Set by the notifier machinery: true while the stream sits in the dirty
  // list. Exchange-based so each wake-up is queued once.
  std::atomic<bool> dirty{false};

 private:
  void MarkDirtyLocked() TW_REQUIRES(mu_);
  uint64_t AppendLocked(Event event) TW_REQUIRES(mu_);
  // Evicts the oldest events the limits no longer allow.
  void TrimLocked() TW_REQUIRES(mu_);
  static size_t EventBytes(const Event& e);

  const std::string id_;
  const StreamLimits limits_;  // resume_window_events >= 1, stream_interval >= 1
  const LabStreamOptions* const lab_;  // limits_.lab.get(): the one lab gate
  Notifier* const notifier_;
  const Clock::time_point created_;

  mutable Mutex mu_;
  // Oldest first; at most resume_window_events.
  std::deque<EventPtr> ring_ TW_GUARDED_BY(mu_);
  uint64_t head_seq_ TW_GUARDED_BY(mu_) = 0;
  size_t bytes_held_ TW_GUARDED_BY(mu_) = 0;
  size_t peak_bytes_held_ TW_GUARDED_BY(mu_) = 0;
  bool finished_ TW_GUARDED_BY(mu_) = false;
  bool held_ TW_GUARDED_BY(mu_) = false;  // creator hold: TrimLocked evicts nothing
  Clock::time_point finished_at_ TW_GUARDED_BY(mu_){};
  Clock::time_point first_token_at_ TW_GUARDED_BY(mu_){};
  uint64_t tokens_appended_ TW_GUARDED_BY(mu_) = 0;
  Clock::time_point last_token_at_ TW_GUARDED_BY(mu_){};
  // stream_interval: token events not yet announced.
  int tokens_held_ TW_GUARDED_BY(mu_) = 0;
  std::vector<const void*> subscribers_ TW_GUARDED_BY(mu_);

  // stream_interval: when the oldest unannounced token was appended (ns on
  // Clock, 0 = none held); written by the producer, taken by TakeHeld.
  std::atomic<int64_t> held_since_ns_{0};
  std::atomic<uint64_t> delivered_through_{0};
  // Held while the listener runs and while it is replaced (never with mu_).
  Mutex listener_mu_;
  std::function<void()> listener_ TW_GUARDED_BY(listener_mu_);
};

// Coalesces "this stream has news" from producer threads into one wake-up of
// the I/O thread. `post` must be thread-safe (EventLoop::Post); `drain` runs
// on the I/O thread with every stream marked since the last drain.
class Notifier {
 public:
  using Post = std::function<void(std::function<void()>)>;
  using Drain = std::function<void(std::vector<std::shared_ptr<Stream>>&)>;
  Notifier(Post post, Drain drain) : post_(std::move(post)), drain_(std::move(drain)) {}

  // Any thread. Queues the stream for the next drain (once).
  void MarkDirty(std::shared_ptr<Stream> s);
 private:
  void RunDrain();
  Post post_;
  Drain drain_;
  Mutex mu_;
  std::vector<std::shared_ptr<Stream>> pending_ TW_GUARDED_BY(mu_);
  bool scheduled_ TW_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<Stream>> draining_;  // RunDrain's batch (I/O thread)
};

}  // namespace tw::stream

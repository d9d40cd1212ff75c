// Stream: one generation's events, sequence-numbered, in a fixed-capacity ring.
//
// This is the resume window of DESIGN.md §5/§7. The producer (a backend's
// thread) appends events; every event gets the next sequence number, starting
// at 1, with no gaps. The ring keeps the newest `resume_window_events` events;
// older ones are evicted. Subscribers (SSE or WebSocket deliveries, owned by
// the I/O thread) each keep their own cursor: the next sequence number they
// will hand to their socket. Delivery is always "read the ring from my
// cursor", so an event is delivered live or found in the backlog, never both
// and never neither; a cursor that falls out of the window is detected (a
// resume there is refused with 409, never served with a hole).
//
// Threads: Append*/Finish may be called from any one producer thread; all other
// methods are for the I/O thread, except the read-only getters which may be
// called from anywhere. State below is protected by mu_.
//
// Memory: at most `resume_window_events` events (each a small JSON string)
// plus bookkeeping — except under the lab policy `unbounded`
// (keep_untaken_events), whose ring also keeps every event a subscriber has
// not taken, up to max_untaken_events / max_bytes_held (the newest event is
// always kept). bytes_held() reports the payload bytes currently held,
// peak_bytes_held() the most ever held.
//
// Delivery position (lab policies; DECISIONS.md "Lab policies"): the I/O
// thread may publish the highest sequence number every subscriber has taken
// (SetDeliveredThrough). Under `unbounded` it decides what the ring may
// evict; under `naive` (waits_for_readers()) the producer reads it as a gate
// (ReadersCaughtUp) and may register a listener that is called after each
// publication, so it can sleep instead of polling.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/metrics.h"

namespace tw::stream {

enum class EventType : uint8_t { kStart, kToken, kDone, kError };
const char* EventTypeName(EventType t);  // "start", "token", "done", "error"

struct Event {
  uint64_t seq = 0;
  EventType type = EventType::kToken;
  std::string data;  // one JSON object, no newlines
  bool terminal() const { return type == EventType::kDone || type == EventType::kError; }
};
using EventPtr = std::shared_ptr<const Event>;

class Notifier;

// Optional measurements a stream feeds as its producer appends (vLLM's
// definitions: time to first token from arrival, inter-token latency between
// successive tokens of one request). Any pointer may be null.
struct StreamMetrics {
  Histogram* ttft_seconds = nullptr;
  Histogram* inter_token_seconds = nullptr;
  Counter* tokens_generated = nullptr;
};

struct StreamLimits {
  size_t resume_window_events = 4096;
  // Lab policy `unbounded`: events that some subscriber has not taken yet
  // (see SetDeliveredThrough) are kept beyond the window, so memory grows
  // with the slowest reader's lag, up to the two safety caps below.
  bool keep_untaken_events = false;
  size_t max_untaken_events = 0;  // with keep_untaken_events: most events held
  size_t max_bytes_held = 0;      // payload bytes held at most (0 = no byte cap)
  // Lab (--lab-pad-bytes, for the engine bench): every token event's JSON
  // gets a "pad" field of this many bytes, so backpressure appears with
  // small socket buffers and short streams. 0 = off.
  size_t lab_pad_bytes = 0;
  size_t max_subscribers = 8;
  StreamMetrics metrics;
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
  // Appends a non-terminal event; returns its sequence number, or 0 if the
  // stream is already finished (the event is dropped).
  uint64_t Append(EventType type, std::string data);
  // Appends the terminal event (done or error) and marks the producer as
  // exited, atomically: whoever sees producer_exited() also finds the
  // terminal event in the ring. Idempotent: a second call does nothing.
  void Finish(EventType type, std::string data);

  // ---- I/O thread --------------------------------------------------------
  enum class AttachResult { kOk, kWindowExceeded, kTooManySubscribers };
  // Registers a subscriber that will next read event `after_seq + 1`.
  // Under the same lock as Append: fails with kWindowExceeded (and sets
  // *oldest_available) if event after_seq + 1 has been evicted.
  // after_seq may be beyond the head (a client that claims to have seen more
  // than exists is clamped: it gets the events it has not seen; see api docs).
  AttachResult Attach(const void* subscriber, uint64_t after_seq, uint64_t* oldest_available);
  // Removes a subscriber; returns the number left.
  size_t Detach(const void* subscriber);

  // Copies (shared pointers to) events with seq >= from, at most max_events,
  // into *out. Returns false if event `from` was already evicted (out empty).
  // *finished (optional) says, under the same lock, whether the terminal
  // event has been appended: "nothing after `from` and finished" is then a
  // consistent fact, not two separate reads with an append in between.
  bool ReadFrom(uint64_t from, size_t max_events, std::vector<EventPtr>* out,
                bool* finished = nullptr) const;

  uint64_t head_seq() const;     // last appended sequence number (0 = none)
  uint64_t oldest_seq() const;   // oldest still in the ring (head+1 if empty)
  bool finished() const;         // terminal event appended
  bool producer_exited() const;  // same moment as finished(), see Finish()
  size_t bytes_held() const;
  size_t peak_bytes_held() const;  // most payload bytes held at any moment
  size_t event_count() const;
  size_t subscriber_count() const;
  Clock::time_point finished_at() const;

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

  // ---- delivery gate (lab policy `naive`) ----------------------------------
  // Marks the stream as one whose producer waits for its readers; the hub
  // does this at creation, before the stream is submitted.
  void set_waits_for_readers() { waits_for_readers_.store(true); }
  bool waits_for_readers() const { return waits_for_readers_.load(); }
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
  void MarkDirtyLocked();
  uint64_t AppendLocked(EventType type, std::string data);
  // Evicts the oldest events the limits no longer allow.
  void TrimLocked();

  const std::string id_;
  const StreamLimits limits_;
  Notifier* const notifier_;
  const Clock::time_point created_;

  mutable std::mutex mu_;
  // State below is protected by mu_.
  std::deque<EventPtr> ring_;   // oldest first; at most resume_window_events
  uint64_t head_seq_ = 0;
  size_t bytes_held_ = 0;
  size_t peak_bytes_held_ = 0;
  bool finished_ = false;
  bool held_ = false;  // creator hold: TrimLocked evicts nothing
  Clock::time_point finished_at_{};
  Clock::time_point last_token_at_{};
  std::vector<const void*> subscribers_;

  std::atomic<bool> waits_for_readers_{false};
  std::atomic<uint64_t> delivered_through_{0};
  // Held while the listener runs and while it is replaced (never with mu_).
  std::mutex listener_mu_;
  std::function<void()> listener_;  // protected by listener_mu_
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
  std::mutex mu_;
  std::vector<std::shared_ptr<Stream>> pending_;  // protected by mu_
  bool scheduled_ = false;                        // protected by mu_
};

}  // namespace tw::stream

// ProducerControl: what the stream layer needs from whoever produces a
// stream's events (a backend) — to stop it, and to pause and resume it.
//
// The hub's policies act through this interface alone (DESIGN.md §7:
// pause_producer, pause_then_cancel, linger, DELETE, shutdown), so the stream
// layer knows nothing of engines or models; backend::Backend implements it.
//
// Threads: called on the I/O thread; implementations only record the wish
// and return (they never block on compute or on a client).
#pragma once

#include <string>

namespace tw::stream {

class ProducerControl {
 public:
  virtual ~ProducerControl() = default;
  // Asks the producer to stop; it finishes the stream with finish_reason
  // "cancelled" (unless it had finished). Idempotent; unknown ids are ignored.
  virtual void Cancel(const std::string& stream_id) = 0;
  // Leaves the stream out of generation (keeping its state) until resumed.
  virtual void SetPaused(const std::string& stream_id, bool paused) = 0;
};

}  // namespace tw::stream

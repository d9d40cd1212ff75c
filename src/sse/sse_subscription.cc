#include "sse/sse_subscription.h"

#include "json/error_json.h"
#include "wire/event_json.h"
#include "sse/writer.h"

namespace tw::sse {

// ---- TokenWireSseFormat ------------------------------------------------------

void TokenWireSseFormat::AppendPreamble(std::string* out) { sse::AppendRetry(out, 1000); }

SseFormat::Bytes TokenWireSseFormat::AppendEvent(const stream::Event& event, std::string* out) {
  // Written once per event, whatever the number of subscribers (I/O thread).
  std::string& wire = event.wire[static_cast<int>(stream::Wire::kSse)];
  if (wire.empty()) {
    if (!shared_) {
      wire::AppendSseEvent(out, event, wire::EventContext{stream_id_, model_});  // a lone subscriber
      return Bytes::kEvent;
    }
    wire::AppendSseEvent(&wire, event, wire::EventContext{stream_id_, model_});
  }
  out->append(wire);
  return Bytes::kEvent;
}

void TokenWireSseFormat::AppendEnding(const ApiError& end, std::string* out) {
  data_.clear();
  json::AppendErrorObject(&data_, end);
  sse::AppendEventNoId(out, "error", data_);
}

// ---- SseSubscription ---------------------------------------------------------

SseSubscription::SseSubscription(net::EventLoop* loop, stream::StreamHub* hub,
                                 http::Responder responder, Options options,
                                 std::unique_ptr<SseFormat> format,
                                 std::function<void(SseSubscription*)> on_done)
    : loop_(loop),
      hub_(hub),
      responder_(std::move(responder)),
      options_(std::move(options)),
      format_(std::move(format)),
      on_done_(std::move(on_done)) {}

SseSubscription::~SseSubscription() {
  if (heartbeat_timer_ != 0) loop_->CancelTimer(heartbeat_timer_);
}

bool SseSubscription::EnsureStarted() {
  if (writer_) return !writer_->done();
  if (responder_.closed()) return false;
  http::Headers h;
  h.emplace_back("Cache-Control", "no-cache");
  h.emplace_back("X-Accel-Buffering", "no");
  h.emplace_back("X-Stream-Id", options_.stream_id);
  writer_ = responder_.StartStream(200, "text/event-stream; charset=utf-8", h);
  if (!writer_) return false;
  std::weak_ptr<SseSubscription> weak = weak_from_this();
  writer_->OnWritable([weak] {
    if (auto self = weak.lock()) {
      if (self->done_) return;
      if (self->options_.on_writable) {
        self->options_.on_writable();
      } else {
        self->hub_->OnWritable(self.get());
      }
    }
  });
  writer_->OnClose([weak] {
    if (auto self = weak.lock()) {
      if (self->done_) return;
      // The client left: the hub forgets this subscriber (linger starts).
      self->hub_->Detach(self.get());
      self->Done();
    }
  });
  scratch_.clear();
  format_->AppendPreamble(&scratch_);
  if (!scratch_.empty()) writer_->Write(scratch_);
  heartbeat_timer_ = loop_->AddRepeatingTimer(options_.heartbeat_ms, [weak] {
    if (auto self = weak.lock()) self->Heartbeat();
  });
  return true;
}

stream::DeliverResult SseSubscription::Deliver(const stream::Event& event) {
  if (done_ || last_written_) return stream::DeliverResult::kGone;
  if (!EnsureStarted()) {
    // The client left before the response started: nothing will call
    // OnClose, so end here (the hub drops us on kGone).
    Done();
    return stream::DeliverResult::kGone;
  }
  const size_t before = batch_.size();
  format_->SetShared(stream_shared());
  SseFormat::Bytes bytes = format_->AppendEvent(event, &batch_);
  if (bytes == SseFormat::Bytes::kNone) return stream::DeliverResult::kTaken;
  const bool last = bytes == SseFormat::Bytes::kLast;
  // The chunk's framing (size line and CRLF) is counted too.
  constexpr size_t kChunkFramingBytes = 24;
  const size_t reserve = last ? 0 : options_.reserve_bytes;
  if (writer_->buffered_bytes() + batch_.size() + kChunkFramingBytes + reserve > writer_->max_output_bytes()) {
    batch_.resize(before);
    return stream::DeliverResult::kNoRoom;
  }
  if (last) last_written_ = true;
  wrote_since_heartbeat_ = true;
  return stream::DeliverResult::kTaken;
}

void SseSubscription::EndBatch() {
  if (batch_.empty() || done_ || !writer_) {
    batch_.clear();
    return;
  }
  // Fits by construction (Deliver checked the bound); a closed connection
  // has run, or will run, OnClose, which detaches this subscription.
  writer_->Write(batch_);
  batch_.clear();
}

void SseSubscription::Complete() {
  if (done_) return;
  EndBatch();
  // Completed before any event: a resume after the terminal event, answered
  // with a complete, empty event stream (DECISIONS.md).
  if (!writer_) EnsureStarted();
  if (writer_) writer_->Finish();
  Done();
}

void SseSubscription::End(const ApiError& end) {
  if (done_) return;
  EndBatch();
  if (!last_written_ && EnsureStarted()) {
    scratch_.clear();
    format_->AppendEnding(end, &scratch_);
    // The reserve keeps room for this; if even that is refused the client
    // is not reading at all, and closing tells it as much.
    if (writer_->Write(scratch_) == http::StreamWriter::WriteResult::kRefused) {
      writer_->Abort();
    } else {
      writer_->Finish();
    }
  } else if (writer_) {
    // The last bytes are already out (or the connection is gone): end the
    // body as it stands. (Without a writer the client has left: nothing to
    // send; StartStream always gives a writer to an open responder.)
    writer_->Finish();
  }
  Done();
}

void SseSubscription::Heartbeat() {
  if (done_ || !writer_ || writer_->done()) return;
  if (wrote_since_heartbeat_) {
    wrote_since_heartbeat_ = false;
    return;
  }
  scratch_.clear();
  sse::AppendComment(&scratch_, "ping");
  if (writer_->buffered_bytes() + scratch_.size() + options_.reserve_bytes <=
      writer_->max_output_bytes()) {
    writer_->Write(scratch_);
  }
}

void SseSubscription::Done() {
  if (done_) return;
  done_ = true;
  if (heartbeat_timer_ != 0) {
    loop_->CancelTimer(heartbeat_timer_);
    heartbeat_timer_ = 0;
  }
  // The writer's callbacks stay (one of them may be running now); they hold
  // only a weak reference and check done_.
  auto cb = std::move(on_done_);
  on_done_ = nullptr;
  if (cb) cb(this);
}

}  // namespace tw::sse

#include "app/collect_subscription.h"

#include <utility>

#include "json/json.h"

namespace tw::app {

CollectSubscription::CollectSubscription(http::Responder r, std::string stream_id, std::function<void(void*)> done)
    : responder_(std::move(r)), stream_id_(std::move(stream_id)), done_(std::move(done)) {}

stream::DeliverResult CollectSubscription::Deliver(const stream::Event& ev) {
  if (responder_.closed()) {
    // The client left and ClientGone has not run (it always does from the
    // connection's close; this is the fallback): the hub detaches us on
    // kGone, and the stream's linger cancels it.
    Finish();
    return stream::DeliverResult::kGone;
  }
  if (ev.type == stream::EventType::kToken) {
    tokens_.push_back(ev.token);
    text_ += ev.text;
  } else if (ev.terminal()) {
    last_ = std::make_shared<stream::Event>(ev);
  }
  return stream::DeliverResult::kTaken;
}

void CollectSubscription::Complete() {
  if (last_ && last_->type == stream::EventType::kError) {
    // A stream-level error event (e.g. queue_timeout): an error answer.
    ApiError e = last_->error ? *last_->error : ApiError::Make(ErrorCode::kInternal, "generation failed");
    e.http_status = 503;
    responder_.SendError(e);
  } else {
    std::string body;
    json::Writer w(&body);
    w.BeginObject();
    w.Key("stream");
    w.String(stream_id_);
    w.Key("text");
    w.String(text_);
    w.Key("tokens");
    w.BeginArray();
    for (int32_t t : tokens_) w.Int(t);
    w.EndArray();
    w.Key("finish_reason");
    w.String(last_ ? stream::FinishReasonName(last_->finish_reason) : "error");
    w.Key("usage");
    if (last_) {
      w.BeginObject();
      w.Key("prompt_tokens");
      w.Int(last_->prompt_tokens);
      w.Key("completion_tokens");
      w.Int(last_->completion_tokens);
      w.EndObject();
    } else {
      w.Null();
    }
    w.EndObject();
    responder_.Send(200, "application/json", body);
  }
  Finish();
}

void CollectSubscription::End(const ApiError& end) {
  // A subscriber-level ending (shutting_down): the stream's id and the last
  // event taken, so the client can resume it.
  ApiError e = end;
  e.http_status = 503;
  e.retry_after_ms = 0;
  e.oldest_available = -1;
  e.resume_from = end.resume_from;
  e.stream_id = stream_id_;
  responder_.SendError(e);
  Finish();
}

void CollectSubscription::ClientGone(stream::StreamHub* hub, const std::shared_ptr<stream::Stream>& s) {
  if (!done_) return;
  hub->Detach(this);
  hub->Cancel(s, {}, stream::CancelCause::kClientGone);
  Finish();
}

void CollectSubscription::Finish() {
  auto d = std::move(done_);
  done_ = nullptr;
  if (d) d(this);
}

}  // namespace tw::app

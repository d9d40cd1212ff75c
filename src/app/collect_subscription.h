// CollectSubscription: the transport of POST /v1/generate. It collects a
// whole stream (its tokens, text and ending) and answers once, at the end:
// 200 {"stream","text","tokens","finish_reason","usage"}, or our error
// envelope (503) for a stream that ended in an error or a subscriber-level
// ending (shutting_down, with resume_from and the stream's id).
//
// A client that leaves before its answer: nobody can resume a stream whose
// id it never sent, so the generation is cancelled at once, queued or
// running (App::CollectGeneration registers ClientGone with the responder;
// Deliver finding the connection closed is the fallback, and does the same).
//
// Threads: I/O thread only. Memory: the stream's tokens and text (bounded by
// --max-new-tokens). Ownership: the App keeps it alive until `done` has run.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/server.h"
#include "stream/hub.h"

namespace tw::app {

class CollectSubscription : public stream::Subscription {
 public:
  // `done` runs once, when the answer has been sent or the client has left.
  CollectSubscription(http::Responder r, std::string stream_id, std::function<void(void*)> done);

  stream::DeliverResult Deliver(const stream::Event& ev) override;
  void Complete() override;
  void End(const ApiError& end) override;
  // The client left: detaches from `hub`, cancels the generation
  // (CancelCause::kClientGone) and runs `done`. Nothing once finished.
  void ClientGone(stream::StreamHub* hub, const std::shared_ptr<stream::Stream>& s);

 private:
  void Finish();

  http::Responder responder_;
  std::string stream_id_;
  std::function<void(void*)> done_;
  std::vector<int32_t> tokens_;
  std::string text_;
  std::shared_ptr<const stream::Event> last_;  // the terminal event
};

}  // namespace tw::app

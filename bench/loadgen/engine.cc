#include "loadgen/engine.h"

#include <memory>

#include "client/http_client.h"

namespace tw::loadgen {

Engine::Engine(uint16_t port, EngineOptions options) : loop_(port, options, this) {}

Conn* Engine::Open(std::string request, Handler* handler, uint64_t tag, ConnOptions options) {
  auto owned = std::make_unique<Conn>();
  Conn* c = owned.get();
  c->handler_ = handler;
  c->responses_ = options.responses < 1 ? 1 : options.responses;
  c->parser_.set_body_sink([c](std::string_view b) {
    c->handler_->OnBody(c, b);
    return !c->closed();  // stop feeding once closed
  });
  loop_.Open(std::move(owned), tag, std::move(request), bench::ReadStart::kAfterFirstWrite, options.rcvbuf_bytes,
             options.reading);
  return c;
}

void Engine::StopReading(Conn* c) { loop_.SetWantRead(c, false); }

void Engine::ResumeReading(Conn* c, bool widen) {
  if (widen && c->fd() >= 0) client::WidenReceiveWindow(c->fd());
  loop_.SetWantRead(c, true);
}

void Engine::Finish(Conn* c, bool complete, const Status& why) {
  if (c->closed()) return;
  c->handler_->OnEnd(c, complete, why);
  loop_.Close(c, false);
}

// TCP is up: the connect window has room again; the loop writes the request.
void Engine::OnConnected(bench::ClientSocket* s) { loop_.Admitted(s); }

void Engine::OnWritten(bench::ClientSocket* s) {
  Conn* c = static_cast<Conn*>(s);
  if (c->sent_us_ == 0) c->sent_us_ = bench::NowUs();
}

void Engine::OnFailed(bench::ClientSocket* s, const Status& why) {
  Conn* c = static_cast<Conn*>(s);
  c->handler_->OnEnd(c, false, why);
}

void Engine::OnEof(bench::ClientSocket* s) {
  Conn* c = static_cast<Conn*>(s);
  Status st = c->parser_.FeedEof();
  Finish(c, st.ok() && c->parser_.done(), st.ok() ? Status::Error("EOF before the response ended") : st);
}

void Engine::OnBytes(bench::ClientSocket* s, std::string_view in) {
  Conn* c = static_cast<Conn*>(s);
  while (!in.empty() && !c->closed()) {
    bool had_head = c->parser_.head_done();
    size_t used = 0;
    Status st = c->parser_.Feed(in, &used);
    if (!st.ok()) {
      Finish(c, false, st);
      return;
    }
    in.remove_prefix(used);
    if (!had_head && c->parser_.head_done()) c->handler_->OnHead(c, c->parser_.head());
    if (c->closed()) return;  // the handler closed it
    if (c->parser_.done()) {
      c->responses_done_++;
      c->handler_->OnResponseDone(c);
      if (c->closed()) return;
      if (c->responses_done_ < c->responses_) {
        c->parser_.Reset();  // a pipelined response follows
        continue;
      }
      Finish(c, true, Status::Ok());
      return;
    }
    if (used == 0 && !in.empty()) {
      Finish(c, false, Status::Error("response parser made no progress"));
      return;
    }
  }
}

}  // namespace tw::loadgen

#include "loadgen/session.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "json/json.h"

namespace tw::loadgen {

std::string PostStreamRequest(uint16_t port, const std::string& body) {
  return "POST /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
}

std::string GetRequest(uint16_t port, const std::string& target, const std::string& extra_headers) {
  return "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) + "\r\n" + extra_headers +
         "Connection: close\r\n\r\n";
}

std::string DeleteRequest(uint16_t port, const std::string& target) {
  return "DELETE " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
         "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
}

StreamSession::StreamSession(Engine* engine, uint16_t port, Script script, uint64_t index)
    : engine_(engine),
      port_(port),
      script_(std::move(script)),
      index_(index),
      parser_([this](const sse::Event& ev) { OnEvent(ev); }) {
  parser_.set_comment_sink([this](std::string_view) { heartbeats++; });
}

void StreamSession::Start() {
  start_us = NowUs();
  connections++;
  open = true;
  conn_ = engine_->Open(PostStreamRequest(port_, script_.body), this, index_, ConnOptionsFor());
}

ConnOptions StreamSession::ConnOptionsFor() const {
  ConnOptions co;
  co.rcvbuf_bytes = connections <= 1 ? script_.rcvbuf_bytes : 0;  // resumes read at full speed
  return co;
}

bool StreamSession::Over() const {
  if (open || resume_scheduled_) return false;
  if (delete_sent_us > 0 && delete_done_us == 0) return false;
  return done_us != 0 || !failure.empty() || (stalled && script_.close_instead_of_stall);
}

void StreamSession::ResumeLater() {
  if (script_.reconnect_delay_ms > 0) {
    resume_scheduled_ = true;
    engine_->At(NowUs() + script_.reconnect_delay_ms * 1000.0, [this] {
      resume_scheduled_ = false;
      Resume();
    });
  } else {
    Resume();
  }
}

void StreamSession::Fail(const std::string& why) {
  if (failure.empty()) failure = why;
}

void StreamSession::OnHead(Conn*, const client::ResponseHead& head) {
  status = head.status;
  if (head.status != 200) {
    Fail("HTTP " + std::to_string(head.status));
    return;
  }
  if (stream_id.empty()) {
    if (const std::string* id = head.Find("X-Stream-Id")) stream_id = *id;
  }
}

void StreamSession::OnBody(Conn* c, std::string_view bytes) {
  body_bytes += bytes.size();
  if (status != 200) {  // an error body: JSON, not SSE (its first KB is kept)
    error_body.append(bytes.substr(0, 1024 - std::min<size_t>(error_body.size(), 1024)));
    return;
  }
  conn_ = c;
  Status st = parser_.Feed(bytes);
  if (!st.ok()) Fail("SSE: " + st.message());
  ActOnPending();
}

void StreamSession::OnEvent(const sse::Event& ev) {
  // A client that hangs up right after an event never sees what followed it
  // in the same read: the resume asks again from the last id it saw. (Taking
  // those events too would let one read pass two planned drop points, the
  // second then never made: a resume storm short of its reconnections.)
  if (pending_ == Pending::kDrop || pending_ == Pending::kClose) return;
  double now = NowUs();
  if (ev.type == "error") {
    error_events++;
    json::Value v;
    if (json::Parse(ev.data, &v).ok()) {
      const json::Value* e = v.Find("error");
      const json::Value* t = e ? e->Find("type") : v.Find("type");
      if (t && t->is_string()) last_error_type = t->as_string();
    }
    return;
  }
  int64_t id = 0;
  auto [p, ec] = std::from_chars(ev.id.data(), ev.id.data() + ev.id.size(), id);
  if (ec != std::errc() || p != ev.id.data() + ev.id.size()) {
    Fail("event '" + ev.type + "' without a numeric id");
    return;
  }
  if (id <= last_event_id) {
    duplicates++;
    return;
  }
  if (id != last_event_id + 1) gaps += static_cast<uint64_t>(id - last_event_id - 1);
  last_event_id = id;
  events++;
  if (ev.type == "token") {
    token_event_bytes += 4 + ev.id.size() + 1 + 13 + 6 + ev.data.size() + 2;
    json::Value v;
    Status st = json::Parse(ev.data, &v);
    const json::Value* idx = st.ok() ? v.Find("index") : nullptr;
    const json::Value* tok = st.ok() ? v.Find("token") : nullptr;
    if (!idx || !tok || !idx->is_int() || !tok->is_int() || idx->as_int() < 0 || idx->as_int() > 1000000) {
      Fail("token event without index/token: " + ev.data);
    } else {
      size_t i = static_cast<size_t>(idx->as_int());
      if (tokens.size() <= i) {
        tokens.resize(i + 1, -1);
        token_us.resize(i + 1, 0);
      }
      if (tokens[i] != -1) duplicates++;
      tokens[i] = static_cast<int32_t>(tok->as_int());
      token_us[i] = now;
      if (first_token_us == 0) first_token_us = now;
    }
  } else if (ev.type == "done") {
    done_us = now;
    json::Value v;
    if (json::Parse(ev.data, &v).ok()) {
      if (const json::Value* f = v.Find("finish_reason"); f && f->is_string()) finish_reason = f->as_string();
    }
  }
  // Script actions keyed on the event id just received.
  if (script_.delete_after >= 0 && id == script_.delete_after && !delete_) SendDelete();
  // The parser is inside Feed(): act after it returns (OnBody).
  if (script_.stop_reading_after >= 0 && id == script_.stop_reading_after && !stalled) {
    stalled = true;
    pending_ = script_.close_instead_of_stall ? Pending::kClose : Pending::kStall;
    return;
  }
  if (pending_ == Pending::kNone && next_disconnect_ < script_.disconnect_after.size() &&
      id >= script_.disconnect_after[next_disconnect_] && ev.type != "done") {
    next_disconnect_++;
    pending_reset_ = script_.alternate_reset ? (drops_ % 2 == 1) : script_.disconnect_with_reset;
    drops_++;
    pending_ = Pending::kDrop;
  }
}

void StreamSession::ActOnPending() {
  Pending p = pending_;
  pending_ = Pending::kNone;
  switch (p) {
    case Pending::kNone:
      break;
    case Pending::kStall:
      if (conn_) {
        engine_->StopReading(conn_);
        if (script_.stall_ms > 0) {
          Conn* stalled_conn = conn_;
          engine_->At(NowUs() + script_.stall_ms * 1000.0, [this, stalled_conn] {
            if (open && conn_ == stalled_conn) engine_->ResumeReading(stalled_conn, /*widen=*/true);
          });
        }
      }
      break;
    case Pending::kClose:
      CloseNow(false);
      break;
    case Pending::kDrop:
      CloseNow(pending_reset_);
      ResumeLater();
      break;
  }
}

void StreamSession::CloseNow(bool reset) {
  if (!open || conn_ == nullptr) return;
  wire_bytes += conn_->wire_bytes_read();
  engine_->Close(conn_, reset);
  conn_ = nullptr;
  open = false;
  parser_.Finish();
}

void StreamSession::Resume() {
  if (stream_id.empty()) {
    Fail("no X-Stream-Id to resume");
    return;
  }
  if (connections >= script_.max_connections) {
    Fail("still not done after " + std::to_string(connections) + " connections");
    return;
  }
  connections++;
  open = true;
  conn_ = engine_->Open(GetRequest(port_, "/v1/streams/" + stream_id + "/events",
                                   "Last-Event-ID: " + std::to_string(last_event_id) + "\r\n"),
                        this, index_, ConnOptionsFor());
}

void StreamSession::OnEnd(Conn* c, bool complete, const Status& why) {
  wire_bytes += c->wire_bytes_read();
  conn_ = nullptr;
  open = false;
  parser_.Finish();
  if (!complete || done_us == 0) {
    if (done_us == 0) unexpected_ends++;
    if (!complete && done_us == 0) Fail("connection ended: " + why.message());
  }
  // A whole response that ended before `done` (the server detached this
  // subscriber, e.g. slow_client): resume where it stopped.
  if (complete && done_us == 0 && status == 200 && failure.empty() && script_.resume_when_ended) {
    server_ends_resumed++;
    ResumeLater();
  }
}

void StreamSession::SendDelete() {
  delete_sent_us = NowUs();
  delete_ = std::make_unique<RequestSession>(engine_, DeleteRequest(port_, "/v1/streams/" + stream_id),
                                             [this](RequestSession* r) {
                                               delete_done_us = r->done_us;
                                               delete_status = r->status;
                                             });
  delete_->Start();
}

RequestSession::RequestSession(Engine* engine, std::string request, Done done)
    : engine_(engine), request_(std::move(request)), done_(std::move(done)) {}

void RequestSession::Start() {
  sent_us = NowUs();
  engine_->Open(std::move(request_), this, 0);
}

void RequestSession::OnEnd(Conn*, bool complete, const Status& why) {
  done_us = NowUs();
  ok = complete;
  if (!complete) failure = why.message();
  if (done_) done_(this);
}

}  // namespace tw::loadgen

#include "ws_loadgen/ws_stream.h"

#include <utility>

#include "json/json.h"

namespace tw::ws_loadgen {

WsStream::WsStream(WsEngine* engine, WsScript script, uint64_t index)
    : engine_(engine), script_(std::move(script)), index_(index) {}

void WsStream::Start() {
  start_us = NowUs();
  Connect();
}

void WsStream::Connect() {
  connections++;
  open = true;
  resume_started_us_ = stream_id.empty() ? 0 : NowUs();
  conn_ = engine_->Open("/v1/ws", this, index_);
}

void WsStream::Fail(const std::string& why) {
  if (failure.empty()) failure = why;
}

void WsStream::OnOpen(WsConn* c) {
  conn_ = c;
  if (stream_id.empty()) {
    engine_->SendText(c, script_.generate);
    return;
  }
  std::string m = "{\"op\":\"resume\",\"stream\":";
  json::AppendQuoted(&m, stream_id);
  m += ",\"after\":" + std::to_string(last_seq) + "}";
  engine_->SendText(c, m);
}

void WsStream::OnText(WsConn* c, std::string_view message) {
  double now = NowUs();
  json::Value v;
  if (Status st = json::Parse(message, &v); !st.ok() || !v.is_object()) {
    Fail("message is not a JSON object: " + std::string(message.substr(0, 200)));
    return;
  }
  const json::Value* type = v.Find("type");
  const json::Value* seq = v.Find("seq");
  std::string t = type && type->is_string() ? type->as_string() : "";
  if (t == "error") {
    error_messages++;
    const json::Value* e = v.Find("error");
    const json::Value* et = e ? e->Find("type") : nullptr;
    if (et && et->is_string()) last_error_type = et->as_string();
    if (!seq && script_.resume_on_detach && last_error_type == "slow_client" && !stream_id.empty()) {
      // Detached from this stream (the connection goes on): ask for the rest.
      detach_resumes++;
      std::string m = "{\"op\":\"resume\",\"stream\":";
      json::AppendQuoted(&m, stream_id);
      m += ",\"after\":" + std::to_string(last_seq) + "}";
      engine_->SendText(c, m);
      return;
    }
    if (const json::Value* op = v.Find("op"); !seq && op && op->is_string()) {
      // A refused op (generate: overloaded; resume: not found, window
      // exceeded): this stream cannot go on.
      const json::Value* m = e ? e->Find("message") : nullptr;
      Fail(op->as_string() + " refused: " + last_error_type + " (" + (m && m->is_string() ? m->as_string() : "") +
           ")");
      wire_bytes += c->wire_bytes_read();
      engine_->Close(c, false);
      conn_ = nullptr;
      open = false;
      return;
    }
    if (!seq) return;  // not a stream event (shutting_down, ...)
  }
  if (!seq || !seq->is_int()) {
    Fail("message without a numeric seq: " + std::string(message.substr(0, 200)));
    return;
  }
  if (stream_id.empty()) {
    if (const json::Value* s = v.Find("stream"); s && s->is_string()) stream_id = s->as_string();
  }
  if (resume_started_us_ > 0) {
    resume_ms.push_back((now - resume_started_us_) / 1000.0);
    resume_started_us_ = 0;
  }
  int64_t id = seq->as_int();
  if (id <= last_seq) {
    duplicates++;
    return;
  }
  if (id != last_seq + 1) gaps += static_cast<uint64_t>(id - last_seq - 1);
  last_seq = id;
  events++;
  if (t == "token") {
    const json::Value* idx = v.Find("index");
    const json::Value* tok = v.Find("token");
    if (!idx || !tok || !idx->is_int() || !tok->is_int() || idx->as_int() < 0 || idx->as_int() > 1000000) {
      Fail("token message without index/token: " + std::string(message.substr(0, 200)));
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
  } else if (t == "done") {
    done_us = now;
    if (const json::Value* f = v.Find("finish_reason"); f && f->is_string()) finish_reason = f->as_string();
    wire_bytes += c->wire_bytes_read();
    engine_->Close(c, false);  // the stream is over: FIN
    conn_ = nullptr;
    open = false;
    return;
  }
  // Script: drop after the chosen seqs (never after `done`), then resume.
  if (next_disconnect_ < script_.disconnect_after.size() && id >= script_.disconnect_after[next_disconnect_]) {
    next_disconnect_++;
    bool reset = script_.alternate_reset && drops % 2 == 1;
    drops++;
    wire_bytes += c->wire_bytes_read();
    engine_->Close(c, reset);
    conn_ = nullptr;
    if (script_.reconnect_delay_ms > 0) {
      engine_->At(NowUs() + script_.reconnect_delay_ms * 1000.0, [this] { Connect(); });
    } else {
      Connect();
    }
  }
}

void WsStream::OnEnd(WsConn* c, const Status& why) {
  wire_bytes += c->wire_bytes_read();
  conn_ = nullptr;
  open = false;
  if (done_us == 0) {
    unexpected_ends++;
    Fail("connection ended: " + why.message());
  }
}

}  // namespace tw::ws_loadgen

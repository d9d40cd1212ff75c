#include "ws/ws_session.h"

#include "json/error_json.h"
#include "wire/event_json.h"

namespace tw::ws {

namespace {

ApiError Invalid(std::string message) { return ApiError::Make(ErrorCode::kInvalidRequest, std::move(message)); }

ApiError TooMany(size_t carried) {
  return ApiError::Make(ErrorCode::kTooManyStreams, "this connection already carries " + std::to_string(carried) +
                                                        " streams (--ws-max-streams-per-connection)");
}

}  // namespace

// One stream carried by the session: the stream::Subscription the hub
// delivers to. Owned by the session's slot table; freed after the loop
// iteration in which it ended.
class WsSession::Slot : public stream::Subscription {
 public:
  // `after`: the cursor it attaches after (0 for a new stream).
  Slot(WsSession* session, std::string stream_id, uint64_t after)
      : session_(session), id_(std::move(stream_id)), after_(after) {}

  stream::DeliverResult Deliver(const stream::Event& ev) override {
    WsConnection* ws = session_->ws_;
    if (session_->closed_ || ws == nullptr || !ws->open()) return stream::DeliverResult::kGone;
    // With several subscribers, written once per event for all of them;
    // a lone subscriber's bytes are written into its scratch.
    std::string* cached = &ev.wire[static_cast<int>(stream::Wire::kWebSocket)];
    if (cached->empty() && !stream_shared()) {
      scratch_.clear();
      cached = &scratch_;
    }
    std::string& m = *cached;
    if (m.empty()) wire::AppendWsEventMessage(&m, ev, wire::EventContext{id_, session_->options_.model});
    if (ws->buffered_bytes() + m.size() + kMaxFrameHeaderBytes + session_->options_.reserve_bytes >
        ws->max_output_bytes()) {
      return stream::DeliverResult::kNoRoom;
    }
    switch (ws->Send(Opcode::kText, m)) {
      case net::WriteResult::kTaken:
      case net::WriteResult::kQueued:
        last_seq_ = ev.seq;
        return stream::DeliverResult::kTaken;
      case net::WriteResult::kRefused:
        return stream::DeliverResult::kNoRoom;
      case net::WriteResult::kClosed:
        break;
    }
    return stream::DeliverResult::kGone;
  }

  void Complete() override {
    // Completed before any event: a resume at or after the terminal event of
    // a finished stream. The client is told there is nothing more, rather
    // than waiting on a slot that will never speak (DECISIONS.md).
    if (last_seq_ == 0) {
      session_->SendError(id_, "resume",
                          ApiError::Make(ErrorCode::kInvalidRequest,
                                         "stream '" + id_ + "' has finished and no event follows event " +
                                             std::to_string(after_) + "; nothing to resume"));
    }
    session_->RemoveSlot(this);
  }

  void End(const ApiError& end) override {
    session_->SendError(id_, "", end);
    session_->RemoveSlot(this);
  }

  const std::string& id() const { return id_; }

 private:
  WsSession* session_;
  std::string id_;
  std::string scratch_;  // a lone subscriber's message
  uint64_t after_;
  uint64_t last_seq_ = 0;  // the last event taken (0: none yet)
};

WsSession::WsSession(net::EventLoop* loop, stream::StreamHub* hub, GenerationStarter starter,
                     const SessionOptions& options)
    : loop_(loop), hub_(hub), starter_(std::move(starter)), options_(options) {}

WsSession::~WsSession() {
  // The connection normally reports OnClosed first; detach anything left.
  for (auto& [ptr, slot] : slots_) hub_->Detach(ptr);
}

void WsSession::OnMessage(Opcode opcode, std::string_view payload) {
  if (closed_) return;
  if (opcode != Opcode::kText) {
    ws_->Close(close_code::kUnsupportedData, "binary messages are not supported; send JSON text");
    return;
  }
  json::Value msg;
  json::ParseLimits lim;
  lim.max_bytes = options_.max_json_bytes;
  lim.max_depth = options_.max_json_depth;
  size_t offset = 0;
  Status st = json::Parse(payload, &msg, lim, &offset);
  if (!st.ok()) {
    ApiError e = ApiError::Make(ErrorCode::kInvalidJson, st.message());
    e.offset = static_cast<int64_t>(offset);
    SendError("", "", e);
    return;
  }
  std::string dup;
  if (json::FindDuplicateKey(msg, &dup)) {
    SendError("", "", DuplicateKeyError(dup));
    return;
  }
  const json::Value* op = msg.is_object() ? msg.Find("op") : nullptr;
  if (op == nullptr || !op->is_string()) {
    SendError("", "", Invalid("expected a JSON object with \"op\": \"generate\", \"resume\" or \"cancel\""));
    return;
  }
  const std::string& name = op->as_string();
  if (name == "generate") {
    HandleGenerate(msg);
  } else if (name == "resume") {
    HandleResume(msg);
  } else if (name == "cancel") {
    HandleCancel(msg);
  } else {
    SendError("", name, Invalid("unknown op '" + name + "' (expected generate, resume or cancel)"));
  }
}

void WsSession::HandleGenerate(const json::Value& msg) {
  // Generations still being prepared count against the bound too.
  if (slots_.size() + starting_ >= options_.max_streams_per_connection) {
    SendError("", "generate", TooMany(slots_.size() + starting_));
    return;
  }
  starting_++;
  std::weak_ptr<bool> alive = alive_;
  auto wanted = [this, alive] { return !alive.expired() && !closed_; };
  starter_(msg, wanted, [this, alive](std::shared_ptr<stream::Stream> s, const ApiError& refusal) {
    if (alive.expired()) return;  // (a refusal for a session already gone)
    starting_--;
    if (!s) {
      SendError("", "generate", refusal);
      return;
    }
    uint64_t oldest = 0;
    AttachSlot(s, 0, &oldest, nullptr);  // a fresh stream: cannot be refused
  });
}

void WsSession::HandleResume(const json::Value& msg) {
  const json::Value* id = msg.Find("stream");
  const json::Value* after = msg.Find("after");
  if (id == nullptr || !id->is_string() || (after != nullptr && (!after->is_int() || after->as_int() < 0))) {
    SendError("", "resume", Invalid("resume needs \"stream\": string and \"after\": a non-negative integer (an event seq)"));
    return;
  }
  const std::string& sid = id->as_string();
  uint64_t after_seq = after ? static_cast<uint64_t>(after->as_int()) : 0;
  if (FindSlot(sid) != nullptr) {
    SendError(sid, "resume", Invalid("this connection is already attached to the stream"));
    return;
  }
  if (slots_.size() >= options_.max_streams_per_connection) {
    SendError(sid, "resume", TooMany(slots_.size()));
    return;
  }
  std::shared_ptr<stream::Stream> s = hub_->Find(sid);
  if (!s) {
    hub_->CountResumeNotFound();
    SendError(sid, "resume", ApiError::Make(ErrorCode::kNotFound, "unknown or expired stream '" + sid + "'"));
    return;
  }
  uint64_t oldest = 0;
  uint64_t head = 0;
  stream::Stream::AttachResult r = AttachSlot(s, after_seq, &oldest, &head);
  if (r == stream::Stream::AttachResult::kWindowExceeded) {
    ApiError e = ApiError::Make(ErrorCode::kResumeWindowExceeded,
                                "event " + std::to_string(after_seq + 1) +
                                    " has left the resume window; the oldest event still held is " +
                                    std::to_string(oldest));
    e.oldest_available = static_cast<int64_t>(oldest);
    SendError(sid, "resume", e);
  } else if (r == stream::Stream::AttachResult::kPastHead) {
    SendError(sid, "resume", stream::ResumePastHeadError(sid, after_seq, head, s->finished()));
  } else if (r != stream::Stream::AttachResult::kOk) {
    SendError(sid, "resume", ApiError::Make(ErrorCode::kOverloaded, "too many subscribers on this stream (--max-subscribers)"));
  }
}

void WsSession::HandleCancel(const json::Value& msg) {
  const json::Value* id = msg.Find("stream");
  if (id == nullptr || !id->is_string()) {
    SendError("", "cancel", Invalid("cancel needs \"stream\": string"));
    return;
  }
  std::string sid = id->as_string();
  std::shared_ptr<stream::Stream> s = hub_->Find(sid);
  if (!s) {
    SendError(sid, "cancel", ApiError::Make(ErrorCode::kNotFound, "unknown or expired stream '" + sid + "'"));
    return;
  }
  std::weak_ptr<bool> alive = alive_;
  // "cancelled" only once the producer has exited (and released its blocks).
  hub_->Cancel(s, [this, alive, sid] {
    if (alive.expired() || closed_ || ws_ == nullptr) return;
    std::string m = "{\"type\":\"cancelled\",\"stream\":";
    json::AppendQuoted(&m, sid);
    m += '}';
    ws_->SendUnbounded(Opcode::kText, m);
  }, stream::CancelCause::kWsCancel);
}

stream::Stream::AttachResult WsSession::AttachSlot(const std::shared_ptr<stream::Stream>& s,
                                                   uint64_t after, uint64_t* oldest, uint64_t* head) {
  auto slot = std::make_shared<Slot>(this, s->id(), after);
  Slot* raw = slot.get();
  slots_[raw] = slot;  // before Attach: it may deliver (and even complete) at once
  stream::Stream::AttachResult r = hub_->Attach(s, raw, after, oldest, head);
  if (r != stream::Stream::AttachResult::kOk) {
    auto it = slots_.find(raw);
    if (it != slots_.end()) {
      loop_->ReleaseLater(std::move(it->second));
      slots_.erase(it);
    }
  }
  return r;
}

void WsSession::RemoveSlot(Slot* slot) {
  auto it = slots_.find(slot);
  if (it == slots_.end()) return;
  loop_->ReleaseLater(std::move(it->second));  // the hub may be inside its call
  slots_.erase(it);
}

WsSession::Slot* WsSession::FindSlot(std::string_view stream_id) {
  for (auto& [ptr, slot] : slots_) {
    if (slot->id() == stream_id) return ptr;
  }
  return nullptr;
}

void WsSession::SendError(std::string_view stream_id, std::string_view op, const ApiError& e) {
  if (closed_ || ws_ == nullptr) return;
  std::string m = "{\"type\":\"error\"";
  if (!stream_id.empty()) {
    m += ",\"stream\":";
    json::AppendQuoted(&m, stream_id);
  }
  if (!op.empty()) {
    m += ",\"op\":";
    json::AppendQuoted(&m, op);
  }
  m += ",\"error\":";
  json::AppendErrorObject(&m, e);
  m += '}';
  ws_->SendUnbounded(Opcode::kText, m);
}

void WsSession::OnWritable() {
  std::vector<std::shared_ptr<Slot>> all;
  for (auto& [ptr, slot] : slots_) all.push_back(slot);
  for (auto& slot : all) {
    if (slots_.count(slot.get())) hub_->OnWritable(slot.get());
  }
}

void WsSession::OnClosed(uint16_t) {
  closed_ = true;
  // The client went away: the hub forgets each slot (linger starts), exactly
  // as when an SSE response's connection closes.
  for (auto& [ptr, slot] : slots_) {
    hub_->Detach(ptr);
    loop_->ReleaseLater(slot);
  }
  slots_.clear();
}

}  // namespace tw::ws

#include "ws_loadgen/ws_engine.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "ws/base64.h"
#include "ws/handshake.h"

namespace tw::ws_loadgen {

// The reader's callbacks for one connection.
class WsConn::Sink : public ws::MessageHandler {
 public:
  Sink(WsEngine* e, WsConn* c) : e_(e), c_(c) {}
  bool OnMessage(ws::Opcode op, std::string_view payload) override {
    if (op == ws::Opcode::kText) c_->handler_->OnText(c_, payload);
    return c_->upgraded();  // stop feeding once closed
  }
  bool OnPing(std::string_view payload) override {
    uint8_t key[4];
    e_->Mask(key);
    std::string f;
    ws::AppendFrame(&f, ws::Opcode::kPong, payload, true, key);
    e_->loop_.Send(c_, f);
    return c_->upgraded();
  }
  bool OnPong(std::string_view) override { return true; }
  bool OnClose(uint16_t code, std::string_view reason) override {
    uint8_t key[4];
    e_->Mask(key);
    std::string f;
    ws::AppendCloseFrame(&f, code == ws::close_code::kNoStatus ? 0 : code, "", key);
    e_->loop_.Send(c_, f);  // the echo; the server then closes TCP
    e_->Finish(c_, Status::Error("server sent close " + std::to_string(code) + " '" + std::string(reason) + "'"));
    return false;
  }

 private:
  WsEngine* e_;
  WsConn* c_;
};

WsEngine::WsEngine(uint16_t port, WsEngineOptions options)
    : options_(options),
      rng_(0x5eed5eedULL),
      loop_(port, {options.max_connecting, options.read_buffer_bytes, 0}, this) {}

void WsEngine::Mask(uint8_t key[4]) {
  uint64_t r = rng_();
  std::memcpy(key, &r, 4);
}

WsConn* WsEngine::Open(const std::string& path, WsHandler* handler, uint64_t tag) {
  ws::ReaderLimits limits;
  limits.max_message_bytes = options_.max_message_bytes;
  limits.expect_masked = false;  // we are the client: server frames are unmasked
  std::unique_ptr<WsConn> owned(new WsConn(limits));
  WsConn* c = owned.get();
  c->handler_ = handler;
  char raw[16];
  for (int i = 0; i < 16; i += 8) {
    uint64_t r = rng_();
    std::memcpy(raw + i, &r, 8);
  }
  c->key_ = ws::Base64Encode(std::string_view(raw, 16));
  std::string request = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(loop_.port()) +
                        "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + c->key_ +
                        "\r\nSec-WebSocket-Version: 13\r\n\r\n";
  loop_.Open(std::move(owned), tag, std::move(request), bench::ReadStart::kOnConnect);
  return c;
}

bool WsEngine::SendText(WsConn* c, std::string_view message) {
  if (!c->upgraded()) return false;
  uint8_t key[4];
  Mask(key);
  std::string f;
  ws::AppendFrame(&f, ws::Opcode::kText, message, true, key);
  loop_.Send(c, f);
  return c->upgraded();
}

void WsEngine::Finish(WsConn* c, const Status& why) {
  if (c->closed()) return;
  c->handler_->OnEnd(c, why);
  loop_.Close(c, false);
}

void WsEngine::OnFailed(bench::ClientSocket* s, const Status& why) {
  WsConn* c = static_cast<WsConn*>(s);
  c->handler_->OnEnd(c, why);
}

void WsEngine::OnEof(bench::ClientSocket* s) { Finish(static_cast<WsConn*>(s), Status::Error("EOF without a close frame")); }

bool WsEngine::ParseHead(WsConn* c, std::string_view* rest) {
  size_t before = c->head_.size();
  c->head_.append(rest->data(), rest->size());
  size_t end = c->head_.find("\r\n\r\n");
  if (end == std::string::npos) {
    if (c->head_.size() > options_.max_head_bytes) {
      Finish(c, Status::Error("101 response head longer than " + std::to_string(options_.max_head_bytes) +
                              " bytes (max_head_bytes)"));
      return false;
    }
    rest->remove_prefix(rest->size());
    return true;
  }
  size_t head_len = end + 4;
  rest->remove_prefix(head_len - before);  // bytes after the head are frames
  std::string head = c->head_.substr(0, head_len);
  std::string().swap(c->head_);
  if (head.rfind("HTTP/1.1 101", 0) != 0) {
    Finish(c, Status::Error("handshake refused: " + head.substr(0, head.find("\r\n"))));
    return false;
  }
  std::string lower = head;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
  size_t at = lower.find("\r\nsec-websocket-accept:");
  std::string got;
  if (at != std::string::npos) {
    size_t v = at + 23;
    size_t eol = head.find("\r\n", v);
    got = head.substr(v, eol - v);
    while (!got.empty() && (got.front() == ' ' || got.front() == '\t')) got.erase(0, 1);
    while (!got.empty() && (got.back() == ' ' || got.back() == '\t')) got.pop_back();
  }
  std::string want = ws::AcceptKey(c->key_);
  if (got != want) {
    Finish(c, Status::Error("101 with Sec-WebSocket-Accept '" + got + "', expected '" + want + "'"));
    return false;
  }
  c->upgraded_ = true;
  loop_.Admitted(c);
  c->handler_->OnOpen(c);
  return c->upgraded();
}

void WsEngine::Frames(WsConn* c, std::string_view bytes) {
  WsConn::Sink sink(this, c);
  ws::MessageReader::State st = c->reader_.Feed(bytes, &sink);
  if (st == ws::MessageReader::State::kFailed && c->upgraded()) {
    Finish(c, Status::Error(std::string("server frames: close ") + std::to_string(c->reader_.error().code) + " " +
                            c->reader_.error().reason + " at byte " + std::to_string(c->reader_.error_offset())));
  }
}

void WsEngine::OnBytes(bench::ClientSocket* s, std::string_view in) {
  WsConn* c = static_cast<WsConn*>(s);
  if (!c->upgraded_) {
    if (!ParseHead(c, &in)) return;
    if (!c->upgraded()) return;  // head still incomplete
  }
  if (!in.empty()) Frames(c, in);
}

}  // namespace tw::ws_loadgen

#include "ws/ws_connection.h"

namespace tw::ws {

WsConnection::WsConnection(net::EventLoop* loop, net::Connection* conn, const WsOptions& options,
                           std::unique_ptr<WsEndpoint> endpoint)
    : loop_(loop),
      conn_(conn),
      options_(options),
      endpoint_(std::move(endpoint)),
      reader_(ReaderLimits{options.max_message_bytes, /*expect_masked=*/true}) {}

WsConnection::~WsConnection() { StopTimers(); }

void WsConnection::StopTimers() {
  for (net::EventLoop::TimerId* t : {&heartbeat_timer_, &pong_timer_, &close_timer_, &start_timer_}) {
    if (*t != 0) loop_->CancelTimer(*t);
    *t = 0;
  }
}

void WsConnection::Start(std::string leftover) {
  endpoint_->OnOpen(this);
  if (options_.heartbeat_ms > 0) {
    heartbeat_timer_ = loop_->AddRepeatingTimer(options_.heartbeat_ms, [this] { Heartbeat(); });
  }
  pending_ = std::move(leftover);
  if (!pending_.empty()) {
    // Not from inside the HTTP layer's call: from the loop, like any input.
    start_timer_ = loop_->AddTimer(0, [this] {
      start_timer_ = 0;
      FeedPending();
    });
  }
}

void WsConnection::FeedPending() {
  if (pending_.empty()) return;
  std::string bytes = std::move(pending_);
  pending_.clear();
  Feed(bytes.data(), bytes.size());
}

net::WriteResult WsConnection::Send(Opcode opcode, std::string_view payload) {
  if (!open()) return net::WriteResult::kClosed;
  scratch_.clear();
  AppendFrameHeader(&scratch_, static_cast<uint8_t>(0x80 | static_cast<uint8_t>(opcode)), payload.size(),
                    nullptr);
  std::string_view parts[2] = {scratch_, payload};
  return conn_->Write(parts, 2);
}

net::WriteResult WsConnection::SendUnbounded(Opcode opcode, std::string_view payload) {
  if (!open()) return net::WriteResult::kClosed;
  scratch_.clear();
  AppendFrameHeader(&scratch_, static_cast<uint8_t>(0x80 | static_cast<uint8_t>(opcode)), payload.size(),
                    nullptr);
  std::string_view parts[2] = {scratch_, payload};
  return conn_->WriteUnbounded(parts, 2);
}

void WsConnection::WriteControl(Opcode opcode, std::string_view payload) {
  std::string frame;
  AppendFrame(&frame, opcode, payload);
  conn_->WriteUnbounded(frame);
}

void WsConnection::Close(uint16_t code, std::string_view reason) {
  if (close_sent_ || closed_) return;
  std::string frame;
  AppendCloseFrame(&frame, code, reason);
  conn_->WriteUnbounded(frame);
  close_sent_ = true;
  close_code_ = code;
  // The peer should answer with its close; the server then closes TCP.
  close_timer_ = loop_->AddTimer(options_.close_timeout_ms, [this] {
    close_timer_ = 0;
    if (!closed_) conn_->Close();
  });
}

void WsConnection::SetReading(bool on) {
  if (!closed_ && !conn_->closing()) conn_->SetReading(on);
}

void WsConnection::OnData(const char* data, size_t len) {
  FeedPending();  // the upgrade's leftover comes first
  Feed(data, len);
  // Pongs, error replies and close frames are written whatever the output
  // holds (SendUnbounded, WriteControl). A client that sends pings or bad
  // messages and never reads would grow that without bound: stop reading
  // while the output is over its bound, until it drains (OnDrained). One
  // read chunk's replies can exceed it by at most their own size.
  if (!closed_ && !conn_->closing() && conn_->buffered_bytes() > conn_->limits().max_output_bytes) {
    input_paused_ = true;
    conn_->SetReading(false);
  }
}

void WsConnection::Feed(const char* data, size_t len) {
  if (closed_ || conn_->closing()) return;
  if (reader_.Feed(data, len, this) == MessageReader::State::kFailed) Fail();
}

void WsConnection::Fail() {
  if (!close_sent_) {
    std::string frame;
    AppendCloseFrame(&frame, reader_.error().code, reader_.error().reason);
    conn_->WriteUnbounded(frame);
    close_sent_ = true;
    close_code_ = reader_.error().code;
  }
  conn_->CloseAfterFlush();  // the server closes TCP (RFC 6455 §7.1.1)
}

bool WsConnection::OnMessage(Opcode opcode, std::string_view payload) {
  if (close_sent_) return true;  // after our close: incoming data is discarded
  endpoint_->OnMessage(opcode, payload);
  return !closed_ && !conn_->closing();
}

bool WsConnection::OnPing(std::string_view payload) {
  if (!close_sent_) WriteControl(Opcode::kPong, payload);
  return true;
}

bool WsConnection::OnPong(std::string_view) {
  // Any pong proves the peer is alive (an unsolicited one too: RFC 6455 §5.5.3).
  ping_outstanding_ = false;
  if (pong_timer_ != 0) {
    loop_->CancelTimer(pong_timer_);
    pong_timer_ = 0;
  }
  return true;
}

bool WsConnection::OnClose(uint16_t code, std::string_view) {
  if (!close_sent_) {
    // Echo the peer's code (RFC 6455 §5.5.1); a close without a code gets
    // an empty close back.
    std::string frame;
    AppendCloseFrame(&frame, code == close_code::kNoStatus ? 0 : code, "");
    conn_->WriteUnbounded(frame);
    close_sent_ = true;
    close_code_ = code == close_code::kNoStatus ? close_code::kNormal : code;
  }
  conn_->CloseAfterFlush();
  return false;
}

void WsConnection::Heartbeat() {
  if (close_sent_ || closed_ || ping_outstanding_) return;
  WriteControl(Opcode::kPing, "hb");
  ping_outstanding_ = true;
  pong_timer_ = loop_->AddTimer(options_.pong_timeout_ms, [this] {
    pong_timer_ = 0;
    if (closed_) return;
    if (!close_sent_) {
      std::string frame;
      AppendCloseFrame(&frame, close_code::kGoingAway, "pong timeout");
      conn_->WriteUnbounded(frame);  // best effort: the peer is not answering
      close_sent_ = true;
      close_code_ = close_code::kGoingAway;
    }
    conn_->Close();
  });
}

void WsConnection::OnDrained() {
  if (input_paused_ && !closed_ && !conn_->closing()) {
    input_paused_ = false;
    conn_->SetReading(true);
  }
  if (open()) endpoint_->OnWritable();
}

void WsConnection::OnClosed() {
  if (closed_) return;
  closed_ = true;
  StopTimers();
  endpoint_->OnClosed(close_code_);
}

}  // namespace tw::ws

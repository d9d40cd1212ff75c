// EchoEndpoint: the lab endpoint GET /lab/ws-echo (enabled only by --lab),
// which sends every message back unchanged, as the Autobahn|Testsuite cases
// expect of the server under test. It runs on the same frame layer as
// /v1/ws, so the conformance tests exercise the production parser.
//
// Backpressure: echoes are written unbounded (a message is at most
// max_message_bytes), but while more than max_output_bytes are buffered the
// connection stops reading, so a client that sends without reading is held
// back by TCP flow control. Threads: loop thread only.
#pragma once

#include "ws/ws_connection.h"

namespace tw::ws {

class EchoEndpoint : public WsEndpoint {
 public:
  void OnOpen(WsConnection* ws) override { ws_ = ws; }
  void OnMessage(Opcode opcode, std::string_view payload) override {
    ws_->SendUnbounded(opcode, payload);
    if (ws_->buffered_bytes() > ws_->max_output_bytes()) ws_->SetReading(false);
  }
  void OnWritable() override { ws_->SetReading(true); }
  void OnClosed(uint16_t) override {}

 private:
  WsConnection* ws_ = nullptr;
};

}  // namespace tw::ws

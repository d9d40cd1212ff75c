// A small blocking WebSocket client for the loopback tests (RFC 6455 client
// side): opening handshake with its own random key (the 101's
// Sec-WebSocket-Accept is checked), masked frames written raw or typed, in
// chops of any size, and server frames read one by one with a timeout, so a
// test can see exactly which frames arrived (fragmentation included) and
// whether the server closed TCP.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "ws/frame.h"

namespace tw::ws::testing {

class WsTestClient {
 public:
  struct Frame {
    bool fin = true;
    Opcode opcode = Opcode::kText;
    std::string payload;
    uint16_t close_code() const;  // for close frames: 1005 if no code
  };
  enum class Read { kFrame, kTimeout, kEof, kError };

  WsTestClient();
  ~WsTestClient();
  WsTestClient(const WsTestClient&) = delete;
  WsTestClient& operator=(const WsTestClient&) = delete;

  // Connects and upgrades. On a refused upgrade returns an error naming the
  // status; *status (if non-null) gets the HTTP status and *head the head.
  Status Connect(uint16_t port, const std::string& path,
                 const std::vector<std::pair<std::string, std::string>>& extra_headers = {},
                 int* status = nullptr, std::string* head = nullptr);

  // Raw bytes, in pieces of `chop` bytes (0: one write).
  bool SendRaw(std::string_view bytes, size_t chop = 0);
  // A masked frame with the given first byte (FIN | RSV | opcode).
  std::string MaskedFrame(uint8_t first_byte, std::string_view payload);
  bool SendFrame(uint8_t first_byte, std::string_view payload, size_t chop = 0) {
    return SendRaw(MaskedFrame(first_byte, payload), chop);
  }
  bool SendText(std::string_view s) { return SendFrame(0x81, s); }
  bool SendBinary(std::string_view s) { return SendFrame(0x82, s); }
  bool SendPing(std::string_view s) { return SendFrame(0x89, s); }
  bool SendClose(uint16_t code, std::string_view reason = "");

  // Next server frame (fragments are not joined).
  Read ReadFrame(Frame* f, int timeout_ms = 5000);
  // Next data message, joining fragments; pings/pongs are collected in
  // pongs()/pings(). Returns kFrame with the message in *f, or what stopped it
  // (a close frame is returned as kFrame with opcode kClose).
  Read ReadMessage(Frame* f, int timeout_ms = 5000);
  // True if the server closes TCP within timeout_ms (EOF or reset).
  bool WaitEof(int timeout_ms = 5000);
  // Sends close `code` and expects the server's close (returns its code,
  // or 0 if none) followed by EOF (*eof).
  uint16_t CloseHandshake(uint16_t code, bool* eof);
  void Disconnect();
  void DisconnectWithReset();
  int fd() const { return fd_; }
  // A reader that was slow (small rcvbuf_bytes) and now reads at full speed
  // (client::WidenReceiveWindow).
  void WidenReceiveWindow();

  int rcvbuf_bytes = 0;  // SO_RCVBUF before connecting (0: kernel default)
  std::vector<std::string> pongs;  // payloads of pongs seen by ReadMessage
  std::vector<std::string> pings;  // payloads of pings seen by ReadMessage
  size_t frames_in_last_message = 0;

 private:
  bool Fill(int timeout_ms);  // reads more into in_; false on timeout/eof/error
  Read last_fill_ = Read::kFrame;
  int fd_ = -1;
  std::string in_;
  std::mt19937 rng_;
};

}  // namespace tw::ws::testing

#include "support/ws_test_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "client/http_client.h"
#include "ws/base64.h"
#include "ws/handshake.h"

namespace tw::ws::testing {

uint16_t WsTestClient::Frame::close_code() const {
  if (payload.size() < 2) return close_code::kNoStatus;
  return static_cast<uint16_t>((static_cast<uint8_t>(payload[0]) << 8) | static_cast<uint8_t>(payload[1]));
}

WsTestClient::WsTestClient() : rng_(std::random_device{}()) {}
WsTestClient::~WsTestClient() { Disconnect(); }

void WsTestClient::Disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

void WsTestClient::DisconnectWithReset() {
  if (fd_ < 0) return;
  linger l{1, 0};  // close() then sends RST instead of FIN
  ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &l, sizeof l);
  Disconnect();
}

Status WsTestClient::Connect(uint16_t port, const std::string& path,
                             const std::vector<std::pair<std::string, std::string>>& extra_headers,
                             int* status, std::string* head_out) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return Status::FromErrno("socket");
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (rcvbuf_bytes > 0) ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &rcvbuf_bytes, sizeof rcvbuf_bytes);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return Status::FromErrno("connect");
  std::string raw_key(16, '\0');
  for (char& c : raw_key) c = static_cast<char>(rng_());
  std::string key = Base64Encode(raw_key);
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port) +
                    "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + key +
                    "\r\nSec-WebSocket-Version: 13\r\n";
  for (const auto& [n, v] : extra_headers) req += n + ": " + v + "\r\n";
  req += "\r\n";
  if (!SendRaw(req)) return Status::Error("handshake: send failed");
  size_t end;
  while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill(5000)) return Status::Error("handshake: no complete response head");
  }
  std::string head = in_.substr(0, end + 4);
  if (head_out) *head_out = head;
  int code = head.size() > 12 ? std::atoi(head.c_str() + 9) : 0;
  if (status) *status = code;
  if (code != 101) {
    // Keep the body in in_ for callers that want it.
    in_.erase(0, end + 4);
    return Status::Error("handshake refused with " + std::to_string(code));
  }
  in_.erase(0, end + 4);
  std::string want = "Sec-WebSocket-Accept: " + AcceptKey(key) + "\r\n";
  if (head.find(want) == std::string::npos) return Status::Error("handshake: wrong or missing accept in " + head);
  return Status::Ok();
}

bool WsTestClient::SendRaw(std::string_view bytes, size_t chop) {
  if (chop == 0) chop = bytes.size();
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t n = std::min(chop, bytes.size() - pos);
    size_t sent = 0;
    while (sent < n) {
      ssize_t r = ::send(fd_, bytes.data() + pos + sent, n - sent, MSG_NOSIGNAL);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return false;
      sent += static_cast<size_t>(r);
    }
    pos += n;
  }
  return true;
}

std::string WsTestClient::MaskedFrame(uint8_t first_byte, std::string_view payload) {
  uint8_t mask[4];
  for (uint8_t& m : mask) m = static_cast<uint8_t>(rng_());
  std::string out;
  AppendRawFrame(&out, first_byte, payload, mask);
  return out;
}

bool WsTestClient::SendClose(uint16_t code, std::string_view reason) {
  std::string payload;
  if (code != 0) {
    payload += static_cast<char>(code >> 8);
    payload += static_cast<char>(code & 0xFF);
    payload += reason;
  }
  return SendFrame(0x88, payload);
}

bool WsTestClient::Fill(int timeout_ms) {
  pollfd p{fd_, POLLIN, 0};
  int r = ::poll(&p, 1, timeout_ms);
  if (r == 0) {
    last_fill_ = Read::kTimeout;
    return false;
  }
  if (r < 0) {
    last_fill_ = Read::kError;
    return false;
  }
  char buf[65536];
  ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
  if (n == 0 || (n < 0 && errno == ECONNRESET)) {
    last_fill_ = Read::kEof;
    return false;
  }
  if (n < 0) {
    last_fill_ = Read::kError;
    return false;
  }
  in_.append(buf, static_cast<size_t>(n));
  return true;
}

void WsTestClient::WidenReceiveWindow() { client::WidenReceiveWindow(fd_); }

WsTestClient::Read WsTestClient::ReadFrame(Frame* f, int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  auto left = [&] {
    return static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
               .count()));
  };
  for (;;) {
    FrameHeader h;
    FrameError e;
    int r = ParseFrameHeader(in_.data(), in_.size(), /*expect_masked=*/false, &h, &e);
    if (r == kFrameError) return Read::kError;  // the server broke the protocol
    if (r > 0 && in_.size() - static_cast<size_t>(r) >= h.payload_len) {
      f->fin = h.fin;
      f->opcode = h.opcode;
      f->payload = in_.substr(static_cast<size_t>(r), h.payload_len);
      in_.erase(0, static_cast<size_t>(r) + h.payload_len);
      return Read::kFrame;
    }
    if (!Fill(left())) return last_fill_;
  }
}

WsTestClient::Read WsTestClient::ReadMessage(Frame* f, int timeout_ms) {
  Frame part;
  f->payload.clear();
  frames_in_last_message = 0;
  bool started = false;
  for (;;) {
    Read r = ReadFrame(&part, timeout_ms);
    if (r != Read::kFrame) return r;
    if (part.opcode == Opcode::kPong) {
      pongs.push_back(part.payload);
      continue;
    }
    if (part.opcode == Opcode::kPing) {
      pings.push_back(part.payload);
      continue;
    }
    if (part.opcode == Opcode::kClose) {
      *f = part;
      return Read::kFrame;
    }
    if (!started) f->opcode = part.opcode;
    started = true;
    f->payload += part.payload;
    frames_in_last_message++;
    if (part.fin) {
      f->fin = true;
      return Read::kFrame;
    }
  }
}

bool WsTestClient::WaitEof(int timeout_ms) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    in_.clear();
    int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    if (!Fill(std::max(left, 0))) return last_fill_ == Read::kEof;
  }
  return false;
}

uint16_t WsTestClient::CloseHandshake(uint16_t code, bool* eof) {
  *eof = false;
  SendClose(code);
  Frame f;
  for (;;) {
    Read r = ReadFrame(&f);
    if (r != Read::kFrame) return 0;
    if (f.opcode == Opcode::kClose) break;
  }
  *eof = WaitEof();
  return f.close_code();
}

}  // namespace tw::ws::testing

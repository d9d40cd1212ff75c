#include "ws_loadgen/ws_engine.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "ws/base64.h"
#include "ws/handshake.h"

namespace tw::ws_loadgen {

// The reader's callbacks for one connection.
class WsConn::Sink : public ws::MessageHandler {
 public:
  Sink(WsEngine* e, WsConn* c) : e_(e), c_(c) {}
  bool OnMessage(ws::Opcode op, std::string_view payload) override {
    if (op == ws::Opcode::kText) c_->handler_->OnText(c_, payload);
    return c_->phase_ == WsConn::Phase::kOpen;  // stop feeding once closed
  }
  bool OnPing(std::string_view payload) override {
    uint8_t key[4];
    e_->Mask(key);
    std::string f;
    ws::AppendFrame(&f, ws::Opcode::kPong, payload, true, key);
    e_->Queue(c_, f);
    return c_->phase_ == WsConn::Phase::kOpen;
  }
  bool OnPong(std::string_view) override { return true; }
  bool OnClose(uint16_t code, std::string_view reason) override {
    uint8_t key[4];
    e_->Mask(key);
    std::string f;
    ws::AppendCloseFrame(&f, code == ws::close_code::kNoStatus ? 0 : code, "", key);
    e_->Queue(c_, f);  // the echo; the server then closes TCP
    e_->Finish(c_, Status::Error("server sent close " + std::to_string(code) + " '" + std::string(reason) + "'"));
    return false;
  }

 private:
  WsEngine* e_;
  WsConn* c_;
};

WsEngine::WsEngine(uint16_t port, WsEngineOptions options)
    : port_(port), options_(options), buf_(options.read_buffer_bytes), rng_(0x5eed5eedULL) {}

WsEngine::~WsEngine() {
  for (auto& [c, owned] : conns_) {
    if (c->fd_ >= 0) ::close(c->fd_);
  }
  if (epfd_ >= 0) ::close(epfd_);
}

Status WsEngine::Init() {
  epfd_ = ::epoll_create1(EPOLL_CLOEXEC);
  if (epfd_ < 0) return Status::FromErrno("epoll_create1");
  return Status::Ok();
}

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
  c->tag_ = tag;
  char raw[16];
  for (int i = 0; i < 16; i += 8) {
    uint64_t r = rng_();
    std::memcpy(raw + i, &r, 8);
  }
  c->key_ = ws::Base64Encode(std::string_view(raw, 16));
  c->out_ = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(port_) +
            "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + c->key_ +
            "\r\nSec-WebSocket-Version: 13\r\n\r\n";
  conns_.emplace(c, std::move(owned));
  queued_.push(c);
  StartQueued();
  return c;
}

void WsEngine::StartQueued() {
  while (connecting_ < options_.max_connecting && !queued_.empty()) {
    WsConn* c = queued_.front();
    queued_.pop();
    if (c->phase_ != WsConn::Phase::kQueued) continue;  // closed while queued
    StartConnect(c);
  }
}

void WsEngine::StartConnect(WsConn* c) {
  c->opened_us_ = NowUs();
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    connect_failures_++;
    c->phase_ = WsConn::Phase::kOpen;  // a phase Release does not count in connecting_
    Finish(c, Status::FromErrno("socket"));
    return;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // small frames go out at once
  c->fd_ = fd;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  connecting_++;
  c->phase_ = WsConn::Phase::kConnecting;
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (rc != 0 && errno != EINPROGRESS) {
    connect_failures_++;
    Finish(c, Status::FromErrno("connect"));
    return;
  }
  epoll_event ev{};
  ev.events = EPOLLOUT;  // writable = connected (or failed: SO_ERROR says)
  ev.data.ptr = c;
  if (::epoll_ctl(epfd_, EPOLL_CTL_ADD, fd, &ev) != 0) Finish(c, Status::FromErrno("epoll_ctl(ADD)"));
}

void WsEngine::UpdateInterest(WsConn* c) {
  if (c->fd_ < 0) return;
  epoll_event ev{};
  ev.data.ptr = c;
  // Read always once connected; write only while bytes wait.
  ev.events = c->phase_ == WsConn::Phase::kConnecting ? EPOLLOUT : EPOLLIN;
  if (c->phase_ != WsConn::Phase::kConnecting && c->out_off_ < c->out_.size()) ev.events |= EPOLLOUT;
  ::epoll_ctl(epfd_, EPOLL_CTL_MOD, c->fd_, &ev);
}

bool WsEngine::SendText(WsConn* c, std::string_view message) {
  if (c->phase_ != WsConn::Phase::kOpen) return false;
  uint8_t key[4];
  Mask(key);
  std::string f;
  ws::AppendFrame(&f, ws::Opcode::kText, message, true, key);
  Queue(c, f);
  return c->phase_ == WsConn::Phase::kOpen;
}

void WsEngine::Queue(WsConn* c, const std::string& bytes) {
  if (c->fd_ < 0) return;
  if (c->out_off_ == c->out_.size()) {
    c->out_.clear();
    c->out_off_ = 0;
  }
  c->out_ += bytes;
  Flush(c);
}

void WsEngine::Close(WsConn* c, bool reset) { Release(c, reset); }

void WsEngine::Release(WsConn* c, bool reset) {
  if (c->phase_ == WsConn::Phase::kClosed) return;
  if (c->phase_ == WsConn::Phase::kConnecting || c->phase_ == WsConn::Phase::kHandshake) connecting_--;
  if (c->fd_ >= 0) {
    if (reset) {
      linger lg{1, 0};  // close() sends RST and discards unread data
      ::setsockopt(c->fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    }
    ::epoll_ctl(epfd_, EPOLL_CTL_DEL, c->fd_, nullptr);
    ::close(c->fd_);
    c->fd_ = -1;
  }
  c->phase_ = WsConn::Phase::kClosed;
  auto it = conns_.find(c);
  if (it != conns_.end()) {
    graveyard_.push_back(std::move(it->second));
    conns_.erase(it);
  }
  StartQueued();
}

void WsEngine::Finish(WsConn* c, const Status& why) {
  if (c->phase_ == WsConn::Phase::kClosed) return;
  c->handler_->OnEnd(c, why);
  Release(c, false);
}

void WsEngine::Flush(WsConn* c) {
  while (c->out_off_ < c->out_.size()) {
    ssize_t n = ::send(c->fd_, c->out_.data() + c->out_off_, c->out_.size() - c->out_off_, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      Finish(c, Status::FromErrno("send"));
      return;
    }
    c->out_off_ += static_cast<size_t>(n);
  }
  UpdateInterest(c);
}

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
  connecting_--;
  c->phase_ = WsConn::Phase::kOpen;
  StartQueued();
  c->handler_->OnOpen(c);
  return c->phase_ == WsConn::Phase::kOpen;
}

void WsEngine::Frames(WsConn* c, std::string_view bytes) {
  WsConn::Sink sink(this, c);
  ws::MessageReader::State st = c->reader_.Feed(bytes, &sink);
  if (st == ws::MessageReader::State::kFailed && c->phase_ == WsConn::Phase::kOpen) {
    Finish(c, Status::Error(std::string("server frames: close ") + std::to_string(c->reader_.error().code) + " " +
                            c->reader_.error().reason + " at byte " + std::to_string(c->reader_.error_offset())));
  }
}

void WsEngine::ReadSome(WsConn* c) {
  ssize_t n = ::recv(c->fd_, buf_.data(), buf_.size(), 0);
  if (n < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    Finish(c, Status::FromErrno("recv"));
    return;
  }
  if (n == 0) {
    Finish(c, Status::Error("EOF without a close frame"));
    return;
  }
  c->wire_bytes_ += static_cast<uint64_t>(n);
  std::string_view in(buf_.data(), static_cast<size_t>(n));
  if (c->phase_ == WsConn::Phase::kHandshake) {
    if (!ParseHead(c, &in)) return;
    if (c->phase_ != WsConn::Phase::kOpen) return;  // head still incomplete
  }
  if (!in.empty()) Frames(c, in);
}

void WsEngine::OnEvents(WsConn* c, uint32_t events) {
  if (c->phase_ == WsConn::Phase::kConnecting) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(c->fd_, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      connect_failures_++;
      Finish(c, Status::Error(std::string("connect: ") + std::strerror(err)));
      return;
    }
    c->phase_ = WsConn::Phase::kHandshake;  // still counted in connecting_ until the 101
    Flush(c);
    return;
  }
  if (events & EPOLLOUT) {
    Flush(c);
    if (c->phase_ == WsConn::Phase::kClosed) return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ReadSome(c);
}

void WsEngine::At(double at_us, std::function<void()> fn) { loop_.At(at_us, std::move(fn)); }

bool WsEngine::Run(const std::function<bool()>& done, double deadline_us, const std::function<void()>& tick,
                 int tick_ms) {
  return loop_.Run(
      epfd_, done, deadline_us, tick, tick_ms,
      [this](void* ptr, uint32_t events) {
        WsConn* c = static_cast<WsConn*>(ptr);
        // A WsConn closed earlier in this batch is in the graveyard, still valid.
        if (c->phase_ != WsConn::Phase::kClosed) OnEvents(c, events);
      },
      [this] { graveyard_.clear(); });
}

}  // namespace tw::ws_loadgen

// A tiny loopback server for the client tests, on raw sockets: it listens on
// 127.0.0.1 (port chosen by the kernel), accepts `connections` connections one
// after another on its own thread, and runs the test's handler on each with
// the connected fd (closed after the handler returns). Every wait is bounded
// (accept waits at most 5 s) so a broken test fails instead of hanging.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

namespace tw::client::testing {

class TestServer {
 public:
  using Handler = std::function<void(int fd)>;

  explicit TestServer(Handler handler, int connections = 1) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_fd_, 16) != 0) {
      error_ = std::string("bind/listen: ") + std::strerror(errno);
      return;
    }
    socklen_t len = sizeof addr;
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, connections] {
      for (int i = 0; i < connections; i++) {
        pollfd p{listen_fd_, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) {
          error_ = "accept: no connection within 5 s";
          return;
        }
        int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) {
          error_ = std::string("accept: ") + std::strerror(errno);
          return;
        }
        handler_(fd);
        ::close(fd);
      }
    });
  }

  ~TestServer() {
    Join();
    if (listen_fd_ >= 0) ::close(listen_fd_);
  }

  uint16_t port() const { return port_; }
  // Waits for the server thread (all handlers) to finish.
  void Join() {
    if (thread_.joinable()) thread_.join();
  }
  // "" unless the server itself failed (bind, accept).
  const std::string& error() const { return error_; }

 private:
  Handler handler_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::string error_;
  std::thread thread_;
};

// Sends all of `bytes` (blocking socket); false on error.
inline bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// Sends `bytes` one byte per send(), sleeping `gap_us` between them.
inline bool Dribble(int fd, std::string_view bytes, int gap_us) {
  for (char c : bytes) {
    if (!SendAll(fd, std::string_view(&c, 1))) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(gap_us));
  }
  return true;
}

// Reads one request: the head up to CRLFCRLF plus a Content-Length body.
// Returns the bytes read ("" on EOF/error before a full head; waits up to 5 s).
inline std::string ReadRequest(int fd) {
  std::string in;
  size_t head_end = std::string::npos;
  size_t want = 0;
  while (true) {
    if (head_end == std::string::npos) {
      head_end = in.find("\r\n\r\n");
      if (head_end != std::string::npos) {
        head_end += 4;
        want = head_end;
        // Content-Length, matched case-insensitively by lowering a copy of the head.
        std::string lower = in.substr(0, head_end);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        size_t cl = lower.find("\r\ncontent-length:");
        if (cl != std::string::npos) want += std::stoul(lower.substr(cl + 17));
      }
    }
    if (head_end != std::string::npos && in.size() >= want) return in;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return "";
    char buf[4096];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) return "";
    in.append(buf, static_cast<size_t>(n));
  }
}

// Reads until EOF or error; returns 0 on FIN, else the errno (ECONNRESET for an
// RST). Waits up to 5 s; returns ETIMEDOUT then.
inline int ReadUntilEof(int fd) {
  char buf[4096];
  while (true) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return ETIMEDOUT;
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n == 0) return 0;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
  }
}

}  // namespace tw::client::testing

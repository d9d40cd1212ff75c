// The floor of the streams throughput scenario: the least work a server can
// do to deliver the same token events — one epoll thread that accepts the
// load generator's POST /v1/stream, answers with the same response head and
// then writes, on the same schedule as the mock backend, exactly the bytes
// TokenWire writes for that stream (the same chunked SSE events, the same
// token ids and texts: backend::MockBackend::TokenAt through the GPT-2
// tokenizer), one send per event (or, with --stream-interval K, one send per
// K events, as a server that groups them would).
//
//   floor_writer serve --port 0 [--mock-tokens-per-s R] [--stream-interval K]
//                      [--mock-clock stream|step]   (other flags are ignored)
//
// --mock-clock step puts every stream's tokens on one shared grid of steps
// 1/R s apart, as the mock's step clock does.
//
// It prints "listening on 127.0.0.1:PORT" like tokenwire, so the load
// generator starts it with the same ServerProcess. Nothing here is a server:
// no bounds, no parsing beyond what the load generator sends, no resume. Its
// CPU time per delivered event, measured in the same run as the server's, is
// what the server's is compared with (bench/loadgen/scenarios_throughput.cc).
//
// Thread: one. Memory: one record per connection and the event being written.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/mock_backend.h"
#include "http/response.h"
#include "json/json.h"
#include "sse/writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8_stream.h"

namespace {

using tw::json::Value;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Client {
  int fd = -1;
  std::string in;           // request bytes so far
  bool streaming = false;
  std::vector<int32_t> prompt;
  uint64_t seed = 0;
  int total = 0;            // max_new_tokens
  int next = 0;             // next token index
  int64_t next_due_ns = 0;
  uint64_t seq = 1;         // last event id written
  std::string id;
  tw::tokenizer::Utf8StreamDecoder utf8;
};

struct Floor {
  int64_t interval_ns = 500000;  // 2,000 tokens/s
  int group = 1;                 // --stream-interval
  bool step_clock = false;       // --mock-clock step
  int64_t origin_ns = 0;         // the step grid's step 0
  tw::tokenizer::Tokenizer tok;
  std::unordered_map<int, std::unique_ptr<Client>> clients;
  std::string out, data;
  uint64_t ids = 0;
};

// Sends all of out (blocking retries on EAGAIN: the floor never buffers).
void SendAll(int fd, const std::string& bytes) {
  size_t off = 0;
  while (off < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        usleep(50);
        continue;
      }
      return;
    }
    off += static_cast<size_t>(n);
  }
}

void AppendChunk(std::string* out, const std::string& payload) {
  char head[24];
  size_t n = tw::http::FormatChunkHeader(payload.size(), head);
  out->append(head, n);
  out->append(payload);
  out->append(tw::http::kChunkTrailer);
}

// The request is small and complete in one read in practice; wait for the
// head and the Content-Length bytes.
bool RequestComplete(const std::string& in, std::string* body) {
  size_t end = in.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  size_t cl = 0;
  size_t p = in.find("Content-Length:");
  if (p == std::string::npos) p = in.find("content-length:");
  if (p != std::string::npos && p < end) cl = std::strtoul(in.c_str() + p + 15, nullptr, 10);
  if (in.size() < end + 4 + cl) return false;
  *body = in.substr(end + 4, cl);
  return true;
}

void StartStream(Floor& f, Client& c, const std::string& body) {
  Value v;
  tw::json::ParseLimits lim;
  lim.max_bytes = body.size() + 1;
  if (tw::json::Parse(body, &v, lim).ok()) {
    if (const Value* p = v.Find("prompt_tokens")) {
      for (const Value& t : p->items()) c.prompt.push_back(static_cast<int32_t>(t.as_int()));
    }
    if (const Value* s = v.Find("seed")) c.seed = static_cast<uint64_t>(s->as_int());
    if (const Value* m = v.Find("max_new_tokens")) c.total = static_cast<int>(m->as_int());
  }
  char idbuf[40];
  std::snprintf(idbuf, sizeof idbuf, "s_%032llx", static_cast<unsigned long long>(++f.ids));
  c.id = idbuf;
  std::string head =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n"
      "Cache-Control: no-cache\r\nX-Accel-Buffering: no\r\nX-Stream-Id: " + c.id + "\r\n\r\n";
  std::string payload;
  tw::sse::AppendRetry(&payload, 1000);
  f.data = "{\"stream\":\"" + c.id + "\",\"model\":\"mock-gpt2\",\"prompt_tokens\":" + std::to_string(c.prompt.size()) + "}";
  tw::sse::AppendEvent(&payload, 1, "start", f.data);
  AppendChunk(&head, payload);
  SendAll(c.fd, head);
  c.streaming = true;
  c.next_due_ns = NowNs();
  if (f.step_clock) {
    int64_t steps = (c.next_due_ns - f.origin_ns + f.interval_ns - 1) / f.interval_ns;
    c.next_due_ns = f.origin_ns + steps * f.interval_ns;
  }
}

// Appends token event `c.next` (and, for the last one, the done event).
void AppendToken(Floor& f, Client& c, std::string* payload) {
  int32_t t = tw::backend::MockBackend::TokenAt(c.prompt, c.seed, c.next);
  std::string text = c.utf8.Push(f.tok.TokenBytes(t));
  if (c.next + 1 == c.total) text += c.utf8.Flush();
  f.data = "{\"index\":" + std::to_string(c.next) + ",\"token\":" + std::to_string(t) + ",\"text\":";
  tw::json::AppendQuoted(&f.data, text);
  f.data += '}';
  tw::sse::AppendEvent(payload, ++c.seq, "token", f.data);
  c.next++;
  if (c.next == c.total) {
    f.data = "{\"finish_reason\":\"length\",\"usage\":{\"prompt_tokens\":" + std::to_string(c.prompt.size()) +
             ",\"completion_tokens\":" + std::to_string(c.total) + "}}";
    tw::sse::AppendEvent(payload, ++c.seq, "done", f.data);
  }
}

// Writes every event that is due: one send per event, or per group of
// `group` events (the last group of a stream may be shorter).
int64_t WriteDue(Floor& f) {
  int64_t now = NowNs(), next = INT64_MAX;
  for (auto& [fd, cp] : f.clients) {
    Client& c = *cp;
    if (!c.streaming || c.next >= c.total) continue;
    while (c.next < c.total && c.next_due_ns <= now) {
      const bool first = c.next == 0;
      // A group goes out when its last token is due (the first token never waits).
      int in_group = first ? 1 : std::min(f.group, c.total - c.next);
      int64_t last_due = c.next_due_ns + (in_group - 1) * f.interval_ns;
      if (last_due > now) break;
      std::string payload;
      for (int k = 0; k < in_group; k++) AppendToken(f, c, &payload);
      f.out.clear();
      AppendChunk(&f.out, payload);
      if (c.next == c.total) f.out.append(tw::http::kLastChunk);
      SendAll(c.fd, f.out);
      c.next_due_ns += in_group * f.interval_ns;
    }
    if (c.next < c.total) {
      int in_group = c.next == 0 ? 1 : std::min(f.group, c.total - c.next);
      next = std::min(next, c.next_due_ns + (in_group - 1) * f.interval_ns);
    }
  }
  return next;
}

}  // namespace

int main(int argc, char** argv) {
  Floor f;
  double rate = 2000;
  int port = 0;
  for (int i = 1; i + 1 < argc; i++) {
    std::string a = argv[i];
    if (a == "--mock-tokens-per-s") rate = std::atof(argv[++i]);
    else if (a == "--stream-interval") f.group = std::max(1, std::atoi(argv[++i]));
    else if (a == "--port") port = std::atoi(argv[++i]);
    else if (a == "--mock-clock") f.step_clock = std::string(argv[++i]) == "step";
  }
  f.interval_ns = static_cast<int64_t>(1e9 / std::max(rate, 1.0));
  f.origin_ns = NowNs();
  if (tw::Status s = tw::tokenizer::Tokenizer::LoadEmbedded(&f.tok); !s.ok()) {
    std::fprintf(stderr, "tokenizer: %s\n", s.message().c_str());
    return 1;
  }
  int lfd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  int one = 1;
  ::setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(lfd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(lfd, 4096) != 0) {
    std::perror("bind/listen");
    return 1;
  }
  socklen_t len = sizeof addr;
  ::getsockname(lfd, reinterpret_cast<sockaddr*>(&addr), &len);
  std::printf("listening on 127.0.0.1:%d\n", ntohs(addr.sin_port));
  std::fflush(stdout);
  int ep = ::epoll_create1(0);
  int tfd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = lfd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
  ev.data.fd = tfd;
  ::epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev);
  epoll_event fired[256];
  char buf[65536];
  for (;;) {
    int64_t next = WriteDue(f);
    itimerspec its{};
    if (next != INT64_MAX) {
      int64_t wait = std::max<int64_t>(next - NowNs(), 1000);
      its.it_value.tv_sec = wait / 1000000000;
      its.it_value.tv_nsec = wait % 1000000000;
    }
    ::timerfd_settime(tfd, 0, &its, nullptr);
    int n = ::epoll_wait(ep, fired, 256, -1);
    for (int i = 0; i < n; i++) {
      int fd = fired[i].data.fd;
      if (fd == tfd) {
        uint64_t x;
        while (::read(tfd, &x, sizeof x) > 0) {
        }
      } else if (fd == lfd) {
        for (;;) {
          int c = ::accept4(lfd, nullptr, nullptr, SOCK_NONBLOCK);
          if (c < 0) break;
          ::setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          auto cl = std::make_unique<Client>();
          cl->fd = c;
          ev.events = EPOLLIN | EPOLLRDHUP;
          ev.data.fd = c;
          ::epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
          f.clients[c] = std::move(cl);
        }
      } else {
        auto it = f.clients.find(fd);
        if (it == f.clients.end()) continue;
        Client& c = *it->second;
        ssize_t r = ::recv(fd, buf, sizeof buf, 0);
        if (r <= 0 || (fired[i].events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
          if (r > 0 && !c.streaming) c.in.append(buf, static_cast<size_t>(r));
          if (r <= 0 || c.streaming) {
            ::epoll_ctl(ep, EPOLL_CTL_DEL, fd, nullptr);
            ::close(fd);
            f.clients.erase(it);
            continue;
          }
        } else if (!c.streaming) {
          c.in.append(buf, static_cast<size_t>(r));
        }
        std::string body;
        if (!c.streaming && RequestComplete(c.in, &body)) StartStream(f, c, body);
      }
    }
  }
}

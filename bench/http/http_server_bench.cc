// A minimal TokenWire HTTP server for bench/http/run.sh: the real Server,
// EventLoop and Router serving only GET /healthz → 200 {"status":"ok"}, the
// way the full server answers liveness. Prints "listening on HOST:PORT".
//
//   http_server_bench [--host 127.0.0.1] [--port 0]
// Stops on SIGINT/SIGTERM (read through a signalfd on the loop).
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "http/router.h"
#include "http/server.h"
#include "net/event_loop.h"

int main(int argc, char** argv) {
  tw::http::ServerOptions options;
  options.port = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--port") == 0) options.port = std::atoi(argv[i + 1]);
    else if (std::strcmp(argv[i], "--host") == 0) options.host = argv[i + 1];
    else {
      std::fprintf(stderr, "usage: %s [--host H] [--port P]\n", argv[0]);
      return 2;
    }
  }
  tw::net::EventLoop loop;
  tw::Status s = loop.Init();
  if (!s.ok()) {
    std::fprintf(stderr, "event loop: %s\n", s.message().c_str());
    return 1;
  }
  sigset_t mask;
  sigemptyset(&mask);
  sigaddset(&mask, SIGINT);
  sigaddset(&mask, SIGTERM);
  sigprocmask(SIG_BLOCK, &mask, nullptr);
  int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
  if (sfd < 0) {
    std::perror("signalfd");
    return 1;
  }
  (void)loop.AddFileEvent(sfd, tw::net::kReadable, [&loop](int, int) { loop.Stop(); });

  tw::http::Router router;
  router.Add("GET", "/healthz", [](const tw::http::Request&, tw::http::Responder r) {
    r.Send(200, "application/json", "{\"status\":\"ok\"}");
  });
  tw::Metrics metrics;
  tw::http::Server server(&loop, options, &router, &metrics);
  s = server.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "start: %s\n", s.message().c_str());
    return 1;
  }
  std::printf("listening on %s:%d\n", options.host.c_str(), server.port());
  std::fflush(stdout);
  s = loop.Run();
  if (!s.ok()) {
    std::fprintf(stderr, "loop: %s\n", s.message().c_str());
    return 1;
  }
  return 0;
}

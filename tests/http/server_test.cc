// Loopback tests of http::Server: real sockets on 127.0.0.1, the server on a
// background loop thread, raw-socket clients in the test thread.
#include "http/server.h"

#include <errno.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "test_client.h"

namespace tw::testing {
namespace {

using http::Request;
using http::Responder;
using http::StreamWriter;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Every fixture gets an echo route and an error route.
void AddBasicRoutes(http::Router& r) {
  r.Add("GET", "/hello", [](const Request&, Responder resp) {
    resp.Send(200, "text/plain", "hello");
  });
  r.Add("GET", "/v1/streams/{id}/events", [](const Request& req, Responder resp) {
    resp.Send(200, "text/plain", "events of " + std::string(resp.Param("id")) + " q=" + req.query);
  });
  r.Add("DELETE", "/v1/streams/{id}/events", [](const Request&, Responder resp) {
    resp.Send(204, "text/plain", "");
  });
  r.Add("POST", "/echo", [](const Request& req, Responder resp) {
    resp.Send(200, "application/octet-stream", req.body);
  });
}

TEST(ServerTest, KeepAliveServesSeveralRequestsOnOneConnection) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(c.SendAll(Get("/v1/streams/s_" + std::to_string(i) + "/events?after=3")));
    ClientResponse r;
    ASSERT_TRUE(c.ReadResponse(&r));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "events of s_" + std::to_string(i) + " q=after=3");
    EXPECT_EQ(r.Header("Content-Type"), "text/plain");
    EXPECT_EQ(r.Header("Connection"), "");
  }
  EXPECT_EQ(f.server().connection_count(), 1u);
  std::string metrics = f.metrics().RenderPrometheus();
  EXPECT_NE(metrics.find("tokenwire_http_requests_total{code=\"200\"} 5\n"), std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("tokenwire_http_connections 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("tokenwire_http_connections_accepted_total 1\n"), std::string::npos);
}

TEST(ServerTest, NotFoundAndMethodNotAllowedUseTheEnvelope) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(Get("/nope")));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.Header("Content-Type"), "application/json");
  EXPECT_EQ(r.body.rfind("{\"error\":{\"type\":\"not_found\",\"message\":", 0), 0u) << r.body;
  EXPECT_NE(r.body.find("\"retryable\":false}}"), std::string::npos) << r.body;

  ASSERT_TRUE(c.SendAll("PUT /v1/streams/x/events HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("Allow"), "GET, DELETE");
  EXPECT_NE(r.body.find("\"type\":\"method_not_allowed\""), std::string::npos) << r.body;
  // HEAD is not special-cased: 405 where GET exists.
  ASSERT_TRUE(c.SendAll("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.Header("Allow"), "GET");
  // Still usable afterwards.
  ASSERT_TRUE(c.SendAll(Get("/hello")));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
}

TEST(ServerTest, PipelinedRequestsAreAnsweredInOrderIncludingAnAsyncOne) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  net::EventLoop* loop = &f.loop();
  std::atomic<int> handled{0};
  f.router().Add("GET", "/later", [loop, &handled](const Request&, Responder resp) {
    ++handled;
    loop->AddTimer(50, [resp]() mutable { resp.Send(200, "text/plain", "later"); });
  });
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(Get("/hello") + Get("/later") + Get("/v1/streams/z/events")));
  std::vector<std::string> bodies;
  for (int i = 0; i < 3; ++i) {
    ClientResponse r;
    ASSERT_TRUE(c.ReadResponse(&r)) << i;
    EXPECT_EQ(r.status, 200);
    bodies.push_back(r.body);
  }
  EXPECT_EQ(bodies, (std::vector<std::string>{"hello", "later", "events of z q="}));
  EXPECT_EQ(handled.load(), 1);
}

TEST(ServerTest, SlowlorisGets408WithinTheHeaderTimeout) {
  http::ServerOptions o;
  o.header_timeout_ms = 600;
  ServerFixture f(o);
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  const std::string req = Get("/hello", "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n");
  int64_t start = NowMs();
  size_t sent = 0;
  ClientResponse r;
  bool got = false;
  // One byte every 200 ms; the poll inside ReadResponse is the pacing.
  while (sent < req.size() && NowMs() - start < 5000) {
    if (!c.SendAll(req.substr(sent, 1))) break;
    ++sent;
    if (c.ReadResponse(&r, 200)) {
      got = true;
      break;
    }
  }
  if (!got) got = c.ReadResponse(&r, 2000);
  int64_t elapsed = NowMs() - start;
  ASSERT_TRUE(got);
  EXPECT_LT(sent, req.size());  // the server did not wait for the whole head
  EXPECT_EQ(r.status, 408);
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_NE(r.body.find("\"type\":\"request_timeout\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"retryable\":true"), std::string::npos) << r.body;
  EXPECT_GE(elapsed, 500);
  // No upper bound in time (a loaded machine may be late): that the server
  // answered before the whole head was sent (at 200 ms a byte) is the check.
  EXPECT_TRUE(c.WaitClosed());
  c.Close();  // the server lingers (reading) until our FIN
  EXPECT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 0; }));
}

// A body that stops arriving gets the same 408 as a late head (the deadline
// runs from the request's first byte), also after 100 Continue; before, the
// wait for the body ran on the idle timer and the connection was closed
// without a word.
TEST(ServerTest, ABodyThatDoesNotArriveGets408) {
  http::ServerOptions o;
  o.header_timeout_ms = 300;
  o.keep_alive_idle_ms = 100;  // shorter: what used to close the connection silently
  ServerFixture f(o);
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  for (bool expect_continue : {false, true}) {
    SCOPED_TRACE(expect_continue ? "with 100-continue" : "plain");
    RawClient c;
    ASSERT_TRUE(c.Connect(f.port()));
    std::string head = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n";
    if (expect_continue) head += "Expect: 100-continue\r\n";
    ASSERT_TRUE(c.SendAll(head + "\r\n"));
    ClientResponse r;
    if (expect_continue) {
      ASSERT_TRUE(c.ReadResponse(&r));
      EXPECT_EQ(r.status, 100);
    }
    ASSERT_TRUE(c.SendAll("only ten b"));
    ASSERT_TRUE(c.ReadResponse(&r)) << "closed without an answer";
    EXPECT_EQ(r.status, 408);
    EXPECT_NE(r.body.find("\"type\":\"request_timeout\""), std::string::npos) << r.body;
    EXPECT_EQ(r.Header("Connection"), "close");
  }
}

TEST(ServerTest, IdleKeepAliveConnectionIsClosedSilently) {
  http::ServerOptions o;
  o.keep_alive_idle_ms = 200;
  ServerFixture f(o);
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(Get("/hello")));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  int64_t start = NowMs();
  EXPECT_TRUE(c.WaitClosed(3000));
  EXPECT_GE(NowMs() - start, 100);  // not at once (200 ms idle limit, minus scheduling slack)
  EXPECT_TRUE(c.buffer().empty());  // no 408 for an idle connection
}

TEST(ServerTest, HeaderAndBodyBoundsGive431And413ThenClose) {
  http::ServerOptions o;
  o.max_header_bytes = 1024;
  o.max_body_bytes = 1000;
  ServerFixture f(o);
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  // Each refusal: its status, our envelope of `type`, Connection: close, then the close.
  auto refused = [&](const std::string& request, int status, const std::string& type) {
    SCOPED_TRACE(type);
    RawClient c;
    ASSERT_TRUE(c.Connect(f.port()));
    ASSERT_TRUE(c.SendAll(request));
    ClientResponse r;
    ASSERT_TRUE(c.ReadResponse(&r));
    EXPECT_EQ(r.status, status);
    EXPECT_EQ(r.Header("Connection"), "close");
    EXPECT_NE(r.body.find("\"type\":\"" + type + "\""), std::string::npos) << r.body;
    EXPECT_TRUE(c.WaitClosed());
  };
  refused(Get("/hello", "X-Big: " + std::string(2000, 'a') + "\r\n"), 431, "headers_too_large");
  refused("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1001\r\n\r\n", 413, "payload_too_large");
  {  // at the bound exactly: accepted
    RawClient c;
    ASSERT_TRUE(c.Connect(f.port()));
    ASSERT_TRUE(c.SendAll("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n" +
                          std::string(1000, 'b')));
    ClientResponse r;
    ASSERT_TRUE(c.ReadResponse(&r));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, std::string(1000, 'b'));
  }
  refused("GET /hello HTTP/1.1 junk\r\nHost: t\r\n\r\n", 400, "invalid_request");  // a malformed request line
}

TEST(ServerTest, ConnectionBeyondMaxConnectionsGets503AndClose) {
  http::ServerOptions o;
  o.max_connections = 2;
  ServerFixture f(o);
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient a, b, c;
  ASSERT_TRUE(a.Connect(f.port()));
  ASSERT_TRUE(b.Connect(f.port()));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 2; }));
  ASSERT_TRUE(c.Connect(f.port()));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_EQ(r.Header("Retry-After"), "1");
  EXPECT_NE(r.body.find("\"type\":\"overloaded\""), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("\"retryable\":true"), std::string::npos) << r.body;
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_EQ(f.server().connection_count(), 2u);
  // The admitted ones still work; once one leaves, a new one is admitted.
  ASSERT_TRUE(a.SendAll(Get("/hello")));
  ASSERT_TRUE(a.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  b.Close();
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 1; }));
  RawClient d;
  ASSERT_TRUE(d.Connect(f.port()));
  ASSERT_TRUE(d.SendAll(Get("/hello")));
  ASSERT_TRUE(d.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_NE(f.metrics().RenderPrometheus().find("tokenwire_http_connections_rejected_total 1\n"),
            std::string::npos);
}

TEST(ServerTest, ClientResetMidRequestLeavesTheServerHealthy) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  for (int i = 0; i < 3; ++i) {
    RawClient c;
    ASSERT_TRUE(c.Connect(f.port()));
    ASSERT_TRUE(c.SendAll("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nabc"));
    ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 1; }));
    c.Reset();
    ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 0; }));
  }
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(Get("/hello")));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
}

TEST(ServerTest, ExpectContinueGets100ThenTheResponse) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(
      "POST /echo HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 100);
  ASSERT_TRUE(c.SendAll("12345"));
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "12345");
}

TEST(ServerTest, ConnectionCloseRequestClosesAfterTheResponse) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  // The second pipelined request must not be answered.
  ASSERT_TRUE(c.SendAll(Get("/hello", "Connection: close\r\n") + Get("/hello")));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(c.buffer().empty());
}

// Shared state of one streaming handler, touched only on the loop thread
// except the atomics.
struct StreamState {
  std::shared_ptr<StreamWriter> writer;
  std::atomic<bool> started{false};
  std::atomic<int> writable_calls{0};
  std::atomic<int> close_calls{0};
};

void AddStreamRoute(http::Router& r, StreamState* st) {
  r.Add("GET", "/stream", [st](const Request&, Responder resp) {
    st->writer = resp.StartStream(200, "text/event-stream", {{"X-Stream-Id", "s_1"}});
    st->writer->OnWritable([st] { ++st->writable_calls; });
    st->writer->OnClose([st] { ++st->close_calls; });
    st->started = true;
  });
}

// A client that pipelines many requests and never reads: the server stops
// taking requests (and reading) once the connection's queued output is over
// max_output_bytes, so it holds at most that plus one response, not every
// answer. When the client reads, the rest are answered, in order.
TEST(ServerTest, PipelinedRequestsOfAClientThatDoesNotReadAreBoundedByTheOutput) {
  http::ServerOptions o;
  o.max_output_bytes = 256 << 10;
  o.write_low_watermark_bytes = 64 << 10;
  o.socket_send_buffer_bytes = 4096;
  ServerFixture f(o);
  std::atomic<int> answered{0};  // requests the handler saw
  const size_t kBody = 40 << 10;
  f.router().Add("GET", "/big/{n}", [&](const Request& req, Responder r) {
    (void)req;
    std::string body(kBody, static_cast<char>('a' + answered.load() % 26));
    ++answered;
    r.Send(200, "text/plain", body);
  });
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port(), /*rcvbuf=*/4096));
  const int kRequests = 200;  // 8 MB of answers
  std::string all;
  for (int i = 0; i < kRequests; i++) all += Get("/big/" + std::to_string(i));
  ASSERT_TRUE(c.SendAll(all));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return answered.load() > 0; }));
  // Every request arrived in one read or a few; the loop has handled each
  // one it was going to by the time two more iterations have run.
  for (int i = 0; i < 3; i++) f.RunOnLoop([] {});
  int before_reading = answered.load();
  // 256 KiB of output bound / 40 KiB answers, plus the kernel's small
  // buffers: a handful, never the 200 (which is what the server did before).
  EXPECT_LE(before_reading, 12) << "answered while the client read nothing";
  // The client reads: every answer, in order.
  for (int i = 0; i < kRequests; i++) {
    ClientResponse r;
    ASSERT_TRUE(c.ReadResponse(&r)) << i;
    ASSERT_EQ(r.status, 200);
    ASSERT_EQ(r.body.size(), kBody);
    ASSERT_EQ(r.body[0], static_cast<char>('a' + i % 26)) << i;
  }
  EXPECT_EQ(answered.load(), kRequests);
}

TEST(ServerTest, SlowReaderSeesQueuedThenRefusedThenWritable) {
  http::ServerOptions o;
  o.max_output_bytes = 256 << 10;
  o.write_low_watermark_bytes = 64 << 10;
  // A small kernel send buffer: the corked flushes after the refusal cannot
  // drain the output below the watermark until the client reads.
  o.socket_send_buffer_bytes = 4096;
  ServerFixture f(o);
  StreamState st;
  AddStreamRoute(f.router(), &st);
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port(), /*rcvbuf=*/4096));
  ASSERT_TRUE(c.SendAll(Get("/stream")));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.started.load(); }));

  // Write 16 KiB chunks (byte value = chunk number) until one is refused.
  std::vector<StreamWriter::WriteResult> results;
  std::string expected;
  size_t buffered_at_refusal = 0;
  f.RunOnLoop([&] {
    for (int i = 0; i < 100000; ++i) {
      std::string chunk(16 << 10, static_cast<char>('a' + i % 26));
      auto res = st.writer->Write(chunk);
      results.push_back(res);
      if (res == StreamWriter::WriteResult::kRefused) {
        buffered_at_refusal = st.writer->buffered_bytes();
        break;
      }
      expected += chunk;
    }
  });
  ASSERT_FALSE(results.empty());
  EXPECT_EQ(results.back(), StreamWriter::WriteResult::kRefused);
  size_t first_queued = 0;
  while (first_queued < results.size() && results[first_queued] == StreamWriter::WriteResult::kTaken)
    ++first_queued;
  ASSERT_LT(first_queued, results.size() - 1) << "no kQueued before kRefused";
  EXPECT_EQ(results[first_queued], StreamWriter::WriteResult::kQueued);
  for (size_t i = first_queued; i + 1 < results.size(); ++i) {
    EXPECT_EQ(results[i], StreamWriter::WriteResult::kQueued) << i;
  }
  EXPECT_LE(buffered_at_refusal, o.max_output_bytes);
  EXPECT_GT(buffered_at_refusal + (16 << 10) + 10, o.max_output_bytes);
  EXPECT_EQ(st.writable_calls.load(), 0);

  // The client reads: the buffer drains and OnWritable fires.
  ASSERT_TRUE(ServerFixture::WaitFor([&] {
    for (int i = 0; i < 64 && c.ReadSome(10) > 0; ++i) {
    }
    return st.writable_calls.load() > 0;
  }, 10000));
  f.RunOnLoop([&] {
    EXPECT_LE(st.writer->buffered_bytes(), o.write_low_watermark_bytes);
    st.writer->Finish();
  });
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r, 10000));
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.chunked);
  EXPECT_EQ(r.Header("X-Stream-Id"), "s_1");
  EXPECT_EQ(r.body.size(), expected.size());
  EXPECT_TRUE(r.body == expected);  // nothing of the refused chunk, nothing lost
  EXPECT_EQ(st.close_calls.load(), 0);  // finished, not closed
  // Back to keep-alive after Finish: the same connection serves another stream.
  st.started = false;
  ASSERT_TRUE(c.SendAll(Get("/stream")));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.started.load(); }));
  f.RunOnLoop([&] {
    // The server's connections are corked: accepted means queued for the
    // iteration's one send.
    EXPECT_EQ(st.writer->Write("tail"), StreamWriter::WriteResult::kQueued);
    st.writer->Finish();
  });
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.chunks, (std::vector<std::string>{"tail"}));
}

TEST(ServerTest, OnCloseFiresWhenTheStreamingClientLeaves) {
  ServerFixture f;
  StreamState st;
  AddStreamRoute(f.router(), &st);
  ASSERT_TRUE(f.Start());
  {
    RawClient c;
    ASSERT_TRUE(c.Connect(f.port()));
    ASSERT_TRUE(c.SendAll(Get("/stream")));
    ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.started.load(); }));
    f.RunOnLoop([&] { EXPECT_EQ(st.writer->Write("data: 1\n\n"), StreamWriter::WriteResult::kQueued); });
    ClientResponse r;
    // Head and first chunk arrive (the response is not complete yet).
    ASSERT_TRUE(ServerFixture::WaitFor([&] {
      c.ReadSome(10);
      return c.buffer().find("data: 1") != std::string::npos;
    }));
    c.Close();  // plain FIN
  }
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.close_calls.load() == 1; }));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 0; }));
  f.RunOnLoop([&] {
    EXPECT_EQ(st.writer->Write("x"), StreamWriter::WriteResult::kClosed);
    st.writer->Finish();  // no-op
    st.writer.reset();
  });
  EXPECT_EQ(st.close_calls.load(), 1);
}

TEST(ServerTest, AbortClosesTheConnectionAndCallsOnClose) {
  ServerFixture f;
  StreamState st;
  AddStreamRoute(f.router(), &st);
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(Get("/stream")));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.started.load(); }));
  f.RunOnLoop([&] {
    st.writer->Abort();
    EXPECT_EQ(st.close_calls.load(), 1);
    EXPECT_TRUE(st.writer->done());
  });
  EXPECT_TRUE(c.WaitClosed());
  EXPECT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 0; }));
}

// Draining: idle keep-alive connections close, in-flight responses finish,
// and the listener stays open so a probe on a new connection is answered
// (once, with Connection: close) until the last connection is gone.
TEST(ServerTest, ShutdownLetsInFlightResponsesFinishAndAnswersNewConnectionsOnce) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  std::vector<Responder> pending;  // loop thread only
  std::atomic<int> started{0};
  f.router().Add("GET", "/pending", [&](const Request&, Responder resp) {
    pending.push_back(resp);
    ++started;
  });
  ASSERT_TRUE(f.Start());
  RawClient busy, idle;
  ASSERT_TRUE(busy.Connect(f.port()));
  ASSERT_TRUE(idle.Connect(f.port()));
  ASSERT_TRUE(idle.SendAll(Get("/hello")));
  ClientResponse r;
  ASSERT_TRUE(idle.ReadResponse(&r));
  ASSERT_TRUE(busy.SendAll(Get("/pending")));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return started.load() == 1; }));

  std::atomic<bool> on_idle{false};
  f.RunOnLoop([&] { f.server().BeginShutdown([&] { on_idle = true; }); });
  EXPECT_TRUE(idle.WaitClosed());  // idle keep-alive connection closed
  idle.Close();
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 1; }));
  RawClient late;
  ASSERT_TRUE(late.Connect(f.port()));
  ASSERT_TRUE(late.SendAll(Get("/hello") + Get("/hello")));  // the second is never answered
  ASSERT_TRUE(late.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_TRUE(late.WaitClosed());
  late.Close();
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 1; }));
  EXPECT_FALSE(on_idle.load());

  f.RunOnLoop([&] {
    EXPECT_FALSE(pending[0].closed());
    pending[0].Send(200, "text/plain", "finished");
  });
  ASSERT_TRUE(busy.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "finished");
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_TRUE(busy.WaitClosed());
  busy.Close();
  EXPECT_TRUE(ServerFixture::WaitFor([&] { return on_idle.load(); }));
  EXPECT_EQ(f.server().connection_count(), 0u);
  f.RunOnLoop([&] {
    EXPECT_TRUE(pending[0].closed());
    pending.clear();
  });
}

TEST(ServerTest, ResponderOfAClosedConnectionIsANoOp) {
  ServerFixture f;
  std::vector<Responder> pending;
  std::atomic<int> started{0};
  f.router().Add("GET", "/pending", [&](const Request&, Responder resp) {
    pending.push_back(resp);
    ++started;
  });
  ASSERT_TRUE(f.Start());
  {
    RawClient c;
    ASSERT_TRUE(c.Connect(f.port()));
    ASSERT_TRUE(c.SendAll(Get("/pending")));
    ASSERT_TRUE(ServerFixture::WaitFor([&] { return started.load() == 1; }));
    c.Reset();
  }
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return f.server().connection_count() == 0; }));
  f.RunOnLoop([&] {
    EXPECT_TRUE(pending[0].closed());
    pending[0].Send(200, "text/plain", "nobody");  // no crash, nothing happens
    auto w = pending[0].StartStream(200, "text/plain");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->Write("x"), StreamWriter::WriteResult::kClosed);
    pending.clear();
  });
}

}  // namespace
}  // namespace tw::testing

namespace tw::testing {
namespace {

TEST(ServerTest, Http10ClientsGetKeepAliveOnlyWhenAskedAndStreamsUntilClose) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  StreamState st;
  AddStreamRoute(f.router(), &st);
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.Header("Connection"), "keep-alive");
  // A stream to an HTTP/1.0 client: no chunked coding, the body ends at close.
  ASSERT_TRUE(c.SendAll("GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.started.load(); }));
  f.RunOnLoop([&] {
    EXPECT_EQ(st.writer->Write("one,"), StreamWriter::WriteResult::kQueued);
    EXPECT_EQ(st.writer->Write("two"), StreamWriter::WriteResult::kQueued);
    st.writer->Finish();
  });
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.Header("Transfer-Encoding"), "");
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_EQ(r.body, "one,two");
  // The plain HTTP/1.0 request (no keep-alive asked): the same, never chunked
  // (RFC 9112 §6.1: a server must not send chunked to a 1.0 client).
  st.started = false;
  RawClient plain;
  ASSERT_TRUE(plain.Connect(f.port()));
  ASSERT_TRUE(plain.SendAll("GET /stream HTTP/1.0\r\n\r\n"));
  ASSERT_TRUE(ServerFixture::WaitFor([&] { return st.started.load(); }));
  f.RunOnLoop([&] {
    st.writer->Write("three");
    st.writer->Finish();
  });
  ASSERT_TRUE(plain.ReadResponse(&r));
  EXPECT_EQ(r.Header("Transfer-Encoding"), "");
  EXPECT_EQ(r.Header("Connection"), "close");
  EXPECT_FALSE(r.chunked);
  EXPECT_EQ(r.body, "three");
}

}  // namespace
}  // namespace tw::testing

namespace tw::testing {
namespace {

// A toy protocol after the upgrade: echoes every byte upper-cased.
struct UpperEcho : net::ConnectionHandler {
  UpperEcho(net::Connection* c, std::atomic<int>* closed) : conn(c), closed_calls(closed) {}
  void OnData(const char* data, size_t len) override {
    std::string s(data, len);
    for (char& ch : s) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    conn->Write(s);
  }
  void OnDrained() override {}
  void OnClosed() override { ++*closed_calls; }
  void OnShutdown() override { conn->CloseAfterFlush(); }
  net::Connection* conn;
  std::atomic<int>* closed_calls;
};

TEST(ServerTest, UpgradeHandsTheConnectionAndLeftoverBytesToANewHandler) {
  ServerFixture f;
  AddBasicRoutes(f.router());
  std::atomic<int> closed{0};
  std::string leftover_seen;  // loop thread, read after sync
  f.router().Add("GET", "/up", [&](const Request&, Responder resp) {
    bool ok = resp.Upgrade(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: upper\r\nConnection: Upgrade\r\n\r\n",
        [&](net::Connection* c, std::string leftover) {
          leftover_seen = leftover;
          auto h = std::make_unique<UpperEcho>(c, &closed);
          h->OnData(leftover.data(), leftover.size());
          return h;
        });
    EXPECT_TRUE(ok);
    EXPECT_FALSE(resp.Upgrade("x", {}));  // answered already
  });
  ASSERT_TRUE(f.Start());
  RawClient c;
  ASSERT_TRUE(c.Connect(f.port()));
  ASSERT_TRUE(c.SendAll(Get("/up", "Upgrade: upper\r\nConnection: Upgrade\r\n") + "early"));
  ClientResponse r;
  ASSERT_TRUE(c.ReadResponse(&r));
  EXPECT_EQ(r.status, 101);
  EXPECT_EQ(r.Header("Upgrade"), "upper");
  ASSERT_TRUE(ServerFixture::WaitFor([&] {
    c.ReadSome(10);
    return c.buffer() == "EARLY";
  }));
  ASSERT_TRUE(c.SendAll("late"));
  ASSERT_TRUE(ServerFixture::WaitFor([&] {
    c.ReadSome(10);
    return c.buffer() == "EARLYLATE";
  }));
  f.RunOnLoop([&] { EXPECT_EQ(leftover_seen, "early"); });
  // Shutdown reaches the new handler, which closes; on_idle follows.
  std::atomic<bool> idle{false};
  f.RunOnLoop([&] { f.server().BeginShutdown([&] { idle = true; }); });
  EXPECT_TRUE(c.WaitClosed());
  c.Close();
  EXPECT_TRUE(ServerFixture::WaitFor([&] { return idle.load(); }));
  EXPECT_EQ(closed.load(), 1);
}

}  // namespace
}  // namespace tw::testing

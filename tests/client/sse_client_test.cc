// SseClient against the in-test server: events from chunked and until-close
// SSE responses (dribbled byte by byte), the request headers it sends, error
// documents, and stopping at a chosen event (count, predicate, callback) with
// nothing lost or repeated when reading on.
#include "client/sse_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <cerrno>
#include <string>

#include "client/test_server.h"
#include "sse/writer.h"

namespace tw::client {
namespace {

using testing::Dribble;
using testing::ReadRequest;
using testing::ReadUntilEof;
using testing::SendAll;
using testing::TestServer;

std::string Chunk(std::string_view data) {
  static const char kHex[] = "0123456789abcdef";
  std::string size;
  for (size_t n = data.size(); n > 0; n >>= 4) size.insert(size.begin(), kHex[n & 15]);
  return size + "\r\n" + std::string(data) + "\r\n";
}

// N events "token" with ids 1..n and data "t<i>", SSE-encoded by the writer.
std::string Events(uint64_t first, uint64_t last) {
  std::string out;
  for (uint64_t i = first; i <= last; i++) sse::AppendEvent(&out, i, "token", "t" + std::to_string(i));
  return out;
}

const char kStreamHead[] =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n\r\n";

SseOptions Fast() {
  SseOptions o;
  o.http.io_timeout_ms = 2000;
  return o;
}

TEST(SseClient, PostReadsAChunkedStreamDribbled) {
  std::string seen;
  TestServer server([&](int fd) {
    seen = ReadRequest(fd);
    std::string body;
    sse::AppendRetry(&body, 1000);
    sse::AppendEvent(&body, 1, "start", "{\"stream\":\"s_1\"}");
    sse::AppendComment(&body, "ping");
    sse::AppendEvent(&body, 2, "token", "{\"text\":\" Paris\"}");
    sse::AppendEvent(&body, 3, "done", "{\"finish_reason\":\"length\"}");
    // Chunk boundaries in the middle of lines, then every byte on its own.
    std::string wire = kStreamHead + Chunk(body.substr(0, 20)) + Chunk(body.substr(20, 31)) +
                       Chunk(body.substr(51)) + "0\r\n\r\n";
    Dribble(fd, wire, 50);
  });
  SseResult r;
  SseOptions o = Fast();
  o.headers = {{"Authorization", "Bearer k"}};
  Status s = PostSse(server.port(), "/v1/stream", "{\"prompt\":\"x\"}", &r, o);
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.head.status, 200);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].type, "start");
  EXPECT_EQ(r.events[0].data, "{\"stream\":\"s_1\"}");
  EXPECT_EQ(r.events[0].id, "1");
  EXPECT_EQ(r.events[1].data, "{\"text\":\" Paris\"}");
  EXPECT_EQ(r.events[2].type, "done");
  EXPECT_EQ(r.events[2].id, "3");
  EXPECT_EQ(r.comments, std::vector<std::string>{"ping"});
  EXPECT_EQ(r.retry_ms, 1000u);
  EXPECT_EQ(r.last_event_id, "3");
  EXPECT_TRUE(r.ended);
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(seen, "POST /v1/stream HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
                      "\r\nContent-Length: 14\r\nAccept: text/event-stream\r\nCache-Control: no-cache\r\n"
                      "Content-Type: application/json\r\nAuthorization: Bearer k\r\n\r\n{\"prompt\":\"x\"}");
}

TEST(SseClient, GetSendsLastEventIdOnlyWhenGiven) {
  std::string seen[2];
  TestServer server(
      [&, n = 0](int fd) mutable {
        seen[n++] = ReadRequest(fd);
        SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n\r\n" + Events(5, 6));
      },
      2);
  SseResult r;
  Status s = GetSse(server.port(), "/v1/streams/s_1/events", "4", &r, Fast());
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(r.events.size(), 2u);  // until-close framing
  EXPECT_EQ(r.events[0].id, "5");
  EXPECT_TRUE(r.ended);
  s = GetSse(server.port(), "/v1/streams/s_1/events", "", &r, Fast());
  ASSERT_TRUE(s.ok()) << s.message();
  server.Join();
  EXPECT_NE(seen[0].find("\r\nLast-Event-ID: 4\r\n"), std::string::npos) << seen[0];
  EXPECT_EQ(seen[0].rfind("GET /v1/streams/s_1/events HTTP/1.1\r\n", 0), 0u) << seen[0];
  EXPECT_EQ(seen[1].find("Last-Event-ID"), std::string::npos) << seen[1];
}

TEST(SseClient, ErrorDocumentIsNotAStream) {
  const std::string json = "{\"error\":{\"type\":\"resume_window_exceeded\",\"oldest_available\":9}}";
  TestServer server(
      [&, n = 0](int fd) mutable {
        ReadRequest(fd);
        if (n++ == 0) {
          SendAll(fd, "HTTP/1.1 409 Conflict\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(json.size()) + "\r\n\r\n" + json);
        } else {  // 200 but not an event stream
          SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        }
      },
      2);
  SseResult r;
  Status s = GetSse(server.port(), "/v1/streams/s_1/events", "1", &r, Fast());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.head.status, 409);
  EXPECT_EQ(r.error_body, json);
  EXPECT_TRUE(r.events.empty());
  s = PostSse(server.port(), "/v1/stream", "{}", &r, Fast());
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r.head.status, 200);
  EXPECT_EQ(r.error_body, "{}");
  server.Join();
}

TEST(SseClient, StopAfterNEventsAndResetTheConnection) {
  std::atomic<int> server_saw{-1};
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, kStreamHead + Chunk(Events(1, 3)));
    server_saw = ReadUntilEof(fd);  // the client leaves without reading the rest
  });
  SseOptions o = Fast();
  o.max_events = 2;
  o.close_with_reset = true;
  SseResult r;
  Status s = PostSse(server.port(), "/v1/stream", "{}", &r, o);
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[1].id, "2");
  EXPECT_EQ(r.last_event_id, "2");  // not "3": event 3 was parsed but not delivered
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.ended);
  EXPECT_EQ(server_saw.load(), ECONNRESET);
}

TEST(SseClient, StopOnPredicateThenReadOnLosesNothing) {
  std::promise<void> resume;
  std::future<void> resume_f = resume.get_future();
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, kStreamHead + Chunk(Events(1, 5)));  // one write: all five in one read
    resume_f.wait_for(std::chrono::seconds(5));
    SendAll(fd, Chunk(Events(6, 7)) + "0\r\n\r\n");
  });
  SseOptions o = Fast();
  o.stop_after = [](const sse::Event& e) { return e.id == "2"; };
  SseClient c(o);
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.Post("/v1/stream", "{}").ok());
  ASSERT_TRUE(c.is_event_stream());
  ASSERT_TRUE(c.ReadEvents().ok());
  EXPECT_TRUE(c.result().stopped);
  ASSERT_EQ(c.result().events.size(), 2u);
  EXPECT_EQ(c.result().last_event_id, "2");
  // Read on with a callback that stops at event 4, then to the end.
  int calls = 0;
  ASSERT_TRUE(c.ReadEvents([&](const sse::Event& e) { calls++; return e.id != "4"; }).ok());
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(c.result().events.size(), 4u);
  resume.set_value();
  Status s = c.ReadEvents();
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(c.result().ended);
  ASSERT_EQ(c.result().events.size(), 7u);
  for (size_t i = 0; i < 7; i++) {
    EXPECT_EQ(c.result().events[i].id, std::to_string(i + 1));
    EXPECT_EQ(c.result().events[i].data, "t" + std::to_string(i + 1));
  }
  EXPECT_EQ(c.result().last_event_id, "7");
}

TEST(SseClient, UnfinishedEventAtEndIsDiscarded) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, kStreamHead + Chunk(Events(1, 1) + "id: 2\ndata: half") + "0\r\n\r\n");
  });
  SseResult r;
  Status s = PostSse(server.port(), "/v1/stream", "{}", &r, Fast());
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.last_event_id, "1");
  EXPECT_TRUE(r.ended);
}

TEST(SseClient, ParserBoundIsAnError) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, kStreamHead + Chunk("data: " + std::string(100, 'x') + "\n\n") + "0\r\n\r\n");
  });
  SseOptions o = Fast();
  o.parser.max_line_bytes = 64;
  SseResult r;
  Status s = PostSse(server.port(), "/v1/stream", "{}", &r, o);
  server.Join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("sse: line over its bound (64 bytes)"), std::string::npos) << s.message();
}

TEST(SseClient, TimeoutOnASilentStream) {
  std::promise<void> done;
  std::future<void> done_f = done.get_future();
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, kStreamHead + Chunk(Events(1, 1)));
    done_f.wait_for(std::chrono::seconds(5));
  });
  SseOptions o = Fast();
  o.http.io_timeout_ms = 100;
  SseResult r;
  Status s = PostSse(server.port(), "/v1/stream", "{}", &r, o);
  done.set_value();
  server.Join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("timed out after 100 ms"), std::string::npos) << s.message();
  EXPECT_EQ(r.events.size(), 1u);  // what arrived before the silence is kept
}

}  // namespace
}  // namespace tw::client

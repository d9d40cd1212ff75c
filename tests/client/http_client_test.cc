// HttpClient against a tiny in-test server on raw sockets (test_server.h):
// canned responses sent whole, dribbled one byte at a time, held back to
// prove streaming, or never finished to prove timeouts; and the socket
// options (RST on close, small SO_RCVBUF).
#include "client/http_client.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <future>
#include <string>

#include "client/test_server.h"

namespace tw::client {
namespace {

using testing::Dribble;
using testing::ReadRequest;
using testing::ReadUntilEof;
using testing::SendAll;
using testing::TestServer;

ClientOptions Fast() {
  ClientOptions o;
  o.connect_timeout_ms = 2000;
  o.io_timeout_ms = 2000;
  return o;
}

TEST(HttpClient, FetchContentLengthAndRequestBytes) {
  std::string seen;
  TestServer server([&](int fd) {
    seen = ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 11\r\nContent-Type: application/json\r\n\r\n{\"ok\":true}");
  });
  Request req;
  req.method = "POST";
  req.target = "/v1/tokenize";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = "{\"text\":\"hi\"}";
  Response resp;
  Status s = Fetch(server.port(), req, &resp, Fast());
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(resp.head.status, 200);
  EXPECT_EQ(resp.body, "{\"ok\":true}");
  EXPECT_EQ(seen, "POST /v1/tokenize HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(server.port()) +
                      "\r\nContent-Length: 13\r\nContent-Type: application/json\r\n\r\n{\"text\":\"hi\"}");
}

TEST(HttpClient, FormatRequestKeepsCallerHeaders) {
  Request req;
  req.method = "GET";
  req.target = "/healthz";
  req.headers = {{"host", "example"}};
  EXPECT_EQ(FormatRequest(req, 80), "GET /healthz HTTP/1.1\r\nhost: example\r\n\r\n");
  req.add_default_headers = false;
  req.headers.clear();
  EXPECT_EQ(FormatRequest(req, 80), "GET /healthz HTTP/1.1\r\n\r\n");
}

TEST(HttpClient, ChunkedResponseDribbledOneByteAtATime) {
  const std::string response =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "4\r\nWiki\r\n5\r\npedia\r\nE\r\n in\r\n\r\nchunks.\r\n0\r\n\r\n";
  TestServer server([&](int fd) {
    ReadRequest(fd);
    Dribble(fd, response, 200);
  });
  HttpClient c(Fast());
  ASSERT_TRUE(c.Connect(server.port()).ok());
  Response resp;
  Status s = c.RoundTrip(Request{}, &resp);
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(resp.body, "Wikipedia in\r\n\r\nchunks.");
}

TEST(HttpClient, UntilCloseBody) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart one, ");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    SendAll(fd, "part two");
  });
  Response resp;
  Status s = Fetch(server.port(), Request{}, &resp, Fast());
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(resp.body, "part one, part two");
}

TEST(HttpClient, StreamingHandsBytesOverBeforeTheResponseEnds) {
  // The server sends the second chunk only after the client has seen the
  // first, which a client that buffered whole responses would never do.
  std::promise<void> first_seen;
  std::future<void> first_seen_f = first_seen.get_future();
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nfirst \r\n");
    if (first_seen_f.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return;
    SendAll(fd, "6\r\nsecond\r\n0\r\n\r\n");
  });
  HttpClient c(Fast());
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.SendRequest(Request{}).ok());
  ResponseHead head;
  ASSERT_TRUE(c.ReadHead(&head).ok());
  EXPECT_EQ(head.status, 200);
  std::string body;
  bool signalled = false;
  bool complete = false;
  Status s = c.ReadBody(
      [&](std::string_view b) {
        body.append(b);
        if (!signalled && body == "first ") {
          signalled = true;
          first_seen.set_value();
        }
        return true;
      },
      &complete);
  if (!signalled) first_seen.set_value();  // let the server thread finish
  server.Join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_TRUE(signalled);
  EXPECT_TRUE(complete);
  EXPECT_EQ(body, "first second");
}

TEST(HttpClient, StopReadingMidBodyThenReadOn) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabcdef");
  });
  ClientOptions o = Fast();
  o.read_chunk_bytes = 1;  // one byte per read, so the stop falls mid-body
  HttpClient c(o);
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.SendRequest(Request{}).ok());
  ResponseHead head;
  ASSERT_TRUE(c.ReadHead(&head).ok());
  std::string body;
  bool complete = true;
  ASSERT_TRUE(c.ReadBody([&](std::string_view b) { body.append(b); return body.size() < 2; }, &complete).ok());
  EXPECT_FALSE(complete);
  EXPECT_EQ(body, "ab");
  ASSERT_TRUE(c.ReadBody([&](std::string_view b) { body.append(b); return true; }, &complete).ok());
  EXPECT_TRUE(complete);
  EXPECT_EQ(body, "abcdef");
  server.Join();
}

TEST(HttpClient, PipelinedResponsesAndHead) {
  TestServer server([&](int fd) {
    std::string req = ReadRequest(fd);
    // Both answers in one write: a HEAD answer (Content-Length but no body)
    // followed by a GET answer.
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"
                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
  });
  HttpClient c(Fast());
  ASSERT_TRUE(c.Connect(server.port()).ok());
  Request head_req;
  head_req.method = "HEAD";
  ASSERT_TRUE(c.SendRaw(FormatRequest(head_req, server.port()) + FormatRequest(Request{}, server.port())).ok());
  c.ExpectHeadResponse();
  Response r1, r2;
  ASSERT_TRUE(c.ReadResponse(&r1).ok());
  EXPECT_EQ(r1.body, "");
  Status s = c.ReadResponse(&r2);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(r2.body, "hello");
  EXPECT_TRUE(c.buffered().empty());
  server.Join();
}

TEST(HttpClient, ReadTimeoutNamesTheWait) {
  std::promise<void> done;
  std::future<void> done_f = done.get_future();
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    done_f.wait_for(std::chrono::seconds(5));  // then silence
  });
  ClientOptions o = Fast();
  o.io_timeout_ms = 100;
  HttpClient c(o);
  ASSERT_TRUE(c.Connect(server.port()).ok());
  Response resp;
  auto t0 = std::chrono::steady_clock::now();
  Status s = c.RoundTrip(Request{}, &resp);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
  done.set_value();
  server.Join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("poll: timed out after 100 ms waiting to read the response body"), std::string::npos)
      << s.message();
  EXPECT_GE(ms, 100);
  EXPECT_LT(ms, 2000);
  EXPECT_EQ(resp.body, "abc");  // what did arrive was handed over
}

TEST(HttpClient, TruncatedBodyIsAnError) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
  });
  Response resp;
  Status s = Fetch(server.port(), Request{}, &resp, Fast());
  server.Join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("7 of 10 Content-Length bytes missing"), std::string::npos) << s.message();
}

TEST(HttpClient, BodyBoundIsAnError) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789");
  });
  ClientOptions o = Fast();
  o.max_body_bytes = 4;
  Response resp;
  Status s = Fetch(server.port(), Request{}, &resp, o);
  server.Join();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("max_body_bytes (4)"), std::string::npos) << s.message();
}

TEST(HttpClient, ConnectRefusedNamesCallAndError) {
  // A port that was free a moment ago: bind, read the port, close.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  uint16_t port = ntohs(addr.sin_port);
  ::close(fd);
  HttpClient c(Fast());
  Status s = c.Connect(port);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "connect(127.0.0.1:" + std::to_string(port) + "): Connection refused");
  EXPECT_FALSE(c.connected());
}

TEST(HttpClient, CloseWithResetSendsRstAndCloseSendsFin) {
  std::atomic<int> fin_errno{-1}, rst_errno{-1};
  TestServer server(
      [&, n = 0](int fd) mutable {
        (n++ == 0 ? fin_errno : rst_errno) = ReadUntilEof(fd);
      },
      2);
  {
    HttpClient c(Fast());
    ASSERT_TRUE(c.Connect(server.port()).ok());
    ASSERT_TRUE(c.SendRaw("GET / HTTP/1.1\r\n").ok());
    c.Close();
  }
  {
    HttpClient c(Fast());
    ASSERT_TRUE(c.Connect(server.port()).ok());
    ASSERT_TRUE(c.SendRaw("GET / HTTP/1.1\r\n").ok());
    c.CloseWithReset();
  }
  server.Join();
  EXPECT_EQ(fin_errno.load(), 0);
  EXPECT_EQ(rst_errno.load(), ECONNRESET);
}

TEST(HttpClient, SmallReceiveBufferIsSetBeforeConnect) {
  TestServer server([&](int fd) { ReadUntilEof(fd); });
  ClientOptions o = Fast();
  o.rcvbuf_bytes = 4096;
  HttpClient small(o);
  ASSERT_TRUE(small.Connect(server.port()).ok());
  int got = 0;
  socklen_t len = sizeof got;
  ASSERT_EQ(::getsockopt(small.fd(), SOL_SOCKET, SO_RCVBUF, &got, &len), 0);
  // Linux doubles the request for bookkeeping: 8192, far below the default
  // (tcp_rmem's 131072 on most systems).
  EXPECT_LE(got, 2 * 4096);
  EXPECT_GT(got, 0);
  small.Close();
  server.Join();
}

TEST(HttpClient, ExpectClosed) {
  TestServer server(
      [&, n = 0](int fd) mutable {
        ReadRequest(fd);
        if (n++ == 1) SendAll(fd, "unexpected");
      },
      2);
  HttpClient c(Fast());
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.SendRequest(Request{}).ok());
  Status s = c.ExpectClosed(2000);
  EXPECT_TRUE(s.ok()) << s.message();
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.SendRequest(Request{}).ok());
  s = c.ExpectClosed(2000);
  EXPECT_NE(s.message().find("bytes arrived: \"unexpected\""), std::string::npos) << s.message();
  server.Join();
}

TEST(HttpClient, ReadSomeAndReadUntilClose) {
  TestServer server([&](int fd) {
    ReadRequest(fd);
    SendAll(fd, "raw ");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    SendAll(fd, "bytes");
  });
  HttpClient c(Fast());
  ASSERT_TRUE(c.Connect(server.port()).ok());
  ASSERT_TRUE(c.SendRequest(Request{}).ok());
  std::string got;
  ASSERT_TRUE(c.ReadSome(&got, 2000).ok());
  EXPECT_EQ(got.substr(0, 4), "raw ");
  ASSERT_TRUE(c.ReadUntilClose(&got).ok());
  EXPECT_EQ(got, "raw bytes");
  server.Join();
}

TEST(HttpClient, SendOnClosedClientIsAnError) {
  HttpClient c(Fast());
  Status s = c.SendRaw("x");
  EXPECT_EQ(s.message(), "send: not connected");
}

}  // namespace
}  // namespace tw::client

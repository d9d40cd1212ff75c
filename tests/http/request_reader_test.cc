// Unit tests for each rule and bound of RequestReader / ParseRequestHead /
// ChunkedDecoder. Every input goes through the reader whole, at every split
// point and one byte at a time (tests/support/chunking.h), and all must agree.
#include <gtest/gtest.h>

#include <string>

#include "http/parse_chunked.h"
#include "http/reader_harness.h"
#include "http/request_reader.h"
#include "support/chunking.h"

namespace tw::http {
namespace {

using testing::ReaderOutcome;

ReaderOutcome RunAll(std::string_view in, const ReaderLimits& limits = ReaderLimits()) {
  std::string mismatch;
  ReaderOutcome o = testing::RunAllChunkings(in, limits, &mismatch);
  EXPECT_EQ(mismatch, "") << "input: " << testing::Printable(in);
  return o;
}

// Error status, or 0 if no error.
int StatusOf(std::string_view in, const ReaderLimits& limits = ReaderLimits()) {
  const ReaderOutcome o = RunAll(in, limits);
  return o.error ? o.status : 0;
}

// Number of complete requests (and no error).
int Accepted(std::string_view in, const ReaderLimits& limits = ReaderLimits()) {
  const ReaderOutcome o = RunAll(in, limits);
  EXPECT_FALSE(o.error) << testing::Printable(in) << ": " << o.message;
  return static_cast<int>(o.requests.size());
}

std::string Get(std::string_view target, std::string_view extra_headers = "") {
  return "GET " + std::string(target) + " HTTP/1.1\r\nHost: h\r\n" + std::string(extra_headers) +
         "\r\n";
}

// ---- request line -------------------------------------------------------------

TEST(RequestLine, SimpleRequestFields) {
  const ReaderOutcome o = RunAll("GET /v1/x?a=1&b=&c HTTP/1.1\r\nHost: example.com\r\nX-Y:  z  w \t\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  const Request& r = o.requests[0];
  EXPECT_EQ(r.method, "GET");
  EXPECT_EQ(r.target, "/v1/x?a=1&b=&c");
  EXPECT_EQ(r.path, "/v1/x");
  EXPECT_EQ(r.query, "a=1&b=&c");
  EXPECT_EQ(r.minor_version, 1);
  EXPECT_EQ(r.Header("host"), "example.com");
  EXPECT_EQ(r.Header("x-y"), "z  w");  // OWS trimmed, inner spaces kept
  EXPECT_TRUE(r.HasHeader("X-Y"));
  EXPECT_FALSE(r.HasHeader("X-Z"));
  EXPECT_EQ(r.QueryParam("a"), "1");
  EXPECT_EQ(r.QueryParam("b"), "");
  EXPECT_EQ(r.QueryParam("zz"), "");
  EXPECT_TRUE(r.body.empty());
  EXPECT_TRUE(r.keep_alive);
  EXPECT_FALSE(r.upgrade);
}

TEST(RequestLine, MethodMustBeAToken) {
  EXPECT_EQ(StatusOf("G@T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("G(T / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf(" GET / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(Accepted("PATCH-IT / HTTP/1.1\r\nHost: h\r\n\r\n"), 1);  // tokens are methods
}

TEST(RequestLine, ExactlyOneSpaceBetweenParts) {
  EXPECT_EQ(StatusOf("GET  / HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET /  HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET\t/ HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1 \r\nHost: h\r\n\r\n"), 400);
}

TEST(RequestLine, TargetBytes) {
  EXPECT_EQ(StatusOf(Get("/a\x01z")), 400);
  EXPECT_EQ(StatusOf(Get("/a\x7fz")), 400);
  EXPECT_EQ(StatusOf(Get("/a\x80z")), 400);
  EXPECT_EQ(StatusOf(Get("/caf\xc3\xa9")), 400);
  EXPECT_EQ(Accepted(Get("/caf%C3%A9?q=\"x\"|{}")), 1);
}

TEST(RequestLine, TargetForms) {
  EXPECT_EQ(Accepted("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n"), 1);
  EXPECT_EQ(StatusOf("GET * HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET example HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("CONNECT /x HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("CONNECT h:x HTTP/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("CONNECT h: HTTP/1.1\r\nHost: h\r\n\r\n"), 400);

  ReaderOutcome o = RunAll("GET http://example.com:80/p/q?x=1#frag HTTP/1.1\r\nHost: example.com\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].path, "/p/q");
  EXPECT_EQ(o.requests[0].query, "x=1");
  o = RunAll("GET http://example.com?y=2 HTTP/1.1\r\nHost: example.com\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].path, "/");
  EXPECT_EQ(o.requests[0].query, "y=2");
  o = RunAll("GET /a#b?c HTTP/1.1\r\nHost: h\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].path, "/a");
  EXPECT_EQ(o.requests[0].query, "");
}

TEST(RequestLine, Versions) {
  const ReaderOutcome o = RunAll("GET / HTTP/1.0\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].minor_version, 0);
  EXPECT_EQ(StatusOf("GET / HTTP/2.0\r\nHost: h\r\n\r\n"), 505);
  EXPECT_EQ(StatusOf("GET / HTTP/1.2\r\nHost: h\r\n\r\n"), 505);
  EXPECT_EQ(StatusOf("GET / HTTP/0.9\r\n\r\n"), 505);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1x\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/11\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / http/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTPS/1.1\r\nHost: h\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET /\r\n\r\n"), 400);  // HTTP/0.9
}

TEST(RequestLine, LineEndings) {
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\nHost: h\r\n\r\n"), 400);      // bare LF
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\rHost: h\r\n\r\n"), 400);      // bare CR
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: h\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: h\r\n\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: h\r\n\r\r"), 400);
  // Empty lines before the request line are skipped (RFC 9112 §2.2) ...
  EXPECT_EQ(Accepted("\r\n\r\n" + Get("/")), 1);
  // ... but not bare LF ones.
  EXPECT_EQ(StatusOf("\n" + Get("/")), 400);
}

TEST(RequestLine, ErrorMessageNamesTheByte) {
  const ReaderOutcome o = RunAll("GET / HTTP/1.1\r\nHo st: h\r\n\r\n");
  ASSERT_TRUE(o.error);
  EXPECT_EQ(o.status, 400);
  EXPECT_NE(o.message.find("whitespace between header name and ':'"), std::string::npos);
  EXPECT_NE(o.message.find("at byte 18"), std::string::npos) << o.message;
}

// ---- header fields ------------------------------------------------------------

TEST(Headers, NameGrammar) {
  EXPECT_EQ(StatusOf(Get("/", "Foo : bar\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", "Foo\t: bar\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", ": bar\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", "Fo(o: bar\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", "Foo\r\n")), 400);  // no colon
  EXPECT_EQ(StatusOf(Get("/", "F\xc3\xb6o: bar\r\n")), 400);
  EXPECT_EQ(Accepted(Get("/", "X_a.b!#$%&'*+^`|~9: v\r\n")), 1);
}

TEST(Headers, ObsFoldIsRejected) {
  EXPECT_EQ(StatusOf(Get("/", "X: a\r\n b\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", "X: a\r\n\tb\r\n")), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\n Host: h\r\n\r\n"), 400);  // before the first field
}

TEST(Headers, ValueBytes) {
  EXPECT_EQ(StatusOf(Get("/", "X: a\x01z\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", "X: a\x7fz\r\n")), 400);
  EXPECT_EQ(StatusOf(Get("/", std::string("X: a\0z\r\n", 8))), 400);
  EXPECT_EQ(StatusOf(Get("/", "X: a\rz\r\n")), 400);
  const ReaderOutcome o = RunAll(Get("/", "X: \t a\tb \xe2\x82\xac \t\r\nEmpty:\r\n"));
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].Header("X"), "a\tb \xe2\x82\xac");  // HTAB and obs-text allowed
  EXPECT_TRUE(o.requests[0].HasHeader("Empty"));
  EXPECT_EQ(o.requests[0].Header("Empty"), "");
}

TEST(Headers, Host) {
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\n\r\n"), 400);
  EXPECT_EQ(Accepted("GET / HTTP/1.0\r\n\r\n"), 1);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a/b\r\n\r\n"), 400);
  EXPECT_EQ(StatusOf("GET / HTTP/1.1\r\nHost: a b\r\n\r\n"), 400);
  EXPECT_EQ(Accepted("GET / HTTP/1.1\r\nHost:\r\n\r\n"), 1);  // empty is allowed
  EXPECT_EQ(Accepted("GET / HTTP/1.1\r\nHOST: [::1]:8080\r\n\r\n"), 1);
  ReaderLimits no_host;
  no_host.require_host = false;
  EXPECT_EQ(Accepted("GET / HTTP/1.1\r\n\r\n", no_host), 1);
}

// ---- Content-Length -------------------------------------------------------------

std::string Post(std::string_view headers, std::string_view body) {
  return "POST /p HTTP/1.1\r\nHost: h\r\n" + std::string(headers) + "\r\n" + std::string(body);
}

TEST(ContentLength, Body) {
  const ReaderOutcome o = RunAll(Post("Content-Length: 005\r\n", "hello"));
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_EQ(o.requests[0].body, "hello");
  EXPECT_EQ(Accepted(Post("Content-Length: 0\r\n", "")), 1);
  EXPECT_EQ(Accepted(Post("Content-Length:\t3 \r\n", "abc")), 1);  // OWS is not part of the value
  // Waiting for the rest of the body: no event, no error.
  const ReaderOutcome w = RunAll(Post("Content-Length: 10\r\n", "abc"));
  EXPECT_TRUE(w.requests.empty());
  EXPECT_FALSE(w.error);
}

TEST(ContentLength, Grammar) {
  EXPECT_EQ(StatusOf(Post("Content-Length: +5\r\n", "hello")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: -1\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: 0x5\r\n", "hello")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: 5 5\r\n", "hello")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: 5,5\r\n", "hello")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length:\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: 18446744073709551616\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: 99999999999999999999999\r\n", "")), 400);
}

TEST(ContentLength, DuplicatesAreRejectedEvenIfEqual) {
  EXPECT_EQ(StatusOf(Post("Content-Length: 5\r\nContent-Length: 5\r\n", "hello")), 400);
  EXPECT_EQ(StatusOf(Post("Content-Length: 5\r\ncontent-length: 6\r\n", "hello!")), 400);
}

TEST(ContentLength, WithTransferEncodingIsRejected) {
  EXPECT_EQ(StatusOf(Post("Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "0\r\n\r\n")), 400);
}

// ---- Transfer-Encoding -----------------------------------------------------------

TEST(TransferEncoding, OnlyChunkedAlone) {
  EXPECT_EQ(Accepted(Post("Transfer-Encoding: chunked\r\n", "0\r\n\r\n")), 1);
  EXPECT_EQ(Accepted(Post("Transfer-Encoding:  ChUnKeD \t\r\n", "0\r\n\r\n")), 1);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n")), 501);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")), 501);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: chunked, gzip\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: gzip\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: identity\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: chunked, chunked\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: chunked;q=1\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: chunked;\r\n", "0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding:\r\n", "")), 400);
  EXPECT_EQ(StatusOf(Post("Transfer-Encoding: \"chunked\"\r\n", "")), 400);
  EXPECT_EQ(StatusOf("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"), 400);
}

// ---- chunked bodies -------------------------------------------------------------

std::string Chunked(std::string_view body) { return Post("Transfer-Encoding: chunked\r\n", body); }

TEST(Chunked, DecodesWithExtensionsAndTrailers) {
  const ReaderOutcome o = RunAll(Chunked(
      "5;name=value;flag ; q=\"a \\\"b\\\" ;c\"\r\nhello\r\n"
      "00A\r\n 012345678\r\n"
      "0;last\r\nTrailer-A: 1\r\nTrailer-B:\r\n\r\n"));
  ASSERT_EQ(o.requests.size(), 1u) << testing::Render(o);
  EXPECT_EQ(o.requests[0].body, "hello 012345678");
  EXPECT_FALSE(o.requests[0].HasHeader("Trailer-A"));  // trailers are discarded
}

TEST(Chunked, Grammar) {
  EXPECT_EQ(StatusOf(Chunked("5\r\nhello0\r\n\r\n")), 400);         // no CRLF after data
  EXPECT_EQ(StatusOf(Chunked("5\r\nhello\n0\r\n\r\n")), 400);       // bare LF after data
  EXPECT_EQ(StatusOf(Chunked("5\nhello\r\n0\r\n\r\n")), 400);       // bare LF after size
  EXPECT_EQ(StatusOf(Chunked("5 \r\nhello\r\n0\r\n\r\n")), 400);    // BWS only before ';'
  EXPECT_EQ(StatusOf(Chunked("5;\r\nhello\r\n0\r\n\r\n")), 400);    // ext name required
  EXPECT_EQ(StatusOf(Chunked("5;a=\r\nhello\r\n0\r\n\r\n")), 400);  // value required after '='
  EXPECT_EQ(StatusOf(Chunked("5;a=\"x\r\nhello\r\n0\r\n\r\n")), 400);  // unterminated quote
  EXPECT_EQ(StatusOf(Chunked("5;a b\r\nhello\r\n0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Chunked("g\r\n")), 400);
  EXPECT_EQ(StatusOf(Chunked("-5\r\n")), 400);
  EXPECT_EQ(StatusOf(Chunked("0x5\r\nhello\r\n0\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Chunked("5\r\nhello\r\n\r\n")), 400);           // missing last-chunk
  EXPECT_EQ(StatusOf(Chunked("0\r\n X: y\r\n\r\n")), 400);          // obs-fold in trailer
  EXPECT_EQ(StatusOf(Chunked("0\r\nX : y\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Chunked("0\r\nX: \x01\r\n\r\n")), 400);
  EXPECT_EQ(StatusOf(Chunked("0\r\n\r\r")), 400);
  EXPECT_EQ(StatusOf(Chunked("10000000000000000\r\n")), 400);         // 2^64: overflow
}

TEST(Chunked, IncompleteWaits) {
  for (const char* body : {"", "5", "5\r", "5\r\nhel", "5\r\nhello\r\n", "5\r\nhello\r\n0\r\n",
                           "5\r\nhello\r\n0\r\nX: y\r\n"}) {
    const ReaderOutcome o = RunAll(Chunked(body));
    EXPECT_FALSE(o.error) << body;
    EXPECT_TRUE(o.requests.empty()) << body;
  }
}

// ---- persistence and pipelining --------------------------------------------------

TEST(KeepAlive, Rules) {
  auto ka = [](std::string_view in) {
    const ReaderOutcome o = RunAll(in);
    EXPECT_EQ(o.requests.size(), 1u) << testing::Printable(in);
    return !o.requests.empty() && o.requests[0].keep_alive;
  };
  EXPECT_TRUE(ka("GET / HTTP/1.1\r\nHost: h\r\n\r\n"));
  EXPECT_FALSE(ka("GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"));
  EXPECT_FALSE(ka("GET / HTTP/1.1\r\nHost: h\r\nConnection: Keep-Alive, CLOSE\r\n\r\n"));
  EXPECT_FALSE(ka("GET / HTTP/1.1\r\nHost: h\r\nConnection: x\r\nConnection: close\r\n\r\n"));
  EXPECT_TRUE(ka("GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n"));
  EXPECT_FALSE(ka("GET / HTTP/1.0\r\n\r\n"));
  EXPECT_TRUE(ka("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  EXPECT_FALSE(ka("GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"));
}

TEST(KeepAlive, CloseStopsParsing) {
  // After a request that closes the connection, later bytes are not parsed
  // (even invalid ones) and Feed drops them.
  const ReaderOutcome o = RunAll("GET /1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\nGARBAGE\x01\r\n\r\n");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_FALSE(o.error);
  EXPECT_TRUE(o.closed);
  RequestReader reader;
  const std::string a = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_TRUE(reader.Feed(a.data(), a.size()));
  Request r;
  ASSERT_EQ(reader.Next(&r), RequestReader::Event::kRequest);
  EXPECT_TRUE(reader.closed());
  EXPECT_TRUE(reader.Feed("xyz", 3));
  EXPECT_EQ(reader.buffered_bytes(), 0u);
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kNeedMore);
}

TEST(Pipelining, RequestsComeOutInOrder) {
  const std::string in = Post("Content-Length: 3\r\n", "abc") + Get("/two") +
                         Chunked("2\r\nxy\r\n0\r\n\r\n") + "\r\n" + Get("/four");
  const ReaderOutcome o = RunAll(in);
  ASSERT_EQ(o.requests.size(), 4u) << testing::Render(o);
  EXPECT_EQ(o.requests[0].body, "abc");
  EXPECT_EQ(o.requests[1].target, "/two");
  EXPECT_EQ(o.requests[2].body, "xy");
  EXPECT_EQ(o.requests[3].target, "/four");
  EXPECT_FALSE(o.error);
}

TEST(Pipelining, BufferStaysBoundedOverManyRequests) {
  ReaderLimits limits;
  limits.max_header_bytes = 256;
  limits.max_body_bytes = 64;
  limits.max_chunk_line_bytes = 32;
  RequestReader reader(limits);
  const std::string one = Post("Content-Length: 10\r\n", "0123456789") + Chunked("a\r\n0123456789\r\n0\r\n\r\n");
  std::string stream;
  for (int i = 0; i < 500; i++) stream += one;
  size_t got = 0;
  size_t pos = 0;
  size_t step = 1;
  while (pos < stream.size()) {
    const size_t n = std::min(step, stream.size() - pos);
    ASSERT_TRUE(reader.Feed(stream.data() + pos, n));
    pos += n;
    step = step % 97 + 13;  // uneven piece sizes
    EXPECT_LE(reader.buffered_bytes(), reader.buffer_limit_bytes());
    Request r;
    RequestReader::Event e;
    while ((e = reader.Next(&r)) == RequestReader::Event::kRequest) {
      EXPECT_EQ(r.body, "0123456789");
      got++;
    }
    ASSERT_EQ(e, RequestReader::Event::kNeedMore) << reader.error_message();
    // Drained: only an incomplete element remains.
    EXPECT_LT(reader.buffered_bytes(), limits.max_header_bytes);
  }
  EXPECT_EQ(got, 1000u);
  EXPECT_EQ(reader.buffer_limit_bytes(), 256u + 64u + 32u);
}

// ---- Expect: 100-continue --------------------------------------------------------

TEST(ExpectContinue, ReportedOnceBeforeTheBody) {
  ReaderOutcome o = RunAll(Post("Expect: 100-continue\r\nContent-Length: 3\r\n", "abc"));
  EXPECT_EQ(o.events, "CR");
  ASSERT_EQ(o.continues.size(), 1u);
  EXPECT_EQ(o.continues[0], "/p");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_TRUE(o.requests[0].expect_continue);

  o = RunAll(Post("Expect: 100-Continue\r\nTransfer-Encoding: chunked\r\n", "1\r\na\r\n0\r\n\r\n"));
  EXPECT_EQ(o.events, "CR");
  // Head only, body still to come: the continue is already out.
  o = RunAll(Post("Expect: 100-continue\r\nContent-Length: 3\r\n", ""));
  EXPECT_EQ(o.events, "C");
  // No body: no kContinue.
  o = RunAll(Post("Expect: 100-continue\r\nContent-Length: 0\r\n", ""));
  EXPECT_EQ(o.events, "R");
  o = RunAll(Get("/", "Expect: 100-continue\r\n"));
  EXPECT_EQ(o.events, "R");
  // HTTP/1.0: ignored (RFC 9110 §10.1.1).
  o = RunAll("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 1\r\n\r\nx");
  EXPECT_EQ(o.events, "R");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_FALSE(o.requests[0].expect_continue);
  // Over the body bound: 413 before any kContinue.
  ReaderLimits small;
  small.max_body_bytes = 2;
  o = RunAll(Post("Expect: 100-continue\r\nContent-Length: 3\r\n", ""), small);
  EXPECT_EQ(o.events, "E");
  EXPECT_EQ(o.status, 413);
}

// ---- upgrade / CONNECT -----------------------------------------------------------

TEST(Upgrade, PausesAndKeepsTheFollowingBytes) {
  const std::string ws =
      "GET /ws HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, Upgrade\r\nUpgrade: websocket\r\n"
      "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
  const std::string frame("\x81\x85\x37\xfa\x21\x3d\x7f\x9f\x4d\x51\x58", 11);
  const ReaderOutcome o = RunAll(ws + frame);
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_TRUE(o.requests[0].upgrade);
  EXPECT_TRUE(o.upgrade_pending);
  EXPECT_EQ(o.leftover, frame);

  // Declined upgrade: calling Next() again continues with HTTP.
  RequestReader reader;
  const std::string two = ws + Get("/next");
  ASSERT_TRUE(reader.Feed(two.data(), two.size()));
  Request r;
  ASSERT_EQ(reader.Next(&r), RequestReader::Event::kRequest);
  EXPECT_TRUE(r.upgrade);
  EXPECT_TRUE(reader.upgrade_pending());
  EXPECT_EQ(reader.buffered_bytes(), Get("/next").size());
  ASSERT_EQ(reader.Next(&r), RequestReader::Event::kRequest);
  EXPECT_FALSE(reader.upgrade_pending());
  EXPECT_EQ(r.target, "/next");
  EXPECT_FALSE(r.upgrade);
  // The same with the explicit call.
  RequestReader explicit_resume;
  ASSERT_TRUE(explicit_resume.Feed(two.data(), two.size()));
  ASSERT_EQ(explicit_resume.Next(&r), RequestReader::Event::kRequest);
  explicit_resume.ResumeAfterUpgrade();
  ASSERT_EQ(explicit_resume.Next(&r), RequestReader::Event::kRequest);
  EXPECT_EQ(r.target, "/next");
  // Accepted upgrade: the reader hands over what it holds and closes.
  RequestReader taken;
  ASSERT_TRUE(taken.Feed(two.data(), two.size()));
  ASSERT_EQ(taken.Next(&r), RequestReader::Event::kRequest);
  EXPECT_EQ(taken.TakeBufferedInput(), Get("/next"));
  EXPECT_TRUE(taken.closed());
  EXPECT_EQ(taken.Next(&r), RequestReader::Event::kNeedMore);
  // A declined upgrade on a closing connection: nothing more is parsed.
  RequestReader closing;
  const std::string c10 = "CONNECT h:1 HTTP/1.0\r\n\r\n" + Get("/x");
  ASSERT_TRUE(closing.Feed(c10.data(), c10.size()));
  ASSERT_EQ(closing.Next(&r), RequestReader::Event::kRequest);
  EXPECT_FALSE(r.keep_alive);
  EXPECT_EQ(closing.Next(&r), RequestReader::Event::kNeedMore);
  EXPECT_TRUE(closing.closed());

  // Upgrade in HTTP/1.0 is ignored; without "upgrade" in Connection too.
  EXPECT_FALSE(RunAll("GET / HTTP/1.0\r\nConnection: upgrade\r\nUpgrade: ws\r\n\r\n").upgrade_pending);
  EXPECT_FALSE(RunAll(Get("/", "Upgrade: websocket\r\n")).upgrade_pending);
}

TEST(Upgrade, ConnectHasNoBody) {
  const ReaderOutcome o =
      RunAll("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nContent-Length: 2\r\n\r\nxyz");
  ASSERT_EQ(o.requests.size(), 1u);
  EXPECT_TRUE(o.requests[0].upgrade);
  EXPECT_EQ(o.requests[0].path, "example.com:443");
  EXPECT_EQ(o.requests[0].body, "");
  EXPECT_EQ(o.leftover, "xyz");
}

// ---- bounds ----------------------------------------------------------------------

TEST(Bounds, HeaderBytes431) {
  const std::string head = Get("/", "X: 0123456789\r\n");
  ReaderLimits exact;
  exact.max_header_bytes = head.size();
  EXPECT_EQ(Accepted(head, exact), 1);
  ReaderLimits less;
  less.max_header_bytes = head.size() - 1;
  EXPECT_EQ(StatusOf(head, less), 431);
  // An endless head is cut off at the bound, not when it ends.
  std::string endless = "GET / HTTP/1.1\r\nHost: h\r\nX: ";
  endless += std::string(300, 'a');
  ReaderLimits small;
  small.max_header_bytes = 128;
  const ReaderOutcome o = RunAll(endless, small);
  EXPECT_EQ(o.status, 431);
  EXPECT_LE(o.max_buffered, small.max_header_bytes + small.max_body_bytes + small.max_chunk_line_bytes);
}

TEST(Bounds, HeaderCount431) {
  ReaderLimits limits;
  limits.max_headers = 3;
  EXPECT_EQ(Accepted(Get("/", "A: 1\r\nB: 2\r\n"), limits), 1);  // Host + 2 = 3
  EXPECT_EQ(StatusOf(Get("/", "A: 1\r\nB: 2\r\nC: 3\r\n"), limits), 431);
  // Trailer fields are bounded by the same count.
  EXPECT_EQ(Accepted(Chunked("0\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n"), limits), 1);
  EXPECT_EQ(StatusOf(Chunked("0\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n"), limits), 431);
}

TEST(Bounds, TrailerBytes431) {
  ReaderLimits limits;
  limits.max_header_bytes = 64;
  EXPECT_EQ(Accepted(Chunked("0\r\nA: " + std::string(40, 'x') + "\r\n\r\n"), limits), 1);
  EXPECT_EQ(StatusOf(Chunked("0\r\nA: " + std::string(80, 'x') + "\r\n\r\n"), limits), 431);
}

TEST(Bounds, ContentLength413AsSoonAsTheHeadIsParsed) {
  ReaderLimits limits;
  limits.max_body_bytes = 10;
  EXPECT_EQ(Accepted(Post("Content-Length: 10\r\n", "0123456789"), limits), 1);
  // No body bytes sent at all: refused on the head alone.
  EXPECT_EQ(StatusOf(Post("Content-Length: 11\r\n", ""), limits), 413);
}

TEST(Bounds, ChunkedSum413AsSoonAsItPasses) {
  ReaderLimits limits;
  limits.max_body_bytes = 10;
  EXPECT_EQ(Accepted(Chunked("5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n"), limits), 1);
  // The second size line passes the bound: 413 before its data arrives.
  EXPECT_EQ(StatusOf(Chunked("5\r\n01234\r\n6\r\n"), limits), 413);
  EXPECT_EQ(StatusOf(Chunked("b\r\n"), limits), 413);
}

TEST(Bounds, ChunkLine400) {
  ReaderLimits limits;
  limits.max_chunk_line_bytes = 16;
  EXPECT_EQ(Accepted(Chunked("1;abcdefghijklmn\r\nx\r\n0\r\n\r\n"), limits), 1);   // 16 bytes
  EXPECT_EQ(StatusOf(Chunked("1;abcdefghijklmno\r\nx\r\n0\r\n\r\n"), limits), 400);  // 17
  EXPECT_EQ(StatusOf(Chunked(std::string(20, '0') + "1\r\nx\r\n0\r\n\r\n"), limits), 400);
}

TEST(Bounds, FeedRefusesMoreThanTheBufferHolds) {
  ReaderLimits limits;
  limits.max_header_bytes = 32;
  limits.max_body_bytes = 32;
  limits.max_chunk_line_bytes = 8;
  RequestReader reader(limits);
  const std::string big(73, 'a');
  EXPECT_FALSE(reader.Feed(big.data(), big.size()));
  EXPECT_EQ(reader.error_status(), 431);
  Request r;
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kError);
  RequestReader ok(limits);
  EXPECT_TRUE(ok.Feed(big.data(), 72));
}

// ---- reader state ----------------------------------------------------------------

TEST(ReaderState, ErrorIsSticky) {
  RequestReader reader;
  const std::string bad = "GET / HTTP/1.1\r\nHost: h\r\nBad Header: x\r\n\r\n";
  ASSERT_TRUE(reader.Feed(bad.data(), bad.size()));
  Request r;
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kError);
  EXPECT_EQ(reader.error_status(), 400);
  const std::string good = Get("/");
  EXPECT_FALSE(reader.Feed(good.data(), good.size()));
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kError);
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kError);
}

TEST(ReaderState, HeadInProgress) {
  RequestReader reader;
  Request r;
  EXPECT_FALSE(reader.head_in_progress());
  reader.Feed("GET / HT", 8);
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kNeedMore);
  EXPECT_TRUE(reader.head_in_progress());
  const std::string rest = "TP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\nx";
  reader.Feed(rest.data(), rest.size());
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kNeedMore);
  EXPECT_FALSE(reader.head_in_progress());  // in the body now
  reader.Feed("y", 1);
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kRequest);
  EXPECT_EQ(r.body, "xy");
  EXPECT_FALSE(reader.head_in_progress());
  EXPECT_EQ(reader.buffered_bytes(), 0u);
  // A stray CRLF after a request is not the start of a head.
  reader.Feed("\r\n", 2);
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kNeedMore);
  EXPECT_FALSE(reader.head_in_progress());
  reader.Feed("\r", 1);
  EXPECT_EQ(reader.Next(&r), RequestReader::Event::kNeedMore);
  EXPECT_TRUE(reader.head_in_progress());
}

// ---- ParseRequestHead directly -----------------------------------------------------

TEST(ParseRequestHead, ViewsIntoTheBufferAndPrefixProperty) {
  const std::string in = "\r\nPUT /x HTTP/1.0\r\nA: 1\r\nB:  two \r\n\r\nBODY";
  HeaderView headers[4];
  RequestHeadView head;
  ParseFailure f;
  const int n = ParseRequestHead(in.data(), in.size(), &head, headers, 4, &f);
  ASSERT_EQ(n, static_cast<int>(in.size() - 4));
  EXPECT_EQ(head.method, "PUT");
  EXPECT_EQ(head.target, "/x");
  EXPECT_EQ(head.minor_version, 0);
  ASSERT_EQ(head.num_headers, 2u);
  EXPECT_EQ(head.headers[1].name, "B");
  EXPECT_EQ(head.headers[1].value, "two");
  EXPECT_EQ(head.method.data(), in.data() + 2);  // a view, not a copy
  for (size_t k = 0; k < static_cast<size_t>(n); k++) {
    EXPECT_EQ(ParseRequestHead(in.data(), k, &head, headers, 4, &f), kParseIncomplete) << k;
  }
  // Too many headers for the caller's array: 431.
  EXPECT_EQ(ParseRequestHead(in.data(), in.size(), &head, headers, 1, &f), kParseError);
  EXPECT_EQ(f.status, 431);
}

}  // namespace
}  // namespace tw::http

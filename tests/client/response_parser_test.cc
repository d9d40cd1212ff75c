// The client's HTTP response parser: framing (Content-Length, chunked with
// extensions and trailers, until close, no body), interim responses,
// pipelining, and every strictness rule, each fed whole, at every split point
// and one byte at a time. Expected bodies are written out by hand.
#include "client/response_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/chunking.h"

namespace tw::client {
namespace {

struct Outcome {
  std::string status;  // "" or the error message
  int code = 0;
  std::string headers;  // "name=value;" in order
  std::string body;
  int framing = -1;
  bool done = false;
  size_t leftover = 0;  // bytes not consumed (belong to the next response)
  bool head_seen_before_body = true;
};

// Feeds the pieces as a connection would, re-feeding after each early stop;
// `eof` adds FeedEof() at the end.
Outcome Run(const std::vector<std::string_view>& pieces, bool eof, bool request_was_head = false,
            ResponseLimits limits = {}) {
  Outcome o;
  ResponseParser p(limits);
  p.Reset(request_was_head);
  p.set_body_sink([&](std::string_view b) {
    if (!p.head_done()) o.head_seen_before_body = false;
    o.body.append(b);
    return true;
  });
  Status s;
  for (std::string_view piece : pieces) {
    while (!piece.empty() && s.ok()) {
      if (p.done()) {
        o.leftover += piece.size();
        break;
      }
      size_t used = 0;
      s = p.Feed(piece, &used);
      piece.remove_prefix(used);
    }
    if (!s.ok()) break;
  }
  if (s.ok() && eof) s = p.FeedEof();
  o.status = s.message();
  o.code = p.head().status;
  for (const auto& [n, v] : p.head().headers) o.headers += n + "=" + v + ";";
  o.framing = static_cast<int>(p.framing());
  o.done = p.done();
  return o;
}

std::string Render(const Outcome& o) {
  return "status=[" + o.status + "] code=" + std::to_string(o.code) + " headers=[" + o.headers +
         "] body=[" + o.body + "] framing=" + std::to_string(o.framing) + " done=" +
         std::to_string(o.done) + " leftover=" + std::to_string(o.leftover) +
         " head_first=" + std::to_string(o.head_seen_before_body);
}

// Whole-input outcome, and a check that every chunking agrees with it.
Outcome Check(std::string_view input, bool eof = false, bool head = false, ResponseLimits limits = {}) {
  Outcome whole = Run({input}, eof, head, limits);
  EXPECT_EQ(tw::testing::CheckSameForAllChunkings(
                input, [&](const std::vector<std::string_view>& pieces) {
                  return Render(Run(pieces, eof, head, limits));
                }),
            "");
  return whole;
}

TEST(ResponseParser, ContentLength) {
  Outcome o = Check("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Stream-Id: s_1\r\n\r\nhello");
  EXPECT_EQ(o.status, "");
  EXPECT_EQ(o.code, 200);
  EXPECT_EQ(o.headers, "Content-Length=5;X-Stream-Id=s_1;");
  EXPECT_EQ(o.body, "hello");
  EXPECT_EQ(o.framing, static_cast<int>(BodyFraming::kContentLength));
  EXPECT_TRUE(o.done);
  EXPECT_TRUE(o.head_seen_before_body);
}

TEST(ResponseParser, HeaderValuesTrimmedAndLookupIgnoresCase) {
  ResponseParser p;
  size_t used = 0;
  std::string in = "HTTP/1.1 404 Not Found\r\ncontent-TYPE: \t application/json \t\r\nContent-Length: 0\r\n\r\n";
  ASSERT_TRUE(p.Feed(in, &used).ok());
  EXPECT_EQ(used, in.size());
  ASSERT_NE(p.head().Find("Content-Type"), nullptr);
  EXPECT_EQ(*p.head().Find("Content-Type"), "application/json");
  EXPECT_EQ(p.head().reason, "Not Found");
  EXPECT_EQ(p.head().Find("missing"), nullptr);
  EXPECT_TRUE(p.done());
}

TEST(ResponseParser, ChunkedWithExtensionsAndTrailers) {
  Outcome o = Check(
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n"
      "1;name=value\r\n \r\n"
      "A\r\n0123456789\r\n"
      "0\r\nX-Trailer: t\r\n\r\n");
  EXPECT_EQ(o.status, "");
  EXPECT_EQ(o.body, "hello 0123456789");
  EXPECT_EQ(o.framing, static_cast<int>(BodyFraming::kChunked));
  EXPECT_TRUE(o.done);
}

TEST(ResponseParser, ChunkedSseBody) {
  Outcome o = Check(
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
      "d\r\nretry: 1000\n\n\r\n"
      "1d\r\nid: 1\nevent: start\ndata: {}\n\n\r\n"
      "0\r\n\r\n");
  EXPECT_EQ(o.status, "");
  EXPECT_EQ(o.body, "retry: 1000\n\nid: 1\nevent: start\ndata: {}\n\n");
}

TEST(ResponseParser, UntilClose) {
  Outcome o = Check("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nall of it", /*eof=*/true);
  EXPECT_EQ(o.status, "");
  EXPECT_EQ(o.body, "all of it");
  EXPECT_EQ(o.framing, static_cast<int>(BodyFraming::kUntilClose));
  EXPECT_TRUE(o.done);
}

TEST(ResponseParser, NoBodyFor204And304AndHead) {
  Outcome o = Check("HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n");
  EXPECT_EQ(o.status, "");
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.body, "");
  EXPECT_EQ(o.leftover, 17u);  // the next response is left unread
  o = Check("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n");
  EXPECT_TRUE(o.done);
  o = Check("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", false, /*head=*/true);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.body, "");
}

TEST(ResponseParser, InterimResponsesSkipped) {
  Outcome o = Check("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                    "HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
  EXPECT_EQ(o.status, "");
  EXPECT_EQ(o.code, 201);
  EXPECT_EQ(o.headers, "Content-Length=2;");
  EXPECT_EQ(o.body, "ok");
}

TEST(ResponseParser, PipelinedResponsesStopAtTheBoundary) {
  std::string two = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
                    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\ndef\r\n0\r\n\r\n";
  Outcome o = Check(two);
  EXPECT_EQ(o.body, "abc");
  EXPECT_EQ(o.leftover, two.size() - 41);
  // The same parser, Reset, reads the second one.
  ResponseParser p;
  std::string body;
  p.set_body_sink([&](std::string_view b) {
    body.append(b);
    return true;
  });
  std::string_view in = two;
  for (int i = 0; i < 2; i++) {
    p.Reset();
    while (!p.done()) {
      size_t used = 0;
      ASSERT_TRUE(p.Feed(in, &used).ok());
      in.remove_prefix(used);
    }
  }
  EXPECT_EQ(body, "abcdef");
  EXPECT_TRUE(in.empty());
}

TEST(ResponseParser, FeedStopsAfterHeadAndWhenSinkSaysStop) {
  ResponseParser p;
  std::string got;
  p.set_body_sink([&](std::string_view b) {
    got.append(b);
    return false;  // stop after every piece
  });
  std::string in = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\n";
  size_t used = 0;
  ASSERT_TRUE(p.Feed(in, &used).ok());
  EXPECT_EQ(in.substr(used, 3), "2\r\n");  // stopped right after the head
  EXPECT_TRUE(got.empty());
  size_t off = used;
  ASSERT_TRUE(p.Feed(std::string_view(in).substr(off), &used).ok());
  EXPECT_EQ(got, "ab");
  off += used;
  EXPECT_EQ(in.substr(off, 5), "\r\n2\r\n");
  ASSERT_TRUE(p.Feed(std::string_view(in).substr(off), &used).ok());
  EXPECT_EQ(got, "abcd");
  off += used;
  ASSERT_TRUE(p.Feed(std::string_view(in).substr(off), &used).ok());
  EXPECT_TRUE(p.done());
  EXPECT_EQ(off + used, in.size());
}

TEST(ResponseParser, KeepAlive) {
  ResponseParser p;
  size_t used;
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", &used).ok());
  EXPECT_TRUE(p.keep_alive());
  p.Reset();
  ASSERT_TRUE(p.Feed("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", &used).ok());
  EXPECT_FALSE(p.keep_alive());
  p.Reset();
  ASSERT_TRUE(p.Feed("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", &used).ok());
  EXPECT_FALSE(p.keep_alive());
}

// Every malformed input fails with a message naming the problem, the same way
// for every chunking.
struct BadCase {
  const char* input;
  bool eof;
  const char* message_part;
};

TEST(ResponseParser, StrictnessErrors) {
  const BadCase cases[] = {
      {"HTTP/1.1 200 OK\nContent-Length: 0\r\n\r\n", false, "bare LF"},
      {"HTTP/1.1 200 OK\r\rX", false, "CR not followed by LF"},
      {"HTTP/2 200 OK\r\n\r\n", false, "malformed status line"},
      {"HTTP/1.1 2x0 OK\r\n\r\n", false, "not 3 digits"},
      {"HTTP/1.1 200OK\r\n\r\n", false, "no space after the status code"},
      {"\r\n\r\n", false, "empty line where the status line belongs"},
      {"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n", false, "obs-fold"},
      {"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", false, "invalid header name"},
      {"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n", false, "header line without a name"},
      {"HTTP/1.1 200 OK\r\nA: b\x01\r\n\r\n", false, "control byte"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n", false,
       "both Content-Length and Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", false,
       "conflicting Content-Length"},
      {"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\n", false, "is not digits"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", false, "overflows"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", false, "unsupported Transfer-Encoding"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, "chunk size is not hex"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 x\r\n", false, "junk after chunk size"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n11111111111111111\r\n", false,
       "chunk size overflows"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", false,
       "chunk data not followed by CRLF"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\n", false,
       "chunk data not followed by CRLF"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nab", false, "bare LF"},
      {"", true, "connection closed before any response byte"},
      {"HTTP/1.1 200 OK\r\n", true, "connection closed inside the response head"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc", true, "2 of 5 Content-Length bytes missing"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", true,
       "connection closed inside a chunked body"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.input);
    Outcome o = Check(c.input, c.eof);
    EXPECT_NE(o.status.find(c.message_part), std::string::npos) << o.status;
    EXPECT_NE(o.status.find("at byte offset"), std::string::npos) << o.status;
  }
}

TEST(ResponseParser, Bounds) {
  ResponseLimits limits;
  limits.max_head_bytes = 40;
  Outcome o = Check("HTTP/1.1 200 OK\r\nX-Long: 0123456789012345678901234567890\r\n\r\n", false, false, limits);
  EXPECT_NE(o.status.find("head over max_head_bytes (40) at byte offset 40"), std::string::npos) << o.status;
  limits = ResponseLimits();
  limits.max_headers = 2;
  o = Check("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", false, false, limits);
  EXPECT_NE(o.status.find("more than max_headers (2)"), std::string::npos) << o.status;
  limits = ResponseLimits();
  limits.max_chunk_line_bytes = 8;
  o = Check("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;abcdefgh\r\nx\r\n0\r\n\r\n", false,
            false, limits);
  EXPECT_NE(o.status.find("chunk line over max_chunk_line_bytes (8)"), std::string::npos) << o.status;
}

TEST(ResponseParser, StaysFailedUntilReset) {
  ResponseParser p;
  size_t used;
  EXPECT_FALSE(p.Feed("HTTP/1.1 200 OK\n", &used).ok());
  EXPECT_FALSE(p.Feed("\r\n", &used).ok());
  p.Reset();
  EXPECT_TRUE(p.Feed("HTTP/1.1 204 No Content\r\n\r\n", &used).ok());
  EXPECT_TRUE(p.done());
}

}  // namespace
}  // namespace tw::client

#include "http/response.h"

#include <gtest/gtest.h>

namespace tw::http {
namespace {

TEST(ResponseTest, HeadWithContentLengthAndExtraHeaders) {
  Headers extra = {{"X-Stream-Id", "s_1"}, {"Bad", "a\r\nInjected: 1"}, {"B\nad", "v"}};
  ResponseHead h;
  h.status = 201;
  h.content_type = "application/json";
  h.content_length = 17;
  h.extra = &extra;
  EXPECT_EQ(BuildResponseHead(h),
            "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 17\r\n"
            "X-Stream-Id: s_1\r\n\r\n");
}

TEST(ResponseTest, ChunkedCloseAndHttp10KeepAliveHeads) {
  ResponseHead h;
  h.status = 200;
  h.content_type = "text/event-stream";
  h.framing = BodyFraming::kChunked;
  h.close = true;
  EXPECT_EQ(BuildResponseHead(h),
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n"
            "Connection: close\r\n\r\n");
  ResponseHead k;
  k.status = 404;
  k.content_type = "text/plain";
  k.keep_alive_http10 = true;
  EXPECT_EQ(BuildResponseHead(k),
            "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n"
            "Connection: keep-alive\r\n\r\n");
}

TEST(ResponseTest, JsonStringsAreEscaped) {
  std::string s;
  AppendJsonString(&s, "caf\xc3\xa9 \\ \t");
  EXPECT_EQ(s, "\"caf\xc3\xa9 \\\\ \\t\"");
}

TEST(ResponseTest, ChunkHeaderIsLowercaseHex) {
  char buf[24];
  EXPECT_EQ(std::string(buf, FormatChunkHeader(0x1a2b, buf)), "1a2b\r\n");
  EXPECT_EQ(std::string(buf, FormatChunkHeader(1, buf)), "1\r\n");
}

TEST(ResponseTest, ErrorTypesFollowTheDesign) {
  EXPECT_STREQ(ErrorCodeName(ErrorCodeForStatus(400)), "invalid_request");
  EXPECT_STREQ(ErrorCodeName(ErrorCodeForStatus(408)), "request_timeout");
  EXPECT_STREQ(ErrorCodeName(ErrorCodeForStatus(413)), "payload_too_large");
  EXPECT_STREQ(ErrorCodeName(ErrorCodeForStatus(431)), "headers_too_large");
  EXPECT_STREQ(ErrorCodeName(ErrorCodeForStatus(501)), "not_implemented");
  EXPECT_EQ(ReasonPhrase(431), "Request Header Fields Too Large");
  EXPECT_EQ(ReasonPhrase(599), "Unknown");
}

}  // namespace
}  // namespace tw::http

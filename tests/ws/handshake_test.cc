// Opening-handshake validation (RFC 6455 §4.2.1) over parsed requests.
#include <gtest/gtest.h>

#include "ws/handshake.h"

namespace tw::ws {
namespace {

http::Request Good() {
  http::Request r;
  r.method = "GET";
  r.target = r.path = "/v1/ws";
  r.minor_version = 1;
  r.headers = {{"Host", "127.0.0.1:8080"},
               {"Upgrade", "websocket"},
               {"Connection", "Upgrade"},
               {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
               {"Sec-WebSocket-Version", "13"}};
  return r;
}

void Set(http::Request* r, const std::string& name, const std::string& value) {
  for (auto& [n, v] : r->headers) {
    if (n == name) {
      v = value;
      return;
    }
  }
  r->headers.emplace_back(name, value);
}

void Remove(http::Request* r, const std::string& name) {
  std::erase_if(r->headers, [&](const auto& h) { return h.first == name; });
}

TEST(Handshake, AcceptsRfcExampleAndComputesAccept) {
  HandshakeResult h = CheckHandshake(Good(), {});
  ASSERT_TRUE(h.ok) << h.message;
  EXPECT_EQ(h.status, 101);
  EXPECT_EQ(h.accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  EXPECT_EQ(SwitchingProtocolsResponse(h.accept),
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
}

TEST(Handshake, TokensAreCaseInsensitiveListsAndExtensionsIgnored) {
  http::Request r = Good();
  Set(&r, "Upgrade", "WebSocket");
  Set(&r, "Connection", "keep-alive, upgrade");  // Firefox sends this
  r.headers.emplace_back("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits");
  r.headers.emplace_back("Sec-WebSocket-Protocol", "chat");
  HandshakeResult h = CheckHandshake(r, {});
  ASSERT_TRUE(h.ok) << h.message;
  EXPECT_EQ(SwitchingProtocolsResponse(h.accept).find("Extensions"), std::string::npos);
  EXPECT_EQ(SwitchingProtocolsResponse(h.accept).find("Protocol:"), std::string::npos);
}

TEST(Handshake, Refusals) {
  struct Case {
    const char* name;
    void (*edit)(http::Request*);
    int status;
  } cases[] = {
      {"POST", [](http::Request* r) { r->method = "POST"; }, 400},
      {"HTTP/1.0", [](http::Request* r) { r->minor_version = 0; }, 400},
      {"no Upgrade", [](http::Request* r) { Remove(r, "Upgrade"); }, 400},
      {"Upgrade: h2c", [](http::Request* r) { Set(r, "Upgrade", "h2c"); }, 400},
      {"no Connection token", [](http::Request* r) { Set(r, "Connection", "keep-alive"); }, 400},
      {"Connection: upgraded", [](http::Request* r) { Set(r, "Connection", "upgraded"); }, 400},
      {"no key", [](http::Request* r) { Remove(r, "Sec-WebSocket-Key"); }, 400},
      {"two keys", [](http::Request* r) { r->headers.emplace_back("Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAAAA=="); }, 400},
      {"key not base64", [](http::Request* r) { Set(r, "Sec-WebSocket-Key", "not base64 at all!!!!!=="); }, 400},
      {"key 15 bytes", [](http::Request* r) { Set(r, "Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAA"); }, 400},
      {"key 17 bytes", [](http::Request* r) { Set(r, "Sec-WebSocket-Key", "AAAAAAAAAAAAAAAAAAAAAAA="); }, 400},
      {"version 8", [](http::Request* r) { Set(r, "Sec-WebSocket-Version", "8"); }, 426},
      {"version 14", [](http::Request* r) { Set(r, "Sec-WebSocket-Version", "14"); }, 426},
      {"no version", [](http::Request* r) { Remove(r, "Sec-WebSocket-Version"); }, 426},
  };
  for (const Case& c : cases) {
    http::Request r = Good();
    c.edit(&r);
    HandshakeResult h = CheckHandshake(r, {});
    EXPECT_FALSE(h.ok) << c.name;
    EXPECT_EQ(h.status, c.status) << c.name;
    EXPECT_FALSE(h.message.empty()) << c.name;
    if (c.status == 426) {
      ASSERT_EQ(h.headers.size(), 1u) << c.name;
      EXPECT_EQ(h.headers[0].first, "Sec-WebSocket-Version");
      EXPECT_EQ(h.headers[0].second, "13");
    }
  }
}

TEST(Handshake, AllowedOrigins) {
  HandshakeOptions o;
  o.allowed_origins = {"http://127.0.0.1:8080", "https://example.com"};
  http::Request r = Good();
  EXPECT_TRUE(CheckHandshake(r, o).ok);  // no Origin: not a browser
  r.headers.emplace_back("Origin", "https://example.com");
  EXPECT_TRUE(CheckHandshake(r, o).ok);
  Set(&r, "Origin", "https://evil.example");
  HandshakeResult h = CheckHandshake(r, o);
  EXPECT_FALSE(h.ok);
  EXPECT_EQ(h.status, 403);
  EXPECT_TRUE(CheckHandshake(r, {}).ok);  // empty list: any origin
}

TEST(Handshake, HeaderHasToken) {
  EXPECT_TRUE(HeaderHasToken("Upgrade", "upgrade"));
  EXPECT_TRUE(HeaderHasToken("keep-alive,Upgrade", "upgrade"));
  EXPECT_TRUE(HeaderHasToken(" keep-alive ,\tUpgrade\t", "upgrade"));
  EXPECT_FALSE(HeaderHasToken("keep-alive", "upgrade"));
  EXPECT_FALSE(HeaderHasToken("Upgrade2", "upgrade"));
  EXPECT_FALSE(HeaderHasToken("", "upgrade"));
}

}  // namespace
}  // namespace tw::ws

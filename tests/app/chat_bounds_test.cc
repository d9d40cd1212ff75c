// The number of messages in one chat request is bounded (--max-chat-messages,
// default 2048), on the real binary: the next one is refused with 400 naming
// the bound, before any message is rendered or tokenized. Before, 10^6
// messages (with a raised --max-body-bytes) were parsed, rendered and then
// freed on the event loop (600 MB of RSS, /healthz stalled 408 ms).
#include <gtest/gtest.h>

#include <string>

#include "client/http_client.h"
#include "support/server_child.h"

namespace tw {
namespace {

using testing::ServerChild;

client::Response Chat(uint16_t port, int messages) {
  std::string body = R"({"model":"mock-gpt2","max_tokens":1,"messages":[)";
  for (int i = 0; i < messages; ++i) body += std::string(i ? "," : "") + R"({"role":"user","content":"x"})";
  body += "]}";
  client::Request req;
  req.method = "POST";
  req.target = "/v1/chat/completions";
  req.body = body;
  client::Response r;
  EXPECT_TRUE(client::Fetch(port, req, &r).ok());
  return r;
}

TEST(ChatBounds, MessagesBeyondTheBoundAreRefusedNamingIt) {
  ServerChild server({"--backend", "mock", "--mock-ttft-ms", "0", "--max-body-bytes", "4194304"});
  ASSERT_NE(server.port(), 0) << server.Log();
  EXPECT_EQ(Chat(server.port(), 2048).head.status, 200);
  client::Response r = Chat(server.port(), 2049);
  EXPECT_EQ(r.head.status, 400);
  EXPECT_NE(r.body.find("messages: 2049 messages is out of range; expected at most 2048 (--max-chat-messages)"),
            std::string::npos)
      << r.body;
  EXPECT_NE(r.body.find("\"param\":\"messages\""), std::string::npos) << r.body;
  EXPECT_EQ(Chat(server.port(), 100000).head.status, 400);
}

TEST(ChatBounds, TheBoundIsAFlag) {
  ServerChild server({"--backend", "mock", "--mock-ttft-ms", "0", "--max-chat-messages", "3"});
  ASSERT_NE(server.port(), 0) << server.Log();
  EXPECT_EQ(Chat(server.port(), 3).head.status, 200);
  EXPECT_EQ(Chat(server.port(), 4).head.status, 400);
}

}  // namespace
}  // namespace tw

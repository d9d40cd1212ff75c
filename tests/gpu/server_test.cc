// The server built with the CUDA runner (build/cuda/tokenwire on a GPU,
// build/emu/tokenwire on the CPU emulator) as a real process serving the
// golden tiny GPT-2 with --backend cuda: one SSE stream (/v1/stream) and one
// OpenAI completion (/v1/completions) over HTTP carry the same greedy tokens
// and text as the same binary with --backend cpu.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "client/http_client.h"
#include "client/sse_client.h"
#include "gpu/gpu_test_util.h"
#include "json/json.h"
#include "support/chunking.h"
#include "support/server_child.h"

namespace tw::testing {
namespace {

struct Answer {
  std::vector<int64_t> stream_tokens;
  std::string stream_text;
  std::string finish_reason;
  std::string completion_text;
  std::string completion_finish;
};

constexpr const char* kPrompt = "The quick brown fox jumps over";

void Ask(const std::string& backend, Answer* a) {
  // Start-up with --backend cuda captures the decode graphs; on the
  // emulator a step takes a fraction of a second: generous bounds.
  ServerChild server({"--backend", backend, "--model", DataPath("golden/tiny-gpt2"), "--served-model-name", "tiny",
                      "--log-level", "error"},
                     60000);
  ASSERT_NE(server.port(), 0) << "--backend " << backend << " did not start:\n" << server.Log();

  client::SseOptions so;
  so.http.io_timeout_ms = 60000;
  client::SseClient sse(so);
  ASSERT_TRUE(sse.Connect(server.port()).ok());
  ASSERT_TRUE(sse.Post("/v1/stream", std::string(R"({"prompt":")") + kPrompt +
                                         R"(","max_new_tokens":16,"temperature":0})")
                  .ok());
  ASSERT_TRUE(sse.is_event_stream()) << sse.result().error_body;
  Status st = sse.ReadEvents([&](const sse::Event& e) {
    json::Value v;
    EXPECT_TRUE(json::Parse(e.data, &v).ok()) << e.data;
    if (e.type == "token") {
      a->stream_tokens.push_back(v.Find("token")->as_int());
      a->stream_text += v.Find("text")->as_string();
    } else if (e.type == "done") {
      a->finish_reason = v.Find("finish_reason")->as_string();
    }
    return true;
  });
  ASSERT_TRUE(st.ok()) << st.message();

  client::ClientOptions co;
  co.io_timeout_ms = 60000;
  client::HttpClient http(co);
  ASSERT_TRUE(http.Connect(server.port()).ok());
  client::Request req;
  req.method = "POST";
  req.target = "/v1/completions";
  req.headers = {{"Content-Type", "application/json"}};
  req.body = std::string(R"({"model":"tiny","prompt":")") + kPrompt + R"(","max_tokens":16,"temperature":0})";
  client::Response resp;
  st = http.RoundTrip(req, &resp);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(resp.head.status, 200) << resp.body;
  json::Value v;
  ASSERT_TRUE(json::Parse(resp.body, &v).ok()) << resp.body;
  const json::Value& choice = v.Find("choices")->items()[0];
  a->completion_text = choice.Find("text")->as_string();
  a->completion_finish = choice.Find("finish_reason")->as_string();
}

TEST(CudaServer, AStreamAndACompletionOverHttpCarryTheCpuBackendsGreedyTokens) {
  TW_REQUIRE_GPU();
  Answer cpu, gpu;
  ASSERT_NO_FATAL_FAILURE(Ask("cpu", &cpu));
  ASSERT_NO_FATAL_FAILURE(Ask("cuda", &gpu));
  ASSERT_EQ(cpu.stream_tokens.size(), 16u) << cpu.finish_reason;
  EXPECT_EQ(cpu.finish_reason, "length");
  EXPECT_EQ(gpu.stream_tokens, cpu.stream_tokens);
  EXPECT_EQ(gpu.stream_text, cpu.stream_text);
  EXPECT_EQ(gpu.finish_reason, cpu.finish_reason);
  EXPECT_EQ(gpu.completion_text, cpu.completion_text);
  EXPECT_EQ(gpu.completion_finish, cpu.completion_finish);
  EXPECT_EQ(cpu.completion_text, cpu.stream_text) << "the two endpoints, the same greedy text";
}

}  // namespace
}  // namespace tw::testing

// Structured output through the server (docs/structured-output.md): every
// field of the three APIs on `serve --backend cpu` (random tiny GPT-2), the
// output following its grammar, and the 400s naming the field and what is
// wrong (the keyword and its place, the line and column, the bound's flag).
// The random model's distribution is flat, so the requests that must end
// carry a logit_bias toward the tokens that end them; the mask decides.
#include <gtest/gtest.h>

#include <string>

#include "app/app_fixture.h"
#include "json/json.h"
#include "support/ws_test_client.h"
#include "tokenizer/tokenizer.h"

namespace tw {
namespace {

using testing::AppServer;

std::string Bias(std::initializer_list<const char*> tokens) {
  tokenizer::Tokenizer tok;
  EXPECT_TRUE(tokenizer::Tokenizer::LoadEmbedded(&tok).ok());
  std::string out = "{";
  for (const char* t : tokens) {
    const std::vector<int32_t> ids = tok.Encode(t);
    EXPECT_EQ(ids.size(), 1u) << t;
    if (out.size() > 1) out += ",";
    out += "\"" + std::to_string(ids[0]) + "\":10";
  }
  return out + "}";
}

const char* kSchema =
    R"({"type":"object","properties":{"ok":{"type":"boolean"},"n":{"type":"integer","minimum":0,"maximum":9}},)"
    R"("required":["ok","n"]})";

// The object kSchema allows: {"ok": <bool>, "n": <0..9>}.
void ExpectSchemaValue(const std::string& text) {
  json::Value v;
  ASSERT_TRUE(json::Parse(text, &v).ok()) << text;
  ASSERT_TRUE(v.is_object()) << text;
  ASSERT_EQ(v.members().size(), 2u) << text;
  EXPECT_TRUE(v.Find("ok") && v.Find("ok")->is_bool()) << text;
  ASSERT_TRUE(v.Find("n") && v.Find("n")->is_int()) << text;
  EXPECT_GE(v.Find("n")->as_int(), 0);
  EXPECT_LE(v.Find("n")->as_int(), 9);
}

TEST(StructuredOutputHttp, EveryFieldOfEveryApiShapesTheOutput) {
  AppServer srv({"--backend", "cpu", "--threads", "1", "--json-max-whitespace", "1"});
  const std::string bias = Bias({"\"", "}", "1", "true", ","});
  int status = 0;
  // OpenAI completions, response_format json_schema.
  json::Value c = srv.CallJson("POST", "/v1/completions",
                               std::string(R"({"model":"gpt2-random-tiny","prompt":"A record:","max_tokens":60,"seed":3,)") +
                                   R"("logit_bias":)" + bias + R"(,"response_format":{"type":"json_schema",)" +
                                   R"("json_schema":{"name":"r","strict":true,"schema":)" + kSchema + "}}}",
                               &status);
  ASSERT_EQ(status, 200) << json::Serialize(c);
  const json::Value& choice = c.Find("choices")->items()[0];
  EXPECT_EQ(choice.Find("finish_reason")->as_string(), "stop");
  ExpectSchemaValue(choice.Find("text")->as_string());
  // OpenAI chat, response_format json_object: a JSON object.
  json::Value chat = srv.CallJson(
      "POST", "/v1/chat/completions",
      std::string(R"({"model":"gpt2-random-tiny","messages":[{"role":"user","content":"JSON please"}],)") +
          R"("max_tokens":80,"seed":4,"logit_bias":)" + bias + R"(,"response_format":{"type":"json_object"}})",
      &status);
  ASSERT_EQ(status, 200) << json::Serialize(chat);
  const std::string content = chat.Find("choices")->items()[0].Find("message")->Find("content")->as_string();
  ASSERT_FALSE(content.empty());
  EXPECT_EQ(content[0], '{') << content;
  if (chat.Find("choices")->items()[0].Find("finish_reason")->as_string() == "stop") {
    json::Value v;
    EXPECT_TRUE(json::Parse(content, &v).ok() && v.is_object()) << content;
  }
  // vLLM's guided_choice on completions; the choices share a prefix.
  json::Value g = srv.CallJson("POST", "/v1/completions",
                               R"({"model":"gpt2-random-tiny","prompt":"Pick:","max_tokens":20,"seed":5,)"
                               R"("guided_choice":["positive","negative","neutral","negative, mostly"]})",
                               &status);
  ASSERT_EQ(status, 200) << json::Serialize(g);
  const std::string picked = g.Find("choices")->items()[0].Find("text")->as_string();
  EXPECT_TRUE(picked == "positive" || picked == "negative" || picked == "neutral" || picked == "negative, mostly")
      << picked;
  // Our own API: guided_regex, guided_json, llama-server's grammar and json_schema.
  json::Value r = srv.CallJson("POST", "/v1/generate",
                               R"({"prompt":"Phone:","max_new_tokens":20,"seed":6,"guided_regex":"[0-9]{3}-[0-9]{4}"})",
                               &status);
  ASSERT_EQ(status, 200) << json::Serialize(r);
  const std::string phone = r.Find("text")->as_string();
  ASSERT_EQ(phone.size(), 8u) << phone;
  for (size_t i = 0; i < phone.size(); i++) {
    EXPECT_TRUE(i == 3 ? phone[i] == '-' : (phone[i] >= '0' && phone[i] <= '9')) << phone;
  }
  EXPECT_EQ(r.Find("finish_reason")->as_string(), "stop");
  for (const char* field : {"guided_json", "json_schema"}) {
    json::Value j = srv.CallJson("POST", "/v1/generate",
                                 std::string(R"({"prompt":"x","max_new_tokens":60,"seed":7,"logit_bias":)") + bias +
                                     ",\"" + field + "\":" + kSchema + "}",
                                 &status);
    ASSERT_EQ(status, 200) << json::Serialize(j);
    EXPECT_EQ(j.Find("finish_reason")->as_string(), "stop") << field;
    ExpectSchemaValue(j.Find("text")->as_string());
  }
  json::Value gb = srv.CallJson("POST", "/v1/generate",
                                R"({"prompt":"x","max_new_tokens":20,"seed":8,)"
                                R"("grammar":"root ::= (\"ab\" | \"c\") [0-9]{2}"})",
                                &status);
  ASSERT_EQ(status, 200) << json::Serialize(gb);
  const std::string t = gb.Find("text")->as_string();
  EXPECT_TRUE((t.size() == 4 && t.rfind("ab", 0) == 0) || (t.size() == 3 && t[0] == 'c')) << t;
  // The WebSocket generate op takes the same fields.
  ws::testing::WsTestClient ws;
  ASSERT_TRUE(ws.Connect(srv.port(), "/v1/ws").ok());
  ASSERT_TRUE(ws.SendText(R"({"op":"generate","prompt":"x","max_new_tokens":10,"seed":9,"guided_choice":["yes","no"]})"));
  std::string text;
  std::string finish;
  for (int i = 0; i < 40 && finish.empty(); i++) {
    ws::testing::WsTestClient::Frame f;
    ASSERT_EQ(ws.ReadMessage(&f, 10000), ws::testing::WsTestClient::Read::kFrame);
    json::Value ev;
    ASSERT_TRUE(json::Parse(f.payload, &ev).ok()) << f.payload;
    const json::Value* type = ev.Find("type");
    if (type && type->as_string() == "token") text += ev.Find("text")->as_string();
    if (type && type->as_string() == "done") finish = ev.Find("finish_reason")->as_string();
  }
  EXPECT_TRUE(text == "yes" || text == "no") << text;
  EXPECT_EQ(finish, "stop");
}

TEST(StructuredOutputHttp, BadSchemasAndGrammarsAre400sNamingWhatIsWrong) {
  AppServer srv({"--backend", "cpu", "--threads", "1", "--grammar-max-bytes", "200"});
  auto expect = [&](const std::string& path, const std::string& body, const std::string& param,
                    const std::string& message) {
    int status = 0;
    json::Value v = srv.CallJson("POST", path, body, &status);
    EXPECT_EQ(status, 400) << json::Serialize(v);
    const json::Value* e = v.Find("error");
    ASSERT_NE(e, nullptr) << json::Serialize(v);
    EXPECT_EQ(e->Find("param")->as_string(), param) << json::Serialize(v);
    EXPECT_NE(e->Find("message")->as_string().find(message), std::string::npos) << json::Serialize(v);
  };
  expect("/v1/completions", R"({"model":"gpt2-random-tiny","prompt":"x","guided_json":{"type":"number","multipleOf":2}})", "guided_json",
         "guided_json: /: 'multipleOf' is not supported");
  expect("/v1/chat/completions",
         R"({"model":"gpt2-random-tiny","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema",)"
         R"("json_schema":{"name":"x","schema":{"properties":{"a":{"type":"strin"}}}}}})",
         "response_format", "/properties/a");
  expect("/v1/generate", R"({"prompt":"x","grammar":"root ::= \"a\"\nb ::= ("})", "grammar", "grammar: line 2, column");
  expect("/v1/generate", R"({"prompt":"x","guided_regex":"a(b"})", "guided_regex", "regex column");
  expect("/v1/generate", R"({"prompt":"x","guided_choice":[]})", "guided_choice", "non-empty array");
  expect("/v1/generate", R"({"prompt":"x","guided_regex":"a","guided_choice":["a"]})", "guided_choice",
         "only one structured-output field per request");
  expect("/v1/generate", R"({"prompt":"x","response_format":{"type":"xml"}})", "response_format",
         "type \"xml\" is not one of text, json_object, json_schema");
  expect("/v1/generate", std::string(R"({"prompt":"x","guided_regex":")") + std::string(300, 'a') + "\"}",
         "guided_regex", "--grammar-max-bytes");
  // The mock backend's tokens are synthetic: refused, naming the backends that can.
  AppServer mock({"--backend", "mock"});
  int status = 0;
  json::Value v = mock.CallJson("POST", "/v1/generate", R"({"prompt":"x","guided_choice":["a"]})", &status);
  EXPECT_EQ(status, 400) << json::Serialize(v);
  EXPECT_NE(json::Serialize(v).find("structured output needs a model backend"), std::string::npos)
      << json::Serialize(v);
}

}  // namespace
}  // namespace tw

// The model a server names and the context it takes: --served-model-name is
// the id GET /v1/models lists and the only one completions accept; without
// it the id is the --model folder's name (gpt2-random-tiny for the random
// default); and the random default takes GPT-2's 1024 positions.
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>
#include <vector>

#include "app/app_fixture.h"
#include "app/config.h"
#include "model/model_test_util.h"
#include "support/chunking.h"

namespace tw::openai {
namespace {

using testing::AppServer;

json::Value ParseBody(const std::string& body) {
  json::Value v;
  Status s = json::Parse(body, &v);
  EXPECT_TRUE(s.ok()) << s.message() << " in " << body;
  return v;
}

// The ids GET /v1/models lists.
std::vector<std::string> ListedIds(AppServer& srv) {
  int status = 0;
  json::Value v = srv.CallJson("GET", "/v1/models", "", &status);
  EXPECT_EQ(status, 200);
  std::vector<std::string> ids;
  if (const json::Value* data = v.Find("data")) {
    for (const json::Value& m : data->items()) ids.push_back(m.Find("id")->as_string());
  }
  return ids;
}

// POST /v1/completions naming `model`; returns the status, *body the answer.
int Complete(AppServer& srv, const std::string& model, json::Value* body) {
  client::Response r = srv.Call("POST", "/v1/completions",
                                R"({"model":")" + model + R"(","prompt":"Hello","max_tokens":2,"temperature":0})");
  *body = ParseBody(r.body);
  return r.head.status;
}

void ExpectModelNotFound(const json::Value& v) {
  const json::Value* e = v.Find("error");
  ASSERT_TRUE(e != nullptr) << json::Serialize(v);
  EXPECT_EQ(e->Find("code")->as_string(), "model_not_found");
  EXPECT_EQ(e->Find("param")->as_string(), "model");
}

TEST(ServedModelName, IsTheIdListedAndTheOnlyOneCompletionsAccept) {
  AppServer srv({"--served-model-name", "my-gpt2:v1"});
  EXPECT_EQ(ListedIds(srv), std::vector<std::string>{"my-gpt2:v1"});
  int status = 0;
  json::Value one = srv.CallJson("GET", "/v1/models/my-gpt2:v1", "", &status);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(one.Find("id")->as_string(), "my-gpt2:v1");
  // The backend's own name is no longer served.
  srv.CallJson("GET", "/v1/models/mock-gpt2", "", &status);
  EXPECT_EQ(status, 404);

  json::Value c;
  ASSERT_EQ(Complete(srv, "my-gpt2:v1", &c), 200) << json::Serialize(c);
  EXPECT_EQ(c.Find("model")->as_string(), "my-gpt2:v1");
  EXPECT_EQ(Complete(srv, "mock-gpt2", &c), 404);
  ExpectModelNotFound(c);
  EXPECT_EQ(Complete(srv, "gpt-4", &c), 404);
  ExpectModelNotFound(c);
  srv.WaitIdle();
}

TEST(ServedModelName, BadValuesAreRefusedNamingTheFlag) {
  const std::vector<std::string> bads = {"", "org/model", "has space", "quote\"", std::string(129, 'a')};
  for (const std::string& bad : bads) {
    std::vector<std::string> args = {"tokenwire", "serve", "--served-model-name", bad};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app::Config cfg;
    Status s = app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 2, &cfg);
    EXPECT_FALSE(s.ok()) << "'" << bad << "' was accepted";
    EXPECT_NE(s.message().find("--served-model-name"), std::string::npos) << s.message();
  }
}

TEST(ServedModelName, DefaultsToTheModelFoldersName) {
  // The golden checkpoint, seen through a folder named like a real download.
  testing::TempDir dir;
  const std::string folder = dir.Sub("gpt2-medium");
  ASSERT_EQ(::symlink(testing::DataPath("golden/tiny-gpt2").c_str(), folder.c_str()), 0);
  for (const std::string& model : {folder, folder + "/"}) {
    AppServer srv({"--backend", "cpu", "--model", model, "--threads", "1", "--max-batch", "2"});
    EXPECT_EQ(ListedIds(srv), std::vector<std::string>{"gpt2-medium"}) << model;
    json::Value c;
    EXPECT_EQ(Complete(srv, "gpt2-medium", &c), 200) << json::Serialize(c);
    EXPECT_EQ(Complete(srv, "gpt2", &c), 404);
    ExpectModelNotFound(c);
  }
  // A folder name that cannot be an id (a space, a non-ASCII letter) gives
  // one that can, which GET /v1/models/{id} finds.
  const std::string odd = dir.Sub("my gpt2 \xc3\xa9");
  ASSERT_EQ(::symlink(testing::DataPath("golden/tiny-gpt2").c_str(), odd.c_str()), 0);
  {
    AppServer srv({"--backend", "cpu", "--model", odd, "--threads", "1", "--max-batch", "2"});
    EXPECT_EQ(ListedIds(srv), std::vector<std::string>{"my-gpt2---"});
    EXPECT_EQ(srv.Call("GET", "/v1/models/my-gpt2---").head.status, 200);
  }
  // --served-model-name wins over the folder's name.
  AppServer named({"--backend", "cpu", "--model", folder, "--threads", "1", "--max-batch", "2",
                   "--served-model-name", "small"});
  EXPECT_EQ(ListedIds(named), std::vector<std::string>{"small"});
}

// Prompt token ids 0..n-1 and max_new_tokens, as a /v1/generate body.
std::string GenerateBody(int prompt_tokens, int max_new_tokens) {
  std::string ids;
  for (int i = 0; i < prompt_tokens; i++) ids += (i ? "," : "") + std::to_string(i);
  return R"({"prompt_tokens":[)" + ids + R"(],"max_new_tokens":)" + std::to_string(max_new_tokens) + "}";
}

TEST(RandomDefaultModel, IsNamedGpt2RandomTinyAndTakesGpt2sContext) {
  AppServer srv({"--backend", "cpu", "--threads", "1", "--max-batch", "2"});
  EXPECT_EQ(ListedIds(srv), std::vector<std::string>{"gpt2-random-tiny"});
  // 1000 prompt tokens + 24 new ones: exactly 1024 positions.
  int status = 0;
  json::Value g = srv.CallJson("POST", "/v1/generate", GenerateBody(1000, 24), &status);
  ASSERT_EQ(status, 200) << json::Serialize(g);
  // One position more is refused before anything runs.
  json::Value over = srv.CallJson("POST", "/v1/generate", GenerateBody(1001, 24), &status);
  EXPECT_EQ(status, 422) << json::Serialize(over);
  EXPECT_NE(json::Serialize(over).find("1024"), std::string::npos) << json::Serialize(over);
  // The README's walk-through: a 200-token stream from a short prompt.
  client::Response r = srv.Call("POST", "/v1/streams", R"({"prompt":"Hello","max_new_tokens":200,"seed":7})");
  EXPECT_EQ(r.head.status, 201) << r.body;
}

}  // namespace
}  // namespace tw::openai

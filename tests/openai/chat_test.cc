// /v1/chat/completions, the chat template, n choices and logprobs on the
// OpenAI endpoints (docs/openai.md): the template parser on good files and
// on every kind of bad one (line and byte named) and every prefix of a good
// one; the chat request parser (every rejection names its param); and,
// against a server on the mock backend, the chat shapes streamed and not, n
// choices interleaved with index i and seed + i, usage counting the prompt
// once, logprobs in OpenAI's two shapes and on our own SSE events, and a
// client that leaves cancelling every choice.
#include "openai/chat.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>

#include "app/app_fixture.h"
#include "client/sse_client.h"
#include "sse/parser.h"
#include "support/chunking.h"
#include "support/request_test_util.h"
#include "tokenizer/tokenizer.h"

namespace tw {
namespace {

using openai::ChatMessage;
using openai::ChatRole;
using openai::ChatTemplate;
using testing::AppServer;
using testing::ParseJson;

const tokenizer::Tokenizer& Tok() { return testing::EmbeddedTokenizer(); }

service::RequestBounds Bounds() { return testing::TestBounds(); }

// ---- the chat template ------------------------------------------------------------

TEST(ChatTemplate, PlainRendersUserAssistantTurnsAndEndsWithTheGenerationPrompt) {
  const ChatTemplate t = ChatTemplate::Plain();
  std::vector<ChatMessage> m = {{ChatRole::kSystem, "Be brief."},
                                {ChatRole::kUser, "Hi"},
                                {ChatRole::kAssistant, "Hello."},
                                {ChatRole::kUser, "Capital of France?"}};
  EXPECT_EQ(t.Render(m), "Be brief.\n\nUser: Hi\nAssistant: Hello.\nUser: Capital of France?\nAssistant:");
  EXPECT_EQ(t.stop(), std::vector<std::string>{"\nUser:"});
  EXPECT_EQ(t.name(), "plain");
}

constexpr const char* kGoodTemplate =
    "# a template with every feature\n"
    "\n"
    "system = \"<<SYS>> {content} {{braces}}\\n\"\n"
    "  user=\"Q: {content}\\n\"   \n"
    "assistant = \"A: {content}\\n\"\n"
    "generation = \"A: \\\"\"\n"
    "stop = \"\\nQ:\"\n"
    "stop = \"\\t\\\\\"\n";

TEST(ChatTemplate, ParsesEscapesBracesCommentsAndStops) {
  ChatTemplate t;
  Status s = ChatTemplate::Parse(kGoodTemplate, &t);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(t.name(), "file");
  EXPECT_EQ(t.Render({{ChatRole::kSystem, "S"}, {ChatRole::kUser, "U"}, {ChatRole::kAssistant, "X"}}),
            "<<SYS>> S {braces}\nQ: U\nA: X\nA: \"");
  EXPECT_EQ(t.stop(), (std::vector<std::string>{"\nQ:", "\t\\"}));
}

struct BadTemplate {
  std::string text;
  const char* where;  // "line L, byte B: "
  const char* what;   // a piece of the message
};

TEST(ChatTemplate, EveryErrorNamesItsLineAndByte) {
  const std::string ok = "system = \"{content}\"\nuser = \"{content}\"\nassistant = \"{content}\"\n";
  const std::vector<BadTemplate> cases = {
      {ok + "generation = \"x\"\nfoo = \"y\"\n", "line 5, byte 81: ", "unknown key 'foo'"},
      {ok + "generation = \"x\"\nuser = \"{content}\"\n", "line 5, byte 81: ", "given twice"},
      {ok + "generation \"x\"\n", "line 4, byte 75: ", "expected '='"},
      {ok + "generation = x\n", "line 4, byte 77: ", "expected a '\"'"},
      {ok + "generation = \"x\n", "line 4, byte 77: ", "not closed"},
      {ok + "generation = \"x\\q\"\n", "line 4, byte 79: ", "unknown escape"},
      {ok + "generation = \"x\" y\n", "line 4, byte 81: ", "after the closing"},
      {ok + "generation = \"{content}\"\n", "line 4, byte 77: ", "cannot contain {content}"},
      {ok + "generation = \"{x}\"\n", "line 4, byte 78: ", "neither '{{'"},
      {ok + "generation = \"x}\"\n", "line 4, byte 79: ", "stray '}'"},
      {ok + "generation = \"x\"\nstop = \"\"\n", "line 5, byte 88: ", "stop string must be"},
      {"system = \"none\"\n", "line 1, byte 9: ", "exactly once"},
      {"system = \"{content}{content}\"\n", "line 1, byte 9: ", "exactly once"},
      {ok, "line 4, byte 64: ", "no 'generation'"},
      {"= \"x\"\n", "line 1, byte 0: ", "expected a key"},
      {"", "line 1, byte 0: ", "no 'system'"},
  };
  for (const BadTemplate& c : cases) {
    ChatTemplate t;
    Status s = ChatTemplate::Parse(c.text, &t);
    ASSERT_FALSE(s.ok()) << c.text;
    EXPECT_EQ(s.message().rfind(c.where, 0), 0u) << c.text << "\n -> " << s.message();
    EXPECT_NE(s.message().find(c.what), std::string::npos) << c.text << "\n -> " << s.message();
  }
  std::string five_stops = ok + "generation = \"x\"\n";
  for (int i = 0; i < 5; i++) five_stops += "stop = \"s\"\n";
  ChatTemplate t;
  Status s = ChatTemplate::Parse(five_stops, &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("at most 4 stop lines"), std::string::npos) << s.message();
}

// Every prefix of a good template, and the good one with each byte replaced
// by a quote, a brace or a backslash: parsed, or refused with a line and a
// byte inside the text (never a crash, never a silent half-template).
TEST(ChatTemplate, EveryPrefixAndEveryByteEditIsParsedOrRefusedClearly) {
  const std::string good = kGoodTemplate;
  auto check = [](const std::string& text) {
    ChatTemplate t;
    Status s = ChatTemplate::Parse(text, &t);
    if (s.ok()) return;
    unsigned line = 0, byte = 0;
    ASSERT_EQ(std::sscanf(s.message().c_str(), "line %u, byte %u: ", &line, &byte), 2) << s.message();
    EXPECT_GE(line, 1u);
    EXPECT_LE(byte, text.size()) << s.message();
  };
  for (size_t n = 0; n <= good.size(); n++) check(good.substr(0, n));
  for (size_t i = 0; i < good.size(); i++) {
    for (char c : {'"', '{', '}', '\\', '\n', '='}) {
      std::string edit = good;
      edit[i] = c;
      check(edit);
    }
  }
}

TEST(ChatTemplate, LoadNamesTheFile) {
  ChatTemplate t;
  Status s = ChatTemplate::Load("/nonexistent/chat.tmpl", &t);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--chat-template /nonexistent/chat.tmpl: fopen: "), std::string::npos) << s.message();
  const std::string path = ::testing::TempDir() + "/bad_chat_template.txt";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("system = \"{content}\"\nuser = {content}\n", f);
  std::fclose(f);
  s = ChatTemplate::Load(path, &t);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "--chat-template " + path + ": line 2, byte 28: expected a '\"' to open the string");
}

// ---- the chat request --------------------------------------------------------------

bool ParseChat(const std::string& body, openai::ChatRequest* out, ApiError* err,
               const ChatTemplate& t = ChatTemplate::Plain()) {
  return openai::ParseChatRequest(body, Tok(), Bounds(), "gpt2", t, out, err);
}

TEST(ChatParse, RendersTheMessagesAndReadsEveryField) {
  openai::ChatRequest r;
  ApiError e;
  ASSERT_TRUE(ParseChat(R"({"model":"gpt2","messages":[{"role":"system","content":"Be brief."},
      {"role":"user","content":[{"type":"text","text":"Hi"},{"type":"text","text":" there"}],"name":"ann"}],
      "max_completion_tokens":9,"temperature":0.5,"top_p":0.9,"seed":3,"n":4,"stop":"##","stream":true,
      "stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":5,"user":"u",
      "presence_penalty":0,"tools":null})",
                        &r, &e))
      << e.message;
  EXPECT_EQ(r.prompt_tokens, Tok().Encode("Be brief.\n\nUser: Hi there\nAssistant:"));
  EXPECT_EQ(r.max_tokens, 9);
  EXPECT_EQ(r.shared.n, 4);
  EXPECT_TRUE(r.shared.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 5);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"##", "\nUser:"}));  // the template's turn marker added
  backend::GenerationRequest g = openai::ChatToGeneration(r);
  EXPECT_EQ(g.logprobs, 5);
  EXPECT_EQ(g.seed, 3u);
  EXPECT_TRUE(g.has_seed);
  EXPECT_FLOAT_EQ(g.temperature, 0.5f);
  // Without max_tokens: all the room the context and --max-new-tokens leave;
  // logprobs: true alone is the sampled token's only (0 alternatives).
  ASSERT_TRUE(ParseChat(R"({"model":"gpt2","messages":[{"role":"user","content":"<|endoftext|>"}],"logprobs":true})",
                        &r, &e));
  EXPECT_EQ(r.max_tokens, 100);
  EXPECT_EQ(r.logprobs, 0);
  // Message text is plain text: the special token cannot be injected.
  for (int32_t id : r.prompt_tokens) EXPECT_NE(id, Tok().end_of_text_id());
}

TEST(ChatParse, EveryRejectionNamesItsParam) {
  struct Case {
    const char* body;
    int status;
    const char* param;
    const char* message;  // the whole message: the field, the value, what is allowed
  };
  const std::vector<Case> cases = {
      {R"({"model":"gpt2","messages":[)", 400, "",
       "the body is not valid JSON (byte 28): json: unexpected end of input, expected a value at byte 28"},
      {R"({"messages":[{"role":"user","content":"x"}]})", 400, "model",
       "you must provide a model parameter ('gpt2')"},
      {R"({"model":"gpt-4o","messages":[{"role":"user","content":"x"}]})", 404, "model",
       "the model 'gpt-4o' does not exist; this server serves 'gpt2'"},
      {R"({"model":"gpt2"})", 400, "messages",
       "you must provide 'messages'"},
      {R"({"model":"gpt2","messages":[]})", 400, "messages",
       "'messages' must hold at least one message"},
      {R"({"model":"gpt2","messages":"hi"})", 400, "messages",
       R"(messages: expected an array of messages, got the string "hi")"},
      {R"({"model":"gpt2","messages":["hi"]})", 400, "messages[0]",
       R"(messages[0]: expected an object with 'role' and 'content', got the string "hi")"},
      {R"({"model":"gpt2","messages":[{"content":"x"}]})", 400, "messages[0].role",
       "'messages[0].role' is missing"},
      {R"({"model":"gpt2","messages":[{"role":"user"}]})", 400, "messages[0].content",
       "'messages[0].content' is missing"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":null}]})", 400, "messages[0].content",
       "messages[0].content: expected a string or an array of text parts, got null"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"},{"role":"wizard","content":"x"}]})", 400,
       "messages[1].role",
       "'messages[1].role' is 'wizard'; it must be system, developer, user or assistant"},
      {R"({"model":"gpt2","messages":[{"role":"tool","content":"x"}]})", 400, "messages[0].role",
       "'messages[0].role' is 'tool': tool and function messages are not supported (no tool calling)"},
      {R"({"model":"gpt2","messages":[{"role":5,"content":"x"}]})", 400, "messages[0].role",
       "messages[0].role: expected a string, got the number 5"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]})", 400,
       "messages[0].content[0].type",
       "'messages[0].content[0].type' is 'image_url'; only text parts are supported (GPT-2 reads text)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":[{"type":"text","text":5}]}]})", 400,
       "messages[0].content[0].text",
       "messages[0].content[0].text: expected a string, got the number 5"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":[{"type":"text","cache":1}]}]})", 400,
       "messages[0].content[0].cache",
       "unrecognized field 'messages[0].content[0].cache'"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":[7]}]})", 400, "messages[0].content[0]",
       R"(messages[0].content[0]: expected an object {"type":"text","text":…}, got the number 7)"},
      {R"({"model":"gpt2","messages":[{"role":"assistant","content":"x","tool_calls":[]}]})", 400,
       "messages[0].tool_calls",
       "'messages[0].tool_calls' is not supported by this server (no tool calling, text only)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x","extra":1}]})", 400, "messages[0].extra",
       "unrecognized field 'messages[0].extra'"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"tools":[]})", 400, "tools",
       "tools: tool and function calling is not supported: GPT-2 is a base model that was never trained to call tools"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"tool_choice":"auto"})", 400, "tool_choice",
       "tool_choice: tool and function calling is not supported: GPT-2 is a base model that was never trained to call tools"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"functions":[]})", 400, "functions",
       "functions: tool and function calling is not supported: GPT-2 is a base model that was never trained to call tools"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_object"}})",
       400, "response_format",
       "response_format: structured output is not available on this server"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"top_k":-5})", 400, "top_k",
       "top_k: -5 is out of range; expected an integer, -1 or 0 (off) or at least 1"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"logprobs":1})", 400, "logprobs",
       "logprobs: expected a boolean, got the number 1"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"top_logprobs":2})", 400, "top_logprobs",
       "'top_logprobs' needs 'logprobs': true"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"logprobs":true,"top_logprobs":21})", 400,
       "top_logprobs",
       "top_logprobs: 21 is out of range; expected an integer in [0, 20] (alternatives per token)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"n":17})", 400, "n",
       "n: 17 is out of range; expected an integer in [1, 16] (choices per request on this server)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"max_tokens":0})", 400, "max_tokens",
       "max_tokens: 0 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"max_completion_tokens":101})", 400,
       "max_completion_tokens",
       "max_completion_tokens: 101 is out of range; expected an integer in [1, 100] (--max-new-tokens)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"stream_options":{}})", 400, "stream_options",
       "'stream_options' is only allowed when 'stream' is true"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"stop":[""]})", 400, "stop",
       "stop[0]: 0 bytes is out of range; expected 1..8 bytes (--max-stop-bytes)"},
      {R"({"model":"gpt2","messages":[{"role":"user","content":"x"}],"temperature":3})", 400, "temperature",
       "temperature: 3 is out of range; expected a number in [0, 2]"},
  };
  for (const Case& c : cases) {
    openai::ChatRequest r;
    ApiError e;
    EXPECT_FALSE(ParseChat(c.body, &r, &e)) << c.body;
    EXPECT_EQ(e.http_status, c.status) << c.body;
    EXPECT_EQ(e.param, c.param) << c.body << ": " << e.message;
    EXPECT_EQ(e.message, c.message) << c.body;
  }
  // A conversation over the context: context_length_exceeded, param messages.
  std::string big = R"({"model":"gpt2","max_tokens":10,"messages":[{"role":"user","content":")";
  for (int i = 0; i < 1100; i++) big += " a";
  big += "\"}]}";
  openai::ChatRequest r;
  ApiError e;
  EXPECT_FALSE(ParseChat(big, &r, &e));
  EXPECT_EQ(e.code, ErrorCode::kPromptTooLong);
  EXPECT_EQ(e.param, "messages");
}

// ---- the stream format on its own ---------------------------------------------------

// A held-back token's log-probabilities ride on the next chunk; when the hub
// offers that chunk's event again (its bytes were refused), the retry
// carries the same entries and offsets.
TEST(ChatShapes, HeldBackLogprobsSurviveARefusedChunk) {
  openai::CompletionMeta m;
  m.id = "cmpl-s_1";
  m.model = "gpt2";
  m.logprobs = 1;
  openai::OpenAiSseFormat f(m, "s_1");
  auto token = [](uint64_t seq, int index, int32_t id, std::string text, std::string bytes) {
    stream::Event e = stream::Event::Token(index, id, std::move(text));
    e.seq = seq;
    auto lp = std::make_shared<stream::TokenLogprobs>();
    lp->sampled = {id, -0.5, bytes};
    lp->top = {{id, -0.5, bytes}};
    e.logprobs = lp;
    return e;
  };
  std::string out;
  EXPECT_EQ(f.AppendEvent(token(2, 0, 1, "ab", "ab"), &out), sse::SseFormat::Bytes::kEvent);
  out.clear();
  EXPECT_EQ(f.AppendEvent(token(3, 1, 2, "", "\xe2"), &out), sse::SseFormat::Bytes::kNone);  // held back
  const stream::Event next = token(4, 2, 3, "c", "c");
  std::string first, retry;
  EXPECT_EQ(f.AppendEvent(next, &first), sse::SseFormat::Bytes::kEvent);
  EXPECT_EQ(f.AppendEvent(next, &retry), sse::SseFormat::Bytes::kEvent);  // offered again
  EXPECT_EQ(first, retry);
  std::vector<sse::Event> evs;
  sse::Parser parser([&](const sse::Event& e) { evs.push_back(e); });
  ASSERT_TRUE(parser.Feed(retry).ok());
  ASSERT_EQ(evs.size(), 1u);
  const json::Value chunk = ParseJson(evs[0].data);
  const json::Value* lp = chunk.Find("choices")->items()[0].Find("logprobs");
  ASSERT_EQ(lp->Find("tokens")->items().size(), 2u) << evs[0].data;
  EXPECT_EQ(lp->Find("text_offset")->items()[0].as_int(), 2);
  EXPECT_EQ(lp->Find("text_offset")->items()[1].as_int(), 3);
}

// ---- against a server (mock backend) -------------------------------------------------

constexpr const char* kModel = "mock-gpt2";

std::vector<sse::Event> PostEvents(AppServer& srv, const std::string& target, const std::string& body,
                                   int* status = nullptr) {
  client::SseClient c;
  EXPECT_OK(c.Connect(srv.port()));
  EXPECT_OK(c.Post(target, body));
  if (status) *status = c.result().head.status;
  if (!c.is_event_stream()) return {};
  EXPECT_OK(c.ReadEvents());
  EXPECT_TRUE(c.result().ended);
  return c.result().events;
}

// A streamed OpenAI response read back per choice, checking the grammar.
struct Choices {
  std::map<int, std::string> text;
  std::map<int, std::string> finish;
  std::map<int, std::vector<json::Value>> logprobs;  // each chunk's non-null logprobs
  json::Value usage;
  std::string object;
  bool done_last = false;
};

Choices ReadChoices(const std::vector<sse::Event>& events, bool chat) {
  Choices out;
  std::set<int> roles;
  for (size_t i = 0; i < events.size(); i++) {
    if (events[i].data == "[DONE]") {
      out.done_last = i + 1 == events.size();
      continue;
    }
    json::Value c = ParseJson(events[i].data);
    EXPECT_EQ(c.Find("error"), nullptr) << events[i].data;
    if (c.Find("error")) continue;
    out.object = c.Find("object")->as_string();
    const auto& choices = c.Find("choices")->items();
    if (choices.empty()) {
      out.usage = *c.Find("usage");
      continue;
    }
    EXPECT_EQ(choices.size(), 1u);
    const json::Value& ch = choices[0];
    const int index = static_cast<int>(ch.Find("index")->as_int());
    EXPECT_EQ(out.finish.count(index), 0u) << "a chunk for choice " << index << " after its finish reason";
    if (chat) {
      const json::Value* delta = ch.Find("delta");
      EXPECT_NE(delta, nullptr);
      if (const json::Value* role = delta->Find("role")) {
        EXPECT_EQ(role->as_string(), "assistant");
        EXPECT_TRUE(roles.insert(index).second) << "two role chunks for choice " << index;
      } else {
        EXPECT_EQ(roles.count(index), 1u) << "content before the role chunk, choice " << index;
      }
      if (const json::Value* content = delta->Find("content")) out.text[index] += content->as_string();
    } else {
      out.text[index] += ch.Find("text")->as_string();
    }
    if (!ch.Find("logprobs")->is_null()) out.logprobs[index].push_back(*ch.Find("logprobs"));
    if (!ch.Find("finish_reason")->is_null()) out.finish[index] = ch.Find("finish_reason")->as_string();
  }
  return out;
}

TEST(Chat, NonStreamedAnswerHasOpenAisShape) {
  AppServer srv;
  client::Response r = srv.Call("POST", "/v1/chat/completions",
                                R"({"model":"mock-gpt2","messages":[{"role":"user","content":"Hi"}],
                                    "max_tokens":5,"seed":1})");
  ASSERT_EQ(r.head.status, 200) << r.body;
  json::Value v = ParseJson(r.body);
  EXPECT_EQ(v.Find("object")->as_string(), "chat.completion");
  EXPECT_EQ(v.Find("id")->as_string().rfind("chatcmpl-s_", 0), 0u);
  EXPECT_EQ(v.Find("model")->as_string(), kModel);
  ASSERT_EQ(v.Find("choices")->items().size(), 1u);
  const json::Value& ch = v.Find("choices")->items()[0];
  EXPECT_EQ(ch.Find("index")->as_int(), 0);
  EXPECT_EQ(ch.Find("message")->Find("role")->as_string(), "assistant");
  EXPECT_FALSE(ch.Find("message")->Find("content")->as_string().empty());
  EXPECT_TRUE(ch.Find("logprobs")->is_null());
  EXPECT_EQ(ch.Find("finish_reason")->as_string(), "length");
  // "User: Hi\nAssistant:" is 6 tokens.
  EXPECT_EQ(v.Find("usage")->Find("prompt_tokens")->as_int(), 6);
  EXPECT_EQ(v.Find("usage")->Find("completion_tokens")->as_int(), 5);
}

TEST(Chat, StreamedChunksFollowTheGrammarAndEqualTheNonStreamedText) {
  AppServer srv;
  const std::string body = R"({"model":"mock-gpt2","messages":[{"role":"user","content":"Hi"}],"max_tokens":12,"seed":4)";
  int status = 0;
  Choices s = ReadChoices(PostEvents(srv, "/v1/chat/completions",
                                     body + R"(,"stream":true,"stream_options":{"include_usage":true}})", &status),
                          true);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(s.object, "chat.completion.chunk");
  EXPECT_TRUE(s.done_last);
  EXPECT_EQ(s.finish[0], "length");
  EXPECT_EQ(s.usage.Find("completion_tokens")->as_int(), 12);
  json::Value whole = ParseJson(srv.Call("POST", "/v1/chat/completions", body + "}").body);
  EXPECT_EQ(s.text[0], whole.Find("choices")->items()[0].Find("message")->Find("content")->as_string());
}

TEST(Chat, NChoicesAreInterleavedWithTheirIndexAndSeedPlusI) {
  AppServer srv;
  const std::string body = R"({"model":"mock-gpt2","prompt":"Once","max_tokens":8,"seed":10)";
  int status = 0;
  Choices s = ReadChoices(PostEvents(srv, "/v1/completions",
                                     body + R"(,"n":3,"stream":true,"stream_options":{"include_usage":true}})",
                                     &status),
                          false);
  ASSERT_EQ(status, 200);
  ASSERT_EQ(s.text.size(), 3u);
  EXPECT_TRUE(s.done_last);
  std::set<std::string> distinct;
  for (int i = 0; i < 3; i++) {
    EXPECT_EQ(s.finish[i], "length") << i;
    distinct.insert(s.text[i]);
    // Choice i is what a one-choice request with seed 10 + i makes.
    json::Value one = ParseJson(
        srv.Call("POST", "/v1/completions",
                 R"({"model":"mock-gpt2","prompt":"Once","max_tokens":8,"seed":)" + std::to_string(10 + i) + "}")
            .body);
    EXPECT_EQ(s.text[i], one.Find("choices")->items()[0].Find("text")->as_string()) << "choice " << i;
  }
  EXPECT_EQ(distinct.size(), 3u);
  // Usage: the prompt once, the completions summed (as OpenAI counts).
  EXPECT_EQ(s.usage.Find("prompt_tokens")->as_int(), 1);
  EXPECT_EQ(s.usage.Find("completion_tokens")->as_int(), 24);
  EXPECT_EQ(s.usage.Find("total_tokens")->as_int(), 25);

  // Not streamed: n choices in index order, the same texts.
  json::Value v = ParseJson(srv.Call("POST", "/v1/completions", body + R"(,"n":3})").body);
  ASSERT_EQ(v.Find("choices")->items().size(), 3u);
  for (int i = 0; i < 3; i++) {
    const json::Value& ch = v.Find("choices")->items()[static_cast<size_t>(i)];
    EXPECT_EQ(ch.Find("index")->as_int(), i);
    EXPECT_EQ(ch.Find("text")->as_string(), s.text[i]);
  }
  EXPECT_EQ(v.Find("usage")->Find("prompt_tokens")->as_int(), 1);
  EXPECT_EQ(v.Find("usage")->Find("completion_tokens")->as_int(), 24);

  // Chat: n role chunks, n finish reasons.
  Choices c = ReadChoices(PostEvents(srv, "/v1/chat/completions",
                                     R"({"model":"mock-gpt2","messages":[{"role":"user","content":"Hi"}],
                                         "max_tokens":4,"n":2,"stream":true})"),
                          true);
  EXPECT_EQ(c.finish.size(), 2u);
  EXPECT_TRUE(c.done_last);
}

// Posts a streamed request, reads six events and leaves with a reset.
void ReadSixEventsAndReset(AppServer& srv, const std::string& target, const std::string& body) {
  client::SseOptions o;
  auto count = std::make_shared<int>(0);
  o.stop_after = [count](const sse::Event&) { return ++*count == 6; };
  client::SseClient c(o);
  ASSERT_OK(c.Connect(srv.port()));
  ASSERT_OK(c.Post(target, body));
  ASSERT_TRUE(c.is_event_stream());
  ASSERT_OK(c.ReadEvents());
  c.http().CloseWithReset();
}

// Completions with an array of prompts: n choices per prompt, choice j of
// prompt p at index p * n + j (OpenAI's order), each the same as a
// one-prompt request with seed + j; usage counts every prompt once.
TEST(Chat, SeveralPromptsGetNChoicesEachIndexedPromptTimesNPlusJ) {
  AppServer srv;
  const std::vector<std::string> prompts = {"Hello world", "Once"};  // 2 tokens, 1 token
  const std::string body = R"({"model":"mock-gpt2","prompt":["Hello world","Once"],"max_tokens":6,"seed":20,"n":2)";
  json::Value v = ParseJson(srv.Call("POST", "/v1/completions", body + "}").body);
  ASSERT_NE(v.Find("choices"), nullptr) << json::Serialize(v);
  ASSERT_EQ(v.Find("choices")->items().size(), 4u);
  int status = 0;
  Choices s = ReadChoices(PostEvents(srv, "/v1/completions",
                                     body + R"(,"stream":true,"stream_options":{"include_usage":true}})", &status),
                          false);
  ASSERT_EQ(status, 200);
  ASSERT_EQ(s.text.size(), 4u);
  EXPECT_TRUE(s.done_last);
  for (int p = 0; p < 2; p++) {
    for (int j = 0; j < 2; j++) {
      const int i = p * 2 + j;
      const json::Value& ch = v.Find("choices")->items()[static_cast<size_t>(i)];
      EXPECT_EQ(ch.Find("index")->as_int(), i);
      json::Value one = ParseJson(srv.Call("POST", "/v1/completions",
                                           R"({"model":"mock-gpt2","max_tokens":6,"prompt":")" + prompts[p] +
                                               R"(","seed":)" + std::to_string(20 + j) + "}")
                                      .body);
      const std::string want = one.Find("choices")->items()[0].Find("text")->as_string();
      EXPECT_EQ(ch.Find("text")->as_string(), want) << "choice " << i;
      EXPECT_EQ(s.text[i], want) << "streamed choice " << i;
      EXPECT_EQ(s.finish[i], "length") << i;
    }
  }
  for (const json::Value* u : {v.Find("usage"), static_cast<const json::Value*>(&s.usage)}) {
    EXPECT_EQ(u->Find("prompt_tokens")->as_int(), 3);  // 2 + 1: each prompt once
    EXPECT_EQ(u->Find("completion_tokens")->as_int(), 24);
    EXPECT_EQ(u->Find("total_tokens")->as_int(), 27);
  }
}

// Completions' echo: each choice's text starts with its prompt's, streamed
// (the prompt is the choice's first chunk) and not; the completion itself is
// that of the same request without echo.
TEST(Chat, EchoStartsEachChoiceWithItsPrompt) {
  AppServer srv;
  const std::string body = R"({"model":"mock-gpt2","prompt":["Hello world",[15496]],"max_tokens":5,"seed":3,"n":2)";
  json::Value plain = ParseJson(srv.Call("POST", "/v1/completions", body + "}").body);
  json::Value echoed = ParseJson(srv.Call("POST", "/v1/completions", body + R"(,"echo":true})").body);
  int status = 0;
  Choices s = ReadChoices(PostEvents(srv, "/v1/completions", body + R"(,"echo":true,"stream":true})", &status), false);
  ASSERT_EQ(status, 200);
  ASSERT_NE(echoed.Find("choices"), nullptr) << json::Serialize(echoed);
  ASSERT_EQ(echoed.Find("choices")->items().size(), 4u);
  ASSERT_EQ(s.text.size(), 4u);
  const char* prompts[] = {"Hello world", "Hello"};  // 15496 is "Hello"
  for (size_t i = 0; i < 4; i++) {
    const std::string completion = plain.Find("choices")->items()[i].Find("text")->as_string();
    EXPECT_FALSE(completion.empty());
    const std::string want = prompts[i / 2] + completion;
    EXPECT_EQ(echoed.Find("choices")->items()[i].Find("text")->as_string(), want) << i;
    EXPECT_EQ(s.text[static_cast<int>(i)], want) << i;
  }
  // Usage is that of the request without echo: the echoed text is not generated.
  EXPECT_EQ(json::Serialize(*echoed.Find("usage")), json::Serialize(*plain.Find("usage")));
}

// The prompt's log-probabilities on the CPU backend (the golden tiny
// model: real distributions). echo with logprobs: the prompt's tokens lead
// the logprobs, the first with null, then exactly the completion's entries
// of the same request without echo, offsets contiguous from 0; streamed,
// the first chunk is the prompt with its entries and the rest equal the
// collected answer. vLLM's prompt_logprobs: null, then per prompt token a
// dict of the token itself (its logprob equal to echo's, its rank) and the
// most likely alternatives, on every choice of a prompt; chat's at the
// response's top; refused when streamed.
TEST(Chat, EchoWithLogprobsAndPromptLogprobsFromTheCpuBackend) {
  AppServer srv({"--backend", "cpu", "--model", testing::DataPath("golden/tiny-gpt2"), "--threads", "1",
                 "--max-batch", "4"});
  const std::string body = R"({"model":"tiny-gpt2","prompt":"Hello there world","max_tokens":3,"temperature":0,"logprobs":2)";
  json::Value plain = ParseJson(srv.Call("POST", "/v1/completions", body + "}").body);
  json::Value echoed = ParseJson(srv.Call("POST", "/v1/completions", body + R"(,"echo":true})").body);
  ASSERT_NE(echoed.Find("choices"), nullptr) << json::Serialize(echoed);
  const json::Value& pl = *plain.Find("choices")->items()[0].Find("logprobs");
  const json::Value& el = *echoed.Find("choices")->items()[0].Find("logprobs");
  const std::vector<std::string> prompt = {"Hello", " there", " world"};  // 3 tokens
  ASSERT_EQ(el.Find("tokens")->items().size(), prompt.size() + 3) << json::Serialize(el);
  for (size_t i = 0; i < prompt.size(); i++) EXPECT_EQ(el.Find("tokens")->items()[i].as_string(), prompt[i]);
  EXPECT_TRUE(el.Find("token_logprobs")->items()[0].is_null());
  EXPECT_TRUE(el.Find("top_logprobs")->items()[0].is_null());
  for (size_t i = 1; i < prompt.size(); i++) {
    EXPECT_LT(el.Find("token_logprobs")->items()[i].as_double(), 0.0);
    EXPECT_EQ(el.Find("top_logprobs")->items()[i].members().size(), 2u) << i;
  }
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs"}) {
    for (size_t i = 0; i < 3; i++) {
      EXPECT_EQ(json::Serialize(el.Find(key)->items()[prompt.size() + i]), json::Serialize(pl.Find(key)->items()[i]))
          << key << " " << i;
    }
  }
  int64_t offset = 0;
  for (size_t i = 0; i < el.Find("tokens")->items().size(); i++) {
    EXPECT_EQ(el.Find("text_offset")->items()[i].as_int(), offset) << i;
    offset += static_cast<int64_t>(el.Find("tokens")->items()[i].as_string().size());
  }
  EXPECT_EQ(echoed.Find("choices")->items()[0].Find("text")->as_string(),
            "Hello there world" + plain.Find("choices")->items()[0].Find("text")->as_string());

  // Streamed: the same entries, the prompt's in the first chunk.
  int status = 0;
  std::vector<sse::Event> evs = PostEvents(srv, "/v1/completions", body + R"(,"echo":true,"stream":true})", &status);
  ASSERT_EQ(status, 200);
  Choices st = ReadChoices(evs, false);
  ASSERT_FALSE(st.logprobs[0].empty());
  EXPECT_EQ(st.logprobs[0][0].Find("tokens")->items().size(), prompt.size());
  json::Value first = ParseJson(evs[0].data);
  EXPECT_EQ(first.Find("choices")->items()[0].Find("text")->as_string(), "Hello there world");
  std::vector<std::string> streamed;
  for (const json::Value& chunk : st.logprobs[0]) {
    for (size_t i = 0; i < chunk.Find("tokens")->items().size(); i++) {
      streamed.push_back(json::Serialize(chunk.Find("token_logprobs")->items()[i]) + " " +
                         json::Serialize(chunk.Find("text_offset")->items()[i]));
    }
  }
  std::vector<std::string> collected;
  for (size_t i = 0; i < el.Find("tokens")->items().size(); i++) {
    collected.push_back(json::Serialize(el.Find("token_logprobs")->items()[i]) + " " +
                        json::Serialize(el.Find("text_offset")->items()[i]));
  }
  EXPECT_EQ(streamed, collected);

  // vLLM's prompt_logprobs, on both choices of n = 2.
  json::Value pv = ParseJson(srv.Call("POST", "/v1/completions",
                                      R"({"model":"tiny-gpt2","prompt":"Hello there world","max_tokens":2,"n":2,)"
                                      R"("seed":1,"prompt_logprobs":2})").body);
  ASSERT_NE(pv.Find("choices"), nullptr) << json::Serialize(pv);
  ASSERT_EQ(pv.Find("choices")->items().size(), 2u);
  const json::Value& p0 = *pv.Find("choices")->items()[0].Find("prompt_logprobs");
  EXPECT_EQ(json::Serialize(p0), json::Serialize(*pv.Find("choices")->items()[1].Find("prompt_logprobs")));
  ASSERT_EQ(p0.items().size(), prompt.size());
  EXPECT_TRUE(p0.items()[0].is_null());
  for (size_t i = 1; i < prompt.size(); i++) {
    const json::Value& d = p0.items()[i];
    ASSERT_TRUE(d.is_object()) << json::Serialize(d);
    EXPECT_GE(d.members().size(), 2u);
    EXPECT_LE(d.members().size(), 3u);
    // The token's own entry comes first, with echo's logprob.
    const json::Value& own = d.members()[0].second;
    EXPECT_EQ(own.Find("decoded_token")->as_string(), prompt[i]);
    EXPECT_EQ(json::Serialize(*own.Find("logprob")), json::Serialize(el.Find("token_logprobs")->items()[i]));
    EXPECT_GE(own.Find("rank")->as_int(), 1);
    int64_t rank = 0;
    for (size_t m = 1; m < d.members().size(); m++) {
      EXPECT_GT(d.members()[m].second.Find("rank")->as_int(), rank);
      rank = d.members()[m].second.Find("rank")->as_int();
    }
  }
  EXPECT_EQ(pv.Find("choices")->items()[0].Find("logprobs")->is_null(), true);

  // Chat: the response's, one entry per prompt token.
  json::Value cv = ParseJson(srv.Call("POST", "/v1/chat/completions",
                                      R"({"model":"tiny-gpt2","messages":[{"role":"user","content":"Hi"}],)"
                                      R"("max_tokens":1,"prompt_logprobs":0})").body);
  ASSERT_NE(cv.Find("prompt_logprobs"), nullptr) << json::Serialize(cv);
  EXPECT_EQ(cv.Find("prompt_logprobs")->items().size(),
            static_cast<size_t>(cv.Find("usage")->Find("prompt_tokens")->as_int()));
  EXPECT_EQ(cv.Find("choices")->items()[0].Find("prompt_logprobs"), nullptr);
  client::Response refused = srv.Call("POST", "/v1/chat/completions",
                                      R"({"model":"tiny-gpt2","messages":[{"role":"user","content":"Hi"}],)"
                                      R"("prompt_logprobs":0,"stream":true})");
  EXPECT_EQ(refused.head.status, 400);
  EXPECT_NE(refused.body.find(R"("param":"prompt_logprobs")"), std::string::npos) << refused.body;
}

// priority (vLLM's field, on every API): refused under the default fcfs
// policy, naming the flag, OpenAI's way and ours; served under
// --scheduling-policy priority.
TEST(Chat, PriorityNeedsThePriorityPolicy) {
  const std::string model = testing::DataPath("golden/tiny-gpt2");
  for (bool policy : {false, true}) {
    std::vector<std::string> flags = {"--backend", "cpu", "--model", model, "--threads", "1", "--max-batch", "2"};
    if (policy) flags.insert(flags.end(), {"--scheduling-policy", "priority"});
    AppServer srv(flags);
    client::Response c = srv.Call("POST", "/v1/completions",
                                  R"({"model":"tiny-gpt2","prompt":"Hi","max_tokens":2,"priority":3})");
    client::Response g = srv.Call("POST", "/v1/generate", R"({"prompt":"Hi","max_new_tokens":2,"priority":-2})");
    if (policy) {
      EXPECT_EQ(c.head.status, 200) << c.body;
      EXPECT_EQ(g.head.status, 200) << g.body;
    } else {
      EXPECT_EQ(c.head.status, 400) << c.body;
      EXPECT_NE(c.body.find(R"("param":"priority")"), std::string::npos) << c.body;
      EXPECT_NE(c.body.find("--scheduling-policy priority"), std::string::npos) << c.body;
      EXPECT_GE(g.head.status, 400) << g.body;
      EXPECT_NE(g.body.find("--scheduling-policy priority"), std::string::npos) << g.body;
    }
    // Preemptions are counted where operators look (none here).
    EXPECT_NE(srv.Call("GET", "/metrics").body.find("tokenwire_engine_preemptions_total 0\n"), std::string::npos);
    const std::string stats = srv.Call("GET", "/stats").body;
    EXPECT_NE(stats.find(R"("preemptions":0)"), std::string::npos) << stats;
    // The cpu backend's default budget.
    EXPECT_NE(stats.find(R"("max_num_batched_tokens":64)"), std::string::npos) << stats;
    client::Response bad = srv.Call("POST", "/v1/completions",
                                    R"({"model":"tiny-gpt2","prompt":"Hi","priority":"high"})");
    EXPECT_EQ(bad.head.status, 400);
    EXPECT_NE(bad.body.find(R"("param":"priority")"), std::string::npos) << bad.body;
  }
}

// best_of: best_of candidates per prompt, the n most likely answered (the
// mock gives every token log P = log 1/2: equal lengths tie, and ties keep
// the lower candidate, so the answer is the first n candidates); usage
// counts every candidate; logprobs stay null unless asked.
TEST(Chat, BestOfAnswersNOfTheCandidatesAndCountsThemAll) {
  AppServer srv;
  const std::string body = R"({"model":"mock-gpt2","prompt":["Hello world","Hi"],"max_tokens":4,"seed":30,"n":2)";
  json::Value best = ParseJson(srv.Call("POST", "/v1/completions", body + R"(,"best_of":3})").body);
  json::Value plain = ParseJson(srv.Call("POST", "/v1/completions", body + "}").body);
  ASSERT_NE(best.Find("choices"), nullptr) << json::Serialize(best);
  ASSERT_EQ(best.Find("choices")->items().size(), 4u);
  for (size_t i = 0; i < 4; i++) {
    const json::Value& ch = best.Find("choices")->items()[i];
    EXPECT_EQ(ch.Find("index")->as_int(), static_cast<int64_t>(i));
    EXPECT_TRUE(ch.Find("logprobs")->is_null());
    EXPECT_EQ(ch.Find("text")->as_string(), plain.Find("choices")->items()[i].Find("text")->as_string()) << i;
  }
  EXPECT_EQ(best.Find("usage")->Find("prompt_tokens")->as_int(), 3);       // each prompt once
  EXPECT_EQ(best.Find("usage")->Find("completion_tokens")->as_int(), 24);  // 2 prompts x 3 candidates x 4
  EXPECT_EQ(srv.Call("POST", "/v1/completions", body + R"(,"best_of":3,"stream":true})").head.status, 400);
}

// A client that leaves a request of several prompts cancels every choice of
// every prompt, streamed (after the linger) or not (at once).
TEST(Chat, ClientDisconnectCancelsEveryChoiceOfEveryPrompt) {
  AppServer srv({"--mock-tokens-per-s", "400"});
  ASSERT_NO_FATAL_FAILURE(ReadSixEventsAndReset(
      srv, "/v1/completions", R"({"model":"mock-gpt2","prompt":["x","y","z"],"max_tokens":5000,"stream":true})"));
  ASSERT_TRUE(srv.WaitIdle(8000));  // 5000 tokens at 400/s would take 12.5 s
  client::Response m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("tokenwire_streams_finished_total{outcome=\"cancelled\"} 3\n"), std::string::npos)
      << m.body.substr(0, 4000);
  ASSERT_NO_FATAL_FAILURE(srv.PostAndLeave(
      "/v1/completions", R"({"model":"mock-gpt2","prompt":[[1],[2]],"n":2,"max_tokens":5000})", 4));
  ASSERT_TRUE(srv.WaitIdle(8000));
  m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("tokenwire_client_gone_cancels_total 4\n"), std::string::npos) << m.body.substr(0, 4000);
  EXPECT_NE(m.body.find("tokenwire_streams_finished_total{outcome=\"cancelled\"} 7\n"), std::string::npos);
}

TEST(Chat, LogprobsInBothOpenAiShapesStreamedAndNot) {
  AppServer srv;
  // Completions (legacy): tokens, token_logprobs, top_logprobs (k per token), text_offset.
  json::Value v = ParseJson(srv.Call("POST", "/v1/completions",
                                     R"({"model":"mock-gpt2","prompt":"Hi","max_tokens":6,"logprobs":3,"seed":2})")
                                .body);
  const json::Value& ch = v.Find("choices")->items()[0];
  const json::Value* lp = ch.Find("logprobs");
  ASSERT_TRUE(lp && lp->is_object()) << json::Serialize(v);
  ASSERT_EQ(lp->Find("tokens")->items().size(), 6u);
  ASSERT_EQ(lp->Find("token_logprobs")->items().size(), 6u);
  ASSERT_EQ(lp->Find("top_logprobs")->items().size(), 6u);
  ASSERT_EQ(lp->Find("text_offset")->items().size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; i++) {
    EXPECT_EQ(lp->Find("text_offset")->items()[i].as_int(), static_cast<int64_t>(joined.size()));
    joined += lp->Find("tokens")->items()[i].as_string();
    EXPECT_LE(lp->Find("token_logprobs")->items()[i].as_double(), 0.0);
    EXPECT_EQ(lp->Find("top_logprobs")->items()[i].members().size(), 3u);
  }
  EXPECT_EQ(joined, ch.Find("text")->as_string());
  // The mock's synthetic distribution: the produced token at probability 1/2.
  EXPECT_NEAR(lp->Find("token_logprobs")->items()[0].as_double(), -0.693147, 1e-5);

  // Streamed: the same entries, spread over the chunks.
  Choices s = ReadChoices(PostEvents(srv, "/v1/completions",
                                     R"({"model":"mock-gpt2","prompt":"Hi","max_tokens":6,"logprobs":3,"seed":2,
                                         "stream":true})"),
                          false);
  std::vector<std::string> tokens;
  for (const json::Value& chunk : s.logprobs[0]) {
    for (const json::Value& t : chunk.Find("tokens")->items()) tokens.push_back(t.as_string());
  }
  ASSERT_EQ(tokens.size(), 6u);
  for (size_t i = 0; i < 6; i++) EXPECT_EQ(tokens[i], lp->Find("tokens")->items()[i].as_string());

  // Chat: {"content":[{token, logprob, bytes, top_logprobs:[{token, logprob, bytes}]}]}.
  json::Value c = ParseJson(srv.Call("POST", "/v1/chat/completions",
                                     R"({"model":"mock-gpt2","messages":[{"role":"user","content":"Hi"}],
                                         "max_tokens":4,"logprobs":true,"top_logprobs":2})")
                                .body);
  const json::Value* content = c.Find("choices")->items()[0].Find("logprobs")->Find("content");
  ASSERT_TRUE(content && content->is_array()) << json::Serialize(c);
  ASSERT_EQ(content->items().size(), 4u);
  for (const json::Value& e : content->items()) {
    std::string bytes;
    for (const json::Value& b : e.Find("bytes")->items()) bytes += static_cast<char>(b.as_int());
    EXPECT_EQ(bytes, e.Find("token")->as_string());
    EXPECT_LE(e.Find("logprob")->as_double(), 0.0);
    ASSERT_EQ(e.Find("top_logprobs")->items().size(), 2u);
    EXPECT_EQ(e.Find("top_logprobs")->items()[0].Find("token")->as_string(), e.Find("token")->as_string());
  }
  // Streamed chat logprobs: one entry per token over the chunks.
  Choices cs = ReadChoices(PostEvents(srv, "/v1/chat/completions",
                                      R"({"model":"mock-gpt2","messages":[{"role":"user","content":"Hi"}],
                                          "max_tokens":4,"logprobs":true,"stream":true})"),
                           true);
  size_t entries = 0;
  for (const json::Value& chunk : cs.logprobs[0]) {
    for (const json::Value& e : chunk.Find("content")->items()) {
      entries++;
      EXPECT_TRUE(e.Find("top_logprobs")->items().empty());
    }
  }
  EXPECT_EQ(entries, 4u);
}

TEST(Chat, OurTokenEventsCarryLogprobAndTopWhenAsked) {
  AppServer srv;
  std::vector<sse::Event> events =
      PostEvents(srv, "/v1/stream", R"({"prompt":"Hi","max_new_tokens":3,"logprobs":2})");
  int tokens = 0;
  for (const sse::Event& e : events) {
    if (e.type != "token") continue;
    tokens++;
    json::Value t = ParseJson(e.data);
    EXPECT_NEAR(t.Find("logprob")->as_double(), -0.693147, 1e-5);
    ASSERT_EQ(t.Find("top")->items().size(), 2u);
    EXPECT_EQ(t.Find("top")->items()[0].Find("id")->as_int(), t.Find("token")->as_int());
    EXPECT_TRUE(t.Find("top")->items()[1].Find("text")->is_string());
  }
  EXPECT_EQ(tokens, 3);
  // Not asked: no such members.
  for (const sse::Event& e : PostEvents(srv, "/v1/stream", R"({"prompt":"Hi","max_new_tokens":2})")) {
    if (e.type == "token") {
      EXPECT_EQ(ParseJson(e.data).Find("logprob"), nullptr);
    }
  }
  client::Response bad = srv.Call("POST", "/v1/stream", R"({"prompt":"Hi","logprobs":21})");
  EXPECT_EQ(bad.head.status, 422);
}

TEST(Chat, ModelsSayBaseModelAndTemplate) {
  AppServer srv;
  json::Value v = ParseJson(srv.Call("GET", "/v1/models").body);
  const json::Value& m = v.Find("data")->items()[0];
  EXPECT_TRUE(m.Find("base_model")->as_bool());
  EXPECT_EQ(m.Find("chat_template")->as_string(), "plain");
}

TEST(Chat, AChatTemplateFileIsUsedAndABadOneFailsStartUp) {
  const std::string path = ::testing::TempDir() + "/chat_template_ok.txt";
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("system = \"{content}\\n\"\nuser = \"The user says: {content}\\n\"\nassistant = \"A: {content}\\n\"\n"
             "generation = \"A:\"\nstop = \"\\nQ:\"\n",
             f);
  std::fclose(f);
  {
    AppServer srv({"--chat-template", path});
    json::Value v = ParseJson(srv.Call("POST", "/v1/chat/completions",
                                       R"({"model":"mock-gpt2","messages":[{"role":"user","content":"Hi"}],
                                           "max_tokens":2})")
                                  .body);
    // "The user says: Hi\nA:" is 8 tokens (the plain template's would be 6).
    EXPECT_EQ(v.Find("usage")->Find("prompt_tokens")->as_int(), 8) << json::Serialize(v);
    EXPECT_EQ(ParseJson(srv.Call("GET", "/v1/models").body).Find("data")->items()[0].Find("chat_template")->as_string(),
              "file");
  }
  const std::string bad = ::testing::TempDir() + "/chat_template_bad.txt";
  f = std::fopen(bad.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fputs("system = \"{content}\"\nuser = \"{content\"\n", f);
  std::fclose(f);
  const char* argv[] = {"tokenwire", "serve", "--port", "0", "--backend", "mock", "--chat-template", bad.c_str()};
  app::Config cfg;
  ASSERT_TRUE(app::ParseServeFlags(8, const_cast<char**>(argv), 2, &cfg).ok());
  app::App app(cfg);
  Status s = app.Init(false);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--chat-template " + bad + ": line 2, byte 29: "), std::string::npos) << s.message();
}

TEST(Chat, ClientDisconnectCancelsEveryChoice) {
  AppServer srv({"--mock-tokens-per-s", "400"});
  ASSERT_NO_FATAL_FAILURE(ReadSixEventsAndReset(srv, "/v1/chat/completions",
                                                R"({"model":"mock-gpt2","messages":[{"role":"user","content":"x"}],
                                                    "max_tokens":5000,"n":3,"stream":true})"));
  ASSERT_TRUE(srv.WaitIdle(8000));  // 5000 tokens at 400/s would take 12.5 s
  client::Response m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("tokenwire_streams_finished_total{outcome=\"cancelled\"} 3\n"), std::string::npos)
      << m.body.substr(0, 4000);
  // The same without streaming.
  {
    client::HttpClient c;
    ASSERT_OK(c.Connect(srv.port()));
    client::Request req;
    req.method = "POST";
    req.target = "/v1/completions";
    req.body = R"({"model":"mock-gpt2","prompt":"x","max_tokens":5000,"n":2})";
    ASSERT_OK(c.SendRequest(req));
    ASSERT_TRUE(srv.WaitLive(2));
    c.Close();
  }
  ASSERT_TRUE(srv.WaitIdle(8000));
  m = srv.Call("GET", "/metrics");
  EXPECT_NE(m.body.find("tokenwire_streams_finished_total{outcome=\"cancelled\"} 5\n"), std::string::npos);
}

}  // namespace
}  // namespace tw

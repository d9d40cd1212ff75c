#include "openai/chat.h"

#include <algorithm>

#include "json/json.h"
#include "tokenizer/tokenizer.h"

namespace tw::openai {

namespace {

bool Refuse(ApiError* err, std::string param, std::string message) {
  return RefuseParam(err, 400, std::move(param), std::move(message));
}

// Params OpenAI's chat API has and this server does not implement, with why.
const char* NotImplemented(std::string_view key) {
  if (key == "tools" || key == "tool_choice" || key == "parallel_tool_calls" || key == "functions" ||
      key == "function_call") {
    return "tool and function calling is not supported: GPT-2 is a base model that was never trained to call tools";
  }
  if (key == "response_format") return "structured output (response_format) is not supported by this server";
  if (key == "audio" || key == "modalities") return "only text is supported: GPT-2 reads and writes text";
  if (key == "prediction" || key == "reasoning_effort" || key == "web_search_options") {
    return "this option is not supported by this server";
  }
  return nullptr;
}

bool ParseRole(const json::Value& v, const std::string& where, ChatRole* out, ApiError* err) {
  if (!v.is_string()) return Refuse(err, where, "'" + where + "' must be a string");
  const std::string& r = v.as_string();
  if (r == "system" || r == "developer") {
    *out = ChatRole::kSystem;
  } else if (r == "user") {
    *out = ChatRole::kUser;
  } else if (r == "assistant") {
    *out = ChatRole::kAssistant;
  } else if (r == "tool" || r == "function") {
    return Refuse(err, where, "'" + where + "' is '" + r + "': tool and function messages are not supported (no tool calling)");
  } else {
    return Refuse(err, where, "'" + where + "' is '" + r + "'; it must be system, developer, user or assistant");
  }
  return true;
}

// content: a string, or an array of text parts {"type":"text","text":…}.
bool ParseContent(const json::Value& v, const std::string& where, std::string* out, ApiError* err) {
  if (v.is_string()) {
    *out = v.as_string();
    return true;
  }
  if (!v.is_array()) return Refuse(err, where, "'" + where + "' must be a string or an array of text parts");
  for (size_t j = 0; j < v.items().size(); j++) {
    const json::Value& part = v.items()[j];
    const std::string pw = where + "[" + std::to_string(j) + "]";
    if (!part.is_object()) return Refuse(err, pw, "'" + pw + "' must be an object {\"type\":\"text\",\"text\":…}");
    const json::Value* type = part.Find("type");
    if (type == nullptr || !type->is_string()) return Refuse(err, pw + ".type", "'" + pw + ".type' must be a string");
    if (type->as_string() != "text") {
      return Refuse(err, pw + ".type",
                    "'" + pw + ".type' is '" + type->as_string() + "'; only text parts are supported (GPT-2 reads text)");
    }
    for (const auto& [key, val] : part.members()) {
      if (key == "type") continue;
      if (key != "text") return Refuse(err, pw + "." + key, "unrecognized field '" + pw + "." + key + "'");
      if (!val.is_string()) return Refuse(err, pw + ".text", "'" + pw + ".text' must be a string");
      *out += val.as_string();
    }
  }
  return true;
}

bool ParseMessages(const json::Value& v, size_t max_messages, std::vector<ChatMessage>* out, ApiError* err) {
  if (!v.is_array()) return Refuse(err, "messages", "'messages' must be an array of messages");
  if (v.items().empty()) return Refuse(err, "messages", "'messages' must hold at least one message");
  if (v.items().size() > max_messages) {
    return Refuse(err, "messages",
                  "'messages' holds " + std::to_string(v.items().size()) + " messages; at most " +
                      std::to_string(max_messages) + " are accepted (--max-chat-messages)");
  }
  for (size_t i = 0; i < v.items().size(); i++) {
    const json::Value& m = v.items()[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return Refuse(err, where, "'" + where + "' must be an object with 'role' and 'content'");
    ChatMessage msg;
    bool has_role = false, has_content = false;
    for (const auto& [key, val] : m.members()) {
      const std::string field = where + "." + key;
      if (key == "role") {
        if (!ParseRole(val, field, &msg.role, err)) return false;
        has_role = true;
      } else if (key == "content") {
        if (!ParseContent(val, field, &msg.content, err)) return false;
        has_content = true;
      } else if (key == "name") {
        // A participant's name: accepted and not rendered (the template has no place for it).
        if (!val.is_string()) return Refuse(err, field, "'" + field + "' must be a string");
      } else if (key == "tool_calls" || key == "function_call" || key == "tool_call_id" || key == "refusal" ||
                 key == "audio") {
        return Refuse(err, field, "'" + field + "' is not supported by this server (no tool calling, text only)");
      } else {
        return Refuse(err, field, "unrecognized field '" + field + "'");
      }
    }
    if (!has_role) return Refuse(err, where + ".role", "'" + where + ".role' is missing");
    if (!has_content) return Refuse(err, where + ".content", "'" + where + ".content' is missing");
    out->push_back(std::move(msg));
  }
  return true;
}

}  // namespace

bool ParseChatRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer, const service::RequestBounds& bounds,
                      std::string_view model_id, const ChatTemplate& chat_template, ChatRequest* out,
                      ApiError* err) {
  json::Value v;
  if (!ParseOpenAiBody(body, bounds, &v, err)) return false;
  ChatRequest& r = *out;
  r = ChatRequest();
  if (!CheckModel(v, model_id, &r.model, err)) return false;

  bool has_messages = false;
  const json::Value* stream_options = nullptr;
  const json::Value* top_logprobs = nullptr;
  bool logprobs = false;
  for (const auto& [key, val] : v.members()) {
    bool ok = true;
    if (key == "model") {
      continue;
    } else if (ParseSharedParam(key, val, &r.shared, &ok, err)) {
      if (!ok) return false;
    } else if (key == "messages") {
      if (!ParseMessages(val, bounds.max_chat_messages, &r.messages, err)) return false;
      has_messages = true;
    } else if (key == "max_tokens" || key == "max_completion_tokens") {
      if (val.is_null()) continue;
      if (!val.is_int()) return Refuse(err, key, "'" + key + "' must be an integer");
      if (val.as_int() < 1 || val.as_int() > bounds.max_new_tokens) {
        return Refuse(err, key,
                      "'" + key + "' is " + std::to_string(val.as_int()) + "; it must be 1.." +
                          std::to_string(bounds.max_new_tokens));
      }
      r.max_tokens = static_cast<int>(val.as_int());
    } else if (key == "stop") {
      if (!ParseStopParam(val, bounds, &r.stop, err)) return false;
    } else if (key == "stream_options") {
      stream_options = &val;
    } else if (key == "logprobs") {
      if (val.is_null()) continue;
      if (!val.is_bool()) return Refuse(err, key, "'logprobs' must be a boolean");
      logprobs = val.as_bool();
    } else if (key == "top_logprobs") {
      if (val.is_null()) continue;
      if (!val.is_int()) return Refuse(err, key, "'top_logprobs' must be an integer");
      if (val.as_int() < 0 || val.as_int() > kMaxLogprobs) {
        return Refuse(err, key, "'top_logprobs' is " + std::to_string(val.as_int()) + "; it must be 0.." +
                                    std::to_string(kMaxLogprobs));
      }
      top_logprobs = &val;
    } else if (const char* why = NotImplemented(key)) {
      if (val.is_null()) continue;
      return Refuse(err, key, "'" + key + "': " + why);
    } else {
      return Refuse(err, key, "unrecognized request argument supplied: '" + key + "'");
    }
  }
  if (!has_messages) return Refuse(err, "messages", "you must provide 'messages'");
  if (top_logprobs != nullptr && !logprobs) {
    return Refuse(err, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  if (logprobs) r.logprobs = top_logprobs != nullptr ? static_cast<int>(top_logprobs->as_int()) : 0;
  if (!ParseStreamOptionsParam(stream_options, r.shared.stream, &r.include_usage, err)) return false;
  // Message text is plain text: "<|endoftext|>" in it is not the special
  // token (the template's own text is not either).
  r.prompt_tokens = tokenizer.Encode(chat_template.Render(r.messages));
  std::vector<ChatMessage>().swap(r.messages);  // rendered: freed here, on the prep thread
  if (r.prompt_tokens.empty()) r.prompt_tokens.push_back(tokenizer.end_of_text_id());
  const int room = bounds.context_length - static_cast<int>(r.prompt_tokens.size());
  if (r.max_tokens == 0) r.max_tokens = std::max(1, std::min(bounds.max_new_tokens, room));
  if (!CheckContext(r.prompt_tokens.size(), r.max_tokens, bounds, err)) {
    err->param = "messages";
    return false;
  }
  for (const std::string& s : chat_template.stop()) {
    if (std::find(r.stop.begin(), r.stop.end(), s) == r.stop.end()) r.stop.push_back(s);
  }
  return true;
}

backend::GenerationRequest ChatToGeneration(const ChatRequest& req) {
  backend::GenerationRequest g;
  g.prompt_tokens = req.prompt_tokens;
  g.max_new_tokens = req.max_tokens;
  g.temperature = static_cast<float>(req.shared.temperature);
  g.top_p = static_cast<float>(req.shared.top_p);
  g.has_seed = req.shared.has_seed;
  g.seed = static_cast<uint64_t>(req.shared.seed);
  g.stop = req.stop;
  g.logprobs = req.logprobs;
  return g;
}

}  // namespace tw::openai

#include "openai/chat.h"

#include <algorithm>

#include "json/json.h"
#include "tokenizer/tokenizer.h"

namespace tw::openai {

namespace {

bool Refuse(ApiError* err, std::string param, std::string message) {
  return RefuseParam(err, 400, std::move(param), std::move(message));
}

bool WrongType(ApiError* err, const std::string& field, std::string_view want, const json::Value& got) {
  return service::WrongType(err, field, want, got);
}

bool ParseRole(const json::Value& v, const std::string& where, ChatRole* out, ApiError* err) {
  if (!v.is_string()) return WrongType(err, where, "a string", v);
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
  if (!v.is_array()) return WrongType(err, where, "a string or an array of text parts", v);
  for (size_t j = 0; j < v.items().size(); j++) {
    const json::Value& part = v.items()[j];
    const std::string pw = where + "[" + std::to_string(j) + "]";
    if (!part.is_object()) return WrongType(err, pw, "an object {\"type\":\"text\",\"text\":…}", part);
    const json::Value* type = part.Find("type");
    if (type == nullptr) return Refuse(err, pw + ".type", "'" + pw + ".type' is missing");
    if (!type->is_string()) return WrongType(err, pw + ".type", "a string", *type);
    if (type->as_string() != "text") {
      return Refuse(err, pw + ".type",
                    "'" + pw + ".type' is '" + type->as_string() + "'; only text parts are supported (GPT-2 reads text)");
    }
    for (const auto& [key, val] : part.members()) {
      if (key == "type") continue;
      if (key != "text") return Refuse(err, pw + "." + key, "unrecognized field '" + pw + "." + key + "'");
      if (!val.is_string()) return WrongType(err, pw + ".text", "a string", val);
      *out += val.as_string();
    }
  }
  return true;
}

bool ParseMessages(const json::Value& v, size_t max_messages, std::vector<ChatMessage>* out, ApiError* err) {
  if (!v.is_array()) return WrongType(err, "messages", "an array of messages", v);
  if (v.items().empty()) return Refuse(err, "messages", "'messages' must hold at least one message");
  if (v.items().size() > max_messages) {
    return service::OutOfRange(err, "messages", std::to_string(v.items().size()) + " messages",
                               "at most " + std::to_string(max_messages) + " (--max-chat-messages)");
  }
  for (size_t i = 0; i < v.items().size(); i++) {
    const json::Value& m = v.items()[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return WrongType(err, where, "an object with 'role' and 'content'", m);
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
        if (!val.is_string()) return WrongType(err, field, "a string", val);
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

namespace {

bool ParseChat(std::string_view body, const tokenizer::Tokenizer& tokenizer, const service::RequestBounds& bounds,
               std::string_view model_id, const ChatTemplate& chat_template, ChatRequest* out, ApiError* err) {
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
    if (key == "model") continue;
    if (service::FieldRead f = ParseSharedParam(key, val, bounds, &r.shared, err); f != service::FieldRead::kNotMine) {
      if (f == service::FieldRead::kRefused) return false;
      continue;
    }
    int64_t i = 0;
    if (key == "messages") {
      if (!ParseMessages(val, bounds.max_chat_messages, &r.messages, err)) return false;
      has_messages = true;
    } else if (key == "stop") {
      if (!ParseStopParam(val, bounds, &r.stop, err)) return false;
    } else if (key == "stream_options") {
      stream_options = &val;
    } else if (key == "logprobs") {
      if (val.is_null()) continue;
      if (!service::ReadBool(val, key, &logprobs, err)) return false;
    } else if (key == "top_logprobs") {
      if (val.is_null()) continue;
      if (!service::ReadInt(val, key, 0, kMaxLogprobs, &i, err, "alternatives per token")) return false;
      top_logprobs = &val;
    } else if (!OtherParam(key, val, bounds, &r.shared.unknown_fields, err)) {
      return false;
    }
  }
  if (!has_messages) return Refuse(err, "messages", "you must provide 'messages'");
  if (top_logprobs != nullptr && !logprobs) {
    return Refuse(err, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
  }
  if (logprobs) r.logprobs = top_logprobs != nullptr ? static_cast<int>(top_logprobs->as_int()) : 0;
  if (!ParseStreamOptionsParam(stream_options, r.shared.stream, &r.include_usage, err)) return false;
  if (!CheckPromptLogprobsParam(r.shared.controls, r.shared.stream, err)) return false;
  // Message text is plain text: "<|endoftext|>" in it is not the special
  // token (the template's own text is not either).
  r.prompt_tokens = tokenizer.Encode(chat_template.Render(r.messages));
  std::vector<ChatMessage>().swap(r.messages);  // rendered: freed here, on the prep thread
  if (r.prompt_tokens.empty()) r.prompt_tokens.push_back(tokenizer.end_of_text_id());
  const int room = bounds.context_length - static_cast<int>(r.prompt_tokens.size());
  r.max_tokens = r.shared.max_tokens;
  if (r.max_tokens == 0) r.max_tokens = std::max(1, std::min(bounds.max_new_tokens, room));
  if (!CheckContext(r.prompt_tokens.size(), r.max_tokens, bounds, err)) {
    err->param = "messages";
    return false;
  }
  r.shared.controls.max_new_tokens = r.max_tokens;
  if (!service::CheckMinTokens(r.shared.controls, "max_tokens", err)) return false;
  for (const std::string& s : chat_template.stop()) {
    if (std::find(r.stop.begin(), r.stop.end(), s) == r.stop.end()) r.stop.push_back(s);
  }
  return true;
}

}  // namespace

bool ParseChatRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer, const service::RequestBounds& bounds,
                      std::string_view model_id, const ChatTemplate& chat_template, ChatRequest* out,
                      ApiError* err) {
  if (ParseChat(body, tokenizer, bounds, model_id, chat_template, out, err)) return true;
  *err = ForOpenAi(std::move(*err));  // a value out of range is OpenAI's 400 too
  return false;
}

backend::GenerationRequest ChatToGeneration(const ChatRequest& req) {
  backend::GenerationRequest g = req.shared.controls;
  g.prompt_tokens = req.prompt_tokens;
  g.max_new_tokens = req.max_tokens;
  g.temperature = service::EffectiveTemperature(req.shared.temperature);
  g.top_p = static_cast<float>(req.shared.top_p);
  g.has_seed = req.shared.has_seed;
  g.seed = static_cast<uint64_t>(req.shared.seed);
  g.stop = req.stop;
  g.logprobs = req.logprobs;
  return g;
}

}  // namespace tw::openai

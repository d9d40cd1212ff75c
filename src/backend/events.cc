#include "backend/events.h"

#include "json/json.h"

namespace tw::backend {

std::string StartEventData(std::string_view stream_id, std::string_view model, int prompt_tokens) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("stream");
  w.String(stream_id);
  w.Key("model");
  w.String(model);
  w.Key("prompt_tokens");
  w.Int(prompt_tokens);
  w.EndObject();
  return out;
}

std::string TokenEventData(int index, int32_t token, std::string_view text) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("index");
  w.Int(index);
  w.Key("token");
  w.Int(token);
  w.Key("text");
  w.String(text);
  w.EndObject();
  return out;
}

std::string DoneEventData(std::string_view finish_reason, int prompt_tokens, int completion_tokens) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("finish_reason");
  w.String(finish_reason);
  w.Key("usage");
  w.BeginObject();
  w.Key("prompt_tokens");
  w.Int(prompt_tokens);
  w.Key("completion_tokens");
  w.Int(completion_tokens);
  w.EndObject();
  w.EndObject();
  return out;
}

std::string ErrorEventData(std::string_view type, std::string_view message, bool retryable) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("type");
  w.String(type);
  w.Key("message");
  w.String(message);
  w.Key("retryable");
  w.Bool(retryable);
  w.EndObject();
  return out;
}

}  // namespace tw::backend

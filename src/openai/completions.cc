#include "openai/completions.h"

#include <algorithm>

#include "json/json.h"
#include "tokenizer/tokenizer.h"

namespace tw::openai {

namespace {

bool Refuse(ApiError* err, int status, std::string param, std::string message,
            ErrorCode code = ErrorCode::kInvalidRequest) {
  return RefuseParam(err, status, std::move(param), std::move(message), code);
}

// `where` is the offending value ("stop[2]") inside the top-level `param`.
bool WrongType(ApiError* err, std::string_view param, std::string_view want,
               std::string_view where = {}) {
  std::string what(where.empty() ? param : where);
  return Refuse(err, 400, std::string(param), "'" + what + "' must be " + std::string(want));
}

// A param we accept only at its default value (which changes nothing).
bool Unsupported(ApiError* err, std::string_view param, std::string_view allowed) {
  return Refuse(err, 400, std::string(param),
                "'" + std::string(param) + "' is not supported by this server; omit it or send " +
                    std::string(allowed));
}

bool TokenId(const json::Value& t, const service::RequestBounds& bounds, const std::string& where,
             std::vector<int32_t>* out, ApiError* err) {
  if (!t.is_int()) return WrongType(err, "prompt", "an integer token id", where);
  if (t.as_int() < 0 || t.as_int() >= bounds.vocab_size) {
    return Refuse(err, 400, "prompt",
                  where + " = " + std::to_string(t.as_int()) + " is not a token id (0.." +
                      std::to_string(bounds.vocab_size - 1) + ")");
  }
  out->push_back(static_cast<int32_t>(t.as_int()));
  return true;
}

// prompt: a string, an array of one string, an array of token ids, or an
// array of one array of token ids. "" is OpenAI's default prompt,
// "<|endoftext|>" (the model generates as if from the start of a document).
bool ParsePrompt(const json::Value& v, const tokenizer::Tokenizer& tokenizer,
                 const service::RequestBounds& bounds, std::vector<int32_t>* out, ApiError* err) {
  out->clear();
  const json::Value* text = nullptr;
  if (v.is_string()) {
    text = &v;
  } else if (v.is_array()) {
    const auto& items = v.items();
    if (items.empty()) return Refuse(err, 400, "prompt", "'prompt' must not be an empty array");
    if (items[0].is_string() || items[0].is_array()) {
      if (items.size() > 1) {
        return Refuse(err, 400, "prompt",
                      "this server takes one prompt per request; 'prompt' holds " +
                          std::to_string(items.size()));
      }
      if (items[0].is_string()) {
        text = &items[0];
      } else {
        const auto& ids = items[0].items();
        if (ids.empty()) return Refuse(err, 400, "prompt", "'prompt[0]' must not be empty");
        for (size_t i = 0; i < ids.size(); i++) {
          if (!TokenId(ids[i], bounds, "prompt[0][" + std::to_string(i) + "]", out, err)) return false;
        }
      }
    } else {
      for (size_t i = 0; i < items.size(); i++) {
        if (!TokenId(items[i], bounds, "prompt[" + std::to_string(i) + "]", out, err)) return false;
      }
    }
  } else {
    return WrongType(err, "prompt", "a string, an array of one string or an array of token ids");
  }
  if (text != nullptr) {
    *out = tokenizer.EncodeWithSpecial(text->as_string());
    if (out->empty()) out->push_back(tokenizer.end_of_text_id());
  }
  return true;
}

bool ParseStop(const json::Value& v, const service::RequestBounds& bounds, std::vector<std::string>* out,
               ApiError* err) {
  out->clear();
  std::vector<const json::Value*> items;
  if (!service::StopValues(v, &items)) return WrongType(err, "stop", "a string or an array of strings");
  if (items.size() > bounds.max_stop_strings) {
    return Refuse(err, 400, "stop",
                  "'stop' holds " + std::to_string(items.size()) + " strings; at most " +
                      std::to_string(bounds.max_stop_strings) + " are allowed");
  }
  for (size_t i = 0; i < items.size(); i++) {
    const json::Value* it = items[i];
    std::string where = v.is_array() ? "stop[" + std::to_string(i) + "]" : "stop";
    if (!it->is_string()) return WrongType(err, "stop", "a string", where);
    if (it->as_string().empty() || it->as_string().size() > bounds.max_stop_bytes) {
      return Refuse(err, 400, "stop",
                    "'" + where + "' is " + std::to_string(it->as_string().size()) +
                        " bytes; each stop string must be 1.." +
                        std::to_string(bounds.max_stop_bytes) + " bytes");
    }
    out->push_back(it->as_string());
  }
  return true;
}

bool ParseStreamOptions(const json::Value& v, bool* include_usage, ApiError* err) {
  if (v.is_null()) return true;
  if (!v.is_object()) return WrongType(err, "stream_options", "an object");
  for (const auto& [key, val] : v.members()) {
    if (key == "include_usage") {
      if (val.is_null()) continue;
      if (!val.is_bool()) return WrongType(err, "stream_options.include_usage", "a boolean");
      *include_usage = val.as_bool();
    } else {
      return Refuse(err, 400, "stream_options." + key,
                    "unrecognized stream option 'stream_options." + key + "'");
    }
  }
  return true;
}

}  // namespace

bool RefuseParam(ApiError* err, int status, std::string param, std::string message, ErrorCode code) {
  *err = ApiError::Make(code, status, std::move(message));
  err->param = std::move(param);
  return false;
}

bool ParseOpenAiBody(std::string_view body, const service::RequestBounds& bounds, json::Value* out, ApiError* err) {
  if (!service::ParseRequestBody(body, bounds, out, err)) {
    // OpenAI's error shape has no offset field: the message names the byte.
    if (err->code == ErrorCode::kInvalidJson) {
      err->message = "the body is not valid JSON (byte " + std::to_string(err->offset) + "): " + err->message;
    }
    return false;
  }
  if (!out->is_object()) return Refuse(err, 400, "", "the body must be a JSON object");
  return true;
}

bool CheckModel(const json::Value& v, std::string_view model_id, std::string* out, ApiError* err) {
  // A request for another model is answered 404 whatever else it holds (as
  // OpenAI and vLLM do), so the model is checked first.
  const json::Value* model = v.Find("model");
  if (model == nullptr || model->is_null()) {
    return Refuse(err, 400, "model", "you must provide a model parameter ('" + std::string(model_id) + "')");
  }
  if (!model->is_string()) return WrongType(err, "model", "a string");
  if (model->as_string() != model_id) {
    return Refuse(err, 404, "model",
                  "the model '" + model->as_string() + "' does not exist; this server serves '" +
                      std::string(model_id) + "'",
                  ErrorCode::kModelNotFound);
  }
  *out = model->as_string();
  return true;
}

bool ParseStopParam(const json::Value& v, const service::RequestBounds& bounds, std::vector<std::string>* out,
                    ApiError* err) {
  return ParseStop(v, bounds, out, err);
}

bool ParseStreamOptionsParam(const json::Value* v, bool stream, bool* include_usage, ApiError* err) {
  if (v == nullptr || v->is_null()) return true;
  if (!stream) return Refuse(err, 400, "stream_options", "'stream_options' is only allowed when 'stream' is true");
  return ParseStreamOptions(*v, include_usage, err);
}

bool CheckContext(size_t prompt_tokens, int max_tokens, const service::RequestBounds& bounds, ApiError* err) {
  int64_t total = static_cast<int64_t>(prompt_tokens) + max_tokens;
  if (total <= bounds.context_length) return true;
  return Refuse(err, 400, "prompt",
                "this model's maximum context length is " + std::to_string(bounds.context_length) +
                    " tokens, however you requested " + std::to_string(total) + " tokens (" +
                    std::to_string(prompt_tokens) + " in your prompt; " + std::to_string(max_tokens) +
                    " for the completion). Please reduce your prompt or max_tokens.",
                ErrorCode::kPromptTooLong);
}

bool ParseSharedParam(const std::string& key, const json::Value& val, SharedParams* r, bool* ok, ApiError* err) {
  *ok = true;
  if (key == "temperature") {
    if (val.is_null()) return true;
    if (!val.is_number()) return *ok = WrongType(err, key, "a number");
    if (!(val.as_double() >= 0.0 && val.as_double() <= 2.0)) {
      return *ok = Refuse(err, 400, key, "'temperature' must be between 0 and 2");
    }
    r->temperature = val.as_double();
  } else if (key == "top_p") {
    if (val.is_null()) return true;
    if (!val.is_number()) return *ok = WrongType(err, key, "a number");
    if (!(val.as_double() > 0.0 && val.as_double() <= 1.0)) {
      return *ok = Refuse(err, 400, key, "'top_p' must be greater than 0 and at most 1");
    }
    r->top_p = val.as_double();
  } else if (key == "seed") {
    if (val.is_null()) return true;
    if (!val.is_int()) return *ok = WrongType(err, key, "an integer");
    if (val.as_int() < 0) return *ok = Refuse(err, 400, key, "'seed' must be non-negative");
    r->seed = val.as_int();
    r->has_seed = true;
  } else if (key == "stream") {
    if (val.is_null()) return true;
    if (!val.is_bool()) return *ok = WrongType(err, key, "a boolean");
    r->stream = val.as_bool();
  } else if (key == "n") {
    if (val.is_null()) return true;
    if (!val.is_int()) return *ok = WrongType(err, key, "an integer");
    if (val.as_int() < 1 || val.as_int() > kMaxChoices) {
      return *ok = Refuse(err, 400, key,
                          "'n' is " + std::to_string(val.as_int()) + "; it must be 1.." +
                              std::to_string(kMaxChoices) + " (choices per request on this server)");
    }
    r->n = static_cast<int>(val.as_int());
  } else if (key == "presence_penalty" || key == "frequency_penalty") {
    if (val.is_null() || (val.is_number() && val.as_double() == 0.0)) return true;
    return *ok = Unsupported(err, key, "0");
  } else if (key == "logit_bias") {
    if (val.is_null() || (val.is_object() && val.members().empty())) return true;
    return *ok = Unsupported(err, key, "{}");
  } else if (key == "user") {
    // An end-user id for the caller's own tracking: it changes nothing.
    if (val.is_null() || val.is_string()) return true;
    return *ok = WrongType(err, key, "a string");
  } else {
    return false;
  }
  return true;
}

bool ParseCompletionRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const service::RequestBounds& bounds, std::string_view model_id,
                            CompletionRequest* out, ApiError* err) {
  json::Value v;
  if (!ParseOpenAiBody(body, bounds, &v, err)) return false;
  CompletionRequest& r = *out;
  r = CompletionRequest();
  r.max_tokens = std::min(kOpenAiDefaultMaxTokens, bounds.max_new_tokens);
  if (!CheckModel(v, model_id, &r.model, err)) return false;

  bool has_prompt = false;
  const json::Value* stream_options = nullptr;
  SharedParams shared;
  for (const auto& [key, val] : v.members()) {
    bool ok = true;
    if (key == "model") {
      continue;
    } else if (ParseSharedParam(key, val, &shared, &ok, err)) {
      if (!ok) return false;
    } else if (key == "prompt") {
      if (val.is_null()) continue;
      if (!ParsePrompt(val, tokenizer, bounds, &r.prompt_tokens, err)) return false;
      has_prompt = true;
    } else if (key == "max_tokens") {
      if (val.is_null()) continue;
      if (!val.is_int()) return WrongType(err, key, "an integer");
      if (val.as_int() < 1 || val.as_int() > bounds.max_new_tokens) {
        return Refuse(err, 400, key,
                      "'max_tokens' is " + std::to_string(val.as_int()) + "; it must be 1.." +
                          std::to_string(bounds.max_new_tokens));
      }
      r.max_tokens = static_cast<int>(val.as_int());
    } else if (key == "stop") {
      if (!ParseStop(val, bounds, &r.stop, err)) return false;
    } else if (key == "stream_options") {
      stream_options = &val;
    } else if (key == "logprobs") {
      if (val.is_null()) continue;
      if (!val.is_int()) return WrongType(err, key, "an integer (the alternatives per token, 0..20) or null");
      if (val.as_int() < 0 || val.as_int() > kMaxLogprobs) {
        return Refuse(err, 400, key,
                      "'logprobs' is " + std::to_string(val.as_int()) + "; it must be 0.." +
                          std::to_string(kMaxLogprobs));
      }
      r.logprobs = static_cast<int>(val.as_int());
    } else if (key == "best_of") {
      if (val.is_null() || (val.is_int() && val.as_int() == 1)) continue;
      return Unsupported(err, key, "1 (use 'n' for several choices)");
    } else if (key == "echo") {
      if (val.is_null() || (val.is_bool() && !val.as_bool())) continue;
      return Unsupported(err, key, "false");
    } else if (key == "suffix") {
      if (val.is_null() || (val.is_string() && val.as_string().empty())) continue;
      return Unsupported(err, key, "null");
    } else {
      return Refuse(err, 400, key, "unrecognized request argument supplied: '" + key + "'");
    }
  }
  r.temperature = shared.temperature;
  r.top_p = shared.top_p;
  r.has_seed = shared.has_seed;
  r.seed = shared.seed;
  r.stream = shared.stream;
  r.n = shared.n;
  if (!ParseStreamOptionsParam(stream_options, r.stream, &r.include_usage, err)) return false;
  if (!has_prompt) return Refuse(err, 400, "prompt", "you must provide a 'prompt'");
  return CheckContext(r.prompt_tokens.size(), r.max_tokens, bounds, err);
}

backend::GenerationRequest ToGeneration(const CompletionRequest& req) {
  backend::GenerationRequest g;
  g.prompt_tokens = req.prompt_tokens;
  g.max_new_tokens = req.max_tokens;
  g.temperature = static_cast<float>(req.temperature);
  g.top_p = static_cast<float>(req.top_p);
  g.has_seed = req.has_seed;
  g.seed = static_cast<uint64_t>(req.seed);
  g.stop = req.stop;
  g.logprobs = req.logprobs;
  return g;
}

ApiError ForOpenAi(ApiError e) {
  // OpenAI answers every invalid value with 400; we say 422 for some.
  if (e.http_status == 422) e.http_status = 400;
  if (e.code == ErrorCode::kPromptTooLong && e.param.empty()) e.param = "prompt";
  return e;
}

std::string ModelJson(std::string_view id, int64_t created, std::string_view chat_template) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("id");
  w.String(id);
  w.Key("object");
  w.String("model");
  w.Key("created");
  w.Int(created);
  w.Key("owned_by");
  w.String("tokenwire");
  // GPT-2 is a base model: it continues text, it was never tuned to follow
  // instructions; chat goes through a plain template.
  w.Key("base_model");
  w.Bool(true);
  w.Key("chat_template");
  w.String(chat_template);
  w.EndObject();
  return out;
}

std::string ModelListJson(std::string_view id, int64_t created, std::string_view chat_template) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("object");
  w.String("list");
  w.Key("data");
  w.BeginArray();
  w.Raw(ModelJson(id, created, chat_template));
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace tw::openai

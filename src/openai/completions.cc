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
bool WrongType(ApiError* err, std::string_view param, std::string_view want, const json::Value& got,
               std::string_view where = {}) {
  service::WrongType(err, where.empty() ? param : where, want, got);
  err->param = std::string(param);
  return false;
}

// A param we know and do not implement, refused with why.
bool Unsupported(ApiError* err, std::string_view param, std::string_view why) {
  return Refuse(err, 400, std::string(param), std::string(param) + ": " + std::string(why));
}

bool TokenId(const json::Value& t, const service::RequestBounds& bounds, const std::string& where,
             std::vector<int32_t>* out, ApiError* err) {
  int32_t id = 0;
  if (!service::ReadTokenId(t, where, bounds, &id, err)) {
    err->param = "prompt";  // the item is named in the message
    return false;
  }
  out->push_back(id);
  return true;
}

// One prompt: text (tokenized; "" is OpenAI's default prompt,
// "<|endoftext|>": the model generates as if from the start of a
// document), or a non-empty array of token ids.
bool OnePrompt(const json::Value& v, const std::string& where, const tokenizer::Tokenizer& tokenizer,
               const service::RequestBounds& bounds, std::vector<int32_t>* out, ApiError* err) {
  if (v.is_string()) {
    *out = tokenizer.EncodeWithSpecial(v.as_string());
    if (out->empty()) out->push_back(tokenizer.end_of_text_id());
    return true;
  }
  if (!v.is_array()) return WrongType(err, "prompt", "a string or an array of token ids", v, where);
  if (v.items().empty()) return Refuse(err, 400, "prompt", "'" + where + "' must not be empty");
  for (size_t i = 0; i < v.items().size(); i++) {
    if (!TokenId(v.items()[i], bounds, where + "[" + std::to_string(i) + "]", out, err)) return false;
  }
  return true;
}

// prompt: a string, an array of token ids (one prompt each), or an array of
// prompts (strings, or arrays of token ids), each answered with n choices.
bool ParsePrompt(const json::Value& v, const tokenizer::Tokenizer& tokenizer,
                 const service::RequestBounds& bounds, std::vector<std::vector<int32_t>>* out, ApiError* err) {
  out->clear();
  if (!v.is_array() || v.items().empty() || !(v.items()[0].is_string() || v.items()[0].is_array())) {
    if (!v.is_string() && !v.is_array()) {
      return WrongType(err, "prompt", "a string, an array of token ids or an array of prompts", v);
    }
    if (v.is_array() && v.items().empty()) return Refuse(err, 400, "prompt", "'prompt' must not be an empty array");
    out->emplace_back();
    return OnePrompt(v, "prompt", tokenizer, bounds, &out->back(), err);
  }
  const auto& items = v.items();
  if (items.size() > static_cast<size_t>(kMaxChoices)) {
    return service::OutOfRange(err, "prompt", std::to_string(items.size()) + " prompts",
                               "at most " + std::to_string(kMaxChoices) + " (choices per request on this server)");
  }
  for (size_t p = 0; p < items.size(); p++) {
    const std::string where = "prompt[" + std::to_string(p) + "]";
    if (!items[p].is_string() && !items[p].is_array()) {
      return WrongType(err, "prompt", "a string or an array of token ids", items[p], where);
    }
    out->emplace_back();
    if (!OnePrompt(items[p], where, tokenizer, bounds, &out->back(), err)) return false;
  }
  return true;
}

bool ParseStreamOptions(const json::Value& v, bool* include_usage, ApiError* err) {
  if (v.is_null()) return true;
  if (!v.is_object()) return WrongType(err, "stream_options", "an object", v);
  for (const auto& [key, val] : v.members()) {
    if (key == "include_usage") {
      if (val.is_null()) continue;
      if (!val.is_bool()) return WrongType(err, "stream_options.include_usage", "a boolean", val);
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
  if (!model->is_string()) return WrongType(err, "model", "a string", *model);
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
  return service::ReadStop(v, bounds, out, err);
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

service::FieldRead ParseSharedParam(const std::string& key, const json::Value& val,
                                    const service::RequestBounds& bounds, SharedParams* r, ApiError* err) {
  using service::FieldRead;
  if (service::FieldRead f = service::ReadSamplingField(key, val, bounds, &r->controls, err);
      f != FieldRead::kNotMine) {
    return f;
  }
  auto done = [](bool ok) { return ok ? FieldRead::kRead : FieldRead::kRefused; };
  int64_t i = 0;
  if (key == "temperature") {
    if (val.is_null()) return FieldRead::kRead;
    return done(service::ReadNumber(val, key, 0.0, 2.0, false, &r->temperature, err));
  }
  if (key == "top_p") {
    if (val.is_null()) return FieldRead::kRead;
    return done(service::ReadNumber(val, key, 0.0, 1.0, true, &r->top_p, err));
  }
  if (key == "seed") {
    if (val.is_null()) return FieldRead::kRead;
    if (!service::ReadInt(val, key, 0, INT64_MAX, &r->seed, err)) return FieldRead::kRefused;
    r->has_seed = true;
    return FieldRead::kRead;
  }
  if (key == "stream") {
    if (val.is_null()) return FieldRead::kRead;
    return done(service::ReadBool(val, key, &r->stream, err));
  }
  if (key == "n") {
    if (val.is_null()) return FieldRead::kRead;
    if (!service::ReadInt(val, key, 1, kMaxChoices, &i, err, "choices per request on this server")) {
      return FieldRead::kRefused;
    }
    r->n = static_cast<int>(i);
    return FieldRead::kRead;
  }
  if (key == "prompt_logprobs") {
    // vLLM's: the prompt tokens' log-probabilities (-1, its whole vocabulary, is not offered).
    if (val.is_null()) return FieldRead::kRead;
    if (!service::ReadInt(val, key, 0, kMaxLogprobs, &i, err, "alternatives per prompt token")) {
      return FieldRead::kRefused;
    }
    r->controls.prompt_logprobs = static_cast<int>(i);
    return FieldRead::kRead;
  }
  if (key == "max_tokens" || key == "max_completion_tokens") {
    // Two names of one bound (chat renamed it): both given must agree, so
    // the answer never depends on the order of the keys.
    if (val.is_null()) return FieldRead::kRead;
    if (!service::ReadInt(val, key, 1, bounds.max_new_tokens, &i, err, "--max-new-tokens")) {
      return FieldRead::kRefused;
    }
    if (r->max_tokens != 0 && r->max_tokens != i) {
      const bool first = key == "max_tokens";
      const int64_t max_tokens = first ? i : r->max_tokens;
      const int64_t max_completion_tokens = first ? r->max_tokens : i;
      Refuse(err, 400, "max_tokens",
             "max_tokens (" + std::to_string(max_tokens) + ") and max_completion_tokens (" +
                 std::to_string(max_completion_tokens) + ") differ; give one of them, or both equal");
      return FieldRead::kRefused;
    }
    r->max_tokens = static_cast<int>(i);
    return FieldRead::kRead;
  }
  return FieldRead::kNotMine;
}

namespace {

// Params this server knows and does not implement: refused (unless null)
// with why, never silently ignored, because each would change the answer.
struct KnownParam {
  const char* name;
  const char* why;
};
constexpr const char* kNoTools =
    "tool and function calling is not supported: GPT-2 is a base model that was never trained to call tools";
const KnownParam kUnsupportedParams[] = {
    {"tools", kNoTools},
    {"tool_choice", kNoTools},
    {"functions", kNoTools},
    {"function_call", kNoTools},
    {"audio", "only text is supported: GPT-2 reads and writes text"},
    {"prediction", "predicted outputs are not supported by this server"},
    {"reasoning_effort", "GPT-2 is not a reasoning model"},
    {"verbosity", "GPT-2 is not a reasoning model; bound the answer with max_tokens"},
    {"web_search_options", "web search is not supported by this server"},
    {"allowed_token_ids", "restricting the vocabulary is not supported yet; logit_bias -100 excludes a token"},
    {"bad_words", "banned words are not supported yet; logit_bias -100 excludes a token"},
};
// Params accepted and ignored: each changes nothing this server does.
const KnownParam kIgnoredParams[] = {
    {"user", "an end-user id for the caller's own tracking"},
    {"store", "OpenAI keeps completions for its dashboard; this server stores none"},
    {"metadata", "tags for stored completions; none are stored"},
    {"service_tier", "a billing tier; this server has one"},
    {"parallel_tool_calls", "matters only with tools, which are refused"},
    {"chat_template_kwargs", "variables for a Jinja chat template; ours has none"},
    {"prompt_cache_key", "a cache hint; our prefix cache finds shared prompts by itself"},
    {"safety_identifier", "an end-user id for OpenAI's abuse checks, like user"},
};

}  // namespace

bool OtherParam(const std::string& key, const json::Value& val, const service::RequestBounds& bounds,
                std::vector<std::string>* unknown, ApiError* err) {
  for (const KnownParam& p : kUnsupportedParams) {
    if (key != p.name) continue;
    return val.is_null() || Unsupported(err, key, p.why);
  }
  if (key == "modalities") {
    // ["text"] is the default and all GPT-2 writes.
    if (val.is_null() || (val.is_array() && val.items().size() == 1 && val.items()[0].is_string() &&
                          val.items()[0].as_string() == "text")) {
      return true;
    }
    return Unsupported(err, key, "only [\"text\"] is supported: GPT-2 reads and writes text");
  }
  if (key == "use_beam_search" || key == "include_stop_str_in_output") {
    // vLLM's; false is what this server does.
    if (val.is_null() || (val.is_bool() && !val.as_bool())) return true;
    return Unsupported(err, key,
                       key == "use_beam_search" ? "beam search is not supported; send false or omit it"
                                                : "stop strings are never included in the output; send false or omit it");
  }
  if (key == "user" && !val.is_null() && !val.is_string()) return WrongType(err, key, "a string", val);
  for (const KnownParam& p : kIgnoredParams) {
    if (key == p.name) return true;
  }
  if (bounds.strict_request_fields) {
    return Refuse(err, 400, key,
                  "unrecognized request argument supplied: '" + key +
                      "' (this server refuses fields it does not know: --strict-request-fields)");
  }
  unknown->push_back(key);
  return true;
}

namespace {

bool ParseCompletion(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                     const service::RequestBounds& bounds, std::string_view model_id, CompletionRequest* out,
                     ApiError* err) {
  json::Value v;
  if (!ParseOpenAiBody(body, bounds, &v, err)) return false;
  CompletionRequest& r = *out;
  r = CompletionRequest();
  if (!CheckModel(v, model_id, &r.model, err)) return false;

  bool has_prompt = false;
  const json::Value* stream_options = nullptr;
  const json::Value* best_of = nullptr;
  SharedParams shared;
  for (const auto& [key, val] : v.members()) {
    if (key == "model") continue;
    if (service::FieldRead f = ParseSharedParam(key, val, bounds, &shared, err); f != service::FieldRead::kNotMine) {
      if (f == service::FieldRead::kRefused) return false;
      continue;
    }
    int64_t i = 0;
    if (key == "prompt") {
      if (val.is_null()) continue;
      if (!ParsePrompt(val, tokenizer, bounds, &r.prompts, err)) return false;
      has_prompt = true;
    } else if (key == "stop") {
      if (!ParseStopParam(val, bounds, &r.stop, err)) return false;
    } else if (key == "stream_options") {
      stream_options = &val;
    } else if (key == "logprobs") {
      if (val.is_null()) continue;
      if (!service::ReadInt(val, key, 0, kMaxLogprobs, &i, err, "alternatives per token")) return false;
      r.logprobs = static_cast<int>(i);
    } else if (key == "best_of") {
      if (val.is_null()) continue;
      if (!service::ReadInt(val, key, 1, kMaxChoices, &i, err, "choices per request on this server")) return false;
      best_of = &val;  // checked against n below
    } else if (key == "echo") {
      if (val.is_null()) continue;
      if (!service::ReadBool(val, key, &r.echo, err)) return false;
    } else if (key == "suffix") {
      if (val.is_null() || (val.is_string() && val.as_string().empty())) continue;
      return Unsupported(err, key, "insertion (a suffix after the completion) is not supported: GPT-2 only continues text");
    } else if (!OtherParam(key, val, bounds, &shared.unknown_fields, err)) {
      return false;
    }
  }
  r.max_tokens = shared.max_tokens != 0 ? shared.max_tokens : std::min(kOpenAiDefaultMaxTokens, bounds.max_new_tokens);
  r.temperature = shared.temperature;
  r.top_p = shared.top_p;
  r.has_seed = shared.has_seed;
  r.seed = shared.seed;
  r.stream = shared.stream;
  r.n = shared.n;
  r.controls = std::move(shared.controls);
  r.unknown_fields = std::move(shared.unknown_fields);
  r.best_of = best_of != nullptr ? static_cast<int>(best_of->as_int()) : r.n;
  if (r.best_of < r.n) {
    return service::OutOfRange(err, "best_of", std::to_string(r.best_of), "an integer >= n (" + std::to_string(r.n) + ")");
  }
  if (r.best_of > r.n && r.stream) {
    // As OpenAI: the best are known only when every candidate has finished.
    return Unsupported(err, "best_of", "best_of greater than n cannot be streamed; send stream false");
  }
  if (!ParseStreamOptionsParam(stream_options, r.stream, &r.include_usage, err)) return false;
  if (!has_prompt) return Refuse(err, 400, "prompt", "you must provide a 'prompt'");
  if (!CheckPromptLogprobsParam(r.controls, r.stream, err)) return false;
  if (r.echo) {
    // The prompt as the model read it: its tokens' bytes (a literal
    // <|endoftext|> is the special token's text).
    for (const std::vector<int32_t>& prompt : r.prompts) {
      r.echo_texts.emplace_back();
      tokenizer.Decode(prompt, &r.echo_texts.back());  // ids already checked
    }
  }
  if (r.prompts.size() * static_cast<size_t>(r.best_of) > static_cast<size_t>(kMaxChoices)) {
    // Every candidate is a stream of its own.
    const char* field = r.best_of > r.n ? "best_of" : "n";
    return service::OutOfRange(err, field, std::to_string(r.best_of) + " choices for each of " +
                                               std::to_string(r.prompts.size()) + " prompts",
                               "at most " + std::to_string(kMaxChoices) + " choices in all (prompts times " + field +
                                   ") per request on this server");
  }
  r.controls.max_new_tokens = r.max_tokens;
  if (!service::CheckMinTokens(r.controls, "max_tokens", err)) return false;
  for (const std::vector<int32_t>& prompt : r.prompts) {
    if (!CheckContext(prompt.size(), r.max_tokens, bounds, err)) return false;
  }
  return true;
}

}  // namespace

bool ParseCompletionRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const service::RequestBounds& bounds, std::string_view model_id,
                            CompletionRequest* out, ApiError* err) {
  if (ParseCompletion(body, tokenizer, bounds, model_id, out, err)) return true;
  *err = ForOpenAi(std::move(*err));  // a value out of range is OpenAI's 400 too
  return false;
}

backend::GenerationRequest ToGeneration(const CompletionRequest& req) {
  backend::GenerationRequest g = req.controls;
  g.prompt_tokens = req.prompts.at(0);
  g.max_new_tokens = req.max_tokens;
  g.temperature = service::EffectiveTemperature(req.temperature);
  g.top_p = static_cast<float>(req.top_p);
  g.has_seed = req.has_seed;
  g.seed = static_cast<uint64_t>(req.seed);
  g.stop = req.stop;
  g.logprobs = req.logprobs;
  // echo with logprobs: the prompt's tokens are in the logprobs too, with
  // as many alternatives as the completion's (the answer trims each list).
  if (req.echo && req.logprobs >= 0) g.prompt_logprobs = std::max(g.prompt_logprobs, req.logprobs);
  return g;
}

bool CheckPromptLogprobsParam(const backend::GenerationRequest& controls, bool stream, ApiError* err) {
  if (controls.prompt_logprobs < 0 || !stream) return true;
  // As vLLM: they come with the whole answer.
  return Unsupported(err, "prompt_logprobs", "the prompt's log-probabilities are not available when stream is true; send stream false");
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

#include "api/completions.h"

#include <algorithm>
#include <chrono>

#include "api/app.h"
#include "json/json.h"
#include "sse/writer.h"
#include "tokenizer/tokenizer.h"

namespace tw::api {

namespace {

bool Refuse(ApiError* err, int status, std::string param, std::string message,
            ErrorCode code = ErrorCode::kInvalidRequest) {
  *err = ApiError::Make(code, status, std::move(message));
  err->param = std::move(param);
  return false;
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

bool TokenId(const json::Value& t, const RequestBounds& bounds, const std::string& where,
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
                 const RequestBounds& bounds, std::vector<int32_t>* out, ApiError* err) {
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

bool ParseStop(const json::Value& v, const RequestBounds& bounds, std::vector<std::string>* out,
               ApiError* err) {
  out->clear();
  std::vector<const json::Value*> items;
  if (!StopValues(v, &items)) return WrongType(err, "stop", "a string or an array of strings");
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

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The answer for a stream that ended without a usable finish reason: an
// error event, or a done event whose finish_reason is cancelled / error.
ApiError ErrorForEnding(const stream::Event& ev) {
  if (ev.type == stream::EventType::kError) {
    ApiError e = ev.error ? *ev.error : ApiError::Make(ErrorCode::kInternal, "generation failed");
    e.http_status = e.code == ErrorCode::kInternal ? 500 : 503;
    e.retry_after_ms = e.retryable ? 1000 : 0;
    return e;
  }
  if (ev.finish_reason == stream::FinishReason::kCancelled) {
    return ApiError::Make(ErrorCode::kCancelled, "the generation was cancelled before it finished");
  }
  return ApiError::Make(ErrorCode::kInternal, std::string("the generation ended with finish_reason '") +
                                                  stream::FinishReasonName(ev.finish_reason) + "'");
}

// A subscriber-level ending (slow_client, shutting_down, …) as an error.
ApiError ErrorForSubscriberEnd(const ApiError& end) {
  ApiError e = end;
  e.http_status = 503;
  e.retry_after_ms = end.retryable ? 1000 : 0;
  e.resume_from = -1;  // OpenAI's error object has no such field
  return e;
}

void AppendData(std::string* out, std::string_view data) { sse::AppendEventNoId(out, "", data); }

constexpr std::string_view kDoneLine = "data: [DONE]\n\n";

// OpenAI writes an absent param, code or finish_reason as null.
void StringOrNull(json::Writer& w, std::string_view s) {
  if (s.empty()) {
    w.Null();
  } else {
    w.String(s);
  }
}

// Opens an OpenAI object with the members its objects begin with.
void BeginOpenAiObject(json::Writer& w, std::string_view id, std::string_view object,
                       int64_t created) {
  w.BeginObject();
  w.Key("id");
  w.String(id);
  w.Key("object");
  w.String(object);
  w.Key("created");
  w.Int(created);
}

}  // namespace

bool ParseCompletionRequest(std::string_view body, const tokenizer::Tokenizer& tokenizer,
                            const RequestBounds& bounds, std::string_view model_id,
                            CompletionRequest* out, ApiError* err) {
  json::Value v;
  if (!ParseRequestBody(body, bounds, &v, err)) {
    // OpenAI's error shape has no offset field: the message names the byte.
    if (err->code == ErrorCode::kInvalidJson) {
      err->message = "the body is not valid JSON (byte " + std::to_string(err->offset) + "): " + err->message;
    }
    return false;
  }
  if (!v.is_object()) return Refuse(err, 400, "", "the body must be a JSON object");

  CompletionRequest& r = *out;
  r = CompletionRequest();
  r.max_tokens = std::min(kOpenAiDefaultMaxTokens, bounds.max_new_tokens);

  // The model first: a request for another model is answered 404 whatever
  // else it holds (as OpenAI and vLLM do).
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
  r.model = model->as_string();

  bool has_prompt = false;
  const json::Value* stream_options = nullptr;
  for (const auto& [key, val] : v.members()) {
    if (key == "model") {
      continue;
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
    } else if (key == "temperature") {
      if (val.is_null()) continue;
      if (!val.is_number()) return WrongType(err, key, "a number");
      if (!(val.as_double() >= 0.0 && val.as_double() <= 2.0)) {
        return Refuse(err, 400, key, "'temperature' must be between 0 and 2");
      }
      r.temperature = val.as_double();
    } else if (key == "top_p") {
      if (val.is_null()) continue;
      if (!val.is_number()) return WrongType(err, key, "a number");
      if (!(val.as_double() > 0.0 && val.as_double() <= 1.0)) {
        return Refuse(err, 400, key, "'top_p' must be greater than 0 and at most 1");
      }
      r.top_p = val.as_double();
    } else if (key == "seed") {
      if (val.is_null()) continue;
      if (!val.is_int()) return WrongType(err, key, "an integer");
      if (val.as_int() < 0) return Refuse(err, 400, key, "'seed' must be non-negative");
      r.seed = val.as_int();
      r.has_seed = true;
    } else if (key == "stop") {
      if (!ParseStop(val, bounds, &r.stop, err)) return false;
    } else if (key == "stream") {
      if (val.is_null()) continue;
      if (!val.is_bool()) return WrongType(err, key, "a boolean");
      r.stream = val.as_bool();
    } else if (key == "stream_options") {
      stream_options = &val;
    } else if (key == "n" || key == "best_of") {
      if (val.is_null() || (val.is_int() && val.as_int() == 1)) continue;
      return Unsupported(err, key, "1 (one completion per request)");
    } else if (key == "echo") {
      if (val.is_null() || (val.is_bool() && !val.as_bool())) continue;
      return Unsupported(err, key, "false");
    } else if (key == "logprobs") {
      if (val.is_null()) continue;
      return Unsupported(err, key, "null");
    } else if (key == "suffix") {
      if (val.is_null() || (val.is_string() && val.as_string().empty())) continue;
      return Unsupported(err, key, "null");
    } else if (key == "presence_penalty" || key == "frequency_penalty") {
      if (val.is_null() || (val.is_number() && val.as_double() == 0.0)) continue;
      return Unsupported(err, key, "0");
    } else if (key == "logit_bias") {
      if (val.is_null() || (val.is_object() && val.members().empty())) continue;
      return Unsupported(err, key, "{}");
    } else if (key == "user") {
      // An end-user id for the caller's own tracking: it changes nothing.
      if (val.is_null() || val.is_string()) continue;
      return WrongType(err, key, "a string");
    } else {
      return Refuse(err, 400, key, "unrecognized request argument supplied: '" + key + "'");
    }
  }
  if (stream_options != nullptr && !stream_options->is_null()) {
    if (!r.stream) {
      return Refuse(err, 400, "stream_options",
                    "'stream_options' is only allowed when 'stream' is true");
    }
    if (!ParseStreamOptions(*stream_options, &r.include_usage, err)) return false;
  }
  if (!has_prompt) return Refuse(err, 400, "prompt", "you must provide a 'prompt'");
  int64_t total = static_cast<int64_t>(r.prompt_tokens.size()) + r.max_tokens;
  if (total > bounds.context_length) {
    return Refuse(err, 400, "prompt",
                  "this model's maximum context length is " + std::to_string(bounds.context_length) +
                      " tokens, however you requested " + std::to_string(total) + " tokens (" +
                      std::to_string(r.prompt_tokens.size()) + " in your prompt; " +
                      std::to_string(r.max_tokens) +
                      " for the completion). Please reduce your prompt or max_tokens.",
                  ErrorCode::kPromptTooLong);
  }
  return true;
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
  return g;
}

bool OpenAiFinishReason(stream::FinishReason ours, std::string* openai) {
  switch (ours) {
    case stream::FinishReason::kEos:
    case stream::FinishReason::kStop:
      *openai = "stop";
      return true;
    case stream::FinishReason::kLength:
      *openai = "length";
      return true;
    default:
      return false;
  }
}

ApiError ForOpenAi(ApiError e) {
  // OpenAI answers every invalid value with 400; we say 422 for some.
  if (e.http_status == 422) e.http_status = 400;
  if (e.code == ErrorCode::kPromptTooLong && e.param.empty()) e.param = "prompt";
  return e;
}

std::string OpenAiErrorJson(const ApiError& e) {
  std::string code;
  if (e.code == ErrorCode::kPromptTooLong) {
    code = "context_length_exceeded";
  } else if (e.code != ErrorCode::kInvalidRequest) {
    code = e.type();
  }
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("error");
  w.BeginObject();
  w.Key("message");
  w.String(e.message);
  w.Key("type");
  w.String(e.http_status >= 500 ? "server_error" : "invalid_request_error");
  w.Key("param");
  StringOrNull(w, e.param);
  w.Key("code");
  StringOrNull(w, code);
  w.EndObject();
  w.EndObject();
  return out;
}

namespace {

// What a choice and the usage hold; finish_reason "" is written as null.
struct Choice {
  std::string_view text;
  std::string_view finish_reason;
};
struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// Every text_completion object: the shared head, `choices` with `choice`
// (empty if null), and `usage`: the counts if given, else null when the
// client asked for usage (a chunk before the usage chunk), else absent.
std::string TextCompletionJson(const CompletionMeta& m, const Choice* choice, const Usage* usage) {
  std::string out;
  json::Writer w(&out);
  BeginOpenAiObject(w, m.id, "text_completion", m.created);
  w.Key("model");
  w.String(m.model);
  w.Key("choices");
  w.BeginArray();
  if (choice != nullptr) {
    w.BeginObject();
    w.Key("text");
    w.String(choice->text);
    w.Key("index");
    w.Int(0);
    w.Key("logprobs");
    w.Null();
    w.Key("finish_reason");
    StringOrNull(w, choice->finish_reason);
    w.EndObject();
  }
  w.EndArray();
  if (usage != nullptr) {
    w.Key("usage");
    w.BeginObject();
    w.Key("prompt_tokens");
    w.Int(usage->prompt_tokens);
    w.Key("completion_tokens");
    w.Int(usage->completion_tokens);
    w.Key("total_tokens");
    w.Int(static_cast<int64_t>(usage->prompt_tokens) + usage->completion_tokens);
    w.EndObject();
  } else if (m.include_usage) {
    w.Key("usage");
    w.Null();
  }
  w.EndObject();
  return out;
}

}  // namespace

std::string CompletionChunkJson(const CompletionMeta& m, std::string_view text,
                                std::string_view finish_reason) {
  Choice choice{text, finish_reason};
  return TextCompletionJson(m, &choice, nullptr);
}

std::string UsageChunkJson(const CompletionMeta& m, int prompt_tokens, int completion_tokens) {
  Usage usage{prompt_tokens, completion_tokens};
  return TextCompletionJson(m, nullptr, &usage);
}

std::string CompletionJson(const CompletionMeta& m, std::string_view text,
                           std::string_view finish_reason, int prompt_tokens,
                           int completion_tokens) {
  Choice choice{text, finish_reason};
  Usage usage{prompt_tokens, completion_tokens};
  return TextCompletionJson(m, &choice, &usage);
}

std::string ModelJson(std::string_view id, int64_t created) {
  std::string out;
  json::Writer w(&out);
  BeginOpenAiObject(w, id, "model", created);
  w.Key("owned_by");
  w.String("tokenwire");
  w.EndObject();
  return out;
}

std::string ModelListJson(std::string_view id, int64_t created) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("object");
  w.String("list");
  w.Key("data");
  w.BeginArray();
  w.Raw(ModelJson(id, created));
  w.EndArray();
  w.EndObject();
  return out;
}

void SendOpenAiError(http::Responder& r, const ApiError& e, const http::Headers& extra) {
  http::Headers h = extra;
  if (e.retry_after_ms > 0) {
    h.emplace_back("Retry-After", std::to_string(std::max<int64_t>(1, (e.retry_after_ms + 999) / 1000)));
  }
  r.Send(e.http_status, "application/json", OpenAiErrorJson(e), h);
}

// ---- OpenAiSseFormat ---------------------------------------------------------

SseFormat::Bytes OpenAiSseFormat::AppendEvent(const stream::Event& ev, std::string* out) {
  switch (ev.type) {
    case stream::EventType::kStart:
      return Bytes::kNone;
    case stream::EventType::kToken:
      // A token whose text is held back (part of a character or of a
      // possible stop string) has nothing to say yet.
      if (ev.text.empty()) return Bytes::kNone;
      AppendData(out, CompletionChunkJson(meta_, ev.text, ""));
      return Bytes::kEvent;
    case stream::EventType::kDone:
    case stream::EventType::kError: {
      std::string reason;
      if (ev.type == stream::EventType::kDone && OpenAiFinishReason(ev.finish_reason, &reason)) {
        // The last content chunk carries the finish reason.
        AppendData(out, CompletionChunkJson(meta_, "", reason));
        if (meta_.include_usage) AppendData(out, UsageChunkJson(meta_, ev.prompt_tokens, ev.completion_tokens));
      } else {
        AppendData(out, OpenAiErrorJson(ErrorForEnding(ev)));
      }
      *out += kDoneLine;
      return Bytes::kLast;
    }
  }
  return Bytes::kNone;
}

void OpenAiSseFormat::AppendEnding(const ApiError& end, std::string* out) {
  ApiError e = ErrorForSubscriberEnd(end);
  if (end.code == ErrorCode::kSlowClient) {
    e.message += "; the stream may be resumed with GET /v1/streams/" + stream_id_ +
                 "/events?after=" + std::to_string(end.resume_from);
  }
  AppendData(out, OpenAiErrorJson(e));
  *out += kDoneLine;
}

// ---- CompletionCollectSubscription -------------------------------------------

CompletionCollectSubscription::CompletionCollectSubscription(http::Responder responder,
                                                             CompletionMeta meta,
                                                             http::Headers extra_headers,
                                                             std::function<void(stream::Subscription*)> on_done)
    : responder_(std::move(responder)),
      meta_(std::move(meta)),
      extra_headers_(std::move(extra_headers)),
      on_done_(std::move(on_done)) {}

stream::DeliverResult CompletionCollectSubscription::Deliver(const stream::Event& ev) {
  if (responder_.closed()) {
    // The client left before its answer: detach (linger, then cancellation).
    Done();
    return stream::DeliverResult::kGone;
  }
  switch (ev.type) {
    case stream::EventType::kStart:
      prompt_tokens_ = ev.prompt_tokens;
      break;
    case stream::EventType::kToken:
      text_ += ev.text;
      break;
    case stream::EventType::kDone:
    case stream::EventType::kError:
      if (ev.type == stream::EventType::kDone && OpenAiFinishReason(ev.finish_reason, &finish_reason_)) {
        prompt_tokens_ = ev.prompt_tokens;
        completion_tokens_ = ev.completion_tokens;
      } else {
        failed_ = true;
        error_ = ErrorForEnding(ev);
      }
      break;
  }
  return stream::DeliverResult::kTaken;
}

void CompletionCollectSubscription::Complete() {
  if (failed_ || finish_reason_.empty()) {
    if (!failed_) error_ = ApiError::Make(ErrorCode::kInternal, "the stream ended without a finish reason");
    SendOpenAiError(responder_, error_, extra_headers_);
  } else {
    responder_.Send(200, "application/json",
                    CompletionJson(meta_, text_, finish_reason_, prompt_tokens_, completion_tokens_),
                    extra_headers_);
  }
  Done();
}

void CompletionCollectSubscription::End(const ApiError& end) {
  SendOpenAiError(responder_, ErrorForSubscriberEnd(end), extra_headers_);
  Done();
}

void CompletionCollectSubscription::Done() {
  auto cb = std::move(on_done_);
  on_done_ = nullptr;
  if (cb) cb(this);
}

// ---- App endpoints (declared in app.h) ------------------------------------------

void App::HandleCompletions(const http::Request& req, http::Responder r) {
  // Parsed and tokenized on a prep thread, launched on the loop.
  PrepRequest<CompletionRequest>(
      std::move(r),
      [this, body = req.body](CompletionRequest* c, ApiError* err) {
        return ParseCompletionRequest(body, tokenizer_, bounds_, model_name_, c, err);
      },
      [this](CompletionRequest& c, http::Responder r) { LaunchCompletion(c, std::move(r)); },
      [this](http::Responder& r, const ApiError& e) { SendOpenAiError(r, e, CorsHeaders()); });
}

void App::LaunchCompletion(const CompletionRequest& c, http::Responder r) {
  ApiError err;
  ParsedGeneration g;
  g.request = ToGeneration(c);
  g.policy = default_policy_;
  std::shared_ptr<stream::Stream> s = Launch(std::move(g), &err);
  if (!s) {
    SendOpenAiError(r, ForOpenAi(std::move(err)), CorsHeaders());
    return;
  }
  CompletionMeta meta;
  meta.id = "cmpl-" + s->id();
  meta.created = UnixSeconds();
  meta.model = model_name_;
  meta.include_usage = c.include_usage;
  // The App's key is the stream::Subscription address.
  auto release = [this](stream::Subscription* self) {
    auto it = subscriptions_.find(self);
    if (it != subscriptions_.end()) {
      loop_.ReleaseLater(std::move(it->second));  // freed after this callback returns
      subscriptions_.erase(it);
    }
  };
  http::Responder keep = r;
  std::shared_ptr<stream::Subscription> sub;
  SseSubscription* streaming = nullptr;
  if (c.stream) {
    SseSubscription::Options o;
    o.heartbeat_ms = config_.heartbeat_ms;
    o.reserve_bytes = kOpenAiStreamReserveBytes;
    o.stream_id = s->id();
    o.extra_headers = CorsHeaders();
    auto ss = std::make_shared<SseSubscription>(
        &loop_, hub_.get(), std::move(r), std::move(o),
        std::make_unique<OpenAiSseFormat>(std::move(meta), s->id()), release);
    streaming = ss.get();
    sub = std::move(ss);
  } else {
    sub = std::make_shared<CompletionCollectSubscription>(std::move(r), std::move(meta),
                                                          CorsHeaders(), release);
  }
  subscriptions_[sub.get()] = sub;
  uint64_t oldest = 0;
  if (hub_->Attach(s, sub.get(), 0, &oldest) == stream::Stream::AttachResult::kOk) {
    // Headers go out now, before the first token.
    if (streaming != nullptr && subscriptions_.count(sub.get())) streaming->Start();
    return;
  }
  // A fresh stream refuses a subscriber only when --max-subscribers is 0.
  subscriptions_.erase(sub.get());
  loop_.ReleaseLater(sub);
  hub_->Cancel(s, [] {});
  ApiError busy = ApiError::Make(ErrorCode::kOverloaded, "no subscriber may attach (--max-subscribers)");
  busy.retry_after_ms = 1000;
  SendOpenAiError(keep, busy, CorsHeaders());
}

void App::HandleModels(const http::Request&, http::Responder r) {
  r.Send(200, "application/json", ModelListJson(model_name_, created_unix_s_), CorsHeaders());
}

void App::HandleModel(const http::Request&, http::Responder r) {
  std::string id(r.Param("id"));
  if (id != model_name_) {
    ApiError e = ApiError::Make(ErrorCode::kModelNotFound,
                                "the model '" + id + "' does not exist; this server serves '" + model_name_ + "'");
    e.param = "model";
    SendOpenAiError(r, e, CorsHeaders());
    return;
  }
  r.Send(200, "application/json", ModelJson(model_name_, created_unix_s_), CorsHeaders());
}

}  // namespace tw::api

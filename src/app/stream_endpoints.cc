// TokenWire's own endpoints (DESIGN.md §4-§6), App members: the stream
// endpoints (POST /v1/stream, /v1/streams, /v1/generate; resume, status and
// cancel under /v1/streams/{id}), tokenize and detokenize, /metrics, /stats,
// the lab emission log, and the WebSocket routes. app/app.cc routes
// requests here; the requests are parsed by service/generation_request.h.
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

#include "app/app.h"
#include "app/collect_subscription.h"
#include "app/version.h"
#include "backend/mock_backend.h"
#include "json/json.h"
#include "openai/chat.h"
#include "openai/completions.h"
#include "sse/sse_subscription.h"
#include "ws/echo_endpoint.h"
#include "ws/ws_routes.h"
#include "ws/ws_session.h"

namespace tw::app {

namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

ApiError UnknownStream(const std::string& id) {
  return ApiError::Make(ErrorCode::kNotFound, "unknown or expired stream '" + id + "'");
}

// {"<key>": text}: a detokenized text (invalid UTF-8 becomes U+FFFD).
void WriteTextObject(std::string* out, const char* key, const std::string& text) {
  json::Writer w(out);
  w.BeginObject();
  w.Key(key);
  w.String(text);
  w.EndObject();
}

void WriteTokens(json::Writer& w, const std::vector<tokenizer::TokenId>& ids) {
  w.Key("tokens");
  w.BeginArray();
  for (auto id : ids) w.Int(id);
  w.EndArray();
}

}  // namespace

void App::AnswerOffLoop(http::Responder r, size_t cost, std::function<bool(std::string*, ApiError*)> make) {
  service::PrepareAs<std::string>(
      this, std::move(r), cost, std::move(make),
      [this](std::string& body, http::Responder r) {
        r.Send(200, "application/json", std::move(body));
      },
      [this](http::Responder& r, const ApiError& e) { SendError(r, e); });
}

void App::AnswerJsonOffLoop(const http::Request& req, http::Responder r,
                            std::function<bool(const json::Value&, std::string*, ApiError*)> make) {
  AnswerOffLoop(std::move(r), req.body.size(),
                [this, body = req.body, make = std::move(make)](std::string* out, ApiError* err) {
                  json::Value v;
                  return service::ParseRequestBody(body, info_.bounds, &v, err) && make(v, out, err);
                });
}

void App::StartGeneration(const http::Request& req, http::Responder r, Launched then) {
  service::PrepareAs<service::ParsedGeneration>(
      this, std::move(r), req.body.size(),
      [this, body = req.body](service::ParsedGeneration* g, ApiError* why) {
        return service::ParseGenerationRequest(body, tokenizer_, info_.bounds, info_.default_policy, g, why);
      },
      [this, then = std::move(then)](service::ParsedGeneration& g, http::Responder r) {
        ApiError why;
        std::shared_ptr<stream::Stream> s = Launch(std::move(g), &why);
        if (!s) {
          r.SendError(why);
          return;
        }
        then(s, std::move(r));
      },
      [this](http::Responder& r, const ApiError& e) { r.SendError(e); });
}

void App::AttachSse(const std::shared_ptr<stream::Stream>& s, http::Responder r, uint64_t after) {
  sse::SseSubscription::Options o;
  o.heartbeat_ms = config_.heartbeat_ms;
  o.stream_id = s->id();
  http::Responder keep = r;
  auto sub = std::make_shared<sse::SseSubscription>(
      &loop_, hub_.get(), std::move(r), std::move(o),
      std::make_unique<sse::TokenWireSseFormat>(s->id(), info_.model), [this](sse::SseSubscription* self) { Release(self); });
  Keep(sub.get(), sub);
  uint64_t oldest = 0;
  uint64_t head = 0;
  stream::Stream::AttachResult res = hub_->Attach(s, sub.get(), after, &oldest, &head);
  if (res == stream::Stream::AttachResult::kOk) {
    // Headers go out now even if no event is due yet (a resume at the head).
    if (subscriptions_.count(sub.get())) sub->Start();
    return;
  }
  Release(sub.get());
  if (res == stream::Stream::AttachResult::kWindowExceeded) {
    ApiError e = ApiError::Make(ErrorCode::kResumeWindowExceeded,
                                "event " + std::to_string(after + 1) +
                                    " has left the resume window; the oldest event still held is " +
                                    std::to_string(oldest));
    e.oldest_available = static_cast<int64_t>(oldest);
    keep.SendError(e);
  } else if (res == stream::Stream::AttachResult::kPastHead) {
    keep.SendError(stream::ResumePastHeadError(s->id(), after, head, s->finished()));
  } else {
    ApiError e = ApiError::Make(ErrorCode::kOverloaded, "too many subscribers on this stream (--max-subscribers)");
    e.retry_after_ms = 1000;
    keep.SendError(e);
  }
}

void App::HandleStream(const http::Request& req, http::Responder r, bool attach) {
  StartGeneration(req, std::move(r), [this, attach](const std::shared_ptr<stream::Stream>& s, http::Responder r) {
    if (attach) {
      AttachSse(s, std::move(r), 0);
      return;
    }
    hub_->StartDetached(s);
    std::string body = "{\"stream\":\"" + s->id() + "\",\"events\":\"/v1/streams/" + s->id() + "/events\"}";
    http::Headers h;
    h.emplace_back("X-Stream-Id", s->id());
    h.emplace_back("Location", "/v1/streams/" + s->id());
    r.Send(201, "application/json", body, h);
  });
}

void App::HandleGenerate(const http::Request& req, http::Responder r) {
  StartGeneration(req, std::move(r), [this](const std::shared_ptr<stream::Stream>& s, http::Responder r) {
    CollectGeneration(s, std::move(r));
  });
}

void App::CollectGeneration(const std::shared_ptr<stream::Stream>& s, http::Responder r) {
  auto sub = std::make_shared<CollectSubscription>(r, s->id(), [this](void* self) { Release(self); });
  Keep(sub.get(), sub);
  uint64_t oldest = 0;
  hub_->Attach(s, sub.get(), 0, &oldest);  // a fresh stream: cannot be refused
  // The client leaving is noticed at its close, queued or running, not at
  // the next event (which a queued request may not see for a long time).
  std::weak_ptr<CollectSubscription> weak = sub;
  auto gone = [this, weak, s] {
    if (auto self = weak.lock()) self->ClientGone(hub_.get(), s);
  };
  if (!r.OnClientGone(gone) && r.closed()) gone();
}

void App::HandleEvents(const http::Request& req, http::Responder r) {
  if (shutting_down_) {
    // Its generation was cancelled by the drain: a resume here could only
    // end in `cancelled`. Retryable: the client learns to start again.
    r.SendError(Draining());
    return;
  }
  std::string id(r.Param("id"));
  auto s = hub_->Find(id);
  if (!s) {
    hub_->CountResumeNotFound();
    r.SendError(UnknownStream(id));
    return;
  }
  uint64_t after = 0;
  std::string_view v = req.Header("Last-Event-ID");
  const char* source = "Last-Event-ID";
  if (v.empty()) {
    v = req.QueryParam("after");
    source = "after";
  }
  if (v.empty()) {
    v = req.QueryParam("starting_after");
    source = "starting_after";
  }
  if (!v.empty() && !ParseU64(v, &after)) {
    r.SendError(ApiError::Make(ErrorCode::kInvalidRequest,
                               std::string(source) + " must be a non-negative integer (an event id)"));
    return;
  }
  AttachSse(s, std::move(r), after);
}

void App::HandleStatus(const http::Request&, http::Responder r) {
  std::string id(r.Param("id"));
  auto s = hub_->Find(id);
  if (!s) {
    r.SendError(UnknownStream(id));
    return;
  }
  std::string body;
  json::Writer w(&body);
  w.BeginObject();
  w.Key("stream");
  w.String(s->id());
  w.Key("state");
  w.String(s->finished() ? "finished" : hub_->paused(*s) ? "paused" : "running");
  // How it ended, once it has: done's finish_reason (length, stop, eos,
  // cancelled) or "error" for an error event.
  if (stream::EventPtr end = s->terminal_event()) {
    w.Key("finish_reason");
    w.String(end->type == stream::EventType::kDone ? stream::FinishReasonName(end->finish_reason) : "error");
  }
  w.Key("policy");
  w.String(stream::PolicyName(hub_->policy_of(*s)));
  w.Key("last_event_id");
  w.Int(static_cast<int64_t>(s->head_seq()));
  w.Key("oldest_available");
  w.Int(static_cast<int64_t>(s->oldest_seq()));
  w.Key("subscribers");
  w.Int(static_cast<int64_t>(s->subscriber_count()));
  w.Key("bytes_held");
  w.Int(static_cast<int64_t>(s->bytes_held()));
  w.EndObject();
  r.Send(200, "application/json", body);
}

void App::HandleDelete(const http::Request&, http::Responder r) {
  std::string id(r.Param("id"));
  auto s = hub_->Find(id);
  if (!s) {
    r.SendError(UnknownStream(id));
    return;
  }
  http::Headers h;
  // 204 only once the producer has exited (and, for the engine, released
  // its KV blocks): the hub runs this callback at that moment.
  hub_->Cancel(s, [r, h]() mutable { r.Send(204, "", "", h); });
}

void App::HandleTokenize(const http::Request& req, http::Responder r) {
  AnswerJsonOffLoop(req, std::move(r), [this](const json::Value& v, std::string* out, ApiError* err) {
    const json::Value* text = v.Find("text");
    if (!v.is_object() || text == nullptr || !text->is_string() || v.members().size() != 1) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, "expected {\"text\": string}");
      return false;
    }
    std::vector<tokenizer::TokenId> ids = tokenizer_.Encode(text->as_string());
    json::Writer w(out);
    w.BeginObject();
    WriteTokens(w, ids);
    w.Key("count");
    w.Int(static_cast<int64_t>(ids.size()));
    w.EndObject();
    return true;
  });
}

void App::HandleDetokenize(const http::Request& req, http::Responder r) {
  AnswerJsonOffLoop(req, std::move(r), [this](const json::Value& v, std::string* out, ApiError* err) {
    const json::Value* toks = v.Find("tokens");
    if (!v.is_object() || toks == nullptr || !toks->is_array() || v.members().size() != 1) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, "expected {\"tokens\": [ids]}");
      return false;
    }
    std::string text;
    if (!DetokenizeTo(*toks, &text, err)) return false;
    WriteTextObject(out, "text", text);
    return true;
  });
}

bool App::DetokenizeTo(const json::Value& tokens, std::string* text, ApiError* err) const {
  std::vector<tokenizer::TokenId> ids;
  for (size_t i = 0; i < tokens.items().size(); i++) {
    const json::Value& t = tokens.items()[i];
    if (!t.is_int() || t.as_int() < 0 || t.as_int() >= static_cast<int64_t>(tokenizer_.vocab_size())) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, 422, "tokens[" + std::to_string(i) + "] is not a token id");
      return false;
    }
    ids.push_back(static_cast<tokenizer::TokenId>(t.as_int()));
  }
  Status ds = tokenizer_.Decode(ids, text);
  if (!ds.ok()) {
    *err = ApiError::Make(ErrorCode::kInvalidRequest, 422, ds.message());
    return false;
  }
  // Token bytes need not be valid UTF-8 on their own; the JSON writer
  // replaces invalid sequences with U+FFFD so the answer is always valid JSON.
  return true;
}

namespace {

// vLLM's request fields: `allowed` known, "model" optional but, when given,
// the served id (404 model_not_found otherwise, before anything else).
bool CheckVllmFields(const json::Value& v, std::initializer_list<std::string_view> allowed,
                     std::string_view model_id, ApiError* err) {
  if (!v.is_object()) {
    *err = ApiError::Make(ErrorCode::kInvalidRequest, "the body must be a JSON object");
    return false;
  }
  const json::Value* model = v.Find("model");
  std::string ignored;
  if (model != nullptr && !model->is_null() && !openai::CheckModel(v, model_id, &ignored, err)) return false;
  for (const auto& [key, val] : v.members()) {
    bool known = key == "model";
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, "'" + key + "' is not supported by this server");
      err->param = key;
      return false;
    }
  }
  return true;
}

// A required field of vLLM's body: present, of the type `is` checks.
const json::Value* VllmField(const json::Value& v, const std::string& key, bool (json::Value::*is)() const,
                             const char* type, ApiError* err) {
  const json::Value* f = v.Find(key);
  if (f == nullptr || !(f->*is)()) {
    *err = ApiError::Make(ErrorCode::kInvalidRequest, "'" + key + "' must be " + type);
    err->param = key;
    return nullptr;
  }
  return f;
}

}  // namespace

void App::HandleVllmTokenize(const http::Request& req, http::Responder r) {
  AnswerJsonOffLoop(req, std::move(r), [this](const json::Value& v, std::string* out, ApiError* err) {
    if (!CheckVllmFields(v, {"prompt", "messages", "add_special_tokens"}, info_.model, err)) return false;
    std::vector<tokenizer::TokenId> ids;
    if (v.Find("messages") != nullptr && v.Find("prompt") == nullptr) {
      if (!ChatPromptTokens(*v.Find("messages"), &ids, err)) return false;
    } else {
      const json::Value* prompt = VllmField(v, "prompt", &json::Value::is_string, "a string", err);
      if (prompt == nullptr) return false;
      if (v.Find("messages") != nullptr) {
        *err = ApiError::Make(ErrorCode::kInvalidRequest, "give 'prompt' or 'messages', not both");
        err->param = "messages";
        return false;
      }
      // As completions read a prompt: "<|endoftext|>" is the special token.
      ids = tokenizer_.EncodeWithSpecial(prompt->as_string());
    }
    // GPT-2's tokenizer adds no special token either way; the field is
    // checked and changes nothing.
    const json::Value* special = v.Find("add_special_tokens");
    if (special != nullptr && !special->is_null() &&
        !VllmField(v, "add_special_tokens", &json::Value::is_bool, "a boolean", err)) {
      return false;
    }
    json::Writer w(out);
    w.BeginObject();
    w.Key("count");
    w.Int(static_cast<int64_t>(ids.size()));
    w.Key("max_model_len");
    w.Int(info_.bounds.context_length);
    WriteTokens(w, ids);
    w.EndObject();
    return true;
  });
}

bool App::ChatPromptTokens(const json::Value& messages, std::vector<tokenizer::TokenId>* ids, ApiError* err) const {
  // Through chat completions' own parser, so the messages are checked and
  // rendered exactly as a chat request's (max_tokens 1: the prompt must
  // leave room for one token, as it must to be completed).
  std::string chat = "{\"model\":";
  http::AppendJsonString(&chat, info_.model);
  chat += ",\"max_tokens\":1,\"messages\":" + json::Serialize(messages) + "}";
  openai::ChatRequest parsed;
  if (!openai::ParseChatRequest(chat, tokenizer_, info_.bounds, info_.model, chat_template_, &parsed, err)) {
    return false;
  }
  *ids = std::move(parsed.prompt_tokens);
  return true;
}

void App::HandleVllmDetokenize(const http::Request& req, http::Responder r) {
  AnswerJsonOffLoop(req, std::move(r), [this](const json::Value& v, std::string* out, ApiError* err) {
    if (!CheckVllmFields(v, {"tokens"}, info_.model, err)) return false;
    const json::Value* toks = VllmField(v, "tokens", &json::Value::is_array, "an array of token ids", err);
    std::string text;
    if (toks == nullptr || !DetokenizeTo(*toks, &text, err)) return false;
    WriteTextObject(out, "prompt", text);
    return true;
  });
}

void App::HandleVersion(http::Responder r) {
  std::string body;
  json::Writer w(&body);
  w.BeginObject();
  w.Key("version");
  w.String(kVersion);
  w.Key("commit");
  w.String(GitCommit());
  w.Key("model");
  w.String(info_.model);
  w.Key("backend");
  w.String(backend_info_.spec->name);
  w.EndObject();
  r.Send(200, "application/json", body);
}

void App::HandleMetrics(http::Responder r) {
  std::string text = metrics_.RenderPrometheus();
  const stream::HubCounters& c = hub_->counters();
  auto gauge = [&](const char* name, const char* help, uint64_t v) {
    text += std::string("# HELP tokenwire_") + name + " " + help + "\n# TYPE tokenwire_" + name +
            " gauge\ntokenwire_" + name + " " + std::to_string(v) + "\n";
  };
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    text += std::string("# HELP tokenwire_") + name + " " + help + "\n# TYPE tokenwire_" + name +
            " counter\ntokenwire_" + name + " " + std::to_string(v) + "\n";
  };
  gauge("active_streams", "Streams whose generation has not finished.", hub_->live_streams());
  gauge("registered_streams", "Streams held (live or retained for resume).", hub_->registered_streams());
  gauge("active_subscribers", "Subscribers attached to streams.", hub_->subscriber_count());
  gauge("stream_bytes_held",
        "Bytes streams hold for resume: live streams' events, retained streams' events and cached wire bytes.",
        hub_->bytes_held());
  gauge("retained_stream_bytes", "Of those, the finished streams' (bounded by --max-retained-bytes).",
        hub_->retained_bytes());
  counter("retained_evictions_total", "Finished streams forgotten before --retain-ms because of --max-retained-bytes.",
          c.retained_evictions);
  counter("streams_created_total", "Streams created.", c.streams_created);
  counter("tokens_delivered_total", "Token events taken by a client socket (once per stream).", c.tokens_delivered);
  counter("tokens_never_delivered_total",
          "Token events that no client took, counted when their stream is forgotten (its retention over).",
          c.tokens_never_delivered);
  counter("slow_client_detaches_total", "Subscribers detached by drop_slow.", c.slow_client_detaches);
  counter("producer_pauses_total", "Times a policy paused a producer.", c.pauses);
  counter("producer_unpauses_total", "Times a paused producer was resumed.", c.unpauses);
  // Streams that ended cancelled, by cause: they sum to
  // streams_finished_total{outcome="cancelled"} (DESIGN.md §8).
  counter("stall_cancels_total", "Streams ended cancelled by pause_then_cancel.", c.stall_cancels);
  counter("linger_cancels_total", "Streams ended cancelled after --linger-ms without a subscriber.", c.linger_cancels);
  counter("delete_cancels_total", "Streams ended cancelled by DELETE.", c.delete_cancels);
  counter("ws_cancels_total", "Streams ended cancelled by a WebSocket client's cancel op.", c.ws_cancels);
  counter("client_gone_cancels_total",
          "Streams ended cancelled because the client of a non-streamed request left (nothing can resume them).",
          c.client_gone_cancels);
  counter("sibling_cancels_total", "Streams (choices) ended cancelled because another choice of their response ended it.",
          c.sibling_cancels);
  counter("shutdown_cancels_total", "Streams ended cancelled by the shutdown drain.", c.shutdown_cancels);
  text += "# HELP tokenwire_resumes_total Resume attempts by result.\n# TYPE tokenwire_resumes_total counter\n";
  text += "tokenwire_resumes_total{result=\"ok\"} " + std::to_string(c.resumes_ok) + "\n";
  text += "tokenwire_resumes_total{result=\"window_exceeded\"} " + std::to_string(c.resumes_window_exceeded) + "\n";
  text += "tokenwire_resumes_total{result=\"not_found\"} " + std::to_string(c.resumes_not_found) + "\n";
  text += "# HELP tokenwire_streams_finished_total Streams by outcome (finish_reason).\n# TYPE tokenwire_streams_finished_total counter\n";
  for (int i = 0; i < stream::kFinishReasons; i++) {
    if (c.outcomes[i] == 0) continue;
    text += std::string("tokenwire_streams_finished_total{outcome=\"") +
            stream::FinishReasonName(static_cast<stream::FinishReason>(i)) + "\"} " +
            std::to_string(c.outcomes[i]) + "\n";
  }
  r.Send(200, "text/plain; version=0.0.4; charset=utf-8", text);
}

void App::HandleStats(http::Responder r) {
  std::string body;
  json::Writer w(&body);
  w.BeginObject();
  w.Key("streams");
  w.BeginObject();
  w.Key("live");
  w.Int(static_cast<int64_t>(hub_->live_streams()));
  w.Key("registered");
  w.Int(static_cast<int64_t>(hub_->registered_streams()));
  w.Key("subscribers");
  w.Int(static_cast<int64_t>(hub_->subscriber_count()));
  w.Key("bytes_held");
  w.Int(static_cast<int64_t>(hub_->bytes_held()));
  w.EndObject();
  w.Key("engine");
  w.BeginObject();
  w.Key("backend");
  w.String(backend_->kind());
  std::vector<backend::StatField> fields;
  backend_->Stats(&fields);
  for (const backend::StatField& f : fields) {
    w.Key(f.name);
    w.Int(f.value);
  }
  w.EndObject();
  w.Key("connections");
  w.Int(static_cast<int64_t>(server_->connection_count()));
  w.Key("prep");  // requests being parsed and tokenized off the loop
  w.BeginObject();
  w.Key("queued");
  w.Int(static_cast<int64_t>(prep_->queued()));
  w.Key("running");
  w.Int(static_cast<int64_t>(prep_->running()));
  w.EndObject();
  w.EndObject();
  r.Send(200, "application/json", body);
}

void App::HandleEmissions(const http::Request&, http::Responder r) {
  auto* mock = dynamic_cast<backend::MockBackend*>(backend_.get());
  if (mock == nullptr) {
    r.SendError(ApiError::Make(ErrorCode::kNotFound, "emission logs exist only for --backend mock"));
    return;
  }
  backend::MockBackend::EmissionLog log;
  std::string id(r.Param("id"));
  if (!mock->GetEmissionLog(id, &log)) {
    r.SendError(ApiError::Make(ErrorCode::kNotFound, "no emission log for '" + id + "'"));
    return;
  }
  std::string body;
  json::Writer w(&body);
  w.BeginObject();
  w.Key("stream");
  w.String(id);
  w.Key("tokens");
  w.BeginArray();
  for (int32_t t : log.tokens) w.Int(t);
  w.EndArray();
  w.Key("exited");
  w.Bool(log.exited);
  w.Key("finish_reason");
  w.String(log.finish_reason);
  if (log.exited && log.cancel_requested != stream::Clock::time_point{}) {
    w.Key("cancel_to_exit_us");
    w.Int(std::chrono::duration_cast<std::chrono::microseconds>(log.exit_time - log.cancel_requested).count());
  }
  w.EndObject();
  r.Send(200, "application/json", body);
}

void App::AddWebSocketRoutes() {
  ws::HandshakeOptions hs;
  std::string_view list = config_.ws_allowed_origins;
  while (!list.empty()) {
    size_t comma = list.find(',');
    std::string_view o = list.substr(0, comma);
    while (!o.empty() && o.front() == ' ') o.remove_prefix(1);
    while (!o.empty() && o.back() == ' ') o.remove_suffix(1);
    if (!o.empty()) hs.allowed_origins.emplace_back(o);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
  }
  ws::WsOptions wo;
  wo.max_message_bytes = static_cast<size_t>(config_.ws_max_message_bytes);
  wo.heartbeat_ms = config_.heartbeat_ms;
  wo.pong_timeout_ms = config_.ws_pong_timeout_ms;
  ws::SessionOptions so;
  so.max_streams_per_connection = static_cast<size_t>(config_.ws_max_streams_per_connection);
  so.max_json_bytes = static_cast<size_t>(config_.ws_max_message_bytes);
  so.max_json_depth = static_cast<int>(config_.max_json_depth);
  so.model = info_.model;
  router_.Add("GET", "/v1/ws", [this, hs, wo, so](const http::Request& req, http::Responder r) {
    if (!Authorized(req, r)) return;
    if (shutting_down_) {
      r.SendError(Draining());
      return;
    }
    // The connection's streams are logged with its upgrade request's id.
    std::string id = r.request_id();
    ws::AcceptUpgrade(req, std::move(r), &loop_, hs, wo, [this, so, id] {
      return std::make_unique<ws::WsSession>(
          &loop_, hub_.get(),
          [this, id](const json::Value& m, std::function<bool()> wanted, ws::GenerationStarted then) {
            StartWsGeneration(m, std::move(wanted), std::move(then), id);
          },
          so);
    });
  });
  if (config_.lab) {
    router_.Add("GET", "/lab/ws-echo", [this, hs, wo](const http::Request& req, http::Responder r) {
      ws::AcceptUpgrade(req, std::move(r), &loop_, hs, wo, [] { return std::make_unique<ws::EchoEndpoint>(); });
    });
  }
}

void App::StartWsGeneration(const json::Value& message, std::function<bool()> still_wanted,
                            ws::GenerationStarted then, std::string request_id) {
  struct Prepared {
    json::Value message;
    service::ParsedGeneration g;
    ApiError why;
    bool ok = false;
  };
  auto p = std::make_shared<Prepared>();
  p->message = message;
  bool queued = prep_->Submit(
      [this, p] {
        p->ok = service::ParseGenerationObject(p->message, tokenizer_, info_.bounds, info_.default_policy, &p->g, &p->why, {"op"});
      },
      [this, p, still_wanted = std::move(still_wanted), then, request_id = std::move(request_id)]() {
        if (!still_wanted()) return;  // the connection closed meanwhile: launch nothing
        std::shared_ptr<stream::Stream> s;
        if (p->ok) {
          launching_request_id_ = request_id;
          s = Launch(std::move(p->g), &p->why);
          launching_request_id_.clear();
        }
        then(std::move(s), p->why);
      });
  if (!queued) then(nullptr, PrepOverloaded());
}

}  // namespace tw::app

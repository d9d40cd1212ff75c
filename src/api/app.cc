#include "api/app.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>

#include "api/backends.h"
#include "api/log_json.h"
#include "api/sse_subscription.h"
#include "backend/mock_backend.h"
#include "cpu/kernels.h"
#include "json/json.h"
#include "web/assets.h"  // GET /: the teaching page (src/web)
#include "ws/echo_endpoint.h"
#include "ws/ws_routes.h"
#include "ws/ws_session.h"

namespace tw::api {

namespace {

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// Constant-time comparison of two byte strings (length is not secret).
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); i++) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

const std::vector<double> kLatencyBuckets = {0.001, 0.0025, 0.005, 0.01, 0.02, 0.04, 0.06,
                                             0.08,  0.1,    0.15,  0.2,  0.21, 0.25, 0.3,
                                             0.5,   0.75,   1.0,   2.5,  5.0,  10.0};
const std::vector<double> kFastBuckets = {0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                          0.005,   0.01,   0.025,   0.05,   0.1,   0.25,
                                          0.5,     1.0,    2.5};

}  // namespace

// Collects a whole stream for POST /v1/generate and answers once at the end.
class CollectSubscription : public stream::Subscription {
 public:
  CollectSubscription(http::Responder r, std::string stream_id, std::function<void(void*)> done)
      : responder_(std::move(r)), stream_id_(std::move(stream_id)), done_(std::move(done)) {}

  stream::DeliverResult Deliver(const stream::Event& ev) override {
    if (responder_.closed()) {
      // The client left before its answer: detach, so the stream's linger
      // runs and then cancels the generation (as for a stream's reader).
      Finish();
      return stream::DeliverResult::kGone;
    }
    if (ev.type == stream::EventType::kToken) {
      tokens_.push_back(ev.token);
      text_ += ev.text;
    } else if (ev.terminal()) {
      last_ = std::make_shared<stream::Event>(ev);
    }
    return stream::DeliverResult::kTaken;
  }

  void Complete() override {
    if (last_ && last_->type == stream::EventType::kError) {
      // A stream-level error event (e.g. queue_timeout): an error answer.
      ApiError e = last_->error ? *last_->error : ApiError::Make(ErrorCode::kInternal, "generation failed");
      e.http_status = 503;
      responder_.SendError(e);
    } else {
      std::string body;
      json::Writer w(&body);
      w.BeginObject();
      w.Key("stream");
      w.String(stream_id_);
      w.Key("text");
      w.String(text_);
      w.Key("tokens");
      w.BeginArray();
      for (int32_t t : tokens_) w.Int(t);
      w.EndArray();
      w.Key("finish_reason");
      w.String(last_ ? stream::FinishReasonName(last_->finish_reason) : "error");
      w.Key("usage");
      if (last_) {
        w.BeginObject();
        w.Key("prompt_tokens");
        w.Int(last_->prompt_tokens);
        w.Key("completion_tokens");
        w.Int(last_->completion_tokens);
        w.EndObject();
      } else {
        w.Null();
      }
      w.EndObject();
      responder_.Send(200, "application/json", body);
    }
    Finish();
  }

  void End(const ApiError& end) override {
    ApiError e = end;
    e.http_status = 503;
    responder_.SendError(503, e.type(), e.message, e.retryable,
                         {{"resume_from", std::to_string(end.resume_from)},
                          {"stream", "\"" + stream_id_ + "\""}});
    Finish();
  }

 private:
  void Finish() {
    auto d = std::move(done_);
    done_ = nullptr;
    if (d) d(this);
  }
  http::Responder responder_;
  std::string stream_id_;
  std::function<void(void*)> done_;
  std::vector<int32_t> tokens_;
  std::string text_;
  std::shared_ptr<const stream::Event> last_;  // the terminal event
};

App::App(Config config) : config_(std::move(config)) {}

App::~App() {
  // Prep threads first: their jobs read the tokenizer and the bounds.
  if (prep_) prep_->Stop();
  // Connections next: a transport still open calls back into the hub.
  server_.reset();
  hub_.reset();
  if (backend_) backend_->Shutdown();
  if (signal_fd_ >= 0) ::close(signal_fd_);
}

Status App::Init(bool watch_signals) {
  net::IgnoreSigpipe();
  if (watch_signals) {
    // Before any thread starts (the backend's, the CPU pool's): threads
    // inherit the mask, so SIGTERM/SIGINT stay pending for the signalfd
    // below instead of reaching a thread whose default action kills the
    // process.
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (pthread_sigmask(SIG_BLOCK, &mask, nullptr) != 0) return Status::Error("pthread_sigmask failed");
  }
  LogOptions lo;
  ParseLogLevel(config_.log_level, &lo.level);  // validated with the flags
  if (config_.log_format == "json") lo.format = FormatLogJson;
  lo.max_queued_bytes = static_cast<size_t>(config_.log_buffer_bytes);
  lo.fd = config_.log_fd;
  lo.dropped_counter = metrics_.AddCounter(
      "log_lines_dropped_total", "Log lines dropped because stderr did not take them fast enough.");
  log_ = std::make_unique<Logger>(std::move(lo));
  if (Status s = loop_.Init(); !s.ok()) return s;

  // Tokenizer: the model folder's files, else the copy embedded in the binary.
  std::string source;
  Status ts = config_.model_dir.empty()
                  ? tokenizer::Tokenizer::LoadEmbedded(&tokenizer_)
                  : tokenizer::Tokenizer::LoadFromDirOrEmbedded(config_.model_dir, &tokenizer_, &source);
  if (!ts.ok()) return Status::Error("tokenizer: " + ts.message());
  prep_ = std::make_unique<net::WorkerPool>(&loop_, static_cast<int>(config_.prep_threads),
                                            static_cast<size_t>(config_.max_prep_queue));

  m_ttft_ = metrics_.AddHistogram("time_to_first_token_seconds",
                                  "Time from request arrival to its first generated token.",
                                  kLatencyBuckets);
  m_itl_ = metrics_.AddHistogram("inter_token_latency_seconds",
                                 "Time between successive generated tokens of one request.",
                                 kFastBuckets);
  m_cancel_ = metrics_.AddHistogram("cancellation_latency_seconds",
                                    "Time from a cancel (DELETE, linger, stall, shutdown) to the "
                                    "producer's exit.",
                                    kFastBuckets);
  m_tokens_generated_ = metrics_.AddCounter("tokens_generated_total", "Tokens generated.");

  // The chat template before the model: a bad file fails at once, naming its line and byte.
  chat_template_ = ChatTemplate::Plain();
  if (!config_.chat_template_path.empty()) {
    if (Status s = ChatTemplate::Load(config_.chat_template_path, &chat_template_); !s.ok()) return s;
  }
  if (Status s = MakeBackend(config_, &tokenizer_, &metrics_, log_.get(), &backend_, &backend_info_); !s.ok()) return s;
  model_name_ = backend_->model_name();

  bounds_.max_new_tokens = static_cast<int>(config_.max_new_tokens);
  bounds_.default_new_tokens = static_cast<int>(config_.default_new_tokens);
  bounds_.context_length = backend_->context_length();
  bounds_.max_stop_strings = static_cast<size_t>(config_.max_stop_strings);
  bounds_.max_stop_bytes = static_cast<size_t>(config_.max_stop_bytes);
  bounds_.max_json_depth = static_cast<int>(config_.max_json_depth);
  bounds_.vocab_size = static_cast<int>(tokenizer_.vocab_size());
  stream::ParsePolicy(config_.policy, &default_policy_, /*allow_lab=*/config_.lab);

  stream::HubOptions ho;
  ho.policy = default_policy_;
  ho.subscriber_lag_events = static_cast<size_t>(config_.subscriber_lag_events);
  ho.stall_timeout_ms = config_.stall_timeout_ms;
  ho.linger_ms = config_.linger_ms;
  ho.retain_ms = config_.retain_ms;
  ho.max_streams = static_cast<size_t>(config_.max_streams);
  ho.stream_limits.resume_window_events = static_cast<size_t>(config_.resume_window_events);
  ho.stream_limits.max_subscribers = static_cast<size_t>(config_.max_subscribers);
  ho.stream_limits.stream_interval = static_cast<int>(config_.stream_interval);
  ho.stream_interval = static_cast<int>(config_.stream_interval);
  ho.stream_interval_bound_ms = config_.stream_interval_bound_ms;
  ho.write_batch_events = static_cast<size_t>(config_.write_batch_events);
  if (config_.lab && config_.lab_pad_bytes > 0) {
    auto lab = std::make_shared<stream::LabStreamOptions>();
    lab->pad_bytes = static_cast<uint32_t>(config_.lab_pad_bytes);
    ho.stream_limits.lab = std::move(lab);  // every stream of a --lab-pad-bytes server is a lab stream
  }
  ho.lab_unbounded_max_events = static_cast<size_t>(config_.lab_unbounded_max_events);
  ho.lab_unbounded_max_bytes = static_cast<size_t>(config_.lab_unbounded_max_bytes);
  ho.stream_limits.metrics = {m_ttft_, m_itl_, m_tokens_generated_};
  ho.cancel_latency_seconds = m_cancel_;
  ho.log = log_.get();
  hub_ = std::make_unique<stream::StreamHub>(&loop_, backend_.get(), ho);
  hub_->set_instance_tag(config_.instance_tag);

  http::ServerOptions so;
  so.host = config_.host;
  so.port = config_.port;
  so.max_connections = static_cast<size_t>(config_.max_connections);
  so.max_header_bytes = static_cast<size_t>(config_.max_header_bytes);
  so.max_headers = static_cast<size_t>(config_.max_headers);
  so.max_body_bytes = static_cast<size_t>(config_.max_body_bytes);
  so.header_timeout_ms = config_.header_timeout_ms;
  so.keep_alive_idle_ms = config_.keep_alive_idle_ms;
  so.max_output_bytes = static_cast<size_t>(config_.max_output_bytes);
  so.write_low_watermark_bytes = so.max_output_bytes / 4;
  so.socket_send_buffer_bytes = static_cast<int>(config_.socket_send_buffer_bytes);
  so.max_write_per_flush_bytes = static_cast<size_t>(config_.max_write_bytes_per_iteration);
  so.log = log_.get();
  AddRoutes();
  server_ = std::make_unique<http::Server>(&loop_, so, &router_, &metrics_);
  if (Status s = server_->Start(); !s.ok()) return s;
  port_ = server_->port();

  if (watch_signals) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    signal_fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) return Status::FromErrno("signalfd");
    Status s = loop_.AddFileEvent(signal_fd_, net::kReadable, [this](int fd, int) {
      signalfd_siginfo info;
      while (::read(fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
      }
      BeginShutdown();
    });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void App::LogStartup() {
  const BackendInfo& b = backend_info_;
  const bool engine = b.kind != "mock";
  const engine::RunnerLimits& l = b.limits;
  // What only an engine backend has is absent for the mock, and the reverse.
  auto when = [](bool has, int64_t v) { return has ? std::optional<int64_t>(v) : std::nullopt; };
  // K and V, fp32, every layer: the block layout both runners use.
  const double kv_mib = static_cast<double>(l.num_kv_blocks) * l.block_size_tokens * b.n_layer * 2 *
                        b.n_embd * sizeof(float) / (1 << 20);
  log_->Log(LogLevel::kInfo, "startup",
            {{"backend", b.kind},
             {"model", model_name_},
             {"source", b.model_source},
             {"n_ctx", when(engine, b.n_ctx)},
             {"n_layer", when(engine, b.n_layer)},
             {"n_head", when(engine, b.n_head)},
             {"n_embd", when(engine, b.n_embd)},
             {"vocab", when(engine, b.vocab_size)},
             {"kv_blocks", when(engine, l.num_kv_blocks)},
             {"block_size", when(engine, l.block_size_tokens)},
             {"kv_mib", engine ? std::optional<double>(kv_mib) : std::nullopt},
             {"max_batch", when(engine, l.max_batch)},
             {"threads", when(engine, l.threads)},
             {"cpu_kernels", b.kind == "cpu" ? cpu::IsaName(cpu::ActiveIsa()) : nullptr},
             {"cpu_weights", b.kind == "cpu" ? config_.weights.c_str() : nullptr},
             {"tokens_per_s", engine ? std::nullopt : std::optional<double>(config_.mock_tokens_per_s)},
             {"ttft_ms", when(!engine, config_.mock_ttft_ms)},
             {"prefix_cache", engine ? (config_.prefix_cache ? "on" : "off") : nullptr},
             {"policy", config_.policy},
             {"prep_threads", config_.prep_threads},
             {"max_connections", config_.max_connections},
             {"page", "http://" + config_.host + ":" + std::to_string(port_.load()) + "/"}});
  log_->Flush();  // before "listening": a reader sees the summary first
}

Status App::Run() {
  LogStartup();
  std::printf("listening on %s:%d\n", config_.host.c_str(), port_.load());
  std::fflush(stdout);
  Status s = loop_.Run();
  // The loop has stopped: nothing else runs on it. Stop the producers.
  if (backend_) backend_->Shutdown();
  log_->Log(LogLevel::kInfo, "stopped", {{"streams_live", hub_ ? hub_->live_streams() : 0}});
  log_->Flush();
  return s;
}

void App::RequestShutdown() {
  loop_.Post([this] { BeginShutdown(); });
}

void App::BeginShutdown() {
  if (shutting_down_) return;
  shutting_down_ = true;
  log_->Log(LogLevel::kWarn, "draining",
            {{"drain_ms", config_.drain_ms}, {"connections", server_->connection_count()}});
  hub_->BeginShutdown();
  server_->BeginShutdown([this] { loop_.Stop(); });
  loop_.AddTimer(config_.drain_ms, [this] { loop_.Stop(); });
}

http::Headers App::CorsHeaders() const {
  http::Headers h;
  if (!config_.cors_origin.empty()) {
    h.emplace_back("Access-Control-Allow-Origin", config_.cors_origin);
    h.emplace_back("Access-Control-Expose-Headers", "X-Stream-Id");
  }
  return h;
}

bool App::Authorized(const http::Request& req, http::Responder& r) {
  if (config_.api_key.empty()) return true;
  std::string_view auth = req.Header("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && auth.substr(0, kBearer.size()) == kBearer &&
      SameSecret(auth.substr(kBearer.size()), config_.api_key)) {
    return true;
  }
  r.SendError(401, "unauthorized", "missing or wrong API key (Authorization: Bearer KEY)", false, {},
              {{"WWW-Authenticate", "Bearer"}});
  return false;
}

void App::SendRequestError(http::Responder& r, const ApiError& e) { r.SendError(e, CorsHeaders()); }

void App::AddRoutes() {
  auto guarded = [this](auto fn) {
    return [this, fn](const http::Request& req, http::Responder r) {
      if (!Authorized(req, r)) return;
      (this->*fn)(req, std::move(r));
    };
  };
  router_.Add("GET", "/healthz", [](const http::Request&, http::Responder r) {
    r.Send(200, "application/json", "{\"status\":\"ok\"}");
  });
  router_.Add("GET", "/readyz", [this](const http::Request&, http::Responder r) {
    if (shutting_down_) {
      r.SendError(503, "shutting_down", "the server is draining", true, {}, {{"Retry-After", "1"}});
    } else {
      r.Send(200, "application/json", "{\"status\":\"ready\"}");
    }
  });
  router_.Add("GET", "/metrics", [this](const http::Request&, http::Responder r) { HandleMetrics(std::move(r)); });
  router_.Add("GET", "/stats", [this](const http::Request&, http::Responder r) { HandleStats(std::move(r)); });
  // ---- begin GET / (src/web): the teaching page, its script and style sheet.
  // Open like /healthz: it is static; the page's own /v1 calls are guarded.
  for (const web::Asset& a : web::Assets()) {
    router_.Add("GET", std::string(a.path), [&a](const http::Request&, http::Responder r) {
      r.Send(200, std::string(a.content_type), std::string(a.body), web::AssetHeaders());
    });
  }
  // ---- end GET /
  router_.Add("POST", "/v1/stream", [this](const http::Request& req, http::Responder r) {
    if (!Authorized(req, r)) return;
    HandleStream(req, std::move(r), true);
  });
  router_.Add("POST", "/v1/streams", [this](const http::Request& req, http::Responder r) {
    if (!Authorized(req, r)) return;
    HandleStream(req, std::move(r), false);
  });
  router_.Add("POST", "/v1/generate", guarded(&App::HandleGenerate));
  router_.Add("GET", "/v1/streams/{id}/events", guarded(&App::HandleEvents));
  router_.Add("GET", "/v1/streams/{id}", guarded(&App::HandleStatus));
  router_.Add("DELETE", "/v1/streams/{id}", guarded(&App::HandleDelete));
  router_.Add("POST", "/v1/tokenize", guarded(&App::HandleTokenize));
  router_.Add("POST", "/v1/detokenize", guarded(&App::HandleDetokenize));
  if (config_.lab) router_.Add("GET", "/lab/emissions/{id}", guarded(&App::HandleEmissions));
  // ---- begin OpenAI-compatible API (src/api/completions.cc, chat.cc, docs/openai.md)
  router_.Add("POST", "/v1/completions", guarded(&App::HandleCompletions));
  router_.Add("POST", "/v1/chat/completions", guarded(&App::HandleChatCompletions));
  router_.Add("GET", "/v1/models", guarded(&App::HandleModels));
  router_.Add("GET", "/v1/models/{id}", guarded(&App::HandleModel));
  // ---- end OpenAI-compatible API
  AddWebSocketRoutes();
}

ApiError App::Draining() {
  ApiError e = ApiError::Make(ErrorCode::kShuttingDown, "the server is shutting down");
  e.retry_after_ms = 1000;
  return e;
}

std::shared_ptr<stream::Stream> App::Launch(ParsedGeneration g, ApiError* why) {
  if (shutting_down_) {
    *why = Draining();
    return nullptr;
  }
  auto s = hub_->Create(g.policy);
  if (!s) {
    *why = ApiError::Make(ErrorCode::kOverloaded, "too many streams (--max-streams)");
    why->retry_after_ms = 1000;
    return nullptr;
  }
  s->Append(stream::Event::Start(static_cast<int>(g.request.prompt_tokens.size())));
  if (!backend_->Submit(s, std::move(g.request), why)) {
    hub_->Abandon(s);
    if (why->http_status != 503) why->retry_after_ms = 0;
    return nullptr;
  }
  return s;
}

ApiError App::PrepOverloaded() {
  ApiError e = ApiError::Make(ErrorCode::kOverloaded, "too many requests waiting to be parsed (--max-prep-queue)");
  e.retry_after_ms = 1000;
  return e;
}

void App::AnswerOffLoop(http::Responder r, std::function<bool(std::string*, ApiError*)> make) {
  PrepRequest<std::string>(
      std::move(r), std::move(make),
      [this](std::string& body, http::Responder r) {
        r.Send(200, "application/json", std::move(body), CorsHeaders());
      },
      [this](http::Responder& r, const ApiError& e) { SendRequestError(r, e); });
}

void App::StartGeneration(const http::Request& req, http::Responder r, Launched then) {
  PrepRequest<ParsedGeneration>(
      std::move(r),
      [this, body = req.body](ParsedGeneration* g, ApiError* why) {
        return ParseGenerationRequest(body, tokenizer_, bounds_, default_policy_, g, why);
      },
      [this, then = std::move(then)](ParsedGeneration& g, http::Responder r) {
        ApiError why;
        std::shared_ptr<stream::Stream> s = Launch(std::move(g), &why);
        if (!s) {
          r.SendError(why, CorsHeaders());
          return;
        }
        then(s, std::move(r));
      },
      [this](http::Responder& r, const ApiError& e) { r.SendError(e, CorsHeaders()); });
}

void App::AttachSse(const std::shared_ptr<stream::Stream>& s, http::Responder r, uint64_t after) {
  SseSubscription::Options o;
  o.heartbeat_ms = config_.heartbeat_ms;
  o.stream_id = s->id();
  o.extra_headers = CorsHeaders();
  http::Responder keep = r;
  auto sub = std::make_shared<SseSubscription>(
      &loop_, hub_.get(), std::move(r), std::move(o),
      std::make_unique<TokenWireSseFormat>(s->id(), model_name_), [this](SseSubscription* self) {
        auto it = subscriptions_.find(self);
        if (it != subscriptions_.end()) {
          loop_.ReleaseLater(std::move(it->second));  // freed after this callback returns
          subscriptions_.erase(it);
        }
      });
  subscriptions_[sub.get()] = sub;
  uint64_t oldest = 0;
  uint64_t head = 0;
  stream::Stream::AttachResult res = hub_->Attach(s, sub.get(), after, &oldest, &head);
  if (res == stream::Stream::AttachResult::kOk) {
    // Headers go out now even if no event is due yet (a resume at the head).
    if (subscriptions_.count(sub.get())) sub->Start();
    return;
  }
  subscriptions_.erase(sub.get());
  loop_.ReleaseLater(sub);
  if (res == stream::Stream::AttachResult::kWindowExceeded) {
    ApiError e = ApiError::Make(ErrorCode::kResumeWindowExceeded,
                                "event " + std::to_string(after + 1) +
                                    " has left the resume window; the oldest event still held is " +
                                    std::to_string(oldest));
    e.oldest_available = static_cast<int64_t>(oldest);
    keep.SendError(e, CorsHeaders());
  } else if (res == stream::Stream::AttachResult::kPastHead) {
    keep.SendError(stream::ResumePastHeadError(s->id(), after, head, s->finished()), CorsHeaders());
  } else {
    keep.SendError(503, "overloaded", "too many subscribers on this stream (--max-subscribers)",
                   true, {}, {{"Retry-After", "1"}});
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
    http::Headers h = CorsHeaders();
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
  auto sub = std::make_shared<CollectSubscription>(r, s->id(), [this](void* self) {
    auto it = subscriptions_.find(self);
    if (it != subscriptions_.end()) {
      loop_.ReleaseLater(std::move(it->second));
      subscriptions_.erase(it);
    }
  });
  subscriptions_[sub.get()] = sub;
  uint64_t oldest = 0;
  hub_->Attach(s, sub.get(), 0, &oldest);  // a fresh stream: cannot be refused
}

void App::HandleEvents(const http::Request& req, http::Responder r) {
  if (shutting_down_) {
    // Its generation was cancelled by the drain: a resume here could only
    // end in `cancelled`. Retryable: the client learns to start again.
    r.SendError(Draining(), CorsHeaders());
    return;
  }
  std::string id(r.Param("id"));
  auto s = hub_->Find(id);
  if (!s) {
    hub_->CountResumeNotFound();
    r.SendError(404, "not_found", "unknown or expired stream '" + id + "'", false, {}, CorsHeaders());
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
    r.SendError(400, "invalid_request",
                std::string(source) + " must be a non-negative integer (an event id)", false, {},
                CorsHeaders());
    return;
  }
  AttachSse(s, std::move(r), after);
}

void App::HandleStatus(const http::Request&, http::Responder r) {
  std::string id(r.Param("id"));
  auto s = hub_->Find(id);
  if (!s) {
    r.SendError(404, "not_found", "unknown or expired stream '" + id + "'", false, {}, CorsHeaders());
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
  r.Send(200, "application/json", body, CorsHeaders());
}

void App::HandleDelete(const http::Request&, http::Responder r) {
  std::string id(r.Param("id"));
  auto s = hub_->Find(id);
  if (!s) {
    r.SendError(404, "not_found", "unknown or expired stream '" + id + "'", false, {}, CorsHeaders());
    return;
  }
  http::Headers h = CorsHeaders();
  // 204 only once the producer has exited (and, for the engine, released
  // its KV blocks): the hub runs this callback at that moment.
  hub_->Cancel(s, [r, h]() mutable { r.Send(204, "", "", h); });
}

void App::HandleTokenize(const http::Request& req, http::Responder r) {
  AnswerOffLoop(std::move(r), [this, body = req.body](std::string* out, ApiError* err) {
    json::Value v;
    if (!ParseRequestBody(body, bounds_, &v, err)) return false;
    const json::Value* text = v.Find("text");
    if (!v.is_object() || text == nullptr || !text->is_string() || v.members().size() != 1) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, "expected {\"text\": string}");
      return false;
    }
    std::vector<tokenizer::TokenId> ids = tokenizer_.Encode(text->as_string());
    json::Writer w(out);
    w.BeginObject();
    w.Key("tokens");
    w.BeginArray();
    for (auto id : ids) w.Int(id);
    w.EndArray();
    w.Key("count");
    w.Int(static_cast<int64_t>(ids.size()));
    w.EndObject();
    return true;
  });
}

void App::HandleDetokenize(const http::Request& req, http::Responder r) {
  AnswerOffLoop(std::move(r), [this, body = req.body](std::string* out, ApiError* err) {
    json::Value v;
    if (!ParseRequestBody(body, bounds_, &v, err)) return false;
    const json::Value* toks = v.Find("tokens");
    if (!v.is_object() || toks == nullptr || !toks->is_array() || v.members().size() != 1) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, "expected {\"tokens\": [ids]}");
      return false;
    }
    std::vector<tokenizer::TokenId> ids;
    for (size_t i = 0; i < toks->items().size(); i++) {
      const json::Value& t = toks->items()[i];
      if (!t.is_int() || t.as_int() < 0 || t.as_int() >= static_cast<int64_t>(tokenizer_.vocab_size())) {
        *err = ApiError::Make(ErrorCode::kInvalidRequest, 422, "tokens[" + std::to_string(i) + "] is not a token id");
        return false;
      }
      ids.push_back(static_cast<tokenizer::TokenId>(t.as_int()));
    }
    std::string bytes;
    Status ds = tokenizer_.Decode(ids, &bytes);
    if (!ds.ok()) {
      *err = ApiError::Make(ErrorCode::kInvalidRequest, 422, ds.message());
      return false;
    }
    // Token bytes need not be valid UTF-8 on their own; the writer replaces
    // invalid sequences with U+FFFD so the answer is always valid JSON.
    json::Writer w(out);
    w.BeginObject();
    w.Key("text");
    w.String(bytes);
    w.EndObject();
    return true;
  });
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
  gauge("stream_bytes_held", "Event payload bytes held in resume rings.", hub_->bytes_held());
  counter("streams_created_total", "Streams created.", c.streams_created);
  counter("tokens_delivered_total", "Token events taken by a client socket (once per stream).", c.tokens_delivered);
  counter("tokens_never_delivered_total", "Token events of finished streams that no client took.", c.tokens_never_delivered);
  counter("slow_client_detaches_total", "Subscribers detached by drop_slow.", c.slow_client_detaches);
  counter("producer_pauses_total", "Times a policy paused a producer.", c.pauses);
  counter("producer_unpauses_total", "Times a paused producer was resumed.", c.unpauses);
  counter("stall_cancels_total", "Generations cancelled by pause_then_cancel.", c.stall_cancels);
  counter("linger_cancels_total", "Generations cancelled after --linger-ms without a subscriber.", c.linger_cancels);
  counter("delete_cancels_total", "Generations cancelled by DELETE.", c.delete_cancels);
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
    r.SendError(404, "not_found", "emission logs exist only for --backend mock", false);
    return;
  }
  backend::MockBackend::EmissionLog log;
  std::string id(r.Param("id"));
  if (!mock->GetEmissionLog(id, &log)) {
    r.SendError(404, "not_found", "no emission log for '" + id + "'", false);
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
  so.model = model_name_;
  router_.Add("GET", "/v1/ws", [this, hs, wo, so](const http::Request& req, http::Responder r) {
    if (!Authorized(req, r)) return;
    if (shutting_down_) {
      r.SendError(Draining());
      return;
    }
    ws::AcceptUpgrade(req, std::move(r), &loop_, hs, wo, [this, so] {
      return std::make_unique<ws::WsSession>(
          &loop_, hub_.get(),
          [this](const json::Value& m, std::function<bool()> wanted, ws::GenerationStarted then) {
            StartWsGeneration(m, std::move(wanted), std::move(then));
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
                            ws::GenerationStarted then) {
  struct Prepared {
    json::Value message;
    ParsedGeneration g;
    ApiError why;
    bool ok = false;
  };
  auto p = std::make_shared<Prepared>();
  p->message = message;
  bool queued = prep_->Submit(
      [this, p] {
        p->ok = ParseGenerationObject(p->message, tokenizer_, bounds_, default_policy_, &p->g, &p->why, {"op"});
      },
      [this, p, still_wanted = std::move(still_wanted), then]() {
        if (!still_wanted()) return;  // the connection closed meanwhile: launch nothing
        std::shared_ptr<stream::Stream> s;
        if (p->ok) s = Launch(std::move(p->g), &p->why);
        then(std::move(s), p->why);
      });
  if (!queued) then(nullptr, PrepOverloaded());
}

}  // namespace tw::api

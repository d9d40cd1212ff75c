#include "app/app.h"

#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "app/backends.h"
#include "app/log_json.h"
#include "app/version.h"
#include "cpu/kernels.h"
#include "json/error_json.h"
#include "json/json.h"
#include "model/serving_model.h"
#include "openai/openai_response.h"
#include "service/structured_output.h"
#include "web/assets.h"  // GET /: the teaching page (src/web)

namespace tw::app {

namespace {

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

namespace {

// What each signal means (docs/DECISIONS.md, "Signals"): TERM, INT, HUP and
// QUIT drain, as TERM always did; USR1, USR2 and ALRM are logged and
// ignored. PIPE is ignored (net::IgnoreSigpipe). Only KILL ends the process
// without a drain; a fault (SEGV, ABRT, ...) is not handled.
constexpr int kDrainSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
constexpr int kIgnoredSignals[] = {SIGUSR1, SIGUSR2, SIGALRM};

sigset_t HandledSignals() {
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : kDrainSignals) sigaddset(&mask, s);
  for (int s : kIgnoredSignals) sigaddset(&mask, s);
  return mask;
}

bool SignalDrains(int sig) {
  for (int s : kDrainSignals) {
    if (s == sig) return true;
  }
  return false;
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGALRM: return "SIGALRM";
    default: return "other";
  }
}

}  // namespace

Status App::Init(bool watch_signals) {
  net::IgnoreSigpipe();
  if (watch_signals) {
    // Before any thread starts (the backend's, the CPU pool's): threads
    // inherit the mask, so the handled signals stay pending for the
    // signalfd below instead of reaching a thread whose default action
    // kills the process.
    sigset_t mask = HandledSignals();
    if (pthread_sigmask(SIG_BLOCK, &mask, nullptr) != 0) return Status::Error("pthread_sigmask failed");
  }
  LogOptions lo;
  ParseLogLevel(config_.log_level, &lo.level);  // validated with the flags
  if (config_.log_format == "json") lo.format = FormatLogJson;
  lo.max_queued_bytes = static_cast<size_t>(config_.log_buffer_bytes);
  lo.exit_flush_ms = config_.log_exit_flush_ms;
  lo.fd = config_.log_fd;
  lo.dropped_counter = metrics_.AddCounter(
      "log_lines_dropped_total", "Log lines dropped because stderr did not take them fast enough.");
  log_ = std::make_unique<Logger>(std::move(lo));
  if (Status s = loop_.Init(); !s.ok()) return s;

  // Tokenizer: the model folder's files, else the copy embedded in the binary.
  std::string source;
  Status ts = model::IsBuiltInModel(config_.model_dir)
                  ? tokenizer::Tokenizer::LoadEmbedded(&tokenizer_)
                  : tokenizer::Tokenizer::LoadFromDirOrEmbedded(config_.model_dir, &tokenizer_, &source);
  if (!ts.ok()) return Status::Error("tokenizer: " + ts.message());
  if (config_.prep_threads == 0) {
    // One per core, at most 4: a large body being tokenized leaves the other
    // threads to the small requests behind it (on more than one core).
    config_.prep_threads = std::clamp<int64_t>(std::thread::hardware_concurrency(), 1, 4);
  }
  prep_ = std::make_unique<net::WorkerPool>(&loop_, static_cast<int>(config_.prep_threads),
                                            static_cast<size_t>(config_.max_prep_queue), kLargePrepBytes);

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
  m_prep_skipped_ = metrics_.AddCounter("prep_skipped_total",
                                        "Requests whose client left before a prep thread took them: never parsed.");

  // The chat template before the model: a bad file fails at once, naming its line and byte.
  if (!config_.chat_template_path.empty()) {
    if (Status s = openai::ChatTemplate::Load(config_.chat_template_path, &chat_template_); !s.ok()) return s;
  }
  if (Status s = MakeBackend(config_, &tokenizer_, &metrics_, log_.get(), &backend_, &backend_info_); !s.ok()) return s;

  // What the protocols' handlers read (service::Service::info).
  info_.tokenizer = &tokenizer_;
  info_.model = backend_->model_name();
  service::RequestBounds& bounds = info_.bounds;
  bounds.max_new_tokens = static_cast<int>(config_.max_new_tokens);
  bounds.default_new_tokens = static_cast<int>(config_.default_new_tokens);
  bounds.context_length = backend_->context_length();
  bounds.max_stop_strings = static_cast<size_t>(config_.max_stop_strings);
  bounds.max_stop_bytes = static_cast<size_t>(config_.max_stop_bytes);
  bounds.max_chat_messages = static_cast<size_t>(config_.max_chat_messages);
  bounds.max_json_depth = static_cast<int>(config_.max_json_depth);
  bounds.vocab_size = static_cast<int>(tokenizer_.vocab_size());
  stream::ParsePolicy(config_.policy, &info_.default_policy, /*allow_lab=*/config_.lab);
  info_.heartbeat_ms = config_.heartbeat_ms;
  bounds.max_logit_bias = static_cast<size_t>(config_.max_logit_bias);
  bounds.max_stop_token_ids = static_cast<size_t>(config_.max_stop_token_ids);
  bounds.strict_request_fields = config_.strict_request_fields;
  // Structured output over the model's ids (a padded vocabulary's extra ids
  // and end-of-text have no bytes).
  {
    const int vocab = backend_info_.vocab_size > 0 ? backend_info_.vocab_size : bounds.vocab_size;
    grammar::CompilerOptions go;
    go.max_source_bytes = static_cast<size_t>(config_.grammar_max_bytes);
    go.grammar.max_elements = static_cast<int>(config_.grammar_max_elements);
    go.max_compile_ms = static_cast<int>(config_.grammar_max_compile_ms);
    go.warmup_ms = static_cast<int>(config_.grammar_warmup_ms);
    go.cache_entries = static_cast<int>(config_.grammar_cache_entries);
    go.matcher.max_states = static_cast<int>(config_.grammar_max_states);
    go.matcher.max_cached_masks = static_cast<int>(config_.grammar_cached_masks);
    go.json.max_whitespace = static_cast<int>(config_.json_max_whitespace);
    grammars_ = std::make_unique<grammar::Compiler>(service::GrammarVocabulary(tokenizer_, vocab), go);
    bounds.grammars = grammars_.get();
  }
  openai_ = std::make_unique<openai::OpenAiEndpoints>(
      this, chat_template_, log_.get(),
      metrics_.AddCounter("openai_unknown_fields_total",
                          "Fields OpenAI requests held that this server does not know, accepted and ignored "
                          "(--strict-request-fields refuses them)."));

  stream::HubOptions ho;
  ho.policy = info_.default_policy;
  ho.subscriber_lag_events = static_cast<size_t>(config_.subscriber_lag_events);
  ho.stall_timeout_ms = config_.stall_timeout_ms;
  ho.linger_ms = config_.linger_ms;
  ho.retain_ms = config_.retain_ms;
  ho.max_streams = static_cast<size_t>(config_.max_streams);
  ho.max_retained_bytes = static_cast<size_t>(config_.max_retained_bytes);
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
  so.close_idle_ms = config_.close_idle_ms;
  so.max_output_bytes = static_cast<size_t>(config_.max_output_bytes);
  so.write_low_watermark_bytes = so.max_output_bytes / 4;
  so.socket_send_buffer_bytes = static_cast<int>(config_.socket_send_buffer_bytes);
  so.max_write_per_flush_bytes = static_cast<size_t>(config_.max_write_bytes_per_iteration);
  so.log = log_.get();
  http::ParseAllowedOrigins(config_.allowed_origins, &so.cors);  // checked with the flags
  so.error_body = [this](std::string_view path, const ApiError& e) {
    return SpeaksOpenAi(path) ? openai::OpenAiErrorJson(e) : json::ErrorEnvelope(e);
  };
  AddRoutes();
  server_ = std::make_unique<http::Server>(&loop_, so, &router_, &metrics_);
  if (Status s = server_->Start(); !s.ok()) return s;
  port_ = server_->port();

  if (watch_signals) {
    sigset_t mask = HandledSignals();
    signal_fd_ = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (signal_fd_ < 0) return Status::FromErrno("signalfd");
    Status s = loop_.AddFileEvent(signal_fd_, net::kReadable, [this](int fd, int) {
      signalfd_siginfo info;
      bool drain = false;
      while (::read(fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        const int sig = static_cast<int>(info.ssi_signo);
        const bool drains = SignalDrains(sig);
        log_->Log(LogLevel::kInfo, "signal", {{"signal", SignalName(sig)}, {"action", drains ? "drain" : "ignored"}});
        drain |= drains;
      }
      if (drain) BeginShutdown();
    });
    if (!s.ok()) return s;
  }
  return Status::Ok();
}

void App::LogStartup() {
  const BackendInfo& b = backend_info_;
  const bool engine = b.spec->make_runner != nullptr;
  const engine::RunnerLimits& l = b.limits;
  // What only an engine backend has is absent for the mock, and the reverse.
  auto when = [](bool has, int64_t v) { return has ? std::optional<int64_t>(v) : std::nullopt; };
  // K and V, fp32, every layer: the block layout both runners use.
  const double kv_mib = static_cast<double>(l.num_kv_blocks) * l.block_size_tokens * b.n_layer * 2 *
                        b.n_embd * sizeof(float) / (1 << 20);
  log_->Log(LogLevel::kInfo, "startup",
            {{"backend", b.spec->name},
             {"model", info_.model},
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
             {"cpu_kernels", b.spec->cpu_kernels ? cpu::IsaName(cpu::ActiveIsa()) : nullptr},
             {"cpu_weights", b.spec->weight_formats ? config_.weights.c_str() : nullptr},
             {"tokens_per_s", engine ? std::nullopt : std::optional<double>(config_.mock_tokens_per_s)},
             {"ttft_ms", when(!engine, config_.mock_ttft_ms)},
             {"prefix_cache", engine ? (config_.prefix_cache ? "on" : "off") : nullptr},
             {"admission", engine ? config_.admission.c_str() : nullptr},
             {"scheduling_policy", engine ? config_.scheduling_policy.c_str() : nullptr},
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
  // Bounded: a stderr nobody reads must not hold the exit (--log-exit-flush-ms).
  log_->FlushForExit();
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

bool App::Authorized(const http::Request& req, http::Responder& r) {
  if (config_.api_key.empty()) return true;
  std::string_view auth = req.Header("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.size() > kBearer.size() && auth.substr(0, kBearer.size()) == kBearer &&
      SameSecret(auth.substr(kBearer.size()), config_.api_key)) {
    return true;
  }
  r.SendError(ApiError::Make(ErrorCode::kUnauthorized, "missing or wrong API key (Authorization: Bearer KEY)"),
              {{"WWW-Authenticate", "Bearer"}});
  return false;
}

void App::SendError(http::Responder& r, const ApiError& e) { r.SendError(e); }

bool App::SpeaksOpenAi(std::string_view path) const {
  // OpenAI's routes and vLLM's beside them (docs/openai.md); an unknown
  // /v1/ path is most likely an OpenAI client asking for an API we lack.
  for (std::string_view p : {"/v1/completions", "/v1/chat/completions", "/v1/models", "/health", "/version",
                             "/tokenize", "/detokenize"}) {
    if (path == p) return true;
  }
  if (path.starts_with("/v1/models/")) return true;
  return path.starts_with("/v1/") && !router_.HasPath(path);
}

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
      ApiError e = ApiError::Make(ErrorCode::kShuttingDown, "the server is draining");
      e.retry_after_ms = 1000;
      r.SendError(e);
    } else {
      r.Send(200, "application/json", "{\"status\":\"ready\"}");
    }
  });
  // vLLM's probe: /readyz's answer with an empty body (docs/openai.md).
  router_.Add("GET", "/health", [this](const http::Request&, http::Responder r) {
    if (shutting_down_) {
      r.SendError(Draining());
    } else {
      r.Send(200, "text/plain", "");
    }
  });
  router_.Add("GET", "/version", [this](const http::Request&, http::Responder r) { HandleVersion(std::move(r)); });
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
  // vLLM's names and shapes for the same (docs/openai.md), guarded like /v1.
  router_.Add("POST", "/tokenize", guarded(&App::HandleVllmTokenize));
  router_.Add("POST", "/detokenize", guarded(&App::HandleVllmDetokenize));
  if (config_.lab) router_.Add("GET", "/lab/emissions/{id}", guarded(&App::HandleEmissions));
  // ---- begin OpenAI-compatible API (src/openai, docs/openai.md)
  auto openai = [this](void (openai::OpenAiEndpoints::*fn)(const http::Request&, http::Responder)) {
    return [this, fn](const http::Request& req, http::Responder r) {
      if (!Authorized(req, r)) return;
      (openai_.get()->*fn)(req, std::move(r));
    };
  };
  router_.Add("POST", "/v1/completions", openai(&openai::OpenAiEndpoints::HandleCompletions));
  router_.Add("POST", "/v1/chat/completions", openai(&openai::OpenAiEndpoints::HandleChatCompletions));
  router_.Add("GET", "/v1/models", openai(&openai::OpenAiEndpoints::HandleModels));
  router_.Add("GET", "/v1/models/{id}", openai(&openai::OpenAiEndpoints::HandleModel));
  // ---- end OpenAI-compatible API
  AddWebSocketRoutes();
}

ApiError App::Draining() {
  ApiError e = ApiError::Make(ErrorCode::kShuttingDown, "the server is shutting down");
  e.retry_after_ms = 1000;
  return e;
}

std::shared_ptr<stream::Stream> App::Launch(service::ParsedGeneration g, ApiError* why) {
  if (shutting_down_) {
    *why = Draining();
    return nullptr;
  }
  auto s = hub_->Create(g.policy, launching_request_id_);
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

void App::Prepare(http::Responder r, size_t cost, Parse parse, Use use, Refuse refuse) {
  struct Prepared {
    ApiError error;
    bool ok = false;
  };
  auto p = std::make_shared<Prepared>();
  http::Responder keep = r;
  // A client that leaves while its request waits for a prep thread: the
  // thread skips it (its body may be megabytes of work nobody will read).
  auto gone = std::make_shared<std::atomic<bool>>(false);
  keep.OnClientGone([gone] { gone->store(true, std::memory_order_relaxed); });
  bool queued = prep_->Submit([p, gone, skipped = m_prep_skipped_, parse = std::move(parse)] {
                                if (gone->load(std::memory_order_relaxed)) {
                                  skipped->Inc();
                                  return;
                                }
                                p->ok = parse(&p->error);
                              },
                              [this, p, r, use = std::move(use), refuse]() mutable {
                                if (r.closed()) return;  // the client left meanwhile
                                if (p->ok) {
                                  // The streams `use` launches belong to this request.
                                  launching_request_id_ = r.request_id();
                                  use(std::move(r));
                                  launching_request_id_.clear();
                                } else {
                                  refuse(r, p->error);
                                }
                              },
                              cost);
  if (!queued) refuse(keep, PrepOverloaded());
}

void App::Keep(void* key, std::shared_ptr<void> owner) { subscriptions_[key] = std::move(owner); }

void App::Release(void* key) {
  auto it = subscriptions_.find(key);
  if (it == subscriptions_.end()) return;
  loop_.ReleaseLater(std::move(it->second));  // freed after the current callback returns
  subscriptions_.erase(it);
}

ApiError App::PrepOverloaded() {
  ApiError e = ApiError::Make(ErrorCode::kOverloaded, "too many requests waiting to be parsed (--max-prep-queue)");
  e.retry_after_ms = 1000;
  return e;
}

}  // namespace tw::app

// App: the server program. It is the composition root: it reads the Config,
// builds the event loop, the HTTP server and its routes, the stream hub, the
// backend (app/backends.h) and the tokenizer, and implements
// service::Service, the narrow interface the protocols' handlers use
// (prepare a request, launch a generation, attach a subscriber).
//
// Where the endpoints live:
//   app/app.cc               AddRoutes (every route, in one table), the probes
//                            (/healthz, /readyz), auth, start-up, shutdown;
//   app/stream_endpoints.cc  TokenWire's own API (DESIGN.md §4-§6): /v1/stream,
//                            /v1/streams, /v1/generate, resume, status,
//                            cancel, tokenize, /metrics, /stats, WebSocket;
//   openai/endpoints.cc      OpenAI's API (openai::OpenAiEndpoints).
//
// Threads: Init() and Run() on the thread that will be the I/O thread;
// RequestShutdown() and port() from any thread. The backend has threads of
// its own, and so does request preparation: parsing a body and tokenizing a
// prompt (work that grows with the input) run on the prep threads
// (net::WorkerPool, --prep-threads), so a large request never stalls the
// loop. Everything else here runs on the I/O thread.
//
// Layering: JSON is written at the edges (the endpoints, the HTTP layer's
// error responses, the SSE and WebSocket formats); requests are parsed once
// into typed values (service::ParsedGeneration), and the hub and the backend
// see typed events (stream::Event) and token ids.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "app/backends.h"
#include "app/config.h"
#include "backend/backend.h"
#include "common/log.h"
#include "common/metrics.h"
#include "grammar/compiler.h"
#include "common/status.h"
#include "http/router.h"
#include "http/server.h"
#include "net/event_loop.h"
#include "net/worker_pool.h"
#include "openai/endpoints.h"
#include "service/generation_request.h"
#include "service/service.h"
#include "stream/hub.h"
#include "tokenizer/tokenizer.h"
#include "ws/ws_session.h"

namespace tw::app {

class App : public service::Service {
 public:
  explicit App(Config config);
  ~App() override;

  // Loads the tokenizer and the model, starts the backend, binds the socket.
  // With watch_signals, SIGTERM/SIGINT start the graceful shutdown.
  Status Init(bool watch_signals);
  // Serves until shutdown has completed. Prints "listening on HOST:PORT".
  Status Run();
  // Any thread: readiness goes 503, new streams are refused, live streams'
  // subscribers get `shutting_down`, and Run() returns within --drain-ms.
  void RequestShutdown();

  int port() const { return port_.load(); }
  backend::Backend* backend() { return backend_.get(); }
  const Config& config() const { return config_; }

  // service::Service: what the protocols' handlers use.
  const service::ServiceInfo& info() const override { return info_; }
  void Prepare(http::Responder r, size_t cost, Parse parse, Use use, Refuse refuse) override;
  std::shared_ptr<stream::Stream> Launch(service::ParsedGeneration g, ApiError* why) override;
  stream::StreamHub* hub() override { return hub_.get(); }
  net::EventLoop* loop() override { return &loop_; }
  void Keep(void* key, std::shared_ptr<void> owner) override;
  void Release(void* key) override;

 private:
  void AddRoutes();
  bool Authorized(const http::Request& req, http::Responder& r);
  void BeginShutdown();
  // The start-up summary: what was loaded, its bounds, where to look.
  void LogStartup();

  // TokenWire's own endpoints (app/stream_endpoints.cc).
  void HandleStream(const http::Request& req, http::Responder r, bool attach);
  void HandleGenerate(const http::Request& req, http::Responder r);
  void HandleEvents(const http::Request& req, http::Responder r);
  void HandleStatus(const http::Request& req, http::Responder r);
  void HandleDelete(const http::Request& req, http::Responder r);
  void HandleTokenize(const http::Request& req, http::Responder r);
  void HandleDetokenize(const http::Request& req, http::Responder r);
  // vLLM's POST /tokenize and /detokenize: the same work, vLLM's fields.
  void HandleVllmTokenize(const http::Request& req, http::Responder r);
  void HandleVllmDetokenize(const http::Request& req, http::Responder r);
  void HandleVersion(http::Responder r);
  void HandleMetrics(http::Responder r);
  void HandleStats(http::Responder r);
  void HandleEmissions(const http::Request& req, http::Responder r);
  // WebSocket (src/ws): GET /v1/ws and, with --lab, GET /lab/ws-echo.
  void AddWebSocketRoutes();

  // Parses a generation request off the loop (Prepare), then on the loop
  // launches the stream and calls `then` with it; or answers the refusal
  // and does not call `then`.
  using Launched = std::function<void(const std::shared_ptr<stream::Stream>&, http::Responder)>;
  void StartGeneration(const http::Request& req, http::Responder r, Launched then);
  // A WebSocket "generate" message, already parsed (its "op" allowed):
  // prepared off the loop like StartGeneration (ws::GenerationStarter).
  void StartWsGeneration(const json::Value& message, std::function<bool()> still_wanted,
                         ws::GenerationStarted then, std::string request_id);
  // A JSON body computed off the loop by `make(body*, error*) -> bool`, sent
  // as 200 application/json (or the error in our envelope).
  void AnswerOffLoop(http::Responder r, size_t cost, std::function<bool(std::string*, ApiError*)> make);
  // The same from the request's body parsed as JSON (service::ParseRequestBody).
  void AnswerJsonOffLoop(const http::Request& req, http::Responder r,
                         std::function<bool(const json::Value&, std::string*, ApiError*)> make);
  void AttachSse(const std::shared_ptr<stream::Stream>& s, http::Responder r, uint64_t after);
  // POST /v1/generate: the whole stream collected into one answer.
  void CollectGeneration(const std::shared_ptr<stream::Stream>& s, http::Responder r);
  // An error answer (its envelope chosen by SpeaksOpenAi).
  void SendError(http::Responder& r, const ApiError& e);
  // Whether errors on `path` take OpenAI's envelope (the HTTP layer's
  // error_body hook): OpenAI's and vLLM's routes, and unknown /v1/ paths.
  bool SpeaksOpenAi(std::string_view path) const;
  // The text of a JSON array of token ids of this vocabulary, or 422
  // naming the first that is not one.
  bool DetokenizeTo(const json::Value& tokens, std::string* text, ApiError* err) const;
  // vLLM's /tokenize of chat `messages`: the prompt chat completions would
  // render from them, tokenized.
  bool ChatPromptTokens(const json::Value& messages, std::vector<tokenizer::TokenId>* ids, ApiError* err) const;

  static ApiError PrepOverloaded();
  // A body of at least this many bytes is a large prep job: small ones are
  // prepared before it (net::WorkerPool; docs/DECISIONS.md).
  static constexpr size_t kLargePrepBytes = 64 << 10;
  // 503 shutting_down with Retry-After: new work while draining.
  static ApiError Draining();

  Config config_;
  // Before log_: the logger counts dropped lines in it to its last moment
  // (at exit too, --log-exit-flush-ms).
  Metrics metrics_;
  // Made first in Init and destroyed last: everything below may log.
  std::unique_ptr<Logger> log_;
  service::ServiceInfo info_;  // filled in Init; read-only after (prep threads read it)
  net::EventLoop loop_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  tokenizer::Tokenizer tokenizer_;
  // Structured output: compiles request grammars on the prep threads, and
  // caches them (info_.bounds.grammars points here).
  std::unique_ptr<grammar::Compiler> grammars_;
  std::unique_ptr<net::WorkerPool> prep_;  // after tokenizer_: its jobs use it
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<stream::StreamHub> hub_;
  std::unique_ptr<openai::OpenAiEndpoints> openai_;
  // The chat template (--chat-template): chat completions' (a copy in
  // openai_) and /tokenize's messages. Set in Init, read-only after.
  openai::ChatTemplate chat_template_ = openai::ChatTemplate::Plain();
  std::unordered_map<void*, std::shared_ptr<void>> subscriptions_;  // keeps transports alive
  std::atomic<int> port_{0};
  bool shutting_down_ = false;
  // While a prepared request's `use` runs (Prepare), or a WebSocket's
  // generation launches: the request id its streams are logged with.
  std::string launching_request_id_;
  int signal_fd_ = -1;
  BackendInfo backend_info_;  // what --backend built (the start-up summary)

  // Metrics owned by the app (the server registers its own).
  Histogram* m_ttft_ = nullptr;
  Histogram* m_itl_ = nullptr;
  Histogram* m_cancel_ = nullptr;
  Counter* m_tokens_generated_ = nullptr;
  Counter* m_prep_skipped_ = nullptr;
};

}  // namespace tw::app

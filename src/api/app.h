// App: the server program — wires the event loop, the HTTP server, the stream
// hub, the backend and the tokenizer, and serves the endpoints of DESIGN.md §4.
//
// Threads: Init() and Run() on the thread that will be the I/O thread;
// RequestShutdown() and port() from any thread. The backend has threads of
// its own; everything else here runs on the I/O thread.
//
// Layering: JSON is written at the edges (this layer, the HTTP layer's error
// responses, the SSE and WebSocket formats); requests are parsed once into
// typed values (api::ParsedGeneration), and the hub and the backend see typed
// events (stream::Event) and token ids.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>

#include "api/backends.h"
#include "api/config.h"
#include "api/generation_request.h"
#include "backend/backend.h"
#include "common/metrics.h"
#include "common/status.h"
#include "http/router.h"
#include "http/server.h"
#include "net/event_loop.h"
#include "stream/hub.h"
#include "tokenizer/tokenizer.h"

namespace tw::api {

class SseSubscription;
class CollectSubscription;

class App {
 public:
  explicit App(Config config);
  ~App();

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

 private:
  void AddRoutes();
  bool Authorized(const http::Request& req, http::Responder& r);
  http::Headers CorsHeaders() const;
  void BeginShutdown();

  // Endpoints.
  void HandleStream(const http::Request& req, http::Responder r, bool attach);
  void HandleGenerate(const http::Request& req, http::Responder r);
  void HandleEvents(const http::Request& req, http::Responder r);
  void HandleStatus(const http::Request& req, http::Responder r);
  void HandleDelete(const http::Request& req, http::Responder r);
  void HandleTokenize(const http::Request& req, http::Responder r);
  void HandleDetokenize(const http::Request& req, http::Responder r);
  void HandleMetrics(http::Responder r);
  void HandleStats(http::Responder r);
  void HandleEmissions(const http::Request& req, http::Responder r);
  // ---- begin OpenAI-compatible API (defined in src/api/completions.cc)
  void HandleCompletions(const http::Request& req, http::Responder r);  // POST /v1/completions
  void HandleModels(const http::Request& req, http::Responder r);       // GET /v1/models
  void HandleModel(const http::Request& req, http::Responder r);        // GET /v1/models/{id}
  // ---- end OpenAI-compatible API

  // Parses the body, launches, and returns the stream; or answers the
  // refusal and returns nullptr.
  std::shared_ptr<stream::Stream> StartGeneration(const http::Request& req, http::Responder& r);
  // The core every transport shares, on a typed request: create, append
  // `start`, submit. Refusals (shutting_down, overloaded, the backend's) fill
  // *why before any byte of a stream.
  std::shared_ptr<stream::Stream> Launch(ParsedGeneration g, ApiError* why);
  void AttachSse(const std::shared_ptr<stream::Stream>& s, http::Responder r, uint64_t after);
  // WebSocket (src/ws): GET /v1/ws and, with --lab, GET /lab/ws-echo.
  void AddWebSocketRoutes();
  // A WebSocket "generate" message, already parsed (its "op" allowed).
  std::shared_ptr<stream::Stream> StartWsGeneration(const json::Value& message, ApiError* refusal);
  void SendRequestError(http::Responder& r, const ApiError& e);
  // Parses a request body as JSON within the depth bound; on failure answers
  // 400 invalid_json (with the byte offset) and returns false.
  bool ParseJsonBody(const http::Request& req, http::Responder& r, json::Value* out);

  Config config_;
  RequestBounds bounds_;
  stream::Policy default_policy_ = stream::Policy::kDropSlow;
  net::EventLoop loop_;
  Metrics metrics_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  tokenizer::Tokenizer tokenizer_;
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<stream::StreamHub> hub_;
  std::unordered_map<void*, std::shared_ptr<void>> subscriptions_;  // keeps transports alive
  std::atomic<int> port_{0};
  std::atomic<bool> shutdown_requested_{false};
  bool shutting_down_ = false;
  int signal_fd_ = -1;
  std::string model_name_;
  BackendInfo backend_info_;  // what --backend built (the start-up summary)
  // OpenAI's "created" of the served model (GET /v1/models): when the App was made.
  int64_t created_unix_s_ = std::chrono::duration_cast<std::chrono::seconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();

  // Metrics owned by the app (the server registers its own).
  Histogram* m_ttft_ = nullptr;
  Histogram* m_itl_ = nullptr;
  Histogram* m_cancel_ = nullptr;
  Counter* m_tokens_generated_ = nullptr;
};

}  // namespace tw::api

// App: the server program — wires the event loop, the HTTP server, the stream
// hub, the backend and the tokenizer, and serves the endpoints of DESIGN.md §4.
//
// Threads: Init() and Run() on the thread that will be the I/O thread;
// RequestShutdown() and port() from any thread. The backend has threads of
// its own, and so does request preparation: parsing a body and tokenizing a
// prompt (work that grows with the input) run on the prep threads
// (net::WorkerPool, --prep-threads), so a large request never stalls the
// loop. Everything else here runs on the I/O thread.
//
// Layering: JSON is written at the edges (this layer, the HTTP layer's error
// responses, the SSE and WebSocket formats); requests are parsed once into
// typed values (api::ParsedGeneration), and the hub and the backend see typed
// events (stream::Event) and token ids.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>

#include "api/backends.h"
#include "api/chat_template.h"
#include "api/config.h"
#include "api/generation_request.h"
#include "backend/backend.h"
#include "common/log.h"
#include "common/metrics.h"
#include "common/status.h"
#include "http/router.h"
#include "http/server.h"
#include "net/event_loop.h"
#include "net/worker_pool.h"
#include "stream/hub.h"
#include "tokenizer/tokenizer.h"
#include "ws/ws_session.h"

namespace tw::api {

class SseSubscription;
class CollectSubscription;
struct CompletionRequest;
struct OpenAiLaunch;

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
  // The start-up summary: what was loaded, its bounds, where to look.
  void LogStartup();

  // Endpoints.
  void HandleStream(const http::Request& req, http::Responder r, bool attach);
  void HandleGenerate(const http::Request& req, http::Responder r);
  void CollectGeneration(const std::shared_ptr<stream::Stream>& s, http::Responder r);
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
  void HandleChatCompletions(const http::Request& req, http::Responder r);  // POST /v1/chat/completions (chat.cc)
  // Launches the request's n choices (one stream each) and answers them as
  // one response (api/openai_response.h: OpenAiChoices).
  void LaunchOpenAi(OpenAiLaunch l, http::Responder r);
  void HandleModels(const http::Request& req, http::Responder r);       // GET /v1/models
  void HandleModel(const http::Request& req, http::Responder r);        // GET /v1/models/{id}
  // ---- end OpenAI-compatible API

  // Work proportional to a request's size (parsing its JSON, tokenizing its
  // prompt) runs on a prep thread (--prep-threads), never on the loop.
  // Parses the body there, then on the loop launches the stream and calls
  // `then` with it; or answers the refusal (ours, or OpenAI's with
  // `openai`) and does not call `then`. A client that left meanwhile gets
  // nothing launched.
  using Launched = std::function<void(const std::shared_ptr<stream::Stream>&, http::Responder)>;
  void StartGeneration(const http::Request& req, http::Responder r, Launched then);
  // Prepares a request off the loop: `parse(T*, ApiError*) -> bool` runs on
  // a prep thread; then, on the loop and unless the client has left,
  // `use(T&, Responder)` or `refuse(Responder&, const ApiError&)`. With
  // --max-prep-queue requests already waiting it refuses at once (503).
  template <class T, class Parse, class Use, class Refuse>
  void PrepRequest(http::Responder r, Parse parse, Use use, Refuse refuse) {
    struct Prepared {
      T value;
      ApiError error;
      bool ok = false;
    };
    auto p = std::make_shared<Prepared>();
    http::Responder keep = r;
    bool queued = prep_->Submit([p, parse = std::move(parse)] { p->ok = parse(&p->value, &p->error); },
                                [p, r, use = std::move(use), refuse]() mutable {
                                  if (r.closed()) return;  // the client left meanwhile
                                  if (p->ok) {
                                    use(p->value, std::move(r));
                                  } else {
                                    refuse(r, p->error);
                                  }
                                });
    if (!queued) refuse(keep, PrepOverloaded());
  }
  static ApiError PrepOverloaded();
  // 503 shutting_down with Retry-After: new work while draining.
  static ApiError Draining();
  // A JSON body computed off the loop by `make(body*, error*) -> bool`, sent
  // as 200 application/json (or the error in our envelope).
  void AnswerOffLoop(http::Responder r, std::function<bool(std::string*, ApiError*)> make);
  // The core every transport shares, on a typed request: create, append
  // `start`, submit. Refusals (shutting_down, overloaded, the backend's) fill
  // *why before any byte of a stream.
  std::shared_ptr<stream::Stream> Launch(ParsedGeneration g, ApiError* why);
  void AttachSse(const std::shared_ptr<stream::Stream>& s, http::Responder r, uint64_t after);
  // WebSocket (src/ws): GET /v1/ws and, with --lab, GET /lab/ws-echo.
  void AddWebSocketRoutes();
  // A WebSocket "generate" message, already parsed (its "op" allowed):
  // prepared off the loop like StartGeneration (ws::GenerationStarter).
  void StartWsGeneration(const json::Value& message, std::function<bool()> still_wanted,
                         ws::GenerationStarted then);
  void SendRequestError(http::Responder& r, const ApiError& e);

  Config config_;
  // Made first in Init and destroyed last: everything below may log.
  std::unique_ptr<Logger> log_;
  RequestBounds bounds_;
  stream::Policy default_policy_ = stream::Policy::kDropSlow;
  net::EventLoop loop_;
  Metrics metrics_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  tokenizer::Tokenizer tokenizer_;
  std::unique_ptr<net::WorkerPool> prep_;  // after tokenizer_: its jobs use it
  std::unique_ptr<backend::Backend> backend_;
  std::unique_ptr<stream::StreamHub> hub_;
  std::unordered_map<void*, std::shared_ptr<void>> subscriptions_;  // keeps transports alive
  std::atomic<int> port_{0};
  std::atomic<bool> shutdown_requested_{false};
  bool shutting_down_ = false;
  int signal_fd_ = -1;
  std::string model_name_;
  ChatTemplate chat_template_ = ChatTemplate::Plain();  // --chat-template; read-only after Init (prep threads render it)
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

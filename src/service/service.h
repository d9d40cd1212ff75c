// service::Service: what a protocol's handlers need from the server, and
// nothing more.
//
// The server speaks two protocols over the same streams: TokenWire's own
// (DESIGN.md §4-§6; its endpoints are the app's) and OpenAI's (src/openai).
// A protocol's handlers parse a request into typed values, launch one or
// more generations and attach a transport to them. They do it through this
// interface, which the app (app::App) implements, so the protocol code never
// sees the app's wiring (its flags, its backend, its server):
//   prepare a request   Prepare: parse and tokenize on a prep thread (work
//                       that grows with the input never runs on the loop),
//                       then use or refuse on the loop;
//   launch a generation Launch: create a stream, append `start`, submit it
//                       to the backend, or refuse (shutting_down,
//                       overloaded, the backend's own refusal);
//   attach a subscriber hub() and loop() are what a transport subscription
//                       runs on; Keep holds it alive until it ends, Release
//                       frees it after the current loop iteration.
//
// Threads: every call on the I/O thread, except that Prepare's `parse` runs
// on a prep thread. info() is fixed after start-up (any thread may read it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/api_error.h"
#include "http/server.h"
#include "net/event_loop.h"
#include "service/generation_request.h"
#include "stream/hub.h"

namespace tw::tokenizer {
class Tokenizer;
}

namespace tw::service {

// What the protocols read of the served model and the server's settings.
struct ServiceInfo {
  const tokenizer::Tokenizer* tokenizer = nullptr;
  RequestBounds bounds;
  std::string model;  // the served model's id
  stream::Policy default_policy = stream::Policy::kDropSlow;
  int64_t heartbeat_ms = 15000;  // an idle event stream's comment heartbeat
};

class Service {
 public:
  using Parse = std::function<bool(ApiError*)>;  // true: parsed; false: *err says why
  using Use = std::function<void(http::Responder)>;
  using Refuse = std::function<void(http::Responder&, const ApiError&)>;

  virtual ~Service() = default;

  virtual const ServiceInfo& info() const = 0;

  // Runs `parse` on a prep thread; then, on the loop and unless the client
  // has left, `use` (parsed) or `refuse` (not). `cost`: the bytes parse
  // works through (the body): small requests go before large ones waiting
  // (net::WorkerPool). With --max-prep-queue requests already waiting,
  // refuses at once (503 overloaded).
  virtual void Prepare(http::Responder r, size_t cost, Parse parse, Use use, Refuse refuse) = 0;

  // Creates a stream for `g`, appends its `start` event and submits it to
  // the backend. On a refusal returns null with *why filled, before any
  // byte of an answer.
  virtual std::shared_ptr<stream::Stream> Launch(ParsedGeneration g, ApiError* why) = 0;

  virtual stream::StreamHub* hub() = 0;
  virtual net::EventLoop* loop() = 0;
  // Holds a transport object (a subscription) alive under `key` (its
  // address) until Release(key), which frees it after the current loop
  // iteration (it may be releasing itself from its own callback).
  virtual void Keep(void* key, std::shared_ptr<void> owner) = 0;
  virtual void Release(void* key) = 0;
};

// Prepare with a typed result: `parse(T*, ApiError*) -> bool` on a prep
// thread, then `use(T&, http::Responder)` on the loop.
template <class T, class ParseT, class UseT>
void PrepareAs(Service* s, http::Responder r, size_t cost, ParseT parse, UseT use, Service::Refuse refuse) {
  auto value = std::make_shared<T>();
  s->Prepare(
      std::move(r), cost, [value, parse = std::move(parse)](ApiError* err) { return parse(value.get(), err); },
      [value, use = std::move(use)](http::Responder r) mutable { use(*value, std::move(r)); },
      std::move(refuse));
}

}  // namespace tw::service

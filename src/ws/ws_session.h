// WsSession: the /v1/ws endpoint (DESIGN.md §6) — generation, resume and
// cancellation over one WebSocket, with the same stream layer as SSE.
//
// Client → server (text messages, one JSON object each):
//   {"op":"generate", …generation request fields…}
//   {"op":"resume", "stream":"s_…", "after": N}
//   {"op":"cancel", "stream":"s_…"}
// Server → client (text messages):
//   stream events: the SSE event's data object with "stream", "seq" and
//     "type" (start, token, done) added, e.g.
//     {"stream":"s_…","seq":2,"type":"token","index":0,"token":6342,"text":" Paris"};
//     a stream-level error event keeps its data under "error":
//     {"stream":"s_…","seq":N,"type":"error","error":{"type":"queue_timeout",…}};
//   errors that are not stream events (no "seq", like SSE's error without
//     an id): {"type":"error","stream":"s_…"?,"op":"resume"?,"error":{"type",
//     "message","retryable",…}} — invalid_json, invalid_request, not_found,
//     too_many_streams, overloaded, resume_window_exceeded (with
//     oldest_available, retryable false), slow_client and shutting_down
//     (with resume_from);
//   {"type":"cancelled","stream":"s_…"} once the producer of a cancelled
//     stream has exited (StreamHub::Cancel's callback).
// A binary message closes the connection with 1003 (unsupported data).
//
// Each stream the connection carries is one stream::Subscription (a slot);
// at most max_streams_per_connection at once (generate or resume beyond:
// too_many_streams). The hub applies each stream's policy: a slot whose
// events do not fit the connection's output bound (minus reserve_bytes, kept
// for the final error messages) is offered nothing (kNoRoom), and drop_slow
// detaches it with slow_client + resume_from while the connection and its
// other streams go on. When the connection goes, every slot is detached and
// the hub's linger applies, exactly as for an SSE client that went away.
//
// Event messages are written by sse/event_json (our schema) once per event:
// the bytes are shared by every connection carrying the stream
// (stream::Event::wire).
//
// Threads: the loop thread only. Memory: one slot per stream carried (its
// id), bounded by max_streams_per_connection.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/api_error.h"
#include "json/json.h"
#include "net/event_loop.h"
#include "stream/hub.h"
#include "ws/ws_connection.h"

namespace tw::ws {

// What a GenerationStarter reports, on the loop thread: the stream created
// and submitted, or nullptr and the refusal (invalid_request,
// prompt_too_long, overloaded, shutting_down).
using GenerationStarted = std::function<void(std::shared_ptr<stream::Stream>, const ApiError& refusal)>;
// Takes the parsed generate message ("op" included) and prepares it, possibly
// off the loop (tokenizing a prompt grows with its size); then, on the loop,
// if still_wanted() (the session is still open), creates and submits the
// stream and calls `then`. Without a stream it may call `then` at once.
using GenerationStarter =
    std::function<void(const json::Value& message, std::function<bool()> still_wanted, GenerationStarted then)>;

struct SessionOptions {
  size_t max_streams_per_connection = 16;
  size_t reserve_bytes = 1024;      // output kept free for the final error messages
  size_t max_json_bytes = 1 << 20;  // a client message (the frame layer bounds it too)
  int max_json_depth = 64;
  std::string model;                // the served model (the start event names it)
};

class WsSession : public WsEndpoint {
 public:
  WsSession(net::EventLoop* loop, stream::StreamHub* hub, GenerationStarter starter,
            const SessionOptions& options);
  ~WsSession() override;

  void OnOpen(WsConnection* ws) override { ws_ = ws; }
  void OnMessage(Opcode opcode, std::string_view payload) override;
  void OnWritable() override;
  void OnClosed(uint16_t code) override;

 private:
  class Slot;
  friend class Slot;

  void HandleGenerate(const json::Value& msg);
  void HandleResume(const json::Value& msg);
  void HandleCancel(const json::Value& msg);
  // Attaches a new slot for `s`; returns the hub's answer.
  stream::Stream::AttachResult AttachSlot(const std::shared_ptr<stream::Stream>& s, uint64_t after,
                                          uint64_t* oldest, uint64_t* head);
  void RemoveSlot(Slot* slot);
  Slot* FindSlot(std::string_view stream_id);
  // {"type":"error","stream"?,"op"?,"error":{…}}. Unbounded: a client is
  // told why, even when slow.
  void SendError(std::string_view stream_id, std::string_view op, const ApiError& e);

  net::EventLoop* loop_;
  stream::StreamHub* hub_;
  GenerationStarter starter_;
  SessionOptions options_;
  WsConnection* ws_ = nullptr;
  bool closed_ = false;
  std::unordered_map<Slot*, std::shared_ptr<Slot>> slots_;
  size_t starting_ = 0;  // generate ops being prepared (GenerationStarter)
  // Callbacks that may outlive the session (StreamHub::Cancel) hold a weak
  // reference to this.
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace tw::ws

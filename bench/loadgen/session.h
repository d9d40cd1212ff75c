// One generation stream as the load generator drives it: a script (start it
// with POST /v1/stream, read its SSE events with tw::sse::Parser, drop the
// connection with a FIN or an RST after chosen events and resume with
// Last-Event-ID, stop reading — for good or for a while —, resume when the
// server detached the reader, send DELETE) and what was measured (arrival
// time of every event, token ids by index, duplicates and gaps by event id,
// heartbeats, error events, how each connection ended).
//
// Also RequestSession: one plain request (DELETE, GET) whose status and round
// trip are recorded.
//
// Thread: the Engine's. Allocation: per stream, one record per token and the
// SSE parser's buffers (bounded by its ParserLimits).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "loadgen/engine.h"
#include "sse/parser.h"

namespace tw::loadgen {

struct Script {
  std::string body;                    // POST /v1/stream request JSON
  std::vector<int> disconnect_after;   // event ids after which to drop the connection (ascending)
  bool disconnect_with_reset = false;  // RST instead of FIN (alternates if `alternate_reset`)
  bool alternate_reset = false;
  double reconnect_delay_ms = 0;       // between the drop and the resume request
  int stop_reading_after = -1;         // event id after which reading stops (-1: never)
  bool close_instead_of_stall = false; // at stop_reading_after: close (FIN) instead
  int delete_after = -1;               // event id after which DELETE is sent (-1: never)
  double stall_ms = 0;                 // > 0: at stop_reading_after, read again after this long
                                       // (with a widened receive window)
  bool resume_when_ended = false;      // the server ended the response before `done` (a
                                       // slow_client detach): resume with Last-Event-ID
  int rcvbuf_bytes = 0;                // > 0: SO_RCVBUF of the stream's first connection
  uint64_t max_connections = 64;       // POST + resumes; one more is a failure (no endless loop)
};

class RequestSession;

class StreamSession : public Handler {
 public:
  StreamSession(Engine* engine, uint16_t port, Script script, uint64_t index);

  void Start();  // queues the POST

  void OnHead(Conn* c, const client::ResponseHead& head) override;
  void OnBody(Conn* c, std::string_view bytes) override;
  void OnEnd(Conn* c, bool complete, const Status& why) override;

  // Closes whatever connection is open (end of a hold).
  void CloseNow(bool reset);

  // Nothing more will happen: no connection open, no resume or DELETE
  // pending, and the stream ended (done, a failure, or the script's close).
  bool Over() const;

  // --- measurements --------------------------------------------------------
  std::string stream_id;
  double start_us = 0;              // first connect began
  double first_token_us = 0;        // 0: none
  double done_us = 0;               // `done` event arrived; 0: not
  std::vector<double> token_us;     // arrival of token index i (0: never)
  std::vector<int32_t> tokens;      // token id at index i (-1: never)
  int64_t last_event_id = 0;
  uint64_t events = 0;              // stream events received (with an id)
  uint64_t duplicates = 0;          // an id at or below the last one
  uint64_t gaps = 0;                // an id that skipped ahead
  uint64_t heartbeats = 0;          // comment lines
  uint64_t error_events = 0;
  std::string last_error_type;
  std::string finish_reason;
  int status = 0;                   // last HTTP status
  std::string error_body;           // the first KB of a response that was not 200
  uint64_t connections = 0;         // POST + resumes
  uint64_t unexpected_ends = 0;     // the server ended a connection before `done`
  uint64_t server_ends_resumed = 0; // of those, ended whole and resumed (resume_when_ended)
  uint64_t body_bytes = 0;          // de-chunked SSE bytes, all connections
  uint64_t wire_bytes = 0;          // bytes read from sockets, all connections
  uint64_t token_event_bytes = 0;   // SSE bytes of token events, as "id: N\nevent: token\ndata: D\n\n"
  bool stalled = false;             // stop_reading_after reached
  bool open = false;                // a connection is open now
  std::string failure;              // first unexpected failure
  // DELETE: client round trip and status.
  double delete_sent_us = 0;
  double delete_done_us = 0;
  int delete_status = 0;

 private:
  void OnEvent(const sse::Event& ev);
  void Resume();
  void ResumeLater();  // after script_.reconnect_delay_ms
  ConnOptions ConnOptionsFor() const;
  void SendDelete();
  void Fail(const std::string& why);
  void ActOnPending();

  Engine* engine_;
  uint16_t port_;
  Script script_;
  uint64_t index_;
  Conn* conn_ = nullptr;
  sse::Parser parser_;
  size_t next_disconnect_ = 0;
  int drops_ = 0;
  enum class Pending { kNone, kStall, kClose, kDrop };
  Pending pending_ = Pending::kNone;  // decided inside the parser's callback
  bool pending_reset_ = false;
  bool resume_scheduled_ = false;    // a delayed Resume() is queued on the engine
  std::unique_ptr<RequestSession> delete_;
};

class RequestSession : public Handler {
 public:
  // Called with the session once the response is complete or failed.
  using Done = std::function<void(RequestSession*)>;
  RequestSession(Engine* engine, std::string request, Done done);
  void Start();

  void OnHead(Conn*, const client::ResponseHead& head) override { status = head.status; }
  void OnBody(Conn*, std::string_view bytes) override { body.append(bytes); }
  void OnEnd(Conn* c, bool complete, const Status& why) override;

  int status = 0;
  std::string body;
  bool ok = false;
  std::string failure;
  double sent_us = 0;
  double done_us = 0;

 private:
  Engine* engine_;
  std::string request_;
  Done done_;
};

// Raw HTTP request bytes for 127.0.0.1:port.
std::string PostStreamRequest(uint16_t port, const std::string& body);
std::string GetRequest(uint16_t port, const std::string& target, const std::string& extra_headers = "");
std::string DeleteRequest(uint16_t port, const std::string& target);

}  // namespace tw::loadgen

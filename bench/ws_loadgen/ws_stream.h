// One generation stream as the WebSocket load generator drives it over
// `GET /v1/ws`: a script (send {"op":"generate",...} on a fresh connection;
// after chosen events drop the connection with a FIN or an RST, open a new
// one and send {"op":"resume","stream":id,"after":last_seq}) and what was
// measured (arrival time of every token, token ids by index, duplicates and
// gaps by `seq`, error messages, how each connection ended).
//
// A refused op (an error message naming "op") ends the stream as a failure
// ("generate refused: overloaded (message)") and closes the connection with
// a FIN.
//
// One connection carries one stream, as an SSE response does, so the two
// transports are compared stream for stream. After the `done` event the
// connection is closed with a FIN (the server needs no close frame to
// release it; it sees EOF).
//
// Thread: the WsEngine's. Allocation: per stream one record per token.
// Never blocks; never throws (malformed server messages are counted as the
// stream's failure).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ws_loadgen/ws_engine.h"

namespace tw::ws_loadgen {

struct WsScript {
  std::string generate;                // the {"op":"generate",...} message
  std::vector<int> disconnect_after;   // seqs after which to drop the connection (ascending)
  bool alternate_reset = false;        // FIN, RST, FIN, ... (else always FIN)
  double reconnect_delay_ms = 0;       // between the drop and the resume connection
  bool resume_on_detach = false;       // the server detached the stream (slow_client): send
                                       // {"op":"resume",...} on the same connection
};

class WsStream : public WsHandler {
 public:
  WsStream(WsEngine* engine, WsScript script, uint64_t index);

  void Start();  // queues the first connection

  void OnOpen(WsConn* c) override;
  void OnText(WsConn* c, std::string_view message) override;
  void OnEnd(WsConn* c, const Status& why) override;

  // --- measurements --------------------------------------------------------
  std::string stream_id;
  double start_us = 0;              // Start() was called (first connect queued)
  double first_token_us = 0;        // 0: none
  double done_us = 0;               // `done` arrived; 0: not
  std::vector<double> token_us;     // arrival of token index i (0: never)
  std::vector<int32_t> tokens;      // token id at index i (-1: never)
  int64_t last_seq = 0;
  uint64_t events = 0;              // stream events received (with a seq)
  uint64_t duplicates = 0;          // a seq at or below the last one, or a token index seen twice
  uint64_t gaps = 0;                // seqs skipped
  uint64_t error_messages = 0;      // messages of type "error" (with or without seq)
  std::string last_error_type;
  std::string finish_reason;
  uint64_t connections = 0;         // first + resumes
  uint64_t drops = 0;               // connections dropped by the script
  uint64_t unexpected_ends = 0;     // the server ended a connection before `done`
  uint64_t detach_resumes = 0;      // resumes sent after a slow_client detach (resume_on_detach)
  uint64_t wire_bytes = 0;          // bytes read from sockets, all connections
  // Per resume: from queuing the new connection to the first stream event on
  // it (connect + handshake + resume op + replay, or the wait for the next
  // live event when nothing was missed), ms.
  std::vector<double> resume_ms;
  bool open = false;                // a connection is open or queued now
  std::string failure;              // first unexpected failure

 private:
  void Connect();
  void Fail(const std::string& why);

  WsEngine* engine_;
  WsScript script_;
  uint64_t index_;
  WsConn* conn_ = nullptr;
  size_t next_disconnect_ = 0;
  double resume_started_us_ = 0;  // > 0: a resume connection waits for its first event
};

}  // namespace tw::ws_loadgen

// Config: every flag of `tokenwire serve`, with its default, in one place.
//
// Each bound of DESIGN.md §1 is a field here with its unit in its name, and a
// flag of the same name. ParseServeFlags() fills a Config from argv and
// rejects unknown flags and out-of-range values with a message naming the
// flag; ServeHelp() prints every flag with its default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tw::app {

struct Config {
  // Model and backend.
  std::string model_dir;        // --model DIR ("" = the default model, "random-tiny": model/serving_model.h)
  std::string chat_template_path;  // --chat-template ("" = the plain built-in template)
  bool strict_request_fields = false;  // --strict-request-fields: OpenAI endpoints refuse unknown fields
  std::string served_model_name;  // --served-model-name ("" = the --model folder's name, else the backend's)
  std::string backend = "cpu";  // --backend cpu|cuda|mock
  int threads = 0;              // --threads (0 = one per core)
  std::string cuda_matmul = "fp32";  // --cuda-matmul fp32|3xtf32
  std::string weights = "f32";       // --weights f32|bf16|q8 (cpu backend's matmul weights)
  // Listening.
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string api_key;          // --api-key or TOKENWIRE_API_KEY
  std::string allowed_origins;  // --allowed-origins (or --cors-origin): "*" or exact origins ("" = no CORS)
  std::string instance_tag;     // --instance-tag: put into stream ids (routing)
  bool lab = false;             // --lab: lab endpoints (emission log), lab policies
  int64_t lab_pad_bytes = 0;    // --lab-pad-bytes: padding in every token event (needs --lab)
  int64_t lab_unbounded_max_events = int64_t{1} << 20;  // --lab-unbounded-max-events: safety cap per stream
  int64_t lab_unbounded_max_bytes = int64_t{256} << 20;  // --lab-unbounded-max-bytes: safety cap per stream
  // Policies.
  std::string policy = "drop_slow";
  int64_t subscriber_lag_events = 256;  // --subscriber-lag
  int64_t stall_timeout_ms = 250;
  int64_t linger_ms = 5000;
  int64_t heartbeat_ms = 15000;
  int64_t retain_ms = 60000;
  int64_t drain_ms = 10000;
  // Engine.
  int64_t max_batch = 32;
  // Tokens one engine step computes: decodes first, then prompt chunks (0:
  // the backend's default, app::DefaultStepTokens).
  int64_t max_num_batched_tokens = 0;
  int64_t kv_blocks = 0;        // 0 = enough for max_batch full contexts
  int64_t block_size = 16;
  bool prefix_cache = true;     // --prefix-cache on|off: share cached prompt-prefix KV blocks
  std::string admission = "optimistic";  // --admission optimistic|reserve
  double kv_watermark = 0.01;            // --kv-watermark: fraction of blocks optimistic admission keeps free
  std::string scheduling_policy = "fcfs";  // --scheduling-policy fcfs|priority
  int64_t priority_aging_ms = 1000;      // --priority-aging-ms
  int64_t max_waiting = 64;
  int64_t prep_threads = 0;      // request parsing + tokenizing, off the loop (0: one per core, at most 4)
  int64_t max_prep_queue = 256;  // requests waiting for a prep thread
  int64_t max_new_tokens = 1024;
  int64_t default_new_tokens = 64;
  // Streams.
  int64_t resume_window_events = 4096;  // --resume-window
  int64_t max_streams = 4096;           // live + retained streams
  int64_t max_retained_bytes = int64_t{1} << 30;  // finished streams kept for resume: their bytes
  int64_t max_subscribers = 8;          // per stream
  int64_t max_stop_strings = 4;
  int64_t max_stop_bytes = 64;
  int64_t max_chat_messages = 2048;
  int64_t max_logit_bias = 300;       // --max-logit-bias: logit_bias entries per request (OpenAI's bound)
  int64_t max_stop_token_ids = 64;    // --max-stop-token-ids: stop_token_ids entries per request
  // Structured output (grammar/compiler.h).
  int64_t grammar_max_bytes = 65536;      // --grammar-max-bytes: a schema, pattern, grammar or choice list
  int64_t grammar_max_elements = 200000;  // --grammar-max-elements: the compiled grammar's size
  int64_t grammar_max_compile_ms = 2000;  // --grammar-max-compile-ms
  int64_t grammar_warmup_ms = 0;          // --grammar-warmup-ms: tables built ahead after the first mask
  int64_t grammar_cache_entries = 16;     // --grammar-cache-entries: compiled grammars kept
  int64_t grammar_max_states = 65536;     // --grammar-max-states: matcher states of one compiled grammar
  int64_t grammar_cached_masks = 256;     // --grammar-cached-masks: token masks kept per compiled grammar
  int64_t json_max_whitespace = 8;        // --json-max-whitespace: bytes between JSON tokens
  int64_t stream_interval = 1;            // --stream-interval: token events announced in groups of up to N
  int64_t stream_interval_bound_ms = 10;  // --stream-interval-bound-ms: the longest a token is held
  int64_t write_batch_events = 64;        // --write-batch-events: events one subscriber is handed per loop iteration
  // Connections and HTTP.
  int64_t max_connections = 4096;
  int64_t max_header_bytes = 16384;
  int64_t max_headers = 100;
  int64_t max_body_bytes = 1 << 20;
  int64_t max_json_depth = 64;
  int64_t header_timeout_ms = 10000;
  int64_t keep_alive_idle_ms = 60000;
  int64_t close_idle_ms = 10000;          // a closing connection's client reads nothing this long: reset
  int64_t max_output_bytes = 256 * 1024;  // per connection, user space
  int64_t socket_send_buffer_bytes = 0;   // SO_SNDBUF (0 = kernel default)
  int64_t max_write_bytes_per_iteration = 64 << 10;  // one connection's send per loop iteration
  // WebSocket (GET /v1/ws; DESIGN.md §6).
  int64_t ws_max_message_bytes = 1 << 20;     // incoming message (1009 beyond)
  int64_t ws_max_streams_per_connection = 16; // streams one connection may carry
  int64_t ws_pong_timeout_ms = 10000;         // a heartbeat ping's pong must come within this
  std::string ws_allowed_origins;             // comma-separated Origins ("" = any)
  // Logs (stderr; common/log.h).
  std::string log_level = "info";   // --log-level error|warn|info|debug
  std::string log_format = "text";  // --log-format text|json
  int64_t log_buffer_bytes = 1 << 20;  // --log-buffer-bytes: lines queued for stderr; beyond: dropped
  int64_t log_exit_flush_ms = 1000;    // --log-exit-flush-ms: at exit, what stderr has not taken by then is dropped
  int log_fd = 2;                   // not a flag: where the log goes (tests give a pipe)
  // Mock backend.
  int64_t mock_ttft_ms = 200;
  double mock_tokens_per_s = 20.0;
  std::string mock_clock = "stream";  // --mock-clock stream|step
};

// Parses argv[first..argc) into *cfg (which holds the defaults).
Status ParseServeFlags(int argc, char** argv, int first, Config* cfg);
// The text of `tokenwire serve --help`.
std::string ServeHelp();
// A flag that was removed: why, and what replaced it (ParseServeFlags
// refuses it with this); null for any other name.
const char* RemovedFlag(std::string_view name);

}  // namespace tw::app

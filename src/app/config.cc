#include "app/config.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "app/backends.h"
#include "common/log.h"
#include "cpu/kernels.h"
#include "http/cors.h"

namespace tw::app {

namespace {

struct IntFlag {
  const char* name;
  int64_t Config::*field;
  int64_t min;
  int64_t max;
  const char* help;
};

const IntFlag kIntFlags[] = {
    {"--subscriber-lag", &Config::subscriber_lag_events, 1, 1 << 20,
     "events a subscriber may lag behind the head before its policy acts"},
    {"--stall-timeout-ms", &Config::stall_timeout_ms, 1, 3600000,
     "pause_then_cancel: longest pause before the generation is cancelled"},
    {"--linger-ms", &Config::linger_ms, 0, 3600000,
     "a stream with no subscriber is cancelled after this (0 = at once)"},
    {"--heartbeat-ms", &Config::heartbeat_ms, 10, 3600000,
     "SSE comment / WebSocket ping on an idle stream every this often"},
    {"--retain-ms", &Config::retain_ms, 0, 86400000,
     "a finished stream stays resumable for this long"},
    {"--drain-ms", &Config::drain_ms, 0, 3600000, "SIGTERM, SIGINT, SIGHUP, SIGQUIT: drain, and exit within this"},
    {"--max-batch", &Config::max_batch, 1, 4096, "sequences decoded together (engine)"},
    {"--max-num-batched-tokens", &Config::max_num_batched_tokens, 0, 65536,
     "tokens one engine step computes in one pass: every running sequence's decode, then prompt chunks with the "
     "rest (>= --max-batch; 0 = cpu: max(64, 2 x --max-batch), cuda: max(2048, 2 x --max-batch))"},
    {"--kv-blocks", &Config::kv_blocks, 0, 1 << 24, "KV cache blocks (0 = max-batch full contexts)"},
    {"--block-size", &Config::block_size, 1, 1024, "tokens per KV block"},
    {"--priority-aging-ms", &Config::priority_aging_ms, 0, 3600000,
     "--scheduling-policy priority: a waiting request's priority improves by 1 per this many ms (0 = never)"},
    {"--max-waiting", &Config::max_waiting, 0, 1 << 20,
     "requests waiting for a batch slot; beyond: 503 overloaded"},
    {"--max-new-tokens", &Config::max_new_tokens, 1, 1 << 20, "largest max_new_tokens a request may ask"},
    {"--default-new-tokens", &Config::default_new_tokens, 1, 1 << 20,
     "max_new_tokens when a request does not say"},
    {"--resume-window", &Config::resume_window_events, 1, 1 << 22,
     "events each stream keeps for resume (its ring)"},
    {"--max-streams", &Config::max_streams, 1, 1 << 22, "live + retained streams; beyond: 503"},
    {"--max-retained-bytes", &Config::max_retained_bytes, 0, int64_t{1} << 40,
     "bytes finished streams kept for resume may hold (events, logprobs, cached wire bytes); beyond, the oldest are forgotten"},
    {"--max-subscribers", &Config::max_subscribers, 1, 1024, "subscribers attached to one stream"},
    {"--max-stop-strings", &Config::max_stop_strings, 0, 64, "stop strings per request"},
    {"--max-stop-bytes", &Config::max_stop_bytes, 1, 4096, "bytes per stop string"},
    {"--max-chat-messages", &Config::max_chat_messages, 1, 1 << 20, "messages in one chat completions request (400 beyond)"},
    // Together under the engine's 1024 named ids (engine::kMaxNamedIds, with end-of-text).
    {"--max-logit-bias", &Config::max_logit_bias, 0, 768, "logit_bias entries per request"},
    {"--max-stop-token-ids", &Config::max_stop_token_ids, 0, 255, "stop_token_ids per request"},
    {"--grammar-max-bytes", &Config::grammar_max_bytes, 1, 1 << 24,
     "structured output: bytes of a JSON schema, regex, GBNF grammar or choice list (400 beyond)"},
    {"--grammar-max-elements", &Config::grammar_max_elements, 16, 1 << 24,
     "structured output: elements of a compiled grammar (400 beyond; x{1000} is 1000)"},
    {"--grammar-max-compile-ms", &Config::grammar_max_compile_ms, 1, 600000,
     "structured output: time to compile a grammar and its first mask, on a prep thread (400 beyond)"},
    {"--grammar-warmup-ms", &Config::grammar_warmup_ms, 0, 600000,
     "structured output: after a grammar's first mask, its prep thread builds the tables the next tokens will likely "
     "need for this long (0 = none)"},
    {"--grammar-cache-entries", &Config::grammar_cache_entries, 0, 65536,
     "structured output: compiled grammars kept for reuse, least recently used out (0 = none)"},
    {"--grammar-max-states", &Config::grammar_max_states, 16, 1 << 22,
     "structured output: matcher states one compiled grammar may build (1 KB each; a stream passing it ends with an error)"},
    {"--grammar-cached-masks", &Config::grammar_cached_masks, 0, 1 << 20,
     "structured output: token masks kept per compiled grammar (6.3 KB each for GPT-2)"},
    {"--json-max-whitespace", &Config::json_max_whitespace, 0, 1024,
     "structured output: whitespace bytes allowed between JSON tokens (0 = compact JSON only)"},
    {"--stream-interval", &Config::stream_interval, 1, 1024,
     "send a stream's tokens in groups of up to N (1 = each at once; the first never waits)"},
    {"--stream-interval-bound-ms", &Config::stream_interval_bound_ms, 2, 60000,
     "with --stream-interval > 1: no token is held longer than this"},
    {"--write-batch-events", &Config::write_batch_events, 1, 1 << 20,
     "events one subscriber is handed per loop iteration (the rest follow in the next)"},
    {"--max-connections", &Config::max_connections, 1, 1 << 22,
     "open connections; beyond: 503 and close"},
    {"--max-header-bytes", &Config::max_header_bytes, 256, 1 << 22, "request head bytes (431)"},
    {"--max-headers", &Config::max_headers, 1, 10000, "request header count (431)"},
    {"--max-body-bytes", &Config::max_body_bytes, 0, 1 << 30, "request body bytes (413)"},
    {"--max-json-depth", &Config::max_json_depth, 1, 10000, "JSON nesting depth (400)"},
    {"--prep-threads", &Config::prep_threads, 0, 256,
     "threads that parse and tokenize requests off the event loop (0 = one per core, at most 4)"},
    {"--max-prep-queue", &Config::max_prep_queue, 1, 1 << 20,
     "requests waiting to be parsed and tokenized; beyond: 503 overloaded"},
    {"--header-timeout-ms", &Config::header_timeout_ms, 10, 3600000,
     "a request must arrive whole within this of its first byte (408)"},
    {"--keep-alive-idle-ms", &Config::keep_alive_idle_ms, 10, 86400000,
     "idle keep-alive connections are closed after this"},
    {"--max-output-bytes", &Config::max_output_bytes, 4096, 1 << 30,
     "per-connection output buffer (user space); no input is read while it is over"},
    {"--close-idle-ms", &Config::close_idle_ms, 10, 3600000,
     "a connection closing after its answer (Connection: close, HTTP/1.0) whose client reads none of it this long is reset"},
    {"--socket-send-buffer-bytes", &Config::socket_send_buffer_bytes, 0, 1 << 30,
     "SO_SNDBUF of each connection (0 = the kernel's autotuned default)"},
    {"--max-write-bytes-per-iteration", &Config::max_write_bytes_per_iteration, 1024, 1 << 30,
     "bytes one connection sends per event-loop iteration (the rest in the next)"},
    {"--ws-max-message-bytes", &Config::ws_max_message_bytes, 125, 1 << 30,
     "WebSocket: largest incoming message (1009 beyond)"},
    {"--ws-max-streams-per-connection", &Config::ws_max_streams_per_connection, 1, 4096,
     "WebSocket: streams one connection may carry at once"},
    {"--ws-pong-timeout-ms", &Config::ws_pong_timeout_ms, 10, 3600000,
     "WebSocket: a heartbeat ping unanswered this long closes the connection"},
    {"--log-buffer-bytes", &Config::log_buffer_bytes, 4096, 1 << 30,
     "log lines queued for stderr; beyond, lines are dropped (counted in /metrics), never waited for"},
    {"--log-exit-flush-ms", &Config::log_exit_flush_ms, 0, 60000,
     "at exit, queued log lines stderr has not taken within this are dropped (the exit is never held longer)"},
    {"--mock-ttft-ms", &Config::mock_ttft_ms, 0, 3600000, "mock backend: time to first token"},
    {"--lab-pad-bytes", &Config::lab_pad_bytes, 0, 65536,
     "lab (needs --lab): pad every token event with N bytes (field \"pad\") for the bench"},
    {"--lab-unbounded-max-events", &Config::lab_unbounded_max_events, 1, int64_t{1} << 30,
     "lab policy unbounded: events one stream may hold for a slow reader (a safety cap)"},
    {"--lab-unbounded-max-bytes", &Config::lab_unbounded_max_bytes, 1024, int64_t{16} << 30,
     "lab policy unbounded: event bytes one stream may hold for a slow reader (a safety cap)"},
};

// A model id travels as one path segment (GET /v1/models/{id}) and inside
// JSON strings: letters, digits and . _ - : only, so it needs no escaping.
Status CheckServedModelName(std::string_view v) {
  if (v.empty() || v.size() > 128) return Status::Error("--served-model-name: 1..128 characters");
  for (char c : v) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-' || c == ':';
    if (!ok) {
      return Status::Error("--served-model-name: letters, digits and . _ - : only (it is a path segment of "
                           "/v1/models/{id}), got '" + std::string(v) + "'");
    }
  }
  return Status::Ok();
}

// --allowed-origins and its older name --cors-origin: checked here, so a
// bad origin fails at start-up naming the flag; parsed again by App::Init.
Status SetAllowedOrigins(std::string_view v, Config* c) {
  http::CorsPolicy p;
  if (Status s = http::ParseAllowedOrigins(v, &p); !s.ok()) return s;
  c->allowed_origins = v;
  return Status::Ok();
}

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

Status Choice(std::string_view flag, std::string_view v, std::initializer_list<std::string_view> choices,
              std::string* field) {
  for (std::string_view c : choices) {
    if (v == c) {
      *field = v;
      return Status::Ok();
    }
  }
  std::string list;
  size_t i = 0;
  for (std::string_view c : choices) {
    list += i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ";
    list += c;
    i++;
  }
  return Status::Error(std::string(flag) + ": " + list + ", got '" + std::string(v) + "'");
}

// Every flag of `tokenwire serve` that is not an integer bound (kIntFlags):
// the parser and --help are made from this table, as `generate`'s are from
// its own (generate_cli.cc). `help` gives the text after the flag (lines
// wrapped, the default included), from the defaults in `d`.
struct ServeFlag {
  const char* name;   // "--model"
  const char* value;  // how the help names its value ("DIR"); null for a switch
  std::string (*help)(const Config& d);
  Status (*set)(std::string_view v, Config* c);
};

const ServeFlag kServeFlags[] = {
    {"--model", "DIR",
     [](const Config&) -> std::string {
       return "Hugging Face GPT-2 folder (config.json, model.safetensors,\n"
              "vocab.json + merges.txt), or random-tiny (random weights, 2\n"
              "layers, 64 wide); default: the built-in model (GPT-2 trained by\n"
              "make model on English quotations, 4 layers)";
     },
     [](std::string_view v, Config* c) -> Status {
       c->model_dir = v;
       return Status::Ok();
     }},
    {"--served-model-name", "NAME",
     [](const Config&) -> std::string {
       return "the model id /v1/models lists and completions' \"model\" must name;\n"
              "default: the --model folder's name (/models/gpt2-medium:\n"
              "gpt2-medium); without --model gpt2-fortunes; gpt2-random-tiny\n"
              "with --model random-tiny; mock-gpt2 with\n"
              "--backend mock";
     },
     [](std::string_view v, Config* c) -> Status {
       if (Status s = CheckServedModelName(v); !s.ok()) return s;
       c->served_model_name = v;
       return Status::Ok();
     }},
    {"--chat-template", "FILE",
     [](const Config&) -> std::string {
       return "the chat template /v1/chat/completions renders messages with\n"
              "(docs/openai.md); default: the plain one (User: / Assistant:)";
     },
     [](std::string_view v, Config* c) -> Status {
       if (v.empty()) return Status::Error("--chat-template: a file name");
       c->chat_template_path = v;
       return Status::Ok();
     }},
    {"--strict-request-fields", nullptr,
     [](const Config&) -> std::string {
       return "OpenAI endpoints: refuse a request field this server does not know\n"
              "(400 naming it); default off: accepted, ignored, logged (warn)";
     },
     [](std::string_view, Config* c) -> Status {
       c->strict_request_fields = true;
       return Status::Ok();
     }},
    {"--backend", "NAME", [](const Config& d) -> std::string { return BackendNames() + "; default " + d.backend; },
     [](std::string_view v, Config* c) -> Status {
       if (FindBackend(v) == nullptr) return Status::Error("--backend: " + BackendNames());
       c->backend = v;
       return Status::Ok();
     }},
    {"--threads", "N",
     [](const Config&) -> std::string { return "CPU backend threads (0 = one per core); default 0"; },
     [](std::string_view v, Config* c) -> Status {
       int64_t n = 0;
       if (!ParseInt(v, &n) || n < 0 || n > 1024) return Status::Error("--threads: 0..1024");
       c->threads = static_cast<int>(n);
       return Status::Ok();
     }},
    {"--cuda-matmul", "P",
     [](const Config& d) -> std::string {
       return "cuda backend matmuls: fp32 (FMA, the exact reference) or 3xtf32\n"
              "(tensor cores, fp32-level accuracy); default " + d.cuda_matmul;
     },
     [](std::string_view v, Config* c) -> Status { return Choice("--cuda-matmul", v, {"fp32", "3xtf32"}, &c->cuda_matmul); }},
    {"--prefix-cache", "on|off",
     [](const Config& d) -> std::string {
       return std::string("cpu/cuda: a prompt's longest cached prefix (whole KV blocks) is\n"
                          "shared, not prefilled again; blocks stay cached until evicted\n"
                          "(least recently used); default ") + (d.prefix_cache ? "on" : "off");
     },
     [](std::string_view v, Config* c) -> Status {
       std::string on_off;
       if (Status s = Choice("--prefix-cache", v, {"on", "off"}, &on_off); !s.ok()) return s;
       c->prefix_cache = on_off == "on";
       return Status::Ok();
     }},
    {"--admission", "M",
     [](const Config& d) -> std::string {
       return "cpu/cuda: optimistic (a request is admitted when its prompt's blocks\n"
              "and one more fit above the watermark; blocks are taken as sequences\n"
              "grow, and the latest admitted is preempted and later recomputed when\n"
              "none is free) or reserve (every block a request may need is reserved\n"
              "at admission); default " + d.admission;
     },
     [](std::string_view v, Config* c) -> Status { return Choice("--admission", v, {"optimistic", "reserve"}, &c->admission); }},
    {"--kv-watermark", "F",
     [](const Config& d) -> std::string {
       char buf[32];
       std::snprintf(buf, sizeof(buf), "%g", d.kv_watermark);
       return std::string("--admission optimistic: this fraction of the KV blocks stays free\n"
                          "when a request is admitted (0 <= F < 1); default ") + buf;
     },
     [](std::string_view v, Config* c) -> Status {
       const std::string text(v);
       char* end = nullptr;
       const double f = std::strtod(text.c_str(), &end);
       if (text.empty() || end != text.c_str() + text.size() || !(f >= 0.0 && f < 1.0)) {
         return Status::Error("--kv-watermark: a fraction in [0, 1), got '" + text + "'");
       }
       c->kv_watermark = f;
       return Status::Ok();
     }},
    {"--scheduling-policy", "P",
     [](const Config& d) -> std::string {
       return "cpu/cuda: fcfs (arrival order; a request's priority must be 0) or\n"
              "priority (lower `priority` first, then arrival; a worse-priority\n"
              "running sequence is preempted to admit a better one); default " + d.scheduling_policy;
     },
     [](std::string_view v, Config* c) -> Status {
       return Choice("--scheduling-policy", v, {"fcfs", "priority"}, &c->scheduling_policy);
     }},
    {"--weights", "F",
     [](const Config& d) -> std::string {
       return "cpu backend matmul weights: f32 (the exact reference), bf16\n"
              "(rounded to bfloat16) or q8 (8-bit, a scale per 32); default " + d.weights;
     },
     [](std::string_view v, Config* c) -> Status {
       cpu::WeightFormat f;
       if (Status s = cpu::ParseWeightFormat(std::string(v).c_str(), &f); !s.ok()) {
         return Status::Error("--weights: " + s.message());
       }
       c->weights = v;
       return Status::Ok();
     }},
    {"--host", "ADDR", [](const Config& d) -> std::string { return "default " + d.host; },
     [](std::string_view v, Config* c) -> Status {
       c->host = v;
       return Status::Ok();
     }},
    {"--port", "N", [](const Config& d) -> std::string { return "0 picks a free port; default " + std::to_string(d.port); },
     [](std::string_view v, Config* c) -> Status {
       int64_t n = 0;
       if (!ParseInt(v, &n) || n < 0 || n > 65535) return Status::Error("--port: 0..65535");
       c->port = static_cast<int>(n);
       return Status::Ok();
     }},
    {"--policy", "P",
     [](const Config& d) -> std::string {
       return "drop_slow|pause_producer|pause_then_cancel; default " + d.policy +
              "\nlab only (with --lab): naive (the engine waits for the slowest\n"
              "reader) or unbounded (every event kept for the slowest reader)";
     },
     [](std::string_view v, Config* c) -> Status {
       // naive and unbounded are lab policies: accepted here, refused after
       // the parse unless --lab is given too (in either order).
       if (v != "drop_slow" && v != "pause_producer" && v != "pause_then_cancel" && v != "naive" &&
           v != "unbounded") {
         return Status::Error("--policy: drop_slow, pause_producer or pause_then_cancel (with --lab also "
                              "naive or unbounded), got '" + std::string(v) + "'");
       }
       c->policy = v;
       return Status::Ok();
     }},
    {"--api-key", "KEY",
     [](const Config&) -> std::string { return "require 'Authorization: Bearer KEY' on /v1/* (or TOKENWIRE_API_KEY)"; },
     [](std::string_view v, Config* c) -> Status {
       c->api_key = v;
       return Status::Ok();
     }},
    {"--allowed-origins", "LIST",
     [](const Config&) -> std::string {
       return "CORS: comma-separated origins (scheme://host[:port]) whose pages\n"
              "may call the API, or *; default none (no CORS headers)";
     },
     SetAllowedOrigins},
    {"--cors-origin", "ORIGIN", [](const Config&) -> std::string { return "the older name of --allowed-origins"; },
     SetAllowedOrigins},
    {"--ws-allowed-origins", "LIST",
     [](const Config&) -> std::string { return "WebSocket: comma-separated Origins allowed to upgrade; default any"; },
     [](std::string_view v, Config* c) -> Status {
       c->ws_allowed_origins = v;
       return Status::Ok();
     }},
    {"--instance-tag", "TAG",
     [](const Config&) -> std::string { return "put TAG into stream ids (s_TAG_...) for routing; default none"; },
     [](std::string_view v, Config* c) -> Status {
       for (char ch : v) {
         if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))) {
           return Status::Error("--instance-tag: lowercase letters and digits only");
         }
       }
       if (v.empty() || v.size() > 16) return Status::Error("--instance-tag: 1..16 characters");
       c->instance_tag = v;
       return Status::Ok();
     }},
    {"--lab", nullptr,
     [](const Config&) -> std::string {
       return "enable /lab/* endpoints (mock emission log) and the lab\n"
              "policies naive and unbounded; default off";
     },
     [](std::string_view, Config* c) -> Status {
       c->lab = true;
       return Status::Ok();
     }},
    {"--log-level", "L",
     [](const Config& d) -> std::string {
       return "error|warn|info|debug: info logs the start-up summary, one line\n"
              "per request and per stream outcome; default " + d.log_level;
     },
     [](std::string_view v, Config* c) -> Status {
       LogLevel level;
       if (!ParseLogLevel(v, &level)) {
         return Status::Error("--log-level: error, warn, info or debug, got '" + std::string(v) + "'");
       }
       c->log_level = v;
       return Status::Ok();
     }},
    {"--log-format", "F",
     [](const Config& d) -> std::string {
       return "text (key=value lines) or json (one JSON object per line);\ndefault " + d.log_format;
     },
     [](std::string_view v, Config* c) -> Status { return Choice("--log-format", v, {"text", "json"}, &c->log_format); }},
    {"--mock-tokens-per-s", "R", [](const Config&) -> std::string { return "mock backend rate; default 20"; },
     [](std::string_view v, Config* c) -> Status {
       char* end = nullptr;
       std::string s(v);
       double d = std::strtod(s.c_str(), &end);
       if (end == s.c_str() || *end != '\0' || !(d > 0 && d <= 1e6)) {
         return Status::Error("--mock-tokens-per-s: a number in (0, 1e6]");
       }
       c->mock_tokens_per_s = d;
       return Status::Ok();
     }},
    {"--mock-clock", "stream|step",
     [](const Config& d) -> std::string {
       return "mock backend: each stream on its own clock from its arrival, or\n"
              "every stream's next token at one shared step (as a batching\n"
              "engine produces them); default " + d.mock_clock;
     },
     [](std::string_view v, Config* c) -> Status { return Choice("--mock-clock", v, {"stream", "step"}, &c->mock_clock); }},
};

// "  --flag VALUE" padded to column 30, then `text`, its later lines indented
// to column 30; a flag longer than the column gets its own line.
std::string HelpEntry(const std::string& flag, const std::string& text) {
  std::string out = "  " + flag;
  if (out.size() < 30) out.append(30 - out.size(), ' ');
  else out += "\n" + std::string(30, ' ');
  for (char ch : text) {
    out += ch;
    if (ch == '\n') out.append(30, ' ');
  }
  return out + "\n";
}

}  // namespace

const char* RemovedFlag(std::string_view name) {
  if (name == "--prefill-batch-tokens") {
    return "a step's prompt chunks and decodes share one pass of up to --max-num-batched-tokens tokens";
  }
  return nullptr;
}

Status ParseServeFlags(int argc, char** argv, int first, Config* cfg) {
  if (const char* k = std::getenv("TOKENWIRE_API_KEY")) cfg->api_key = k;
  for (int i = first; i < argc; i++) {
    std::string_view a = argv[i];
    std::string_view value;
    std::string name(a);
    bool has_inline = false;
    if (size_t eq = a.find('='); eq != std::string_view::npos && a.substr(0, 2) == "--") {
      name = std::string(a.substr(0, eq));
      value = a.substr(eq + 1);
      has_inline = true;
    }
    auto next = [&](std::string_view* v) -> Status {
      if (has_inline) {
        *v = value;
        return Status::Ok();
      }
      if (i + 1 >= argc) return Status::Error(name + ": missing value");
      *v = argv[++i];
      return Status::Ok();
    };
    std::string_view v;
    bool matched = false;
    for (const IntFlag& f : kIntFlags) {
      if (name != f.name) continue;
      matched = true;
      if (Status s = next(&v); !s.ok()) return s;
      int64_t n = 0;
      if (!ParseInt(v, &n) || n < f.min || n > f.max) {
        return Status::Error(name + ": expected an integer in [" + std::to_string(f.min) + ", " +
                             std::to_string(f.max) + "], got '" + std::string(v) + "'");
      }
      cfg->*f.field = n;
    }
    for (const ServeFlag& f : kServeFlags) {
      if (matched || name != f.name) continue;
      matched = true;
      if (f.value != nullptr) {
        if (Status s = next(&v); !s.ok()) return s;
      }
      if (Status s = f.set(v, cfg); !s.ok()) return s;
    }
    if (const char* why = RemovedFlag(name); !matched && why != nullptr) {
      return Status::Error(name + " was removed: " + why);
    }
    if (!matched) return Status::Error("unknown flag '" + name + "' (see tokenwire serve --help)");
  }
  if ((cfg->policy == "naive" || cfg->policy == "unbounded") && !cfg->lab) {
    return Status::Error("--policy " + cfg->policy +
                         " is a lab policy (for the engine bench, to show why it is wrong); it needs --lab");
  }
  const BackendSpec* backend = FindBackend(cfg->backend);
  if (cfg->policy == "naive" && !backend->lab_naive) {
    return Status::Error("--policy naive makes the cpu engine's step loop wait for readers; it needs "
                         "--backend cpu (got " + cfg->backend + ")");
  }
  if (cfg->lab_pad_bytes > 0 && !cfg->lab) {
    return Status::Error("--lab-pad-bytes pads every token event (for the bench); it needs --lab");
  }
  if (cfg->subscriber_lag_events >= cfg->resume_window_events) {
    return Status::Error("--subscriber-lag (" + std::to_string(cfg->subscriber_lag_events) +
                         ") must be below --resume-window (" +
                         std::to_string(cfg->resume_window_events) +
                         "): a detached client must be able to resume");
  }
  if (cfg->weights != "f32" && !backend->weight_formats) {
    return Status::Error("--weights " + cfg->weights + " packs the cpu backend's matmul weights; it needs "
                         "--backend cpu (got " + cfg->backend + ")");
  }
  if (cfg->default_new_tokens > cfg->max_new_tokens) cfg->default_new_tokens = cfg->max_new_tokens;
  return Status::Ok();
}

std::string ServeHelp() {
  const Config d;
  std::string h = "usage: tokenwire serve [flags]\n\n";
  for (const ServeFlag& f : kServeFlags) {
    h += HelpEntry(std::string(f.name) + (f.value ? std::string(" ") + f.value : ""), f.help(d));
  }
  for (const IntFlag& f : kIntFlags) {
    h += HelpEntry(std::string(f.name) + " N", std::string(f.help) + "; default " + std::to_string(d.*f.field));
  }
  return h;
}

}  // namespace tw::app

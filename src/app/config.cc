#include "app/config.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "common/log.h"
#include "cpu/kernels.h"

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
    {"--drain-ms", &Config::drain_ms, 0, 3600000, "SIGTERM: exit within this"},
    {"--max-batch", &Config::max_batch, 1, 4096, "sequences decoded together (engine)"},
    {"--prefill-batch-tokens", &Config::prefill_batch_tokens, 1, 256,
     "prompt tokens prefilled together in one pass (engine)"},
    {"--kv-blocks", &Config::kv_blocks, 0, 1 << 24, "KV cache blocks (0 = max-batch full contexts)"},
    {"--block-size", &Config::block_size, 1, 1024, "tokens per KV block"},
    {"--max-waiting", &Config::max_waiting, 0, 1 << 20,
     "requests waiting for a batch slot; beyond: 503 overloaded"},
    {"--max-new-tokens", &Config::max_new_tokens, 1, 1 << 20, "largest max_new_tokens a request may ask"},
    {"--default-new-tokens", &Config::default_new_tokens, 1, 1 << 20,
     "max_new_tokens when a request does not say"},
    {"--resume-window", &Config::resume_window_events, 1, 1 << 22,
     "events each stream keeps for resume (its ring)"},
    {"--max-streams", &Config::max_streams, 1, 1 << 22, "live + retained streams; beyond: 503"},
    {"--max-subscribers", &Config::max_subscribers, 1, 1024, "subscribers attached to one stream"},
    {"--max-stop-strings", &Config::max_stop_strings, 0, 64, "stop strings per request"},
    {"--max-stop-bytes", &Config::max_stop_bytes, 1, 4096, "bytes per stop string"},
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
    {"--prep-threads", &Config::prep_threads, 1, 256,
     "threads that parse and tokenize requests off the event loop"},
    {"--max-prep-queue", &Config::max_prep_queue, 1, 1 << 20,
     "requests waiting to be parsed and tokenized; beyond: 503 overloaded"},
    {"--header-timeout-ms", &Config::header_timeout_ms, 10, 3600000,
     "a request must arrive whole within this of its first byte (408)"},
    {"--keep-alive-idle-ms", &Config::keep_alive_idle_ms, 10, 86400000,
     "idle keep-alive connections are closed after this"},
    {"--max-output-bytes", &Config::max_output_bytes, 4096, 1 << 30,
     "per-connection output buffer (user space); no input is read while it is over"},
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

bool ParseInt(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *out);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

}  // namespace

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
    if (name == "--lab") {
      cfg->lab = true;
      continue;
    }
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
    if (matched) continue;
    if (Status s = next(&v); !s.ok()) return s;
    if (name == "--model") {
      cfg->model_dir = v;
    } else if (name == "--chat-template") {
      if (v.empty()) return Status::Error("--chat-template: a file name");
      cfg->chat_template_path = v;
    } else if (name == "--served-model-name") {
      if (Status s = CheckServedModelName(v); !s.ok()) return s;
      cfg->served_model_name = v;
    } else if (name == "--backend") {
      if (v != "cpu" && v != "cuda" && v != "mock") return Status::Error("--backend: cpu, cuda or mock");
      cfg->backend = v;
    } else if (name == "--host") {
      cfg->host = v;
    } else if (name == "--port") {
      int64_t n = 0;
      if (!ParseInt(v, &n) || n < 0 || n > 65535) return Status::Error("--port: 0..65535");
      cfg->port = static_cast<int>(n);
    } else if (name == "--threads") {
      int64_t n = 0;
      if (!ParseInt(v, &n) || n < 0 || n > 1024) return Status::Error("--threads: 0..1024");
      cfg->threads = static_cast<int>(n);
    } else if (name == "--policy") {
      // naive and unbounded are lab policies: accepted here, refused below
      // unless --lab is given too (in either order).
      if (v != "drop_slow" && v != "pause_producer" && v != "pause_then_cancel" && v != "naive" &&
          v != "unbounded") {
        return Status::Error("--policy: drop_slow, pause_producer or pause_then_cancel (with --lab also "
                             "naive or unbounded), got '" + std::string(v) + "'");
      }
      cfg->policy = v;
    } else if (name == "--api-key") {
      cfg->api_key = v;
    } else if (name == "--cors-origin") {
      cfg->cors_origin = v;
    } else if (name == "--ws-allowed-origins") {
      cfg->ws_allowed_origins = v;
    } else if (name == "--instance-tag") {
      for (char c : v) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
          return Status::Error("--instance-tag: lowercase letters and digits only");
        }
      }
      if (v.empty() || v.size() > 16) return Status::Error("--instance-tag: 1..16 characters");
      cfg->instance_tag = v;
    } else if (name == "--mock-tokens-per-s") {
      char* end = nullptr;
      std::string s(v);
      double d = std::strtod(s.c_str(), &end);
      if (end == s.c_str() || *end != '\0' || !(d > 0 && d <= 1e6)) {
        return Status::Error("--mock-tokens-per-s: a number in (0, 1e6]");
      }
      cfg->mock_tokens_per_s = d;
    } else if (name == "--cuda-matmul") {
      if (v != "fp32" && v != "3xtf32") return Status::Error("--cuda-matmul: fp32 or 3xtf32, got '" + std::string(v) + "'");
      cfg->cuda_matmul = v;
    } else if (name == "--prefix-cache") {
      if (v != "on" && v != "off") return Status::Error("--prefix-cache: on or off, got '" + std::string(v) + "'");
      cfg->prefix_cache = v == "on";
    } else if (name == "--weights") {
      cpu::WeightFormat f;
      if (Status s = cpu::ParseWeightFormat(std::string(v).c_str(), &f); !s.ok()) {
        return Status::Error("--weights: " + s.message());
      }
      cfg->weights = v;
    } else if (name == "--log-level") {
      LogLevel level;
      if (!ParseLogLevel(v, &level)) {
        return Status::Error("--log-level: error, warn, info or debug, got '" + std::string(v) + "'");
      }
      cfg->log_level = v;
    } else if (name == "--log-format") {
      if (v != "text" && v != "json") return Status::Error("--log-format: text or json, got '" + std::string(v) + "'");
      cfg->log_format = v;
    } else if (name == "--mock-clock") {
      if (v != "stream" && v != "step") return Status::Error("--mock-clock: stream or step, got '" + std::string(v) + "'");
      cfg->mock_clock = v;
    } else {
      return Status::Error("unknown flag '" + name + "' (see tokenwire serve --help)");
    }
  }
  if ((cfg->policy == "naive" || cfg->policy == "unbounded") && !cfg->lab) {
    return Status::Error("--policy " + cfg->policy +
                         " is a lab policy (for the engine bench, to show why it is wrong); it needs --lab");
  }
  if (cfg->policy == "naive" && cfg->backend != "cpu") {
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
  if (cfg->weights != "f32" && cfg->backend != "cpu") {
    return Status::Error("--weights " + cfg->weights + " packs the cpu backend's matmul weights; it needs "
                         "--backend cpu (got " + cfg->backend + ")");
  }
  if (cfg->default_new_tokens > cfg->max_new_tokens) cfg->default_new_tokens = cfg->max_new_tokens;
  return Status::Ok();
}

std::string ServeHelp() {
  Config d;
  std::string h =
      "usage: tokenwire serve [flags]\n\n"
      "  --model DIR                 Hugging Face GPT-2 folder (config.json, model.safetensors,\n"
      "                              vocab.json + merges.txt); default: random tiny GPT-2 weights\n"
      "  --served-model-name NAME    the model id /v1/models lists and completions' \"model\" must name;\n"
      "                              default: the --model folder's name (/models/gpt2-medium:\n"
      "                              gpt2-medium); without --model gpt2-random-tiny; mock-gpt2 with\n"
      "                              --backend mock\n"
      "  --chat-template FILE        the chat template /v1/chat/completions renders messages with\n"
      "                              (docs/openai.md); default: the plain one (User: / Assistant:)\n"
      "  --backend cpu|cuda|mock     default " + d.backend + "\n"
      "  --threads N                 CPU backend threads (0 = one per core); default 0\n"
      "  --cuda-matmul P             cuda backend matmuls: fp32 (FMA, the exact reference) or 3xtf32\n"
      "                              (tensor cores, fp32-level accuracy); default " + d.cuda_matmul + "\n"
      "  --prefix-cache on|off       cpu/cuda: a prompt's longest cached prefix (whole KV blocks) is\n"
      "                              shared, not prefilled again; blocks stay cached until evicted\n"
      "                              (least recently used); default " + (d.prefix_cache ? "on" : "off") + "\n"
      "  --weights F                 cpu backend matmul weights: f32 (the exact reference), bf16\n"
      "                              (rounded to bfloat16) or q8 (8-bit, a scale per 32); default " + d.weights + "\n"
      "  --host ADDR                 default " + d.host + "\n"
      "  --port N                    0 picks a free port; default " + std::to_string(d.port) + "\n"
      "  --policy P                  drop_slow|pause_producer|pause_then_cancel; default " + d.policy + "\n"
      "                              lab only (with --lab): naive (the engine waits for the slowest\n"
      "                              reader) or unbounded (every event kept for the slowest reader)\n"
      "  --api-key KEY               require 'Authorization: Bearer KEY' on /v1/* (or TOKENWIRE_API_KEY)\n"
      "  --cors-origin ORIGIN        send CORS headers for this origin; default none\n"
      "  --ws-allowed-origins LIST   WebSocket: comma-separated Origins allowed to upgrade; default any\n"
      "  --instance-tag TAG          put TAG into stream ids (s_TAG_...) for routing; default none\n"
      "  --lab                       enable /lab/* endpoints (mock emission log) and the lab\n"
      "                              policies naive and unbounded; default off\n"
      "  --log-level L               error|warn|info|debug: info logs the start-up summary, one line\n"
      "                              per request and per stream outcome; default " + d.log_level + "\n"
      "  --log-format F              text (key=value lines) or json (one JSON object per line);\n"
      "                              default " + d.log_format + "\n"
      "  --mock-tokens-per-s R       mock backend rate; default 20\n"
      "  --mock-clock stream|step    mock backend: each stream on its own clock from its arrival, or\n"
      "                              every stream's next token at one shared step (as a batching\n"
      "                              engine produces them); default " + d.mock_clock + "\n";
  for (const IntFlag& f : kIntFlags) {
    std::string line = "  " + std::string(f.name) + " N";
    // Help text starts in column 30; a longer flag gets its own line.
    if (line.size() < 30) line.append(30 - line.size(), ' ');
    else line += "\n" + std::string(30, ' ');
    line += std::string(f.help) + "; default " + std::to_string(d.*f.field) + "\n";
    h += line;
  }
  return h;
}

}  // namespace tw::app

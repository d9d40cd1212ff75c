// The chaos scenario: a mixed workload against the CPU backend with the
// random tiny GPT-2 (its default weights) for a fixed time (quick 60 s, full
// 600 s), then the server's end state. Every stream's prompt + max_new_tokens
// stays within kTokensPerStream (128).
//
// 1. Reference: each of 48 Specs (chaos_clients.h: prompt, seed, sampling)
//    is generated alone and whole with /v1/generate before any load; a
//    quarter of them also at half length, which must be a prefix.
// 2. Load: MainSide's HTTP clients on this thread (SSE streams clean, with
//    FIN/RST drops and Last-Event-ID resumes, DELETEd, stalled under each
//    policy, a quarter of the clean ones with logprobs; pipelined requests;
//    clients that never read; large bodies; non-streamed answers abandoned;
//    slow readers of answers on closing connections; n-choice streams with a
//    deleted choice) and WebSocket streams with drops and resumes on a second thread, every
//    slot busy the whole time. Each second: the server's VmRSS and whether it
//    is the same live process (/proc), and GET /stats.
// 3. Drain: no new client; the running ones end (at most kDrainS).
// 4. Drift: every Spec generated again: the same tokens as in step 1.
// 5. End state: /stats polled until everything is back at rest (at most
//    kSettlePolls polls), then /metrics and the server's log.
// 6. Stop: nobody reads the server's stderr any more (the pipe and the log
//    queue fill with 8,000 requests' records), then SIGHUP; the exit status
//    and how long the exit took.
//
// Checks (each pass/fail in the report; the scenario returns an error — the
// loadgen exits 1 — when one fails): tokens lost, duplicated, skipped or
// different from the reference: 0; unexpected outcomes, clients still
// running after the drain: 0; each policy acted (a slow_client detach, a
// producer pause, a stall cancel) and streams were cancelled by linger and by
// DELETE; at the end KV blocks in use, live and retained streams,
// subscribers, bytes held in resume rings, running and waiting sequences: 0,
// releases = admitted, no double release, one connection open (the poll's
// own); RSS flat: the median over the last 15 s of the load (full: 60 s) at
// most kRssBound x the first 15 s's (60 s); the server the same process
// (PID and start time) and alive at every sample (SIGUSR1/USR2/ALRM sent in
// turn every 7 s, each logged as ignored), and exit status 0 after SIGHUP;
// the metrics' identities (DESIGN.md §8: tokens generated = delivered +
// never delivered, cancels by cause = streams finished cancelled, streams
// created = finished); bytes never sent = the access log's `unsent`, resets
// = its outcome=reset records; abandoned answers and failed choices' siblings
// cancelled at once (each ≥ 1).
//
// Thread: main, plus the WebSocket side's thread (it only reads the Specs;
// its tally is merged after it is joined). Memory: chaos_clients.h's, and
// one sample per second.
#include <unistd.h>

#include <csignal>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/http_client.h"
#include "json/json.h"
#include "lib/svg.h"
#include "loadgen/chaos_clients.h"
#include "loadgen/engine.h"
#include "loadgen/report.h"
#include "loadgen/scenario_util.h"
#include "loadgen/scenarios.h"
#include "loadgen/server_process.h"
#include "loadgen/session.h"

namespace tw::loadgen {
namespace {

using chaos::kTokensPerStream;
using chaos::kMaxBodyBytes;
using chaos::kSpecs;
using chaos::Pick;
using chaos::Spec;
using chaos::Tally;

// --linger-ms: a stalled drop_slow reader is detached early in its stall (at
// most 800 ms) and resumes once it has read its buffers; a dropped client
// comes back within 100 ms: 3 s leaves room for a busy machine.
constexpr int kLingerMs = 3000;
// --retain-ms: a stream may finish while its client is away (the same
// delays): 3 s, for the same reason.
constexpr int kRetainMs = 3000;
constexpr double kRssBound = 1.10;   // RSS: median of the last window / median of the first
constexpr double kDrainS = 60;       // after the load: longest wait for the clients still running
constexpr int kWsSlots = 3;          // WebSocket streams at once
constexpr int kDrainMs = 10000;       // the server's --drain-ms (its default)
constexpr int kLogExitFlushMs = 1000; // the server's --log-exit-flush-ms (its default)
constexpr int kSettlePollMs = 200;   // end state: one /stats poll every this long...
constexpr int kSettlePolls = (kLingerMs + kRetainMs + 10000) / kSettlePollMs;  // ...at most this many

std::vector<std::string> ServerArgs() {
  return {"--backend", "cpu",
          "--model", "random-tiny",              // the model the committed runs measured
          "--threads", "1",                      // the load generator needs the other core
          "--max-batch", "8",                    // fewer than the streams running: they queue
          "--kv-blocks", "64",                   // 8 streams of 128 tokens in 16-token blocks: KV admission binds too
          "--max-waiting", "16",                 // beyond: 503 overloaded
          "--max-streams", "512",                // live + retained (for --retain-ms after the end)
          "--max-connections", "256",
          "--max-body-bytes", std::to_string(kMaxBodyBytes),
          "--max-output-bytes", "4096",          // the flag's minimum
          "--socket-send-buffer-bytes", "2048",  // the kernel's minimum applies (about 4.5 KB)
          "--subscriber-lag", "8",               // with the two above: a stalled reader trips its policy
          "--stall-timeout-ms", "150",
          "--linger-ms", std::to_string(kLingerMs),
          "--retain-ms", std::to_string(kRetainMs),
          "--heartbeat-ms", "500",
          "--header-timeout-ms", "1000",         // half a request head gets its 408 while it is held
          "--resume-window", "256",              // > the 129 events of the longest stream
          "--log-buffer-bytes", "262144"};       // BlockStderr's 8,000 records overflow it (the load's never do)
}

// ---- 1. The reference ----------------------------------------------------------

Status Post(uint16_t port, const std::string& target, const std::string& body, int* status, std::string* out) {
  client::Request req;
  req.method = "POST";
  req.target = target;
  req.body = body;
  req.headers = {{"Content-Type", "application/json"}};
  client::Response resp;
  if (Status st = client::Fetch(port, req, &resp); !st.ok()) {
    return Status::Error("POST " + target + ": " + st.message());
  }
  *status = resp.head.status;
  *out = std::move(resp.body);
  return Status::Ok();
}

// Generates `s` uninterrupted at length n (blocking).
Status Generate(uint16_t port, const Spec& s, int n, std::vector<int32_t>* tokens, std::string* finish) {
  int status = 0;
  std::string body;
  if (Status st = Post(port, "/v1/generate", chaos::SpecBody(s, n), &status, &body); !st.ok()) return st;
  if (status != 200 || !chaos::ParseGenerate(body, tokens, finish)) {
    return Status::Error("reference /v1/generate: HTTP " + std::to_string(status) + ": " + body.substr(0, 200));
  }
  return Status::Ok();
}

struct References {
  std::vector<Spec> specs;
  int eos_skipped = 0;     // seeds replaced: their reference ended with eos before the context was full
  int prefix_checked = 0;  // specs also generated at half length...
  int prefix_broken = 0;   // ...where that was not a prefix of the reference
  std::string text;        // what the pipelined clients tokenize
  std::vector<int32_t> text_tokens;
  std::string model;       // the id /v1/models lists
};

// The Specs and their references, each generated alone. A seed whose
// reference ends with eos before its full length is replaced by the next,
// so every stream's expected tokens are a prefix of one reference.
Status BuildReferences(uint16_t port, References* r) {
  std::mt19937_64 rng(20261207);
  for (int k = 0; k < kSpecs; ++k) {
    Spec s;
    int len = Pick(rng, 1, 8);
    for (int i = 0; i < len; ++i) s.prompt.push_back(Pick(rng, 0, 50256));
    s.temperature = k % 4 == 0 ? 0.0 : 0.6 + 0.1 * (k % 5);  // a quarter greedy
    s.top_k = k % 3 == 1 ? 40 : 0;
    s.top_p = k % 3 == 2 ? 0.9 : 1.0;
    std::string finish;
    for (int attempt = 0;; ++attempt) {
      s.seed = 7000 + static_cast<uint64_t>(k) * 100 + static_cast<uint64_t>(attempt);
      if (Status st = Generate(port, s, s.max_new(), &s.ref, &finish); !st.ok()) return st;
      if (finish == "length" && static_cast<int>(s.ref.size()) == s.max_new()) break;
      r->eos_skipped++;
      if (attempt == 20) return Status::Error("20 seeds in a row ended before the context was full");
    }
    if (k % 4 == 1) {
      std::vector<int32_t> half;
      if (Status st = Generate(port, s, s.max_new() / 2, &half, &finish); !st.ok()) return st;
      r->prefix_checked++;
      if (finish != "length" || !std::equal(half.begin(), half.end(), s.ref.begin())) r->prefix_broken++;
    }
    r->specs.push_back(std::move(s));
  }
  r->text = "The quick brown fox, naïve café — ünïcödé and 123 numbers.";
  std::string req = "{\"text\":";
  json::AppendQuoted(&req, r->text);
  req += "}";
  int status = 0;
  std::string body;
  json::Value v;
  if (Status st = Post(port, "/v1/tokenize", req, &status, &body); !st.ok()) return st;
  const json::Value* tokens = status == 200 && json::Parse(body, &v).ok() ? v.Find("tokens") : nullptr;
  if (!tokens || !tokens->is_array()) {
    return Status::Error("/v1/tokenize: HTTP " + std::to_string(status) + ": " + body);
  }
  for (const auto& x : tokens->items()) r->text_tokens.push_back(static_cast<int32_t>(x.as_int()));
  if (Status st = HttpGet(port, "/v1/models", &status, &body); !st.ok()) return st;
  const json::Value* data = json::Parse(body, &v).ok() ? v.Find("data") : nullptr;
  const json::Value* id = data && data->is_array() && !data->items().empty() ? data->items()[0].Find("id") : nullptr;
  if (!id || !id->is_string()) return Status::Error("/v1/models: " + body);
  r->model = id->as_string();
  return Status::Ok();
}

// ---- The server's state --------------------------------------------------------

// Field 22 of /proc/PID/stat (the start time, in clock ticks since boot)
// and the state letter; "" if the process is gone.
std::string ProcStartTime(pid_t pid, char* state) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return "";
  size_t close = line.rfind(')');  // the command, in parentheses, may hold spaces
  if (close == std::string::npos || close + 2 > line.size()) return "";
  std::istringstream in(line.substr(close + 2));
  std::vector<std::string> fields;  // from field 3 (state) on
  std::string x;
  while (in >> x) fields.push_back(x);
  if (fields.size() < 20) return "";
  *state = fields[0][0];
  return fields[19];
}

// The same process, still running (not a zombie)?
bool SameAndAlive(pid_t pid, const std::string& start_time) {
  char state = '?';
  return ProcStartTime(pid, &state) == start_time && state != 'Z' && state != 'X';
}

// A /stats answer flattened to "streams.live", "engine.kv_blocks_free", ...;
// -1 where a field is missing.
struct StatsView {
  std::map<std::string, int64_t> v;
  int64_t operator[](const std::string& k) const {
    auto it = v.find(k);
    return it == v.end() ? -1 : it->second;
  }
  int64_t KvUsed() const {
    const int64_t total = (*this)["engine.kv_blocks_total"];
    return total < 0 ? -1 : total - (*this)["engine.kv_blocks_free"];
  }
};

bool ParseStats(const std::string& body, StatsView* out) {
  json::Value v;
  if (!json::Parse(body, &v).ok() || !v.is_object()) return false;
  for (const auto& [name, value] : v.members()) {
    if (value.is_int()) out->v[name] = value.as_int();
    if (!value.is_object()) continue;
    for (const auto& [inner, x] : value.members()) {
      if (x.is_int()) out->v[name + "." + inner] = x.as_int();
    }
  }
  return true;
}

// A sample without labels in Prometheus text; NaN if absent.
double MetricValue(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(name + " ", 0) == 0) return std::atof(line.c_str() + name.size() + 1);
  }
  return std::nan("");
}

struct Sample {
  double t_s = 0;                  // since the load began
  double rss_mb = std::nan("");
  bool alive = false;
  StatsView stats;                 // empty if /stats had not answered by the next sample
};

// Once a second on the Engine: the server's VmRSS and liveness, and GET
// /stats (asynchronous; a second whose answer is late is skipped).
class Sampler {
 public:
  Sampler(Engine* e, const ServerProcess* server, std::string start_time, double t0_us)
      : engine_(e), server_(server), start_time_(std::move(start_time)), t0_us_(t0_us) {}

  void Every(double due_us, double until_us) {
    Sample s;
    s.t_s = (due_us - t0_us_) / 1e6;
    if (int64_t kb = server_->StatusKb("VmRSS"); kb >= 0) s.rss_mb = static_cast<double>(kb) / 1024.0;
    s.alive = SameAndAlive(server_->pid(), start_time_);
    not_alive += !s.alive;
    samples.push_back(s);
    // Every 7 s a signal the server logs and ignores, in turn: it must stay
    // the same live process (checked above) and log each one.
    if (samples.size() % 7 == 0 && s.alive) {
      static const int kSignals[] = {SIGUSR1, SIGUSR2, SIGALRM};
      ::kill(server_->pid(), kSignals[(samples.size() / 7) % 3]);
      signals_sent++;
    }
    if (inflight_ && inflight_->done_us == 0) {
      stats_missed++;
    } else {
      size_t at = samples.size() - 1;
      inflight_ = std::make_unique<RequestSession>(engine_, GetRequest(server_->port(), "/stats"),
                                                   [this, at](RequestSession* r) {
                                                     if (r->status != 200 || !ParseStats(r->body, &samples[at].stats)) {
                                                       stats_missed++;
                                                     }
                                                   });
      inflight_->Start();
    }
    if (due_us + 1e6 > until_us) return;
    engine_->At(due_us + 1e6, [this, due_us, until_us] { Every(due_us + 1e6, until_us); });
  }

  std::vector<Sample> samples;
  uint64_t not_alive = 0, stats_missed = 0, signals_sent = 0;

 private:
  Engine* engine_;
  const ServerProcess* server_;
  std::string start_time_;
  double t0_us_;
  std::unique_ptr<RequestSession> inflight_;
};

// The server's log: its records by level (the second field of a record,
// "2026-12-01T10:00:00.000Z warn access ..."), and the first records at
// error level or at warn level other than an access record (an answer of
// 4xx is logged as a warn access record).
struct LogSummary {
  std::map<std::string, uint64_t> levels;
  std::vector<std::string> notable;
  uint64_t signals_ignored = 0;   // "signal ... action=ignored" records
  uint64_t unsent_bytes = 0;      // the access records' unsent= (bytes of answers that never left)
  uint64_t reset_records = 0;     // access records with outcome=reset
};

LogSummary ReadServerLog(const std::string& path) {
  LogSummary out;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string when, level, event;
    in >> when >> level >> event;
    if (level != "debug" && level != "info" && level != "warn" && level != "error") continue;
    out.levels[level]++;
    if (event == "signal" && line.find("action=ignored") != std::string::npos) out.signals_ignored++;
    if (event == "access") {
      if (size_t at = line.find(" unsent="); at != std::string::npos) {
        out.unsent_bytes += std::strtoull(line.c_str() + at + 8, nullptr, 10);
      }
      out.reset_records += line.find(" outcome=reset") != std::string::npos;
    }
    if ((level == "error" || (level == "warn" && event != "access")) && out.notable.size() < 5) {
      out.notable.push_back(line.substr(0, 300));
    }
  }
  return out;
}

// ---- 2-3. The load and the drain -------------------------------------------------

struct LoadResult {
  std::vector<Sample> samples;
  uint64_t not_alive = 0, stats_missed = 0, signals_sent = 0;
  Tally tally;
  double drained_s = 0;  // from the end of the load to the last client's end
};

Status RunLoad(const ServerProcess& server, const std::string& start_time, const References& refs, double load_s,
               LoadResult* out) {
  const double t0 = NowUs();
  const double load_end = t0 + load_s * 1e6;
  Tally ws_tally;
  std::string ws_error;
  std::thread ws_thread(chaos::RunWebSocketSide, server.port(), &refs.specs, kWsSlots, load_end, kDrainS,
                        /*seed=*/2, &ws_tally, &ws_error);
  {
    // The Engine and everything on it end with this block: every client
    // connection is closed before the end state is read.
    Engine engine(server.port());
    Status st = engine.Init();
    if (st.ok()) {
      Sampler sampler(&engine, &server, start_time, t0);
      sampler.Every(t0, load_end + kDrainS * 1e6);
      chaos::MainSide side(&engine, server.port(), &refs.specs, refs.text, &refs.text_tokens, refs.model,
                           /*seed=*/1);
      side.Begin(load_end);
      auto tick = [&] {
        const Sample& s = sampler.samples.back();
        std::fprintf(stderr,
                     "\r[chaos] %5.1fs clients %zu ended %llu unexpected %llu lost %llu dup %llu "
                     "rss %.1f MB live %lld  ",
                     (NowUs() - t0) / 1e6, side.Running(), static_cast<unsigned long long>(side.tally.Ended()),
                     static_cast<unsigned long long>(side.tally.unexpected),
                     static_cast<unsigned long long>(side.tally.lost),
                     static_cast<unsigned long long>(side.tally.duplicated), s.rss_mb,
                     static_cast<long long>(s.stats["streams.live"]));
      };
      engine.Run([&] { return NowUs() >= load_end && side.AllOver(); }, load_end + kDrainS * 1e6, tick, 1000);
      tick();
      std::fprintf(stderr, "\n");
      out->drained_s = (NowUs() - load_end) / 1e6;
      side.JudgeHung();
      out->tally = side.tally;
      out->samples = std::move(sampler.samples);
      out->not_alive = sampler.not_alive;
      out->stats_missed = sampler.stats_missed;
      out->signals_sent = sampler.signals_sent;
    }
    ws_thread.join();
    if (!st.ok()) return st;
  }
  if (!ws_error.empty()) return Status::Error("WebSocket side: " + ws_error);
  out->tally.Merge(ws_tally);
  return Status::Ok();
}

// ---- 5. The end state ------------------------------------------------------------

struct EndState {
  StatsView stats;      // the last poll's
  std::string metrics;  // /metrics after it
  int polls = 0;
  bool settled = false;
};

bool AtRest(const StatsView& s) {
  return s["streams.live"] == 0 && s["streams.registered"] == 0 && s["streams.subscribers"] == 0 &&
         s["streams.bytes_held"] == 0 && s.KvUsed() == 0 && s["engine.running"] == 0 && s["engine.waiting"] == 0 &&
         s["connections"] == 1 && s["prep.queued"] == 0 && s["prep.running"] == 0;
}

// Polls /stats until everything is at rest or kSettlePolls polls were made.
Status Settle(uint16_t port, EndState* end) {
  for (end->polls = 0; end->polls < kSettlePolls && !end->settled; ++end->polls) {
    if (end->polls > 0) ::usleep(kSettlePollMs * 1000);
    int status = 0;
    std::string body;
    end->stats = StatsView();
    if (!HttpGet(port, "/stats", &status, &body).ok() || status != 200 || !ParseStats(body, &end->stats)) continue;
    end->settled = AtRest(end->stats);
  }
  int status = 0;
  return HttpGet(port, "/metrics", &status, &end->metrics);
}

// ---- The report -------------------------------------------------------------------

// A check is a verdict (bench/lib/verdict.h): its row in the table and its
// line under the verdicts. Every one is a correctness check (judged at any load).
using Check = bench::Verdict;

double MedianRss(const std::vector<Sample>& s, double from_s, double to_s) {
  std::vector<double> v;
  for (const auto& x : s) {
    if (x.t_s >= from_s && x.t_s < to_s && !std::isnan(x.rss_mb)) v.push_back(x.rss_mb);
  }
  return Percentile(&v, 50);
}

std::string I(int64_t v) { return std::to_string(v); }

struct Outcome {  // what the checks read besides the load
  const References* refs = nullptr;
  const LoadResult* load = nullptr;
  const EndState* end = nullptr;
  std::string metrics_before;
  int drift = 0;
  LogSummary log;
  bool same_process = false;
  int exit_status = -1;
  // The stop with stderr blocked: bytes waiting in the full pipe, log lines
  // the server had dropped, and how long the exit took.
  int64_t pipe_bytes = -1;
  double dropped_lines = 0, exit_ms = -1;
  double load_s = 0, window_s = 0;
};

// ---- 6. The stop with stderr blocked --------------------------------------------

// Nobody reads the server's stderr any more: 8,000 requests' access records
// (about 0.8 MB, past the 256 KB log queue and the pipe) fill both, then
// the caller sends SIGHUP. The exit must not wait for the pipe (before,
// such a stop never ended).
void BlockStderr(ServerProcess* server, Outcome* x) {
  server->PauseLogRelay();
  client::HttpClient c;
  if (c.Connect(server->port()).ok()) {
    for (int i = 0; i < 8000; ++i) {
      client::Request req;
      req.target = "/healthz?pad=" + std::string(100, 'x');
      client::Response resp;
      if (!c.RoundTrip(req, &resp).ok()) break;
    }
  }
  // Full: over half the pipe's 64 KiB and no byte more for 60 polls in a row.
  int last = -1, still = 0;
  for (int i = 0; i < 4000 && still < 60; ++i) {
    const int now = server->PipeBytesWaiting();
    still = now >= 32768 && now == last ? still + 1 : 0;
    last = now;
    ::usleep(5000);
  }
  x->pipe_bytes = last;
  int status = 0;
  std::string metrics;
  if (HttpGet(server->port(), "/metrics", &status, &metrics).ok()) {
    x->dropped_lines = MetricValue(metrics, "tokenwire_log_lines_dropped_total");
  }
}

std::vector<Check> Checks(const Outcome& x) {
  const Tally& t = x.load->tally;
  const StatsView& e = x.end->stats;
  auto metric = [&](const std::string& name) { return MetricValue(x.end->metrics, name); };
  auto delta = [&](const std::string& name) { return metric(name) - MetricValue(x.metrics_before, name); };
  const double detaches = delta("tokenwire_slow_client_detaches_total");
  const double pauses = delta("tokenwire_producer_pauses_total");
  const double stall_cancels = delta("tokenwire_stall_cancels_total");
  const double linger_cancels = delta("tokenwire_linger_cancels_total");
  const double delete_cancels = delta("tokenwire_delete_cancels_total");
  const double kv_used = metric("tokenwire_kv_blocks_used");
  const double held = metric("tokenwire_stream_bytes_held");
  const double active = metric("tokenwire_active_streams");
  const double rss_first = MedianRss(x.load->samples, 0, x.window_s);
  const double rss_last = MedianRss(x.load->samples, x.load_s - x.window_s, x.load_s);
  const size_t n = x.load->samples.size();
  const std::string w = Fmt(x.window_s, 0);
  // The metrics' identities at rest (DESIGN.md §8), over the server's life.
  const double generated = metric("tokenwire_tokens_generated_total");
  const double delivered = metric("tokenwire_tokens_delivered_total");
  const double never = metric("tokenwire_tokens_never_delivered_total");
  double cancels = 0;
  for (const char* cause : {"stall", "linger", "delete", "client_gone", "sibling", "shutdown"}) {
    cancels += metric(std::string("tokenwire_") + cause + "_cancels_total");
  }
  const std::string finished = "tokenwire_streams_finished_total{outcome=\"";
  double ended = 0;
  for (const char* outcome : {"length", "stop", "eos", "cancelled", "error"}) {
    const double v = metric(finished + outcome + "\"}");
    ended += std::isnan(v) ? 0 : v;
  }
  double cancelled = metric(finished + "cancelled\"}");
  if (std::isnan(cancelled)) cancelled = 0;
  const double created = metric("tokenwire_streams_created_total");
  const double client_gone = delta("tokenwire_client_gone_cancels_total");
  const double siblings = delta("tokenwire_sibling_cancels_total");
  const double unsent = metric("tokenwire_http_unsent_bytes_total");
  const double resets = metric("tokenwire_http_close_resets_total");
  const double dropped_lines = metric("tokenwire_log_lines_dropped_total");
  return {
      {"tokens lost (verified streams and answers)", I(t.lost), "0", t.lost == 0},
      {"tokens duplicated", I(t.duplicated), "0", t.duplicated == 0},
      {"event ids skipped (SSE id / WebSocket seq)", I(t.gaps), "0", t.gaps == 0},
      {"tokens differing from the reference", I(t.mismatched), "0", t.mismatched == 0},
      {"unexpected outcomes (every client)", I(t.unexpected), "0", t.unexpected == 0},
      {"clients still running after the drain", I(t.Hung()), "0", t.Hung() == 0},
      {"reference: half max_new_tokens gives a prefix (specs checked)",
       I(x.refs->prefix_checked - x.refs->prefix_broken) + " / " + I(x.refs->prefix_checked), "all",
       x.refs->prefix_broken == 0},
      {"reference drift: specs whose tokens changed after the load",
       I(x.drift) + " / " + I(static_cast<int64_t>(x.refs->specs.size())), "0", x.drift == 0},
      {"policies acted: slow_client detaches / producer pauses / stall cancels",
       Fmt(detaches, 0) + " / " + Fmt(pauses, 0) + " / " + Fmt(stall_cancels, 0), "each ≥ 1",
       detaches >= 1 && pauses >= 1 && stall_cancels >= 1},
      {"cancels by linger (clients that left) / by DELETE", Fmt(linger_cancels, 0) + " / " + Fmt(delete_cancels, 0),
       "each ≥ 1", linger_cancels >= 1 && delete_cancels >= 1},
      {"cancels at the close of an abandoned answer / of a failed choice's siblings",
       Fmt(client_gone, 0) + " / " + Fmt(siblings, 0), "each ≥ 1", client_gone >= 1 && siblings >= 1},
      {"end: tokens generated = delivered + never delivered", Fmt(generated, 0) + " = " + Fmt(delivered, 0) + " + " +
       Fmt(never, 0), "equal", generated == delivered + never},
      {"end: cancels by cause = streams finished cancelled; streams created = finished",
       Fmt(cancels, 0) + " = " + Fmt(cancelled, 0) + "; " + Fmt(created, 0) + " = " + Fmt(ended, 0), "equal; equal",
       cancels == cancelled && created == ended},
      {"end: bytes never sent (/metrics) = the access log's unsent; resets = its outcome=reset records",
       Fmt(unsent, 0) + " = " + I(static_cast<int64_t>(x.log.unsent_bytes)) + "; " + Fmt(resets, 0) + " = " +
           I(static_cast<int64_t>(x.log.reset_records)) + " (log lines dropped: " + Fmt(dropped_lines, 0) + ")",
       "equal; equal; 0 dropped",
       dropped_lines == 0 && unsent == static_cast<double>(x.log.unsent_bytes) &&
           resets == static_cast<double>(x.log.reset_records)},
      {"signals SIGUSR1 / SIGUSR2 / SIGALRM sent in turn during the load, logged as ignored",
       I(static_cast<int64_t>(x.load->signals_sent)) + " sent, " + I(static_cast<int64_t>(x.log.signals_ignored)) +
           " logged",
       "≥ 1, all logged", x.load->signals_sent >= 1 && x.log.signals_ignored == x.load->signals_sent},
      {"end: KV blocks in use (/stats, /metrics)", I(e.KvUsed()) + ", " + Fmt(kv_used, 0), "0, 0",
       e.KvUsed() == 0 && kv_used == 0},
      {"end: live / retained streams, subscribers (/stats); active streams (/metrics)",
       I(e["streams.live"]) + " / " + I(e["streams.registered"]) + " / " + I(e["streams.subscribers"]) + "; " +
           Fmt(active, 0),
       "0 / 0 / 0; 0",
       e["streams.live"] == 0 && e["streams.registered"] == 0 && e["streams.subscribers"] == 0 && active == 0},
      {"end: bytes held in resume rings (/stats, /metrics)", I(e["streams.bytes_held"]) + ", " + Fmt(held, 0), "0, 0",
       e["streams.bytes_held"] == 0 && held == 0},
      {"end: engine running / waiting; releases = admitted; double releases",
       I(e["engine.running"]) + " / " + I(e["engine.waiting"]) + "; " + I(e["engine.releases"]) + " = " +
           I(e["engine.admitted"]) + "; " + I(e["engine.double_releases"]),
       "0 / 0; equal; 0",
       e["engine.running"] == 0 && e["engine.waiting"] == 0 && e["engine.releases"] == e["engine.admitted"] &&
           e["engine.double_releases"] == 0},
      {"end: open connections (the poll's own)", I(e["connections"]), "1", e["connections"] == 1},
      {"end: at rest within the polls (" + I(kSettlePollMs) + " ms apart)",
       I(x.end->polls) + " of at most " + I(kSettlePolls), "at rest", x.end->settled},
      {"server RSS median, first " + w + " s → last " + w + " s of the load (MB)",
       Fmt(rss_first, 1) + " → " + Fmt(rss_last, 1) + " (" + Fmt(rss_last / rss_first, 3) + "x)",
       "≤ " + Fmt(kRssBound, 2) + "x", rss_last / rss_first <= kRssBound},
      {"server process: same PID and start time, alive at every 1 s sample",
       I(static_cast<int64_t>(n - x.load->not_alive)) + " / " + I(static_cast<int64_t>(n)) + "; " +
           (x.same_process ? "same at the end" : "NOT the same at the end"),
       "all; same", x.load->not_alive == 0 && x.same_process},
      {"stop with stderr blocked (a full pipe nobody reads): lines dropped; SIGHUP's exit status and time",
       Fmt(x.dropped_lines, 0) + " dropped (" + I(x.pipe_bytes) + " bytes waiting in the pipe); exit " +
           I(x.exit_status) + " in " + Fmt(x.exit_ms, 0) + " ms",
       "≥ 1; 0 within --drain-ms + --log-exit-flush-ms (" + I(kDrainMs + kLogExitFlushMs) + " ms)",
       x.dropped_lines >= 1 && x.exit_status == 0 && x.exit_ms >= 0 && x.exit_ms <= kDrainMs + kLogExitFlushMs},
  };
}

// The workload rows: per kind of client, how its clients ended.
void WorkloadRows(const Tally& t, const std::vector<Sample>& samples, Report* r) {
  for (const auto& [name, k] : t.kinds) {
    std::string endings;
    for (const auto& [e, n] : k.endings) endings += (endings.empty() ? "" : ", ") + e + " " + std::to_string(n);
    std::string measured = std::to_string(k.ended) + " ended (" + endings + ")";
    if (k.resumes) measured += "; " + std::to_string(k.resumes) + " resumes";
    if (k.detach_resumes) measured += " (" + std::to_string(k.detach_resumes) + " after a slow_client detach)";
    r->rows.push_back(
        {"workload: " + name, measured, "", k.unexpected ? std::to_string(k.unexpected) + " unexpected" : ""});
  }
  r->rows.push_back({"workload: streams and answers verified; tokens received / expected",
                     I(static_cast<int64_t>(t.verified)) + "; " + I(static_cast<int64_t>(t.tokens_received)) + " / " +
                         I(static_cast<int64_t>(t.tokens_expected)),
                     "", ""});
  double rss_peak = 0;
  int64_t live = 0, waiting = 0, kv = 0, kv_total = 0;
  for (const auto& s : samples) {
    if (!std::isnan(s.rss_mb)) rss_peak = std::max(rss_peak, s.rss_mb);
    live = std::max(live, s.stats["streams.live"]);
    waiting = std::max(waiting, s.stats["engine.waiting"]);
    kv = std::max(kv, s.stats.KvUsed());
    kv_total = std::max(kv_total, s.stats["engine.kv_blocks_total"]);
  }
  r->rows.push_back({"peaks of the 1 s samples: live streams, waiting requests, KV blocks in use (of " + I(kv_total) +
                         "), server RSS (MB)",
                     I(live) + ", " + I(waiting) + ", " + I(kv) + ", " + Fmt(rss_peak, 1), "", ""});
}

std::string RawJson(const LoadResult& load) {
  std::string raw = "{\"sample_columns\":[\"t_s\",\"rss_mb\",\"alive\",\"live\",\"registered\",\"subscribers\","
                    "\"bytes_held\",\"kv_used\",\"waiting\",\"connections\"],\"samples\":[";
  for (size_t i = 0; i < load.samples.size(); ++i) {
    const Sample& s = load.samples[i];
    raw += std::string(i ? "," : "") + "[" + Fmt(s.t_s, 1) + "," + N(s.rss_mb) + "," + (s.alive ? "1" : "0") + "," +
           I(s.stats["streams.live"]) + "," + I(s.stats["streams.registered"]) + "," +
           I(s.stats["streams.subscribers"]) + "," + I(s.stats["streams.bytes_held"]) + "," + I(s.stats.KvUsed()) +
           "," + I(s.stats["engine.waiting"]) + "," + I(s.stats["connections"]) + "]";
  }
  raw += "],\"stats_missed\":" + std::to_string(load.stats_missed) + ",\"kinds\":{";
  bool first = true;
  for (const auto& [name, k] : load.tally.kinds) {
    raw += std::string(first ? "" : ",") + Q(name) + ":{\"started\":" + std::to_string(k.started) +
           ",\"ended\":" + std::to_string(k.ended) + ",\"refused\":" + std::to_string(k.refused) +
           ",\"unexpected\":" + std::to_string(k.unexpected) + ",\"resumes\":" + std::to_string(k.resumes) +
           ",\"detach_resumes\":" + std::to_string(k.detach_resumes) + "}";
    first = false;
  }
  raw += "},\"unexpected_examples\":[";
  for (size_t i = 0; i < load.tally.examples.size(); ++i) raw += (i ? "," : "") + Q(load.tally.examples[i]);
  return raw + "]}";
}

Status WriteCharts(const std::string& dir, const std::vector<Sample>& samples) {
  bench::LineChart rss;
  rss.title = "Server RSS during the chaos load (1 s samples)";
  rss.x_axis.label = "seconds since the load began";
  rss.y_axis.label = "VmRSS (MB)";
  rss.markers = false;
  bench::Series rs{"VmRSS", {}, {}};
  for (const auto& s : samples) {
    rs.x.push_back(s.t_s);
    rs.y.push_back(s.rss_mb);
  }
  rss.series = {rs};
  bench::LineChart live;
  live.title = "Streams, subscribers, waiting requests, connections and KV blocks in use (GET /stats each second)";
  live.x_axis.label = "seconds since the load began";
  live.y_axis.label = "count";
  live.markers = false;
  const std::vector<std::pair<std::string, std::string>> series = {{"live streams", "streams.live"},
                                                                   {"subscribers", "streams.subscribers"},
                                                                   {"waiting", "engine.waiting"},
                                                                   {"connections", "connections"},
                                                                   {"KV blocks in use", ""}};
  for (const auto& [label, key] : series) {
    bench::Series x{label, {}, {}};
    for (const auto& s : samples) {
      int64_t v = key.empty() ? s.stats.KvUsed() : s.stats[key];
      if (v < 0) continue;  // that second's /stats was missed
      x.x.push_back(s.t_s);
      x.y.push_back(static_cast<double>(v));
    }
    live.series.push_back(x);
  }
  if (Status st = WriteChart(dir, "chaos_rss.svg", bench::RenderLineChart(rss)); !st.ok()) return st;
  return WriteChart(dir, "chaos_streams.svg", bench::RenderLineChart(live));
}

}  // namespace

Status Chaos(const Options& o) {
  Outcome x;
  x.load_s = o.full ? 600 : 60;
  x.window_s = o.full ? 60 : 15;
  ServerProcess server;
  server.set_log_through_pipe(true);  // its stderr is blocked at the end (BlockStderr)
  if (Status st = StartServer(&server, o, ServerArgs()); !st.ok()) return st;
  const pid_t pid = server.pid();
  char state = '?';
  const std::string start_time = ProcStartTime(pid, &state);
  const uint16_t port = server.port();

  std::fprintf(stderr, "[chaos] reference: %d generations, each alone\n", kSpecs);
  References refs;
  if (Status st = BuildReferences(port, &refs); !st.ok()) return st;
  x.refs = &refs;
  int status = 0;
  if (Status st = HttpGet(port, "/metrics", &status, &x.metrics_before); !st.ok()) return st;

  LoadResult load;
  if (Status st = RunLoad(server, start_time, refs, x.load_s, &load); !st.ok()) return st;
  x.load = &load;

  for (const Spec& s : refs.specs) {
    std::vector<int32_t> again;
    std::string finish;
    if (Status st = Generate(port, s, s.max_new(), &again, &finish); !st.ok() || again != s.ref) x.drift++;
  }

  EndState end;
  if (Status st = Settle(port, &end); !st.ok()) return st;
  x.end = &end;
  x.same_process = server.pid() == pid && SameAndAlive(pid, start_time);
  x.log = ReadServerLog(server.log_path());
  const std::string server_command = server.command_line();
  BlockStderr(&server, &x);
  const double stop_at = NowUs();
  x.exit_status = server.Stop(kDrainMs + kLogExitFlushMs + 5000, SIGHUP);
  x.exit_ms = (NowUs() - stop_at) / 1000.0;

  Report r;
  r.bench = "streams/chaos";
  r.title = "Chaos: " + Fmt(x.load_s, 0) +
            " s of mixed clients against the CPU backend (tiny GPT-2), then the end state";
  r.command = o.command + " (server: " + server_command + ")";
  r.mode = o.full ? "full" : "quick";
  r.columns = {"check / workload", "measured", "target", "result"};
  std::vector<Check> checks = Checks(x);
  int failed = 0;
  std::string failed_list;
  for (Check& c : checks) {
    c.load_sensitive = false;
    r.verdicts.push_back(c);
    r.rows.push_back({c.check, c.measured, c.target, c.pass ? "pass" : "FAIL"});
    if (c.pass) continue;
    failed++;
    failed_list += (failed_list.empty() ? "" : "; ") + c.check;
  }
  WorkloadRows(load.tally, load.samples, &r);
  std::string levels;
  for (const auto& [level, n] : x.log.levels) {
    levels += (levels.empty() ? "" : ", ") + level + " " + I(static_cast<int64_t>(n));
  }
  r.rows.push_back({"server log records by level (a 4xx answer is a warn)", levels.empty() ? "none" : levels, "", ""});
  r.notes.push_back(std::string("Result: ") +
                    (failed ? std::to_string(failed) + " of " + std::to_string(checks.size()) + " checks FAILED (" +
                                  failed_list + ")"
                            : "all " + std::to_string(checks.size()) + " checks passed") +
                    ". The load ran " + Fmt(x.load_s, 0) + " s; the clients still running then ended within " +
                    Fmt(load.drained_s, 1) + " s.");
  r.notes.push_back(
      "Workload, all at once for the whole load (each slot starts a new client when its last one ends; 0.1-1 s "
      "later after a 503 refusal, as a client honouring Retry-After would): SSE streams "
      "read to the end (4 slots), with 1-3 FIN/RST drops each followed 0-100 ms later by a Last-Event-ID resume (4; "
      "one client in five leaves for good after a few events instead), DELETEd after a random event (2), stalled "
      "200-800 ms after event 1-4 with the kernel's smallest receive buffer under drop_slow, pause_producer and "
      "pause_then_cancel in turn, then reading again (3); WebSocket streams with 0-3 drops and resume ops, under "
      "the three policies in turn (3, on their own thread); seven pipelined requests on one connection (1); clients "
      "that never read — a stream, 64 pipelined GET /metrics, half a request head — held 0.5-3 s, then FIN or RST "
      "(2); large bodies near and past --max-body-bytes (Content-Length and chunked), a prompt past the context, "
      "JSON past the depth bound (1); non-streamed /v1/generate, /v1/completions and /v1/chat/completions in turn "
      "whose clients leave 0-400 ms after sending, queued or running, by FIN or RST (2); a ~64 KB answer of "
      "/v1/tokenize on a connection that closes after it (Connection: close and HTTP/1.0 in turn) read 20 ms in "
      "every 80 through a 4 KB receive buffer (1); an OpenAI streamed completion with n = 3 whose first choice is "
      "DELETEd after the first chunk (1). A quarter of the clean SSE streams ask for logprobs (5). Every 7 s the "
      "server gets SIGUSR1, SIGUSR2 or SIGALRM in turn. At the end nobody reads its stderr (a pipe the load "
      "generator stops reading), 8,000 requests fill the pipe and the 256 KB log queue, and it is stopped with "
      "SIGHUP. max_new_tokens: a third each 1-16, 17-64 and 65 to 128 minus the prompt.");
  r.notes.push_back(
      "Reference: " + std::to_string(kSpecs) + " generations (1-8 random prompt token ids, a seed, greedy or "
      "sampled with top_k/top_p), each run alone and whole with /v1/generate before the load; a stream's tokens "
      "must equal its reference's first max_new_tokens (" + std::to_string(refs.eos_skipped) + " seed(s) whose "
      "reference ended with eos before its full length were replaced). Lost: tokens missing from a stream that had "
      "to be complete (or ended with length); for one cancelled or left on purpose, the holes below the last token "
      "it received. Duplicated: an event id (seq) at or below the last one, or a token index seen twice. A 503 "
      "overloaded (--max-waiting, --max-streams) is an expected ending: counted, not verified.");
  r.notes.push_back(
      "End state: /stats polled every " + std::to_string(kSettlePollMs) + " ms, at most " +
      std::to_string(kSettlePolls) + " polls (linger + retention + 10 s), until everything is at rest; the values "
      "shown are the last poll's. RSS: the server's VmRSS read every second; flat means the median of the last " +
      Fmt(x.window_s, 0) + " s of the load is at most " + Fmt(kRssBound, 2) + "x the median of the first " +
      Fmt(x.window_s, 0) + " s (the weights and the KV pool are allocated at start-up; what could grow is the "
      "memory of connections, streams and the allocator's arenas).");
  if (!x.log.notable.empty()) {
    std::string ex;
    for (const auto& e : x.log.notable) ex += (ex.empty() ? "" : " | ") + e;
    r.notes.push_back("Server log records at error level, or at warn level other than a 4xx answer (the first " +
                      std::to_string(x.log.notable.size()) + "): " + ex);
  }
  if (!load.tally.examples.empty()) {
    std::string ex;
    for (const auto& e : load.tally.examples) ex += (ex.empty() ? "" : " | ") + e;
    r.notes.push_back("Unexpected outcomes (the first " + std::to_string(load.tally.examples.size()) + "): " + ex);
  }
  r.parameters_json = Params({{"load_s", N(x.load_s)},
                              {"rss_window_s", N(x.window_s)},
                              {"rss_bound_ratio", N(kRssBound)},
                              {"specs", N(kSpecs)},
                              {"tokens_per_stream_max", N(kTokensPerStream)},
                              {"ws_slots", N(kWsSlots)},
                              {"settle_poll_ms", N(kSettlePollMs)},
                              {"settle_polls_max", N(kSettlePolls)},
                              {"drain_s_max", N(kDrainS)}});
  r.raw_json = RawJson(load);
  if (Status st = WriteCharts(o.out_dir, load.samples); !st.ok()) return st;
  r.charts = {{"chaos_rss.svg", "server RSS over the load"},
              {"chaos_streams.svg", "live streams, subscribers, waiting requests, connections, KV blocks in use"}};
  if (Status st = r.Write(o.out_dir, "chaos"); !st.ok()) return st;
  if (failed) return Status::Error(std::to_string(failed) + " check(s) failed: " + failed_list);
  return Status::Ok();
}

}  // namespace tw::loadgen

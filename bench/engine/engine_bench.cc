// Engine benchmarks: the seed chapter's experiments on the step-driven
// engine.
//
//   overlap      1..32 simultaneous streams of 64 tokens vs the same prompts
//                back to back: makespan, aggregate tokens/s, TTFT and
//                inter-token p50/p99 (engine in process; token times are taken
//                on the engine thread as each token is appended), and each
//                mode's makespan at the machine's floors (bench/lib/floors.h,
//                measured before and after the rounds).
//   joiners      requests arriving while 8 / 24 long streams run: their TTFT
//                vs the idle-engine TTFT of the same requests.
//   slow_readers 8 streams, k = 0, 1, 2, 4 of them stalled readers, under each
//                policy, the two lab policies (naive, unbounded; --lab)
//                included: healthy streams' completion and inter-token p99,
//                when every KV block was free again, slow-client detaches and
//                the most event bytes the server's rings held.
//   disconnects  through the real HTTP server (App on loopback, --linger-ms
//                0): time from a client's close (FIN, RST) after k tokens to
//                the release of its KV blocks, and tokens generated per token
//                read by the abandoned stream.
//   prefix       32 requests sharing a 400-token prefix, the prefix cache off
//                vs on: TTFT p50/p99 of the requests after the first, total
//                time; and 32 distinct prompts (0 % hits): the cache's cost.
//   scheduler    issue 33's three measurements, side by side with the
//                settings that stand in for the scheduler before it: a chat
//                load (max_tokens unset) on a limited KV pool under
//                --admission reserve vs optimistic; a 1,000-token prompt
//                arriving while 16 streams decode, per token budget (4096:
//                no chunking); high-priority requests under a saturating
//                low-priority load, --scheduling-policy priority vs fcfs vs
//                an idle server.
//
// Usage: engine_bench --exp overlap|joiners|slow_readers|disconnects|prefix|scheduler [--model DIR]
//        [--model-note TEXT] [--threads N] [--quick] [--streams N]... [--rounds N] [--weights f32|bf16|q8]
//        --out FILE.json [--command "..."]
// --weights F runs the CPU runner with that weight format (default f32); a
// result of another format is named engine-<experiment>-<format>.json.
//        engine_bench --render-only DIR
// --streams N (repeatable) runs the overlap experiment at those stream counts only (profiling);
// --rounds N (default 3) sets the overlap's alternating (concurrent, back to back) rounds per
// count, and the prefix experiment's rounds of each setting.
// Without --model the random tiny model is used (labelled in the output).
// Writes one JSON document in the bench convention (bench, title, command,
// machine, date, mode, loadavg_start/end, model, columns, rows, notes,
// charts, verdicts) and its SVG charts (bench/lib/svg) next to it, named
// <bench>-<chart>.svg, which build/bench/render puts into RESULTS.md; prints
// the document on stdout and its verdicts (bench/lib/verdict.h) on stderr.
// The charts are drawn from the result table alone (see "charts" below), so
// --render-only DIR redraws them from DIR/engine-<experiment>.json without
// measuring anything (no model is loaded).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "app/app.h"
#include "app/backends.h"
#include "app/config.h"
#include "backend/backend.h"
#include "client/sse_client.h"
#include "engine/engine.h"
#include "model/serving_model.h"
#include "client/http_client.h"
#include "json/json.h"
#include "lib/floors.h"
#include "lib/result.h"
#include "lib/svg.h"
#include "lib/verdict.h"
#include "stream/stream.h"
#include "tokenizer/tokenizer.h"

namespace {

using namespace tw;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];
}

struct Args {
  std::string exp, out, command;
  std::string model = "random-tiny";  // --model: a folder, or a built-in model (model/serving_model.h)
  std::string model_note;  // appended to the model's label, e.g. "random weights"
  int threads = 2;
  bool quick = false;
  std::vector<int> streams;  // overlap: only these stream counts (default 1..32)
  int rounds = 3;            // overlap: alternating (concurrent, back to back) rounds per count
  std::string weights = "f32";  // the CPU runner's weight format (--weights)
};

// Token append times per stream, recorded on the engine thread through the
// stream's Notifier (post runs inline; drain only stamps, never reads the
// stream, since Append holds the stream's lock while it notifies).
class Stamper {
 public:
  Stamper()
      : notifier_([](std::function<void()> fn) { fn(); },
                  [this](std::vector<std::shared_ptr<stream::Stream>>& dirty) {
                    auto now = Clock::now();
                    std::lock_guard<std::mutex> lock(mu_);
                    for (auto& s : dirty) times_[s->id()].push_back(now);
                  }) {}
  std::shared_ptr<stream::Stream> NewStream(const std::string& id) {
    auto s = std::make_shared<stream::Stream>(id, stream::StreamLimits{}, &notifier_);
    std::lock_guard<std::mutex> lock(mu_);
    times_[id].reserve(256);
    return s;
  }
  // Append times of the token events of `s` (the first `tokens` stamps).
  std::vector<Clock::time_point> Times(const stream::Stream& s, size_t tokens) {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Clock::time_point> t = times_[s.id()];
    if (t.size() > tokens) t.resize(tokens);
    return t;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::vector<Clock::time_point>> times_;  // by stream id (unique per run)
  stream::Notifier notifier_;
};

size_t TokenEvents(const stream::Stream& s) {
  std::vector<stream::EventPtr> evs;
  s.ReadFrom(1, 1 << 20, &evs);
  size_t n = 0;
  for (auto& e : evs) n += e->type == stream::EventType::kToken;
  return n;
}

// Polls every millisecond: a tighter poll (it was 100 us) steals a compute
// core on a two-core machine (measured: batch-32 steps 37 ms instead of 31).
void WaitExited(const stream::Stream& s) {
  while (!s.producer_exited()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

backend::GenerationRequest Prompt(int i, int prompt_tokens, int new_tokens) {
  backend::GenerationRequest r;
  for (int k = 0; k < prompt_tokens; k++) r.prompt_tokens.push_back((i * 7919 + k * 104729) % 50000);
  r.max_new_tokens = new_tokens;
  r.arrival = Clock::now();
  return r;
}

struct Ctx {
  std::string weights = "f32";  // --weights: f32, bf16 or q8
  std::shared_ptr<const model::Gpt2Model> model;
  std::string model_label;
  tokenizer::Tokenizer tok;
};

std::unique_ptr<engine::Engine> MakeEngineWith(Ctx& c, const engine::EngineOptions& o);

std::unique_ptr<engine::Engine> MakeEngine(Ctx& c, int max_batch, int threads, bool prefix_cache = true) {
  engine::EngineOptions o;
  o.prefix_cache = prefix_cache;
  o.max_batch = max_batch;
  o.threads = threads;
  o.max_waiting = 1024;
  // Enough blocks for max_batch sequences of up to 448 positions (the
  // default, max_batch full contexts, would be 2.4 GB for the gpt2 shape).
  o.num_kv_blocks = max_batch * engine::BlocksFor(std::min(c.model->config().n_ctx, 448), 16);
  o.max_num_batched_tokens = app::DefaultStepTokens(*app::FindBackend("cpu"), max_batch);  // the server's
  return MakeEngineWith(c, o);
}

std::unique_ptr<engine::Engine> MakeEngineWith(Ctx& c, const engine::EngineOptions& o) {
  std::unique_ptr<engine::ModelRunner> runner;
  app::RunnerOptions ro;
  ro.weights = c.weights;
  Status s = app::MakeRunner("cpu", c.model, engine::RunnerLimitsFor(o, c.model->config().n_ctx), ro, &runner);
  std::unique_ptr<engine::Engine> e;
  if (s.ok()) s = engine::Engine::Create(std::move(runner), &c.tok, o, &e);
  if (!s.ok()) {
    std::fprintf(stderr, "engine: %s\n", s.message().c_str());
    std::exit(1);
  }
  return e;
}

struct Row {
  std::vector<std::pair<std::string, double>> num;
  std::vector<std::pair<std::string, std::string>> str;
};

// What an experiment returns besides its rows.
struct Report {
  std::vector<std::string> notes;
  std::vector<bench::Verdict> verdicts;  // each against a target below; none: a measurement
};

// The targets, each stated once (the notes, the charts and the verdicts read
// them here). They are set for the GPT-2-small shape: a quick run on the tiny
// model leaves them not judged.
constexpr double kOverlapSpeedupMin = 10;     // 32 streams' throughput over the same prompts back to back
constexpr double kChatOptimisticMin = 2;      // --admission optimistic over reserve, output tokens/s
constexpr int kDefaultTokenBudget = 64;       // the cpu backend's default --max-num-batched-tokens
constexpr double kLongPromptGapRatioMax = 3;  // decoders' gap p99 over p50 beside a long prompt, at that budget
constexpr double kPriorityOverIdleMax = 2;    // saturated priority TTFT p50 over the idle server's
constexpr double kPrefixTtftGainMin = 5;      // later requests' TTFT p50, cache off over on
constexpr double kPrefixTotalGainMin = 3;     // all 32 done, cache off over on

// "10x": a target as the charts' legends name it.
std::string Times(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gx", v);
  return buf;
}

// ---- overlap ----------------------------------------------------------------

constexpr int kOverlapNewTokens = 64;  // per stream; the throughput chart's floor line needs it too

struct RunStats {
  double makespan_ms = 0;
  std::vector<double> ttft_ms, itl_ms;
  size_t tokens = 0;
};

RunStats RunBatch(Ctx& c, engine::Engine& e, Stamper& st, int n, int new_tokens, bool back_to_back,
                  int prompt_tokens, int tag) {
  RunStats rs;
  auto t0 = Clock::now();
  std::vector<std::shared_ptr<stream::Stream>> ss;
  std::vector<Clock::time_point> arrivals;
  for (int i = 0; i < n; i++) {
    auto s = st.NewStream("o" + std::to_string(tag) + "_" + std::to_string(i));
    backend::GenerationRequest r = Prompt(i, prompt_tokens, new_tokens);
    arrivals.push_back(r.arrival);
    e.Submit(s, r, nullptr);
    if (back_to_back) WaitExited(*s);
    ss.push_back(s);
  }
  for (auto& s : ss) WaitExited(*s);
  rs.makespan_ms = Ms(Clock::now() - t0);
  for (int i = 0; i < n; i++) {
    size_t k = TokenEvents(*ss[i]);
    rs.tokens += k;
    auto t = st.Times(*ss[i], k);
    if (t.empty()) continue;
    rs.ttft_ms.push_back(Ms(t[0] - arrivals[i]));
    for (size_t j = 1; j < t.size(); j++) rs.itl_ms.push_back(Ms(t[j] - t[j - 1]));
  }
  (void)c;
  return rs;
}

// The machine's floors on `threads` threads, measured now (see lib/floors.h).
bench::MachineFloors MeasureFloors(int threads) {
  cpu::ThreadPool pool(threads);
  return bench::MeasureFloors(&pool, 5);
}

// Bytes a weight of the format takes (the floors read that many).
double BytesPerWeight(const std::string& weights) {
  if (weights == "bf16") return 2;
  if (weights == "q8") return 1.125;  // a byte, and a 4-byte scale per 32
  return 4;
}

// Makespan floors of the overlap experiment's two modes for n streams of
// `new_tokens` tokens after a `prompt`-token prompt: each step at max(FLOPs /
// peak, bytes / bandwidth). Concurrent: every prompt in one prefill pass
// (its first token), then new_tokens - 1 decode steps of batch n. Back to
// back: n times the same at batch 1. Decode step k (k = 1, 2, ...) attends to
// prompt + k positions.
void OverlapFloors(const bench::Gpt2Work& work, const bench::MachineFloors& m, int n, int prompt, int new_tokens,
                   double* concurrent_s, double* back_to_back_s) {
  double conc = work.PrefillFloorSeconds(n, prompt, m);
  double one = work.PrefillFloorSeconds(1, prompt, m);
  for (int k = 1; k < new_tokens; k++) {
    conc += work.DecodeFloorSeconds(n, prompt + k, m);
    one += work.DecodeFloorSeconds(1, prompt + k, m);
  }
  *concurrent_s = conc;
  *back_to_back_s = n * one;
}

std::vector<Row> Overlap(Ctx& c, const Args& a, Report* rep) {
  std::vector<int> ns = {1, 2, 4, 8, 16, 32};
  if (!a.streams.empty()) ns = a.streams;
  const int new_tokens = kOverlapNewTokens, prompt_tokens = 8;
  std::vector<Row> rows;
  Stamper st;
  auto e = MakeEngine(c, 32, a.threads);
  // Warm-up (page in the weights).
  RunBatch(c, *e, st, 2, 4, false, prompt_tokens, 999);
  // The floors bound the speedup; measured before and after the rounds (the
  // shared host's state moves), the better of each counts.
  const bench::MachineFloors before = MeasureFloors(a.threads);
  const bench::Gpt2Work work(c.model->config(), BytesPerWeight(c.weights));
  int tag = 0;
  std::vector<double> xs;
  std::vector<double> conc_makespan_ms, seq_makespan_ms;  // medians over the rounds
  double speedup32 = NAN;
  std::string rounds32;
  // Each stream count runs `rounds` rounds of (concurrent, back to back),
  // alternating, so both modes sample the same stretch of a noisy machine;
  // makespans are the medians over the rounds, TTFT/ITL percentiles pool
  // every round's samples.
  auto merge = [](RunStats* into, const RunStats& r) {
    into->ttft_ms.insert(into->ttft_ms.end(), r.ttft_ms.begin(), r.ttft_ms.end());
    into->itl_ms.insert(into->itl_ms.end(), r.itl_ms.begin(), r.itl_ms.end());
    into->tokens = r.tokens;
  };
  for (int n : ns) {
    RunStats conc, seq;
    std::vector<double> conc_ms, seq_ms;
    for (int round = 0; round < a.rounds; round++) {
      RunStats c1 = RunBatch(c, *e, st, n, new_tokens, false, prompt_tokens, tag++);
      RunStats s1 = RunBatch(c, *e, st, n, new_tokens, true, prompt_tokens, tag++);
      merge(&conc, c1);
      merge(&seq, s1);
      conc_ms.push_back(c1.makespan_ms);
      seq_ms.push_back(s1.makespan_ms);
    }
    conc.makespan_ms = Pct(conc_ms, 50);
    seq.makespan_ms = Pct(seq_ms, 50);
    for (int mode = 0; mode < 2; mode++) {
      const RunStats& r = mode == 0 ? conc : seq;
      Row row;
      row.str.push_back({"mode", mode == 0 ? "concurrent" : "back_to_back"});
      row.num.push_back({"streams", n});
      row.num.push_back({"rounds", a.rounds});
      row.num.push_back({"makespan_s", r.makespan_ms / 1000});
      row.num.push_back({"tokens_per_s", r.tokens / (r.makespan_ms / 1000)});
      row.num.push_back({"ttft_p50_ms", Pct(r.ttft_ms, 50)});
      row.num.push_back({"ttft_p99_ms", Pct(r.ttft_ms, 99)});
      row.num.push_back({"itl_p50_ms", Pct(r.itl_ms, 50)});
      row.num.push_back({"itl_p99_ms", Pct(r.itl_ms, 99)});
      row.num.push_back({"speedup_vs_back_to_back", seq.makespan_ms / r.makespan_ms});
      // Filled in after the rounds, once the floors are measured again.
      row.num.push_back({"floor_makespan_s", NAN});
      row.num.push_back({"speedup_at_floors", NAN});
      rows.push_back(row);
    }
    xs.push_back(n);
    conc_makespan_ms.push_back(conc.makespan_ms);
    seq_makespan_ms.push_back(seq.makespan_ms);
    std::string each;
    for (size_t i = 0; i < conc_ms.size(); i++) {
      char b[96];
      std::snprintf(b, sizeof b, "%s%.2f / %.2f s (x%.2f)", i ? ", " : "", conc_ms[i] / 1000, seq_ms[i] / 1000,
                    seq_ms[i] / conc_ms[i]);
      each += b;
    }
    if (n == 32) {
      speedup32 = seq.makespan_ms / conc.makespan_ms;
      rounds32 = each;
    }
    std::fprintf(stderr, "overlap n=%d: concurrent %.2f s, back to back %.2f s (x%.2f; rounds: %s)\n", n,
                 conc.makespan_ms / 1000, seq.makespan_ms / 1000, seq.makespan_ms / conc.makespan_ms, each.c_str());
  }
  const bench::MachineFloors after = MeasureFloors(a.threads);
  const bench::MachineFloors floors = bench::Best(before, after);
  double at_floors32 = NAN, conc32_floor = NAN, seq32_floor = NAN, conc32_ms = NAN, seq32_ms = NAN;
  for (size_t i = 0; i < xs.size(); i++) {
    double conc_s = 0, seq_s = 0;
    OverlapFloors(work, floors, static_cast<int>(xs[i]), prompt_tokens, new_tokens, &conc_s, &seq_s);
    // Rows come in pairs (concurrent, back to back) in xs's order; the two
    // floor columns are their last two.
    auto fill = [](Row& row, double floor_s, double speedup) {
      row.num[row.num.size() - 2].second = floor_s;
      row.num.back().second = speedup;
    };
    fill(rows[2 * i], conc_s, seq_s / conc_s);
    fill(rows[2 * i + 1], seq_s, 1.0);
    if (xs[i] == 32) {
      at_floors32 = seq_s / conc_s, conc32_floor = conc_s, seq32_floor = seq_s;
      conc32_ms = conc_makespan_ms[i], seq32_ms = seq_makespan_ms[i];
    }
  }
  rep->notes.push_back("64 new tokens per stream, 8-token prompts, greedy; max_batch 32; TTFT from arrival "
                       "(Submit) to the first token's append on the engine thread; back-to-back: each "
                       "request submitted when the previous one finished (its TTFT excludes the wait). "
                       "Each stream count ran " + std::to_string(a.rounds) + " alternating rounds of "
                       "(concurrent, back to back); makespans and throughputs are medians over the rounds, "
                       "TTFT/ITL percentiles pool all rounds.");
  char buf[1024];
  if (!rounds32.empty()) {
    std::snprintf(buf, sizeof buf,
                  "The target is 32 streams >= %s the back-to-back throughput; measured here: %.2fx "
                  "(median makespans; %s). Rounds at 32 streams, concurrent / back to back: %s. The speedup "
                  "is bounded by the forward pass's decode rate at batch 32 over batch 1 "
                  "(bench/results/cpu_model-*.json): batch 1 is weight-read-bound, batch 32 is "
                  "compute-bound on two cores.",
                  Times(kOverlapSpeedupMin).c_str(), speedup32, speedup32 >= kOverlapSpeedupMin ? "met" : "not met",
                  rounds32.c_str());
    rep->notes.push_back(buf);
    rep->verdicts.push_back(bench::AtLeast("32 streams' throughput over back to back (median makespans)", speedup32,
                                           kOverlapSpeedupMin, 2, "x"));
  }
  std::snprintf(buf, sizeof buf,
                "floor_makespan_s: the shortest makespan this machine allows each mode, from its floors in "
                "this run; speedup_at_floors: back to back over concurrent if both ran at their floors. Floors "
                "measured before / after the rounds on %d threads (bench/lib/floors.h): read "
                "bandwidth %.1f / %.1f GB/s, fp32 FMA peak %.0f / %.0f GFLOP/s (short bursts: real matmuls on "
                "both cores sustain less); the better of each counts. Every step at max(FLOPs / peak, bytes / bandwidth), each "
                "mode's prompts in one prefill pass; a decode step reads %.3g MB of weights. At 32 streams the "
                "floors give %.2f s back to back (batch 1 %s-bound) and %.3f s concurrent (batch 32 %s-bound), "
                "%.2fx; measured %.2fx, with back to back at %.0f %% of its floor's speed and concurrent at "
                "%.0f %%.%s",
                a.threads, before.read_bytes_per_s / 1e9, after.read_bytes_per_s / 1e9, before.fma_flops_per_s / 1e9,
                after.fma_flops_per_s / 1e9, work.weight_bytes() / 1e6, seq32_floor,
                work.DecodeComputeBound(1, prompt_tokens + new_tokens / 2.0, floors) ? "compute" : "read",
                conc32_floor, work.DecodeComputeBound(32, prompt_tokens + new_tokens / 2.0, floors) ? "compute" : "read",
                at_floors32, speedup32, 100 * seq32_floor * 1000 / seq32_ms, 100 * conc32_floor * 1000 / conc32_ms,
                a.quick ? " Quick mode: the tiny model's weights fit in the caches, so the memory-read floor does "
                          "not bind it and these floors are loose there." : "");
  if (!std::isnan(at_floors32)) rep->notes.push_back(buf);

  return rows;
}

// ---- joiners ----------------------------------------------------------------

std::vector<Row> Joiners(Ctx& c, const Args& a, Report* rep) {
  const int joiners = a.quick ? 4 : 8, prompt = 16;
  // Quick mode: streams of 112 new tokens, so that a quick run stays quick.
  const int long_new = std::min(c.model->config().n_ctx - 16, a.quick ? 112 : 400);
  std::vector<Row> rows;
  Stamper st;
  auto e = MakeEngine(c, 32, a.threads);
  RunBatch(c, *e, st, 2, 4, false, 8, 999);  // warm-up
  // Idle-engine TTFT of each joiner.
  std::vector<double> idle;
  for (int j = 0; j < joiners; j++) {
    auto s = st.NewStream("idle" + std::to_string(j));
    backend::GenerationRequest r = Prompt(100 + j, prompt, 2);
    e->Submit(s, r, nullptr);
    WaitExited(*s);
    auto t = st.Times(*s, 1);
    idle.push_back(Ms(t[0] - r.arrival));
  }
  for (int bg : {8, 24}) {
    std::vector<std::shared_ptr<stream::Stream>> bgs;
    for (int i = 0; i < bg; i++) {
      auto s = st.NewStream("bg" + std::to_string(bg) + "_" + std::to_string(i));
      e->Submit(s, Prompt(i, 8, long_new), nullptr);
      bgs.push_back(s);
    }
    for (auto& s : bgs) {
      while (TokenEvents(*s) < 3) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    std::vector<double> ttft;
    for (int j = 0; j < joiners; j++) {
      auto s = st.NewStream("join" + std::to_string(bg) + "_" + std::to_string(j));
      backend::GenerationRequest r = Prompt(100 + j, prompt, 2);
      e->Submit(s, r, nullptr);
      WaitExited(*s);
      ttft.push_back(Ms(st.Times(*s, 1)[0] - r.arrival));
    }
    size_t k = TokenEvents(*bgs[0]);
    auto t = st.Times(*bgs[0], k);
    std::vector<double> gaps;
    for (size_t i = 1; i < t.size(); i++) gaps.push_back(Ms(t[i] - t[i - 1]));
    for (auto& s : bgs) e->Cancel(s->id());
    for (auto& s : bgs) WaitExited(*s);
    Row row;
    row.num.push_back({"background_streams", bg});
    row.num.push_back({"joiner_ttft_p50_ms", Pct(ttft, 50)});
    row.num.push_back({"joiner_ttft_max_ms", Pct(ttft, 100)});
    row.num.push_back({"idle_ttft_p50_ms", Pct(idle, 50)});
    row.num.push_back({"background_step_p50_ms", Pct(gaps, 50)});
    row.num.push_back({"excess_over_idle_in_steps", (Pct(ttft, 50) - Pct(idle, 50)) / Pct(gaps, 50)});
    rows.push_back(row);
    std::fprintf(stderr, "joiners bg=%d: ttft p50 %.1f ms (idle %.1f ms, step %.1f ms)\n", bg, Pct(ttft, 50),
                 Pct(idle, 50), Pct(gaps, 50));
  }
  rep->notes.push_back("Joiners: " + std::to_string(joiners) + " requests of " + std::to_string(prompt) +
                       " prompt tokens arriving one at a time while the background streams (" +
                       std::to_string(long_new) + " new tokens each) decode; expected TTFT = up to one "
                       "background step (waiting for the step in progress) + own prefill, i.e. about the "
                       "idle TTFT + one step; excess_over_idle_in_steps is (joiner p50 - idle p50) / step p50.");
  return rows;
}

// ---- scheduler ---------------------------------------------------------------
//
// Issue 33's measurements. Each part runs its settings side by side, in
// alternating rounds, on fresh engines of the same model and threads.

std::string Fixed2(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", v);
  return b;
}

// Greedy request i whose answer is exactly `answer` tokens and then the
// end-of-text (min_tokens holds it back until then, a +100 bias draws it
// right after), with max_new_tokens unset as a chat request leaves it: the
// rest of the context.
backend::GenerationRequest ChatRequest(Ctx& c, int i, int prompt, int answer) {
  backend::GenerationRequest r = Prompt(i, prompt, c.model->config().n_ctx - prompt);
  r.min_tokens = answer;
  r.logit_bias = {{c.model->config().eos_token_id, 100.0f}};
  return r;
}

struct ChatRun {
  double seconds = 0, tokens_per_s = 0, mean_running = 0;
  int64_t max_running = 0;
  uint64_t preemptions = 0;
  std::vector<std::vector<int32_t>> tokens;  // per request, in index order
  int bad_streams = 0;                       // not `eos` after answer + 1 tokens with contiguous indexes
};

ChatRun RunChat(Ctx& c, const Args& a, engine::AdmissionMode mode, int n, int prompt, int answer, int blocks,
                int round) {
  engine::EngineOptions o;
  o.max_batch = n;
  o.threads = a.threads;
  o.max_waiting = 1024;
  o.num_kv_blocks = blocks;
  o.admission = mode;
  o.max_num_batched_tokens = app::DefaultStepTokens(*app::FindBackend("cpu"), n);
  auto e = MakeEngineWith(c, o);
  ChatRun run;
  std::vector<std::shared_ptr<stream::Stream>> ss;
  auto t0 = Clock::now();
  for (int i = 0; i < n; i++) {
    ss.push_back(std::make_shared<stream::Stream>("chat" + std::to_string(round) + "_" + std::to_string(i),
                                                  stream::StreamLimits{}, nullptr));
    e->Submit(ss.back(), ChatRequest(c, i, prompt, answer), nullptr);
  }
  // Running sequences, sampled every 5 ms until all are done.
  double sum = 0;
  int samples = 0;
  for (;;) {
    bool all = true;
    for (auto& s : ss) all = all && s->producer_exited();
    if (all) break;
    const engine::EngineStats st = e->stats();
    sum += static_cast<double>(st.running);
    samples++;
    run.max_running = std::max(run.max_running, st.running);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  run.seconds = Ms(Clock::now() - t0) / 1e3;
  run.mean_running = samples > 0 ? sum / samples : 0;
  run.preemptions = e->stats().preemptions;
  size_t total = 0;
  for (auto& s : ss) {
    std::vector<stream::EventPtr> evs;
    s->ReadFrom(1, 1 << 20, &evs);
    std::vector<int32_t> toks;
    bool ok = true, eos = false;
    for (auto& ev : evs) {
      if (ev->type == stream::EventType::kToken) {
        ok = ok && ev->index == static_cast<int32_t>(toks.size());
        toks.push_back(ev->token);
      } else if (ev->type == stream::EventType::kDone) {
        eos = ev->finish_reason == stream::FinishReason::kEos;
      } else {
        ok = false;
      }
    }
    if (!ok || !eos || toks.size() != static_cast<size_t>(answer + 1)) run.bad_streams++;
    total += toks.size();
    run.tokens.push_back(std::move(toks));
  }
  run.tokens_per_s = static_cast<double>(total) / run.seconds;
  e->Shutdown();
  return run;
}

// Gaps between consecutive tokens of the decoders, from `from` to `to`.
std::vector<double> GapsBetween(Stamper& st, const std::vector<std::shared_ptr<stream::Stream>>& ss,
                                Clock::time_point from, Clock::time_point to) {
  std::vector<double> gaps;
  for (auto& s : ss) {
    auto t = st.Times(*s, TokenEvents(*s));
    for (size_t i = 1; i < t.size(); i++) {
      if (t[i - 1] >= from && t[i] <= to) gaps.push_back(Ms(t[i] - t[i - 1]));
    }
  }
  return gaps;
}

struct LongPromptRun {
  std::vector<double> gaps;  // the decoders' gaps from 10 steps before the prompt to 10 after its first token
  double ttft_ms = 0, max_gap_ms = 0;
  uint64_t chunks = 0;
};

LongPromptRun RunLongPrompt(Ctx& c, const Args& a, int budget, int decoders, int long_prompt, int round) {
  engine::EngineOptions o;
  o.max_batch = decoders + 1;
  o.threads = a.threads;
  o.max_num_batched_tokens = std::max(budget, decoders + 1);
  o.num_kv_blocks = (decoders + 1) * engine::BlocksFor(c.model->config().n_ctx, 16);
  auto e = MakeEngineWith(c, o);
  Stamper st;
  const int n_ctx = c.model->config().n_ctx;
  std::vector<std::shared_ptr<stream::Stream>> ds;
  for (int i = 0; i < decoders; i++) {
    ds.push_back(st.NewStream("d" + std::to_string(round) + "_" + std::to_string(i)));
    backend::GenerationRequest r = Prompt(i, 8, n_ctx - 8);
    r.ignore_eos = true;  // random weights may draw the end-of-text early
    e->Submit(ds.back(), r, nullptr);
  }
  auto tokens_of = [&](size_t k) {
    for (auto& s : ds) {
      while (TokenEvents(*s) < k) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  };
  tokens_of(12);  // all decoding, 10 steps of gaps to come before the prompt
  const size_t before = TokenEvents(*ds[0]);
  auto ls = st.NewStream("long" + std::to_string(round));
  backend::GenerationRequest lr = Prompt(999, long_prompt, 2);
  const Clock::time_point arrival = lr.arrival = Clock::now();
  e->Submit(ls, lr, nullptr);
  while (TokenEvents(*ls) < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const Clock::time_point first = st.Times(*ls, 1)[0];
  const size_t at_first = TokenEvents(*ds[0]);
  tokens_of(at_first + 11);
  // The window: 10 of ds[0]'s steps before the arrival, 10 after the first token.
  auto t0 = st.Times(*ds[0], before);
  auto t1 = st.Times(*ds[0], at_first + 11);
  const Clock::time_point from = t0[before >= 11 ? before - 11 : 0], to = t1.back();
  LongPromptRun run;
  run.gaps = GapsBetween(st, ds, from, to);
  run.ttft_ms = Ms(first - arrival);
  run.max_gap_ms = Pct(run.gaps, 100);
  run.chunks = e->stats().prefill_chunks;
  e->Shutdown();
  return run;
}

struct PriorityRun {
  std::vector<double> ttft_ms;  // the high-priority requests'
  uint64_t preemptions = 0;
};

// `low` low-priority streams (priority 1, long answers) keep max_batch full
// and more waiting; `high` high-priority requests (priority 0) arrive one
// after another, each once the previous has its first token.
PriorityRun RunPriority(Ctx& c, const Args& a, bool priority_policy, bool idle, int max_batch, int low, int high,
                        int prompt, int round) {
  engine::EngineOptions o;
  o.max_batch = max_batch;
  o.threads = a.threads;
  o.max_waiting = 1024;
  o.scheduling = priority_policy ? engine::SchedulingPolicy::kPriority : engine::SchedulingPolicy::kFcfs;
  o.max_num_batched_tokens = app::DefaultStepTokens(*app::FindBackend("cpu"), max_batch);
  o.num_kv_blocks = max_batch * engine::BlocksFor(c.model->config().n_ctx, 16);
  auto e = MakeEngineWith(c, o);
  Stamper st;
  const int n_ctx = c.model->config().n_ctx;
  std::vector<std::shared_ptr<stream::Stream>> lows;
  int submitted = 0;
  // Keeps `low` low-priority streams unfinished (new ones replace those
  // that end): max_batch running, the rest waiting, whatever the time.
  auto top_up = [&] {
    int live = 0;
    for (auto& s : lows) live += s->producer_exited() ? 0 : 1;
    for (; live < low; live++, submitted++) {
      lows.push_back(st.NewStream("low" + std::to_string(round) + "_" + std::to_string(submitted)));
      backend::GenerationRequest r = Prompt(submitted, prompt, std::min(256, n_ctx - prompt));
      r.ignore_eos = true;
      r.priority = priority_policy ? 1 : 0;
      e->Submit(lows.back(), r, nullptr);
    }
  };
  if (!idle) {
    top_up();
    for (int i = 0; i < max_batch; i++) {
      while (TokenEvents(*lows[static_cast<size_t>(i)]) < 3) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  PriorityRun run;
  for (int j = 0; j < high; j++) {
    if (!idle) top_up();
    auto s = st.NewStream("high" + std::to_string(round) + "_" + std::to_string(j));
    backend::GenerationRequest r = Prompt(500 + j, prompt, 4);
    r.priority = 0;
    const Clock::time_point arrival = r.arrival = Clock::now();
    e->Submit(s, r, nullptr);
    while (TokenEvents(*s) < 1 && !s->producer_exited()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    auto t = st.Times(*s, 1);
    run.ttft_ms.push_back(t.empty() ? NAN : Ms(t[0] - arrival));
    WaitExited(*s);
  }
  run.preemptions = e->stats().preemptions;
  for (auto& s : lows) e->Cancel(s->id());
  e->Shutdown();
  return run;
}

std::vector<Row> Scheduler(Ctx& c, const Args& a, Report* rep) {
  const int n_ctx = c.model->config().n_ctx;
  std::vector<Row> rows;
  const int rounds = std::max(1, a.rounds);
  // (1) The chat load.
  const int chat_n = 16, chat_prompt = a.quick ? 16 : 64, answer = a.quick ? 32 : 128;
  const int blocks = 2 * engine::BlocksFor(n_ctx, 16);  // reserve: two requests at a time
  {
    std::map<int, std::vector<ChatRun>> runs;  // by mode
    for (int r = 0; r < rounds; r++) {
      for (engine::AdmissionMode mode : {engine::AdmissionMode::kReserve, engine::AdmissionMode::kOptimistic}) {
        runs[static_cast<int>(mode)].push_back(RunChat(c, a, mode, chat_n, chat_prompt, answer, blocks, r));
      }
    }
    const std::vector<std::vector<int32_t>>& ref = runs[static_cast<int>(engine::AdmissionMode::kReserve)][0].tokens;
    std::map<int, double> tps;
    uint64_t bad_all = 0, differ_all = 0;
    for (auto& [mode, rs] : runs) {
      std::vector<double> t, sec, mean;
      int64_t max_running = 0;
      uint64_t pre = 0;
      int bad = 0, differ = 0;
      for (const ChatRun& x : rs) {
        t.push_back(x.tokens_per_s);
        sec.push_back(x.seconds);
        mean.push_back(x.mean_running);
        max_running = std::max(max_running, x.max_running);
        pre += x.preemptions;
        bad += x.bad_streams;
        for (size_t i = 0; i < x.tokens.size(); i++) differ += x.tokens[i] != ref[i] ? 1 : 0;
      }
      tps[mode] = Pct(t, 50);
      bad_all += static_cast<uint64_t>(bad);
      differ_all += static_cast<uint64_t>(differ);
      Row row;
      row.str.push_back({"part", "chat_kv_limited"});
      row.str.push_back({"setting", mode == static_cast<int>(engine::AdmissionMode::kReserve)
                                        ? "--admission reserve (before: worst-case reservation)"
                                        : "--admission optimistic"});
      row.num.push_back({"kv_blocks", blocks});
      row.num.push_back({"mean_running", Pct(mean, 50)});
      row.num.push_back({"max_running", static_cast<double>(max_running)});
      row.num.push_back({"output_tokens_per_s_p50", Pct(t, 50)});
      row.num.push_back({"makespan_s_p50", Pct(sec, 50)});
      row.num.push_back({"preemptions_per_run", static_cast<double>(pre) / rs.size()});
      row.num.push_back({"bad_streams", bad});
      row.num.push_back({"streams_differing_from_reserve", differ});
      rows.push_back(row);
    }
    const double ratio = tps[static_cast<int>(engine::AdmissionMode::kOptimistic)] /
                         tps[static_cast<int>(engine::AdmissionMode::kReserve)];
    std::fprintf(stderr, "chat: optimistic / reserve output tokens/s %.2fx\n", ratio);
    rep->verdicts.push_back(
        bench::AtLeast("chat load: optimistic over reserve admission, output tokens/s", ratio, kChatOptimisticMin, 2, "x"));
    rep->verdicts.push_back(bench::NoneOfEach(
        "chat load: streams with a lost, duplicated or missing token / differing from reserve's", {bad_all, differ_all}));
    rep->notes.push_back("Chat load: " + std::to_string(chat_n) + " greedy requests of " +
                         std::to_string(chat_prompt) + " prompt tokens, max_tokens unset (the rest of the "
                         "context), each answering " + std::to_string(answer) + " tokens then the end-of-text "
                         "(min_tokens holds it back, a +100 logit_bias draws it), on " + std::to_string(blocks) +
                         " KV blocks of 16 (two whole contexts), --max-batch " + std::to_string(chat_n) + "; " +
                         std::to_string(rounds) + " alternating rounds, medians. Optimistic / reserve output "
                         "tokens/s: " + Fixed2(ratio) + "x (target >= " + Times(kChatOptimisticMin) +
                         "). bad_streams counts streams "
                         "without exactly answer + 1 tokens, contiguous indexes and finish eos (lost or "
                         "duplicated tokens); streams_differing_from_reserve compares every stream's tokens "
                         "with the first reserve round's (preempted and recomputed streams included).");
  }
  // (2) A long prompt among decoders.
  const int decoders = 16, long_prompt = std::min(1000, n_ctx - 24);
  {
    const std::vector<int> budgets = {kDefaultTokenBudget, 128, 256, 512, 4096};
    std::map<int, std::vector<LongPromptRun>> runs;
    for (int r = 0; r < rounds; r++) {
      for (int b : budgets) runs[b].push_back(RunLongPrompt(c, a, b, decoders, long_prompt, r));
    }
    for (int b : budgets) {
      std::vector<double> gaps, ttft, maxg;
      uint64_t chunks = 0;
      for (const LongPromptRun& x : runs[b]) {
        gaps.insert(gaps.end(), x.gaps.begin(), x.gaps.end());
        ttft.push_back(x.ttft_ms);
        maxg.push_back(x.max_gap_ms);
        chunks += x.chunks;
      }
      Row row;
      row.str.push_back({"part", "long_prompt_among_decoders"});
      row.str.push_back({"setting", "--max-num-batched-tokens " + std::to_string(b) +
                                        (b >= long_prompt + decoders ? " (no chunking: as before)" : "")});
      row.num.push_back({"budget", b});
      row.num.push_back({"gap_p50_ms", Pct(gaps, 50)});
      row.num.push_back({"gap_p99_ms", Pct(gaps, 99)});
      row.num.push_back({"p99_over_p50", Pct(gaps, 99) / Pct(gaps, 50)});
      row.num.push_back({"max_gap_ms_p50", Pct(maxg, 50)});
      row.num.push_back({"long_prompt_ttft_ms_p50", Pct(ttft, 50)});
      row.num.push_back({"chunks_per_run", static_cast<double>(chunks) / runs[b].size()});
      rows.push_back(row);
      if (b == kDefaultTokenBudget) {
        rep->verdicts.push_back(bench::AtMost("long prompt among decoders: gap p99 over p50 at the default budget (" +
                                                  std::to_string(b) + ")",
                                              Pct(gaps, 99) / Pct(gaps, 50), kLongPromptGapRatioMax, 2, "x"));
      }
      std::fprintf(stderr, "long prompt, budget %d: gap p50 %.1f p99 %.1f (x%.2f), ttft %.0f ms\n", b, Pct(gaps, 50),
                   Pct(gaps, 99), Pct(gaps, 99) / Pct(gaps, 50), Pct(ttft, 50));
    }
    rep->notes.push_back("Long prompt: " + std::to_string(decoders) + " streams decode (8-token prompts); once "
                         "each has 12 tokens a " + std::to_string(long_prompt) + "-token prompt arrives. The "
                         "gaps are every decoder's inter-token gaps from 10 steps before its arrival to 10 steps "
                         "after its first token (" + std::to_string(rounds) + " rounds pooled); the target is "
                         "gap p99 <= " + Times(kLongPromptGapRatioMax) + " gap p50. 4096 puts the whole prompt in one "
                         "step: the scheduler before chunked prefill.");
  }
  // (3) Priority.
  {
    const int max_batch = 8, low = 16, high = a.quick ? 4 : 8, prompt = 32;
    struct Setting {
      const char* name;
      bool policy, idle;
    };
    const Setting settings[] = {{"idle server", true, true},
                                {"--scheduling-policy priority, saturated", true, false},
                                {"--scheduling-policy fcfs, saturated (before: no priorities)", false, false}};
    std::map<std::string, std::vector<double>> ttft;
    std::map<std::string, uint64_t> pre;
    for (int r = 0; r < rounds; r++) {
      for (const Setting& s : settings) {
        // Under fcfs each high request waits for a low one to end (~256
        // steps): fewer of them.
        PriorityRun x = RunPriority(c, a, s.policy, s.idle, max_batch, low, s.policy ? high : 2, prompt, r);
        ttft[s.name].insert(ttft[s.name].end(), x.ttft_ms.begin(), x.ttft_ms.end());
        pre[s.name] += x.preemptions;
      }
    }
    const double idle_p50 = Pct(ttft[settings[0].name], 50);
    for (const Setting& s : settings) {
      Row row;
      row.str.push_back({"part", "priority_ttft"});
      row.str.push_back({"setting", s.name});
      row.num.push_back({"ttft_p50_ms", Pct(ttft[s.name], 50)});
      row.num.push_back({"ttft_max_ms", Pct(ttft[s.name], 100)});
      row.num.push_back({"over_idle_p50", Pct(ttft[s.name], 50) / idle_p50});
      row.num.push_back({"preemptions_per_run", static_cast<double>(pre[s.name]) / rounds});
      rows.push_back(row);
      std::fprintf(stderr, "priority, %s: ttft p50 %.1f ms (%.2fx idle)\n", s.name, Pct(ttft[s.name], 50),
                   Pct(ttft[s.name], 50) / idle_p50);
    }
    rep->verdicts.push_back(bench::AtMost("priority: high-priority TTFT p50 under saturation over the idle server's",
                                          Pct(ttft[settings[1].name], 50) / idle_p50, kPriorityOverIdleMax, 2, "x"));
    rep->notes.push_back("Priority: --max-batch " + std::to_string(max_batch) + ", " + std::to_string(low) +
                         " low-priority streams (priority 1, " + std::to_string(prompt) + "-token prompts, "
                         "answers of up to 256 tokens) fill every slot with more waiting; " +
                         std::to_string(high) + " high-priority requests (priority 0, " + std::to_string(prompt) +
                         "-token prompts, 4 tokens) arrive one after another. TTFT from arrival; the target is "
                         "the saturated priority p50 within " + Times(kPriorityOverIdleMax) + " of the idle p50. The load is kept saturating: "
                         "before each high request, new low ones replace those that ended. Under fcfs every "
                         "request is priority 0 and a high one queues behind the waiting load (2 per round).");
  }
  return rows;
}

// ---- prefix ------------------------------------------------------------------
//
// 32 requests whose prompts share a 400-token prefix (distinct 20-token
// suffixes): the first alone, and once its first token is out (its prefix
// is in the KV cache) the other 31 at once. Cache off vs on, each round on a
// fresh engine, the rounds alternating. The same with 32 wholly distinct
// prompts (no prefix to find) measures what the cache's bookkeeping costs.

constexpr int kPrefixRequests = 32, kPrefixShared = 400, kPrefixSuffix = 20, kPrefixNewTokens = 16;

struct PrefixRun {
  std::vector<double> later_ttft_ms;  // requests 2..32, from their arrival
  double first_ttft_ms = 0, total_s = 0;
  uint64_t hits = 0, queries = 0;
};

PrefixRun RunPrefix(Ctx& c, const Args& a, Stamper& st, bool cache, bool shared, int round) {
  auto e = MakeEngine(c, kPrefixRequests, a.threads, cache);
  const std::string tag = std::string(shared ? "sh" : "di") + (cache ? "on" : "off") + std::to_string(round) + "_";
  auto request = [&](int i) {
    // The shared prefix is the same for every request (and every round: each
    // round starts on a fresh engine); suffixes and distinct prompts differ.
    backend::GenerationRequest r = Prompt(5000 + i, kPrefixShared + kPrefixSuffix, kPrefixNewTokens);
    if (shared) {
      backend::GenerationRequest p = Prompt(1, kPrefixShared, 0);
      std::copy(p.prompt_tokens.begin(), p.prompt_tokens.end(), r.prompt_tokens.begin());
    }
    return r;
  };
  PrefixRun run;
  std::vector<std::shared_ptr<stream::Stream>> streams;
  std::vector<Clock::time_point> arrivals;
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < kPrefixRequests; i++) {
    backend::GenerationRequest r = request(i);
    streams.push_back(st.NewStream(tag + std::to_string(i)));
    r.arrival = Clock::now();
    arrivals.push_back(r.arrival);
    e->Submit(streams.back(), r, nullptr);
    if (i == 0) {
      while (TokenEvents(*streams[0]) < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (auto& s : streams) WaitExited(*s);
  run.total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  for (int i = 0; i < kPrefixRequests; i++) {
    const double ttft = Ms(st.Times(*streams[i], 1)[0] - arrivals[i]);
    if (i == 0) {
      run.first_ttft_ms = ttft;
    } else {
      run.later_ttft_ms.push_back(ttft);
    }
  }
  const engine::EngineStats es = e->stats();
  run.hits = es.prefix_cache_hits;
  run.queries = es.prefix_cache_queries;
  return run;
}

// The cache's bookkeeping for one request of the distinct scenario, timed
// alone (microseconds, median of 50 rounds of 32 requests): the prefix walk
// that misses, the reservation, caching its full blocks, the release — what
// the engine adds per request when nothing is shared. (The end-to-end
// comparison below is too noisy on a shared machine to show microseconds.)
double BookkeepingUsPerRequest() {
  const int bs = 16, len = kPrefixShared + kPrefixSuffix;
  const int blocks = engine::BlocksFor(len + kPrefixNewTokens - 1, bs);
  engine::BlockPool pool(kPrefixRequests * blocks, bs, true);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < kPrefixRequests; i++) prompts.push_back(Prompt(9000 + i, len, 0).prompt_tokens);
  std::vector<double> us;
  std::vector<int32_t> table;
  std::vector<uint64_t> hashes;
  for (int round = 0; round < 50; round++) {
    const Clock::time_point t0 = Clock::now();
    std::vector<std::vector<int32_t>> tables(kPrefixRequests);
    for (int i = 0; i < kPrefixRequests; i++) {
      std::vector<int32_t>& t = tables[i];
      hashes.clear();
      const int shared = pool.AcquirePrefix(prompts[i].data(), (len - 1) / bs, &t, &hashes);
      if (!pool.Alloc(blocks - shared, &t)) std::abort();
      uint64_t h = hashes.empty() ? engine::BlockPool::kRootHash : hashes.back();
      for (int k = shared; k < len / bs; k++) {
        h = pool.ChainHash(h, prompts[i].data() + static_cast<size_t>(k) * bs);
        pool.Register(t[k], k == 0 ? -1 : t[k - 1], h, prompts[i].data() + static_cast<size_t>(k) * bs, true);
      }
    }
    for (auto& t : tables) {
      if (!pool.Release(t).ok()) std::abort();
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / kPrefixRequests);
    // Next round: other prompts, so that every walk misses and every
    // admission evicts (the pool is full of the last round's blocks).
    for (auto& p : prompts) p[0] = (p[0] + 1) % 50000;
  }
  return Pct(us, 50);
}

std::vector<Row> Prefix(Ctx& c, const Args& a, Report* rep) {
  if (c.model->config().n_ctx < kPrefixShared + kPrefixSuffix + kPrefixNewTokens) {
    std::fprintf(stderr, "prefix: the model has %d positions, the scenario needs %d\n", c.model->config().n_ctx,
                 kPrefixShared + kPrefixSuffix + kPrefixNewTokens);
    std::exit(1);
  }
  Stamper st;
  // [scenario][cache] -> one run per round.
  std::map<std::pair<std::string, std::string>, std::vector<PrefixRun>> runs;
  std::vector<Row> rows;
  auto row_of = [](const std::string& scenario, const std::string& cache, const std::string& round,
                   double p50, double p99, double first, double total, double hits) {
    Row row;
    row.str = {{"scenario", scenario}, {"prefix_cache", cache}, {"round", round}};
    row.num = {{"later_ttft_p50_ms", p50},
               {"later_ttft_p99_ms", p99},
               {"first_ttft_ms", first},
               {"total_s", total},
               {"completion_tokens_per_s", kPrefixRequests * kPrefixNewTokens / total},
               {"prefix_hit_tokens", hits}};
    return row;
  };
  for (int round = 1; round <= a.rounds; round++) {
    for (bool shared : {true, false}) {
      // Alternate which setting goes first, so neither always runs warmer.
      for (bool cache : round % 2 == 1 ? std::vector<bool>{false, true} : std::vector<bool>{true, false}) {
        PrefixRun r = RunPrefix(c, a, st, cache, shared, round);
        const std::string scenario = shared ? "shared_prefix" : "distinct";
        const std::string setting = cache ? "on" : "off";
        rows.push_back(row_of(scenario, setting, std::to_string(round), Pct(r.later_ttft_ms, 50),
                              Pct(r.later_ttft_ms, 99), r.first_ttft_ms, r.total_s, static_cast<double>(r.hits)));
        std::fprintf(stderr, "prefix %s cache %s round %d: later TTFT p50 %.1f ms p99 %.1f ms, total %.2f s, %llu hit tokens\n",
                     scenario.c_str(), setting.c_str(), round, Pct(r.later_ttft_ms, 50), Pct(r.later_ttft_ms, 99),
                     r.total_s, static_cast<unsigned long long>(r.hits));
        runs[{scenario, setting}].push_back(std::move(r));
      }
    }
  }
  // Medians over the rounds, and the ratios off / on.
  auto median = [](const std::vector<PrefixRun>& v, auto f) {
    std::vector<double> x;
    for (const PrefixRun& r : v) x.push_back(f(r));
    return Pct(x, 50);
  };
  std::map<std::pair<std::string, std::string>, std::vector<double>> med;  // p50, p99, first, total, hits
  for (auto& [key, v] : runs) {
    med[key] = {median(v, [](const PrefixRun& r) { return Pct(r.later_ttft_ms, 50); }),
                median(v, [](const PrefixRun& r) { return Pct(r.later_ttft_ms, 99); }),
                median(v, [](const PrefixRun& r) { return r.first_ttft_ms; }),
                median(v, [](const PrefixRun& r) { return r.total_s; }),
                median(v, [](const PrefixRun& r) { return static_cast<double>(r.hits); })};
    const std::vector<double>& m = med[key];
    rows.push_back(row_of(key.first, key.second, "median", m[0], m[1], m[2], m[3], m[4]));
  }
  const double book_us = BookkeepingUsPerRequest();
  std::fprintf(stderr, "prefix: bookkeeping %.1f us per request\n", book_us);
  char buf[1024];
  const auto& so = med[{"shared_prefix", "off"}];
  const auto& sn = med[{"shared_prefix", "on"}];
  const auto& dof = med[{"distinct", "off"}];
  const auto& dn = med[{"distinct", "on"}];
  std::snprintf(buf, sizeof buf,
                "Shared prefix, medians of %d rounds, off / on measured side by side: later requests' TTFT p50 "
                "%.1f ms off, %.1f ms on (%.1fx lower with the cache; target >= %s), p99 %.1f / %.1f ms; all 32 "
                "done in %.2f s off, %.2f s on (%.1fx less; target >= %s). No prefix shared (0%% hits): total "
                "%.2f s off, %.2f s on (on / off = %.3f), later TTFT p50 %.1f / %.1f ms: the bookkeeping's cost.",
                a.rounds, so[0], sn[0], so[0] / sn[0], Times(kPrefixTtftGainMin).c_str(), so[1], sn[1], so[3], sn[3],
                so[3] / sn[3], Times(kPrefixTotalGainMin).c_str(), dof[3], dn[3], dn[3] / dof[3], dof[0], dn[0]);
  rep->notes.push_back(buf);
  rep->verdicts.push_back(bench::AtLeast("shared prefix: later requests' TTFT p50, cache off over on", so[0] / sn[0],
                                         kPrefixTtftGainMin, 1, "x"));
  rep->verdicts.push_back(bench::AtLeast("shared prefix: all 32 done, cache off over on", so[3] / sn[3],
                                         kPrefixTotalGainMin, 1, "x"));
  std::snprintf(buf, sizeof buf,
                "The bookkeeping timed alone (a missing prefix walk, the reservation, caching the prompt's %d full "
                "blocks, the release; median of 50 rounds of %d requests whose walks all miss and whose admissions "
                "all evict): %.1f us per request, against %.0f ms of prefill and decode per request in the distinct "
                "run with the cache off (its total / %d): %.5f %% of it.",
                (kPrefixShared + kPrefixSuffix) / 16, kPrefixRequests, book_us, dof[3] * 1000 / kPrefixRequests,
                kPrefixRequests, 100 * book_us / (dof[3] * 1e6 / kPrefixRequests));
  rep->notes.push_back(buf);
  std::snprintf(buf, sizeof buf,
                "Each request: %d prompt tokens (%d shared + %d distinct, or %d distinct), %d new tokens, greedy. "
                "The first request is submitted alone; the other %d at once when its first token is out. TTFT is "
                "from each request's arrival to its first token event; total is from the first submit to the "
                "last stream's end. Each run on a fresh engine (max batch 32, prefill passes of 64 tokens, "
                "--block-size 16); settings alternate which runs first each round.",
                kPrefixShared + kPrefixSuffix, kPrefixShared, kPrefixSuffix, kPrefixShared + kPrefixSuffix,
                kPrefixNewTokens, kPrefixRequests - 1);
  rep->notes.push_back(buf);
  return rows;
}

// ---- disconnects --------------------------------------------------------------

// An App (--backend cpu, same model) on a loopback ephemeral port.
struct ServerRun {
  std::unique_ptr<app::App> app;
  std::thread runner;
  engine::Engine* eng = nullptr;
  uint16_t port = 0;
  ServerRun(const Args& a, std::vector<std::string> flags) {
    std::vector<std::string> argv_s = {"tokenwire", "serve", "--port", "0", "--backend", "cpu",
                                       "--weights", a.weights,
                                       "--threads", std::to_string(a.threads), "--max-new-tokens", "4096",
                                       "--kv-blocks", "512", "--block-size", "16"};
    argv_s.push_back("--model");
    argv_s.push_back(a.model);
    for (auto& f : flags) argv_s.push_back(f);
    std::vector<char*> argv;
    for (auto& x : argv_s) argv.push_back(x.data());
    app::Config cfg;
    Status s = app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 2, &cfg);
    if (s.ok()) {
      app = std::make_unique<app::App>(cfg);
      s = app->Init(false);
    }
    if (!s.ok()) {
      std::fprintf(stderr, "server: %s\n", s.message().c_str());
      std::exit(1);
    }
    runner = std::thread([this] { (void)app->Run(); });
    eng = dynamic_cast<engine::Engine*>(app->backend());
    port = static_cast<uint16_t>(app->port());
  }
  ~ServerRun() {
    app->RequestShutdown();
    runner.join();
  }
};

std::vector<Row> Disconnects(Ctx& c, const Args& a, Report* rep) {
  ServerRun srv(a, {"--linger-ms", "0", "--retain-ms", "100", "--max-batch", "8"});
  engine::Engine* eng = srv.eng;
  const uint16_t port = srv.port;
  const int max_new = std::min(c.model->config().n_ctx - 16, a.quick ? 112 : 256);
  const int reps = a.quick ? 3 : 6;
  std::vector<int> moments = {1, 8, 32};
  if (max_new > 128 + 16) moments.push_back(128);
  std::vector<Row> rows;
  for (int rst = 0; rst < 2; rst++) {
    for (int after : moments) {
      std::vector<double> release_ms, generated;
      for (int rep_i = 0; rep_i < reps; rep_i++) {
        engine::EngineStats before = eng->stats();
        client::SseOptions o;
        o.max_events = static_cast<size_t>(after) + 1;  // start + `after` tokens
        client::SseClient cl(o);
        if (!cl.Connect(port).ok() ||
            !cl.Post("/v1/stream", "{\"prompt\":\"Disconnect test " + std::to_string(rep_i) +
                                       "\",\"max_new_tokens\":" + std::to_string(max_new) + "}")
                 .ok() ||
            !cl.ReadEvents().ok()) {
          std::fprintf(stderr, "client failed\n");
          std::exit(1);
        }
        auto t_close = Clock::now();
        if (rst) {
          cl.http().CloseWithReset();
        } else {
          cl.http().Close();
        }
        engine::EngineStats now;
        do {
          now = eng->stats();
          if (now.releases > before.releases) break;
          std::this_thread::sleep_for(std::chrono::microseconds(50));
        } while (true);
        release_ms.push_back(Ms(Clock::now() - t_close));
        generated.push_back(static_cast<double>(now.tokens_generated - before.tokens_generated));
        while (eng->stats().running > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      Row row;
      row.str.push_back({"close", rst ? "RST" : "FIN"});
      row.num.push_back({"after_tokens", after});
      row.num.push_back({"close_to_release_p50_ms", Pct(release_ms, 50)});
      row.num.push_back({"close_to_release_max_ms", Pct(release_ms, 100)});
      row.num.push_back({"tokens_generated_p50", Pct(generated, 50)});
      row.num.push_back({"generated_per_read", Pct(generated, 50) / after});
      rows.push_back(row);
      std::fprintf(stderr, "disconnect %s after %d: release %.2f ms, generated %.0f\n", rst ? "RST" : "FIN",
                   after, Pct(release_ms, 50), Pct(generated, 50));
    }
  }
  rep->notes.push_back("Through the HTTP server on loopback with --linger-ms 0 (a departed client's "
                       "generation is cancelled at once), max_new_tokens " + std::to_string(max_new) +
                       "; the client reads `after_tokens` token events, then closes (FIN: close(); RST: "
                       "SO_LINGER 0). Release observed in the engine's published counters (updated at the "
                       "end of each step), polled every 50 us; " + std::to_string(reps) +
                       " repetitions per row. generated_per_read: tokens the engine generated for the "
                       "stream per token the client read (1 = nothing wasted).");
  return rows;
}

// ---- slow readers -------------------------------------------------------------

// Reads the server's /metrics over one keep-alive connection.
class MetricsPoller {
 public:
  explicit MetricsPoller(uint16_t port) : port_(port) {}
  // The value of the metric line "tokenwire_<name> V", or NaN.
  bool Poll(std::map<std::string, double>* out) {
    if (!cl_ || !cl_->connected()) {
      cl_ = std::make_unique<client::HttpClient>();
      if (!cl_->Connect(port_).ok()) return false;
    }
    client::Request req;
    req.target = "/metrics";
    client::Response resp;
    if (!cl_->RoundTrip(req, &resp).ok()) {
      cl_.reset();
      return false;
    }
    for (auto& [name, v] : *out) {
      std::string key = "\ntokenwire_" + name + " ";
      size_t p = resp.body.find(key);
      v = p == std::string::npos ? NAN : std::strtod(resp.body.c_str() + p + key.size(), nullptr);
    }
    return true;
  }

 private:
  uint16_t port_;
  std::unique_ptr<client::HttpClient> cl_;
};

std::vector<Row> SlowReaders(Ctx& c, const Args& a, Report* rep) {
  const int streams = 8;
  const int max_new = std::min(c.model->config().n_ctx - 16, a.quick ? 112 : 200);
  const double stall_cap_s = a.quick ? 3.0 : 10.0;  // a slow reader never stalls longer than this
  const double linger_after_s = 1.5;                 // ... nor longer than this after the healthy ones end
  const std::vector<const char*> policies = {"drop_slow", "pause_producer", "pause_then_cancel", "naive",
                                             "unbounded"};
  const std::vector<int> ks = {0, 1, 2, 4};
  const int kPadBytes = 1024;  // --lab-pad-bytes: each token event ~1.1 KB
  std::vector<Row> rows;
  for (const char* policy : policies) {
    for (int k : ks) {
      // Small buffers and padded events so that a stalled reader shows as lag
      // within one stream; a resume window (32 events) much shorter than a
      // stream, so that what `unbounded` keeps shows, and well above the lag
      // bound (8), so that a pause that takes a step or two to land does not
      // push a cursor out of the window. (Linger long: a
      // drop_slow detach must not cancel.) --lab for every policy: it enables
      // the padding and the lab policies, and changes nothing else.
      std::vector<std::string> flags = {"--lab", "--lab-pad-bytes", std::to_string(kPadBytes), "--policy", policy,
                                        "--linger-ms", "10000", "--retain-ms", "100", "--max-batch", "8",
                                        "--subscriber-lag", "8", "--resume-window", "32",
                                        "--max-output-bytes", "4096", "--socket-send-buffer-bytes", "1024",
                                        "--stall-timeout-ms", "250"};
      ServerRun srv(a, flags);
      auto t0 = Clock::now();
      auto since_s = [&] { return Ms(Clock::now() - t0) / 1000; };
      std::atomic<int> healthy_left{streams - k}, threads_left{streams};
      std::atomic<double> healthy_all_done_s{NAN}, slow_left_s{NAN};
      std::vector<double> done_s(streams - k, NAN);
      std::vector<std::vector<double>> gaps(streams - k);
      std::vector<std::thread> th;
      for (int i = 0; i < streams; i++) {
        bool slow = i < k;
        th.emplace_back([&, i, slow] {
          client::SseOptions o;
          o.http.rcvbuf_bytes = slow ? 1024 : 0;
          o.http.io_timeout_ms = 300000;
          if (slow) o.max_events = 1;  // the start event, then stop reading
          client::SseClient cl(o);
          std::string body = "{\"prompt\":\"Slow reader bench " + std::to_string(i) +
                             "\",\"max_new_tokens\":" + std::to_string(max_new) + "}";
          if (!cl.Connect(srv.port).ok() || !cl.Post("/v1/stream", body).ok()) {
            std::fprintf(stderr, "client failed\n");
            std::exit(1);
          }
          if (slow) {
            (void)cl.ReadEvents();
            // Stalled until linger_after_s after the healthy streams are
            // done, or stall_cap_s, whichever comes first; then it leaves.
            for (;;) {
              double now = since_s(), done = healthy_all_done_s.load();
              if (now >= stall_cap_s || (!std::isnan(done) && now >= done + linger_after_s)) break;
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
            }
            double left = since_s();
            cl.http().Close();
            double prev = slow_left_s.load();
            while ((std::isnan(prev) || left > prev) && !slow_left_s.compare_exchange_weak(prev, left)) {
            }
            threads_left--;
            return;
          }
          int h = i - k;
          Clock::time_point last{};
          (void)cl.ReadEvents([&](const sse::Event& ev) {
            if (ev.type == "token") {
              auto now = Clock::now();
              if (last != Clock::time_point{}) gaps[h].push_back(Ms(now - last));
              last = now;
            }
            return true;
          });
          done_s[h] = since_s();
          if (--healthy_left == 0) healthy_all_done_s = since_s();
          threads_left--;
        });
      }
      // Every KV block free again (all streams finished), slow-client
      // detaches and the ring bytes the server held, until every client has
      // finished or left and then at most 0.5 s more.
      double released_s = NAN, peak_bytes = 0, detaches = 0;
      MetricsPoller poller(srv.port);
      auto last_poll = Clock::now() - std::chrono::seconds(1);
      double all_gone_s = NAN;
      for (;;) {
        engine::EngineStats st = srv.eng->stats();
        if (std::isnan(released_s) && st.finished == static_cast<uint64_t>(streams) &&
            st.kv_blocks_free == st.kv_blocks_total) {
          released_s = since_s();
        }
        if (Clock::now() - last_poll >= std::chrono::milliseconds(20)) {
          last_poll = Clock::now();
          std::map<std::string, double> m = {{"stream_bytes_held", NAN}, {"slow_client_detaches_total", NAN}};
          if (poller.Poll(&m)) {
            if (std::isfinite(m["stream_bytes_held"])) peak_bytes = std::max(peak_bytes, m["stream_bytes_held"]);
            if (std::isfinite(m["slow_client_detaches_total"])) detaches = m["slow_client_detaches_total"];
          }
        }
        if (threads_left.load() == 0 && std::isnan(all_gone_s)) all_gone_s = since_s();
        if (!std::isnan(all_gone_s) && (!std::isnan(released_s) || since_s() > all_gone_s + 0.5)) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      for (auto& t : th) t.join();
      std::vector<double> all_gaps;
      for (auto& g : gaps) all_gaps.insert(all_gaps.end(), g.begin(), g.end());
      Row row;
      row.str.push_back({"policy", policy});
      row.num.push_back({"slow_readers", k});
      row.num.push_back({"healthy_completion_p50_s", Pct(done_s, 50)});
      row.num.push_back({"healthy_completion_max_s", Pct(done_s, 100)});
      row.num.push_back({"healthy_itl_p99_ms", Pct(all_gaps, 99)});
      row.num.push_back({"healthy_itl_max_ms", Pct(all_gaps, 100)});
      row.num.push_back({"slow_clients_left_at_s", k == 0 ? NAN : slow_left_s.load()});
      row.num.push_back({"all_blocks_free_at_s", released_s});
      row.num.push_back({"slow_client_detaches", detaches});
      row.num.push_back({"peak_ring_bytes_held", peak_bytes});
      rows.push_back(row);
      std::fprintf(stderr,
                   "slow %s k=%d: healthy done p50 %.2f s, itl p99 %.1f ms, blocks free at %.2f s, "
                   "detaches %.0f, peak ring bytes %.0f\n",
                   policy, k, Pct(done_s, 50), Pct(all_gaps, 99), released_s, detaches, peak_bytes);
    }
  }
  char buf[4096];
  std::snprintf(buf, sizeof buf,
                "8 streams of %d tokens through the HTTP server; k of them read the start event and "
                "then stop reading (SO_RCVBUF 1024) until %.1f s after the healthy ones finished or "
                "%.0f s after the start, whichever is first, then close. Server: --lab --policy P "
                "--subscriber-lag 8 --resume-window 32 --max-output-bytes 4096 "
                "--socket-send-buffer-bytes 1024 --stall-timeout-ms 250 --linger-ms 10000 --max-batch 8 "
                "--lab-pad-bytes %d. PADDED EVENTS: the lab flag --lab-pad-bytes adds a %d-byte \"pad\" "
                "field to every token event, so that the socket and output buffers (~11 KB in all) "
                "hold only ~10 events and a stalled reader's lag shows within a short stream; --lab "
                "is given for every policy (it enables the padding and the lab policies, nothing else).",
                max_new, linger_after_s, stall_cap_s, kPadBytes, kPadBytes);
  rep->notes.push_back(buf);
  rep->notes.push_back("all_blocks_free_at_s: when every sequence had finished and every KV block was "
                       "free (null: not within 0.5 s after the last client left, e.g. pause_producer "
                       "holds a paused sequence's blocks until the client leaves and --linger-ms "
                       "expires). slow_client_detaches and peak_ring_bytes_held (the most event payload "
                       "bytes all stream rings held, tokenwire_stream_bytes_held) are read from "
                       "/metrics every 20 ms.");
  rep->notes.push_back("Lab policies (--lab only, to show why they are wrong; docs/DECISIONS.md): naive "
                       "-- the engine's step loop waits until every subscriber of every stream has taken "
                       "the last event, so one stalled reader stalls every stream until it leaves (the "
                       "healthy streams' inter-token p99 becomes the stall); unbounded -- nobody is "
                       "detached or paused and each ring keeps every event a subscriber has not taken "
                       "(safety cap 256 MiB / 2^20 events per stream), so the memory held grows with the "
                       "slow readers' lag (peak_ring_bytes_held) instead of staying at the window. "
                       "healthy_itl_p99_ms can miss naive's single long stall (one gap in ~100 per "
                       "stream): healthy_itl_max_ms and the completion time show it.");
  return rows;
}

// ---- charts ------------------------------------------------------------------
//
// Each experiment's charts are drawn from its result table alone: the
// "columns", "rows" and "model" of the JSON document it writes. A run draws
// them from the table it is about to write (numbers rounded as written), and
// --render-only draws them again from a committed document, so a chart never
// shows a number its JSON does not hold.

// One SVG chart of a result: written next to the JSON as <bench>-<name>.svg.
struct Chart {
  std::string name;
  std::string caption;
  std::string svg;
};

// A result document's rows, read by column name. `doc` must outlive it.
class ResultTable {
 public:
  explicit ResultTable(const json::Value& doc) {
    if (const json::Value* c = doc.Find("columns"); c && c->is_array()) {
      for (size_t i = 0; i < c->items().size(); i++) {
        if (c->items()[i].is_string()) cols_[c->items()[i].as_string()] = i;
      }
    }
    if (const json::Value* r = doc.Find("rows"); r && r->is_array()) rows_ = &r->items();
    if (const json::Value* m = doc.Find("model"); m && m->is_string()) model_ = m->as_string();
  }
  size_t size() const { return rows_ ? rows_->size() : 0; }
  const std::string& model() const { return model_; }
  // Row r's number in `column`: NaN when missing or null.
  double Num(size_t r, const std::string& column) const {
    const json::Value* v = Cell(r, column);
    return v && v->is_number() ? v->as_double() : NAN;
  }
  std::string Str(size_t r, const std::string& column) const {
    const json::Value* v = Cell(r, column);
    return v && v->is_string() ? v->as_string() : "";
  }

 private:
  const json::Value* Cell(size_t r, const std::string& column) const {
    auto it = cols_.find(column);
    if (!rows_ || it == cols_.end() || r >= rows_->size() || !(*rows_)[r].is_array()) return nullptr;
    const std::vector<json::Value>& row = (*rows_)[r].items();
    return it->second < row.size() ? &row[it->second] : nullptr;
  }

  std::map<std::string, size_t> cols_;
  const std::vector<json::Value>* rows_ = nullptr;
  std::string model_;
};

// The series `y(row)` against `x(row)` over the rows where `keep(row)`.
template <class Keep, class X, class Y>
bench::Series SeriesOf(const ResultTable& t, std::string name, Keep keep, X x, Y y) {
  bench::Series s;
  s.name = std::move(name);
  for (size_t r = 0; r < t.size(); r++) {
    if (!keep(r)) continue;
    s.x.push_back(x(r));
    s.y.push_back(y(r));
  }
  return s;
}

std::vector<Chart> OverlapCharts(const ResultTable& t) {
  auto mode = [&](const char* m) { return [&t, m](size_t r) { return t.Str(r, "mode") == m; }; };
  auto col = [&](const char* c) { return [&t, c](size_t r) { return t.Num(r, c); }; };
  auto streams = col("streams");
  bench::LineChart tp;
  tp.title = "Aggregate throughput vs simultaneous streams (" + t.model() + ")";
  tp.x_axis.label = "streams (each " + std::to_string(kOverlapNewTokens) + " new tokens)";
  tp.x_axis.log_scale = true;
  tp.x_axis.integer = true;
  tp.y_axis.label = "tokens/s (all streams)";
  tp.series.push_back(
      SeriesOf(t, "concurrent (continuous batching)", mode("concurrent"), streams, col("tokens_per_s")));
  tp.series.push_back(SeriesOf(t, "back to back (one at a time)", mode("back_to_back"), streams, col("tokens_per_s")));
  tp.series.push_back(SeriesOf(t, Times(kOverlapSpeedupMin) + " back to back (the target at 32 streams)",
                               mode("back_to_back"), streams,
                               [&](size_t r) { return kOverlapSpeedupMin * t.Num(r, "tokens_per_s"); }));
  tp.series.push_back(SeriesOf(t, "concurrent at the machine's floors", mode("concurrent"), streams, [&](size_t r) {
    return t.Num(r, "streams") * kOverlapNewTokens / t.Num(r, "floor_makespan_s");
  }));
  bench::LineChart tt;
  tt.title = "Time to first token vs simultaneous streams";
  tt.x_axis.label = "streams";
  tt.x_axis.log_scale = true;
  tt.x_axis.integer = true;
  tt.y_axis.label = "TTFT (ms, from arrival)";
  tt.y_axis.log_scale = true;
  tt.series.push_back(SeriesOf(t, "concurrent p50", mode("concurrent"), streams, col("ttft_p50_ms")));
  tt.series.push_back(SeriesOf(t, "concurrent p99", mode("concurrent"), streams, col("ttft_p99_ms")));
  tt.series.push_back(SeriesOf(t, "back to back p50", mode("back_to_back"), streams, col("ttft_p50_ms")));
  tt.series.push_back(SeriesOf(t, "back to back p99", mode("back_to_back"), streams, col("ttft_p99_ms")));
  return {{"throughput", "aggregate tokens/s against the number of streams, with the back-to-back baseline",
           bench::RenderLineChart(tp)},
          {"ttft", "TTFT p50/p99 against the number of streams, with the back-to-back baseline",
           bench::RenderLineChart(tt)}};
}

std::vector<Chart> JoinersCharts(const ResultTable& t) {
  auto all = [](size_t) { return true; };
  auto col = [&](const char* c) { return [&t, c](size_t r) { return t.Num(r, c); }; };
  auto bg = col("background_streams");
  bench::LineChart ch;
  ch.title = "Joiners' TTFT while long streams run vs an idle engine";
  ch.x_axis.label = "background streams decoding";
  ch.x_axis.integer = true;
  ch.y_axis.label = "TTFT (ms, from arrival)";
  ch.series.push_back(SeriesOf(t, "joiner p50", all, bg, col("joiner_ttft_p50_ms")));
  ch.series.push_back(SeriesOf(t, "joiner max", all, bg, col("joiner_ttft_max_ms")));
  ch.series.push_back(SeriesOf(t, "idle engine p50", all, bg, col("idle_ttft_p50_ms")));
  ch.series.push_back(SeriesOf(t, "idle p50 + one background step (expected)", all, bg, [&](size_t r) {
    return t.Num(r, "idle_ttft_p50_ms") + t.Num(r, "background_step_p50_ms");
  }));
  return {{"ttft", "joiners' TTFT against the idle-engine TTFT and the expected one step more",
           bench::RenderLineChart(ch)}};
}

std::vector<Chart> DisconnectsCharts(const ResultTable& t) {
  bench::LineChart ch;
  ch.title = "Client close to KV blocks released";
  ch.x_axis.label = "token events read before the close";
  ch.x_axis.log_scale = true;
  ch.x_axis.integer = true;
  ch.y_axis.label = "close -> release (ms)";
  for (const char* k : {"FIN", "RST"}) {
    auto close = [&t, k](size_t r) { return t.Str(r, "close") == k; };
    auto after = [&t](size_t r) { return t.Num(r, "after_tokens"); };
    ch.series.push_back(SeriesOf(t, std::string(k) + " p50", close, after,
                                 [&t](size_t r) { return t.Num(r, "close_to_release_p50_ms"); }));
    ch.series.push_back(SeriesOf(t, std::string(k) + " max", close, after,
                                 [&t](size_t r) { return t.Num(r, "close_to_release_max_ms"); }));
  }
  return {{"release",
           "time from the client's close (FIN, RST) to the release of its KV blocks, per moment in the stream",
           bench::RenderLineChart(ch)}};
}

std::vector<Chart> SlowReadersCharts(const ResultTable& t) {
  const std::string k_label = "stalled readers among 8 streams (k)";
  bench::LineChart itl;
  itl.title = "Healthy streams' inter-token p99 with k stalled readers, per policy";
  itl.x_axis.label = k_label;
  itl.y_axis.label = "healthy streams' inter-token gap p99 (ms)";
  itl.y_axis.log_scale = true;
  bench::LineChart mx;
  mx.title = "Healthy streams' longest inter-token gap with k stalled readers, per policy";
  mx.x_axis.label = k_label;
  mx.y_axis.label = "healthy streams' longest gap (ms)";
  mx.y_axis.log_scale = true;
  bench::LineChart mem;
  mem.title = "Event bytes held by the server's rings with k stalled readers, per policy";
  mem.x_axis.label = k_label;
  mem.y_axis.label = "peak ring bytes held, all streams (KiB)";
  bench::LineChart done;
  done.title = "Healthy streams' completion time with k stalled readers, per policy";
  done.x_axis.label = k_label;
  done.y_axis.label = "last healthy stream done (s after start)";
  // Policies in the order the rows first name them.
  std::vector<std::string> policies;
  for (size_t r = 0; r < t.size(); r++) {
    const std::string p = t.Str(r, "policy");
    if (std::find(policies.begin(), policies.end(), p) == policies.end()) policies.push_back(p);
  }
  auto k = [&t](size_t r) { return t.Num(r, "slow_readers"); };
  for (const std::string& p : policies) {
    const std::string name = p + (p == "naive" || p == "unbounded" ? " (lab)" : "");
    auto of = [&t, p](size_t r) { return t.Str(r, "policy") == p; };
    itl.series.push_back(SeriesOf(t, name, of, k, [&t](size_t r) { return t.Num(r, "healthy_itl_p99_ms"); }));
    mx.series.push_back(SeriesOf(t, name, of, k, [&t](size_t r) { return t.Num(r, "healthy_itl_max_ms"); }));
    mem.series.push_back(SeriesOf(t, name, of, k, [&t](size_t r) { return t.Num(r, "peak_ring_bytes_held") / 1024; }));
    done.series.push_back(SeriesOf(t, name, of, k, [&t](size_t r) { return t.Num(r, "healthy_completion_max_s"); }));
  }
  for (bench::LineChart* ch : {&itl, &mx, &mem, &done}) ch->x_axis.integer = true;
  return {{"itl", "healthy streams' inter-token gap p99 per policy against the number of stalled readers",
           bench::RenderLineChart(itl)},
          {"maxgap", "healthy streams' longest inter-token gap per policy (a single stall, which p99 can miss)",
           bench::RenderLineChart(mx)},
          {"memory", "event bytes held by all stream rings per policy (unbounded grows with the stalled readers)",
           bench::RenderLineChart(mem)},
          {"completion", "healthy streams' completion time per policy against the number of stalled readers",
           bench::RenderLineChart(done)}};
}

std::vector<Chart> PrefixCharts(const ResultTable& t) {
  bench::LineChart ttft, total;
  ttft.title = "Later requests' TTFT p50, shared 400-token prefix and none, cache off vs on";
  total.title = "Time for all 32 requests, shared 400-token prefix and none, cache off vs on";
  for (bench::LineChart* ch : {&ttft, &total}) {
    ch->x_axis.label = "round (settings alternate; each run on a fresh engine)";
    ch->x_axis.integer = true;
    ch->y_axis.log_scale = true;
  }
  ttft.y_axis.label = "TTFT p50 of requests 2..32 (ms)";
  total.y_axis.label = "first submit to last stream done (s)";
  for (const char* scenario : {"shared_prefix", "distinct"}) {
    for (const char* cache : {"off", "on"}) {
      auto of = [&t, scenario, cache](size_t r) {
        return t.Str(r, "scenario") == scenario && t.Str(r, "prefix_cache") == cache && t.Str(r, "round") != "median";
      };
      auto round = [&t](size_t r) { return std::atof(t.Str(r, "round").c_str()); };
      const std::string name = std::string(scenario == std::string("distinct") ? "no shared prefix" : "shared prefix") +
                               ", cache " + cache;
      ttft.series.push_back(SeriesOf(t, name, of, round, [&t](size_t r) { return t.Num(r, "later_ttft_p50_ms"); }));
      total.series.push_back(SeriesOf(t, name, of, round, [&t](size_t r) { return t.Num(r, "total_s"); }));
    }
  }
  return {{"ttft", "TTFT p50 of the 31 requests after the first, per round, cache off and on",
           bench::RenderLineChart(ttft)},
          {"total", "time for all 32 requests, per round, cache off and on", bench::RenderLineChart(total)}};
}

std::vector<Chart> SchedulerCharts(const ResultTable& t) {
  auto long_prompt = [&](size_t r) { return t.Str(r, "part") == "long_prompt_among_decoders"; };
  auto col = [&](const char* c) { return [&t, c](size_t r) { return t.Num(r, c); }; };
  bench::LineChart ch;
  ch.title = "Decoders' inter-token gaps while a long prompt is prefilled, per token budget";
  ch.x_axis.label = "--max-num-batched-tokens (4096: the whole prompt in one step)";
  ch.x_axis.log_scale = true;
  ch.x_axis.integer = true;
  ch.y_axis.label = "ms";
  ch.y_axis.log_scale = true;
  ch.series.push_back(SeriesOf(t, "gap p50", long_prompt, col("budget"), col("gap_p50_ms")));
  ch.series.push_back(SeriesOf(t, "gap p99", long_prompt, col("budget"), col("gap_p99_ms")));
  ch.series.push_back(SeriesOf(t, Times(kLongPromptGapRatioMax) + " gap p50 (the target for p99)", long_prompt,
                               col("budget"), [&](size_t r) { return kLongPromptGapRatioMax * t.Num(r, "gap_p50_ms"); }));
  ch.series.push_back(SeriesOf(t, "the long prompt's TTFT", long_prompt, col("budget"),
                               col("long_prompt_ttft_ms_p50")));
  return {{"gaps", "the decoders' gap p50 and p99 beside a 1,000-token prompt, and its TTFT, per token budget",
           bench::RenderLineChart(ch)}};
}

std::vector<Chart> ChartsFor(const std::string& exp, const json::Value& doc) {
  const ResultTable t(doc);
  if (exp == "overlap") return OverlapCharts(t);
  if (exp == "prefix") return PrefixCharts(t);
  if (exp == "joiners") return JoinersCharts(t);
  if (exp == "slow_readers") return SlowReadersCharts(t);
  if (exp == "scheduler") return SchedulerCharts(t);
  return DisconnectsCharts(t);
}

// Writes "columns" and "rows" (numbers rounded to 3 decimals, NaN as null)
// into the object `w` is inside. The columns are every name some row has,
// strings first, in the order they first appear; a row without one has
// null there (an experiment of several parts has rows of different kinds).
void WriteTable(json::Writer* w, const std::vector<Row>& rows) {
  std::vector<std::string> str_cols, num_cols;
  auto add = [](std::vector<std::string>* cols, const std::string& k) {
    if (std::find(cols->begin(), cols->end(), k) == cols->end()) cols->push_back(k);
  };
  for (const Row& r : rows) {
    for (auto& [k, v] : r.str) add(&str_cols, k);
    for (auto& [k, v] : r.num) add(&num_cols, k);
  }
  w->Key("columns");
  w->BeginArray();
  for (const std::string& k : str_cols) w->String(k);
  for (const std::string& k : num_cols) w->String(k);
  w->EndArray();
  w->Key("rows");
  w->BeginArray();
  for (const Row& r : rows) {
    w->BeginArray();
    for (const std::string& k : str_cols) {
      auto it = std::find_if(r.str.begin(), r.str.end(), [&](const auto& kv) { return kv.first == k; });
      if (it == r.str.end()) {
        w->Null();
      } else {
        w->String(it->second);
      }
    }
    for (const std::string& k : num_cols) {
      auto it = std::find_if(r.num.begin(), r.num.end(), [&](const auto& kv) { return kv.first == k; });
      if (it != r.num.end() && std::isfinite(it->second)) {
        w->Double(std::round(it->second * 1000) / 1000);
      } else {
        w->Null();
      }
    }
    w->EndArray();
  }
  w->EndArray();
}

// Writes each chart as dir/<bench>-<name>.svg; false (and a message) if one
// cannot be written.
bool WriteCharts(const std::string& dir, const std::string& bench_name, const std::vector<Chart>& charts) {
  for (const Chart& ch : charts) {
    const std::string path = dir + "/" + bench_name + "-" + ch.name + ".svg";
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << ch.svg;
    f.close();
    if (!f) {
      std::fprintf(stderr, "cannot write %s\n", path.c_str());
      return false;
    }
  }
  return true;
}

// --render-only DIR: redraws the charts of every DIR/engine-<experiment>[-<format>].json
// there is. Exit status 0, or 1 if a file cannot be read, parsed or written.
int RenderOnly(const std::string& dir) {
  int found = 0;
  for (const char* exp : {"overlap", "joiners", "slow_readers", "disconnects", "prefix"}) {
    for (const char* format : {"", "-bf16", "-q8"}) {
      const std::string bench_name = std::string("engine-") + exp + format;
      const std::string path = dir + "/" + bench_name + ".json";
      std::ifstream in(path, std::ios::binary);
      if (!in) continue;  // that experiment has no result here
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      json::Value doc;
      if (Status st = json::Parse(text, &doc); !st.ok()) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(), st.message().c_str());
        return 1;
      }
      std::vector<Chart> charts = ChartsFor(exp, doc);
      if (!WriteCharts(dir, bench_name, charts)) return 1;
      for (const Chart& ch : charts) {
        std::fprintf(stderr, "%s/%s-%s.svg from %s\n", dir.c_str(), bench_name.c_str(), ch.name.c_str(), path.c_str());
      }
      found++;
    }
  }
  if (found == 0) std::fprintf(stderr, "no engine-*.json in %s\n", dir.c_str());
  return 0;
}

std::string Dirname(const std::string& path) {
  size_t p = path.rfind('/');
  return p == std::string::npos ? "." : path.substr(0, p);
}

std::string Basename(const std::string& path) { return path.substr(path.rfind('/') + 1); }

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string(argv[1]) == "--render-only") return RenderOnly(argv[2]);
  Args a;
  for (int i = 1; i < argc; i++) {
    std::string k = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (k == "--exp") a.exp = next();
    else if (k == "--model") a.model = next();
    else if (k == "--out") a.out = next();
    else if (k == "--threads") a.threads = std::atoi(next().c_str());
    else if (k == "--quick") a.quick = true;
    else if (k == "--command") a.command = next();
    else if (k == "--model-note") a.model_note = next();
    else if (k == "--streams") a.streams.push_back(std::atoi(next().c_str()));
    else if (k == "--rounds") a.rounds = std::max(1, std::atoi(next().c_str()));
    else if (k == "--weights") a.weights = next();
    else {
      std::fprintf(stderr, "unknown argument %s\n", k.c_str());
      return 2;
    }
  }
  if (a.out.empty() || (a.exp != "overlap" && a.exp != "joiners" && a.exp != "disconnects" &&
                         a.exp != "slow_readers" && a.exp != "prefix" && a.exp != "scheduler")) {
    std::fprintf(stderr, "usage: engine_bench --exp overlap|joiners|slow_readers|disconnects|prefix|scheduler "
                         "[--model DIR] "
                         "[--model-note TEXT] [--threads N] [--quick] [--streams N]... [--rounds N] "
                         "[--weights f32|bf16|q8] --out FILE.json "
                         "[--command \"...\"]\n"
                         "       engine_bench --render-only DIR   (redraw the charts of DIR/engine-*.json)\n");
    return 2;
  }
  const std::string loadavg_start = bench::LoadAvg();
  Ctx c;
  c.weights = a.weights;
  if (a.weights != "f32" && a.weights != "bf16" && a.weights != "q8") {
    std::fprintf(stderr, "--weights: f32, bf16 or q8, got '%s'\n", a.weights.c_str());
    return 2;
  }
  std::string name;
  if (Status s = model::LoadModelForServing(a.model, &c.model, &name); !s.ok()) {
    std::fprintf(stderr, "model: %s\n", s.message().c_str());
    return 1;
  }
  if (Status s = tokenizer::Tokenizer::LoadEmbedded(&c.tok); !s.ok()) {
    std::fprintf(stderr, "tokenizer: %s\n", s.message().c_str());
    return 1;
  }
  const model::Gpt2Config& mc = c.model->config();
  c.model_label = name + " (" + std::to_string(mc.n_layer) + " layers, " + std::to_string(mc.n_embd) +
                  " wide, " + std::to_string(mc.n_ctx) + " positions" +
                  (a.model == model::kRandomTinyModel ? ", random tiny weights" : "") +
                  (a.model_note.empty() ? "" : ", " + a.model_note) +
                  (a.weights == "f32" ? "" : ", " + a.weights + " weights") + ")";

  Report rep;
  std::vector<Row> rows;
  std::string title;
  if (a.exp == "overlap") {
    rows = Overlap(c, a, &rep);
    title = "Engine overlap: simultaneous streams vs back to back";
  } else if (a.exp == "joiners") {
    rows = Joiners(c, a, &rep);
    title = "Engine joiners: TTFT of requests arriving while long streams run";
  } else if (a.exp == "prefix") {
    rows = Prefix(c, a, &rep);
    title = "Engine prefix cache: 32 requests sharing a 400-token prefix, cache off vs on";
  } else if (a.exp == "scheduler") {
    rows = Scheduler(c, a, &rep);
    title = "Engine scheduler: optimistic admission, chunked prefill, priorities (issue 33)";
  } else if (a.exp == "slow_readers") {
    rows = SlowReaders(c, a, &rep);
    title = "Engine slow readers: healthy streams, KV release and memory per policy";
  } else {
    rows = Disconnects(c, a, &rep);
    title = "Engine disconnects: client close to KV release";
  }
  const std::string loadavg_end = bench::LoadAvg();
  const std::string mode = a.quick ? "quick" : "full";
  title += a.quick ? " (quick: tiny model" : " (full: GPT-2-small shape";
  title += a.weights == "f32" ? ")" : ", " + a.weights + " weights)";
  rep.notes.push_back("Model: " + c.model_label + "; compute threads " + std::to_string(a.threads) +
                      "; mode " + mode + (a.quick ? " (the random tiny model, not the GPT-2-small shape: "
                                                    "numbers show the shape of each effect, not GPT-2 speed)"
                                                  : "") +
                      ". Load average " + loadavg_start + " before the run, " + loadavg_end + " after it.");

  // Charts next to the JSON, drawn from the table as the JSON will hold it.
  // A format other than f32 is a result of its own, beside the f32 one.
  const std::string bench_name = "engine-" + a.exp + (a.weights == "f32" ? "" : "-" + a.weights);
  const std::string dir = Dirname(a.out);
  std::string table_text;
  json::Writer tw(&table_text);
  tw.BeginObject();
  tw.Key("model");
  tw.String(c.model_label);
  WriteTable(&tw, rows);
  tw.EndObject();
  json::Value table;
  if (Status s = json::Parse(table_text, &table); !s.ok()) {
    std::fprintf(stderr, "result table: %s\n", s.message().c_str());
    return 1;
  }
  const std::vector<Chart> charts = ChartsFor(a.exp, table);
  if (!WriteCharts(dir, bench_name, charts)) return 1;
  std::vector<std::pair<std::string, std::string>> chart_refs;  // file, caption
  for (const Chart& ch : charts) chart_refs.push_back({bench_name + "-" + ch.name + ".svg", ch.caption});

  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("bench");
  w.String(bench_name);
  w.Key("title");
  w.String(title);
  w.Key("command");
  w.String(a.command.empty() ? "build/bench/engine_bench --exp " + a.exp + (a.quick ? " --quick" : "") +
                                   (a.weights == "f32" ? "" : " --weights " + a.weights) +
                                   " --threads " + std::to_string(a.threads) + " --out " + a.out
                             : a.command);
  w.Key("machine");
  w.BeginObject();
  w.Key("cpu");
  w.String(bench::MachineCpu());
  w.Key("cores");
  w.Int(bench::MachineCores());
  w.Key("hardware_threads");
  w.Int(static_cast<int64_t>(std::thread::hardware_concurrency()));
  w.EndObject();
  w.Key("date");
  w.String(bench::UtcNow());
  w.Key("mode");
  w.String(mode);
  w.Key("loadavg_start");
  w.String(loadavg_start);
  w.Key("loadavg_end");
  w.String(loadavg_end);
  w.Key("model");
  w.String(c.model_label);
  w.Key("threads");
  w.Int(a.threads);
  WriteTable(&w, rows);
  bench::WriteNotesAndCharts(&w, rep.notes, chart_refs);
  if (a.quick) {
    for (bench::Verdict& v : rep.verdicts) {
      if (v.load_sensitive) v.not_judged = "quick mode's tiny model; the target is for the GPT-2-small shape (--full)";
    }
  }
  bench::WriteVerdicts(&w, rep.verdicts);
  w.EndObject();
  std::ofstream f(a.out);
  f << out << "\n";
  f.close();
  if (!f) {
    std::fprintf(stderr, "cannot write %s\n", a.out.c_str());
    return 1;
  }
  std::printf("%s\n", out.c_str());
  json::Value written;
  json::ParseLimits limits;
  limits.max_bytes = 64u << 20;
  if (json::Parse(out, &written, limits).ok()) {
    bench::VerdictTally tally;
    std::fprintf(stderr, "%s", bench::VerdictBlock(written, Basename(a.out), &tally).c_str());
  }
  return 0;
}

#include "ws_loadgen/ws_scenarios.h"

#include "loadgen/scenario_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/mock_backend.h"
#include "json/json.h"
#include "lib/result.h"
#include "lib/svg.h"
#include "loadgen/report.h"
#include "loadgen/server_process.h"
#include "ws_loadgen/ws_engine.h"
#include "ws_loadgen/ws_stream.h"

namespace tw::ws_loadgen {
namespace {

using loadgen::Fmt;
using loadgen::Percentile;
using loadgen::Report;
using loadgen::ServerProcess;
// Shared with the SSE scenarios (bench/loadgen/scenario_util.h), so both
// transports use the same prompts, emission-log reader and report helpers.
using loadgen::Emission;
using loadgen::GetEmission;
using loadgen::N;
using loadgen::Params;
using loadgen::PromptFor;
using loadgen::Q;
using loadgen::StartServer;
using loadgen::Stats4;
using Streams = std::vector<std::unique_ptr<WsStream>>;

// The same prompts, seeds and lengths as bench/loadgen/scenarios.cc, sent as
// a WebSocket generate op.
std::string GenerateMessage(const std::vector<int32_t>& prompt, uint64_t seed, int max_new_tokens) {
  std::string body = loadgen::RequestBody(prompt, seed, max_new_tokens);  // "{...}"
  return "{\"op\":\"generate\"," + body.substr(1);
}

// Runs the engine until every stream has ended (no connection open or
// pending) or `seconds` pass; prints a progress line on stderr.
bool RunAll(WsEngine* e, const Streams& s, double seconds, const std::string& label) {
  double t0 = NowUs();
  auto done = [&] {
    for (const auto& x : s) {
      if (x->open || (x->done_us == 0 && x->failure.empty())) return false;
    }
    return e->open_count() == 0;
  };
  auto tick = [&] {
    size_t open = 0, finished = 0, failed = 0;
    uint64_t events = 0, reconnects = 0;
    for (const auto& x : s) {
      open += x->open;
      finished += x->done_us != 0;
      failed += !x->failure.empty();
      events += x->events;
      reconnects += x->connections - 1;
    }
    std::fprintf(stderr, "\r[%s] %5.1fs open %zu done %zu/%zu failed %zu events %llu reconnects %llu   ",
                 label.c_str(), (NowUs() - t0) / 1e6, open, finished, s.size(), failed,
                 static_cast<unsigned long long>(events), static_cast<unsigned long long>(reconnects));
  };
  bool ok = e->Run(done, t0 + seconds * 1e6, tick, 1000);
  tick();
  std::fprintf(stderr, "\n");
  return ok;
}

// The SSE twin's result file (<out>/<file>): its rows by first cell, its
// date and mode. Missing or unreadable: found = false (the column says so).
struct SseResult {
  bool found = false;
  std::string file, date, mode, loadavg;  // loadavg: at the start of its run
  std::vector<std::vector<std::string>> rows;
  // Cell `col` of the row whose first cell starts with `metric`; "n/a" if none.
  std::string Cell(const std::string& metric, size_t col) const {
    for (const auto& r : rows) {
      if (!r.empty() && r[0].rfind(metric, 0) == 0 && col < r.size()) return r[col];
    }
    return "n/a";
  }
};

SseResult ReadSse(const std::string& dir, const std::string& file) {
  SseResult r;
  r.file = dir + "/" + file;
  std::ifstream in(r.file, std::ios::binary);
  if (!in) return r;
  std::stringstream ss;
  ss << in.rdbuf();
  json::Value v;
  json::ParseLimits limits;
  limits.max_bytes = 64u << 20;
  if (!json::Parse(ss.str(), &v, limits).ok() || !v.is_object()) return r;
  const json::Value* rows = v.Find("rows");
  if (!rows || !rows->is_array()) return r;
  for (const auto& row : rows->items()) {
    std::vector<std::string> cells;
    if (row.is_array()) {
      for (const auto& c : row.items()) cells.push_back(c.is_string() ? c.as_string() : "");
    }
    r.rows.push_back(std::move(cells));
  }
  if (const json::Value* d = v.Find("date"); d && d->is_string()) r.date = d->as_string();
  if (const json::Value* m = v.Find("mode"); m && m->is_string()) r.mode = m->as_string();
  if (const json::Value* l = v.Find("loadavg_start"); l && l->is_string()) r.loadavg = l->as_string();
  r.found = true;
  return r;
}

// "value (run a, b, c)" cells of the SSE concurrency file: the median only.
std::string Median(const std::string& cell) { return cell.substr(0, cell.find(" (")); }

}  // namespace

// 1. ------------------------------------------------------------------------
Status WsResumeStorm(const Options& o) {
  // bench/loadgen/scenarios.cc ResumeStorm: the same sizes, server flags,
  // drop points (same generator, same seed) and reconnect delays.
  const int streams = 200, drops = 6;
  const int tokens = o.full ? 200 : 60;
  const int rate = o.full ? 20 : 50;
  SseResult sse = ReadSse(o.out_dir, "resume_storm.json");  // before anything is written
  ServerProcess server;
  std::vector<std::string> args = {"--backend", "mock", "--lab", "--mock-ttft-ms", "50", "--mock-tokens-per-s",
                                   std::to_string(rate), "--linger-ms", "5000"};
  if (Status st = StartServer(&server, o, args); !st.ok()) return st;
  WsEngine engine(server.port());
  if (Status st = engine.Init(); !st.ok()) return st;
  std::mt19937_64 rng(20261130);
  Streams s;
  for (int i = 0; i < streams; ++i) {
    WsScript sc;
    sc.generate = GenerateMessage(PromptFor(i), 1000 + i, tokens);
    // seqs: 1 start, 2..tokens+1 tokens, tokens+2 done. Drop after 6
    // distinct seqs among 1..tokens+1, alternating FIN and RST.
    std::vector<int> ids;
    for (int k = 1; k <= tokens + 1; ++k) ids.push_back(k);
    std::shuffle(ids.begin(), ids.end(), rng);
    sc.disconnect_after.assign(ids.begin(), ids.begin() + drops);
    std::sort(sc.disconnect_after.begin(), sc.disconnect_after.end());
    sc.alternate_reset = true;
    sc.reconnect_delay_ms = static_cast<double>(rng() % 50);
    s.push_back(std::make_unique<WsStream>(&engine, sc, i));
  }
  double t0 = NowUs();
  for (auto& x : s) x->Start();
  bool finished = RunAll(&engine, s, o.full ? 120 : 60, "ws_resume_storm");
  double wall_s = (NowUs() - t0) / 1e6;
  uint64_t expected = 0, received = 0, lost = 0, dup = 0, gaps = 0, vs_log = 0, vs_ref = 0, complete = 0,
           reconnects = 0, fins = 0, rsts = 0, log_missing = 0, failed = 0, errors = 0;
  std::string first_failure;
  std::vector<double> resume_ms, resume_fin_ms, resume_rst_ms;
  std::string raw = "{\"streams\":[";
  for (int i = 0; i < streams; ++i) {
    WsStream& x = *s[i];
    for (size_t k = 0; k < x.resume_ms.size(); ++k) {
      resume_ms.push_back(x.resume_ms[k]);
      (k % 2 == 0 ? resume_fin_ms : resume_rst_ms).push_back(x.resume_ms[k]);  // drop k: FIN when k is even
    }
    Emission em = GetEmission(server.port(), x.stream_id);
    if (!em.found) log_missing++;
    expected += tokens;
    uint64_t got = 0, l = 0, ml = 0, mr = 0;
    for (int k = 0; k < tokens; ++k) {
      int32_t t = k < static_cast<int>(x.tokens.size()) ? x.tokens[k] : -1;
      if (t < 0) {
        l++;
        continue;
      }
      got++;
      if (k >= static_cast<int>(em.tokens.size()) || em.tokens[k] != t) ml++;
      if (backend::MockBackend::TokenAt(PromptFor(i), 1000 + i, k) != t) mr++;
    }
    if (em.tokens.size() != static_cast<size_t>(tokens)) ml++;
    if (x.tokens.size() > static_cast<size_t>(tokens)) ml += x.tokens.size() - tokens;  // tokens beyond the length
    received += got;
    lost += l;
    dup += x.duplicates;
    gaps += x.gaps;
    vs_log += ml;
    vs_ref += mr;
    complete += x.done_us != 0 && x.finish_reason == "length";
    reconnects += x.connections - 1;
    fins += (x.drops + 1) / 2;
    rsts += x.drops / 2;
    errors += x.error_messages;
    if (!x.failure.empty()) {
      failed++;
      if (first_failure.empty()) first_failure = "stream " + std::to_string(i) + ": " + x.failure;
    }
    raw += std::string(i ? "," : "") + "{\"stream\":" + Q(x.stream_id) + ",\"connections\":" +
           std::to_string(x.connections) + ",\"events\":" + std::to_string(x.events) + ",\"tokens\":" +
           std::to_string(got) + ",\"lost\":" + std::to_string(l) + ",\"duplicates\":" +
           std::to_string(x.duplicates) + ",\"gaps\":" + std::to_string(x.gaps) + ",\"mismatch_log\":" +
           std::to_string(ml) + ",\"mismatch_tokenat\":" + std::to_string(mr) + ",\"error_messages\":" +
           std::to_string(x.error_messages) + ",\"finish\":" + Q(x.finish_reason) + ",\"failure\":" +
           Q(x.failure) + "}";
  }
  raw += "],\"resume_ms\":[";
  for (size_t k = 0; k < resume_ms.size(); ++k) raw += (k ? "," : "") + N(resume_ms[k]);
  raw += "]}";
  server.Stop();
  bench::CdfChart chart;
  chart.title = "WebSocket resume: new connection to first event on it, 200 streams x 6 drops";
  chart.x_axis.label = "ms from queuing the resume connection (connect + handshake + resume op + replay)";
  chart.sets = {{"after a FIN drop", resume_fin_ms}, {"after an RST drop", resume_rst_ms}};
  if (Status st = loadgen::WriteTextFile(o.out_dir + "/ws_resume_storm_resume.svg", bench::RenderCdfChart(chart));
      !st.ok())
    return st;
  double r50, r99, rmax;
  Stats4(resume_ms, &r50, &r99, &rmax);
  std::fprintf(stderr, "ws_resume_storm: %llu/%d complete, lost %llu, duplicated %llu, gaps %llu, vs log %llu\n",
               static_cast<unsigned long long>(complete), streams, static_cast<unsigned long long>(lost),
               static_cast<unsigned long long>(dup), static_cast<unsigned long long>(gaps),
               static_cast<unsigned long long>(vs_log));
  Report r;
  r.bench = "streams/ws_resume_storm";
  r.title = "Resume storm over WebSocket: 200 streams x 6 forced disconnects (FIN/RST alternating), "
            "resumed with {\"op\":\"resume\",\"after\":last_seq}";
  r.command = o.command + " (server: " + server.command_line() + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"streams", N(streams)}, {"disconnects_per_stream", N(drops)},
                              {"max_new_tokens", N(tokens)}, {"mock_tokens_per_s", N(rate)},
                              {"mock_ttft_ms", "50"}, {"reconnect_delay_ms", "\"0-49 random\""},
                              {"linger_ms", "5000"}, {"transport", "\"websocket, one stream per connection\""}});
  std::string sse_col = "vs SSE (" + sse.file + ")";
  auto S = [&](const std::string& metric) { return sse.found ? sse.Cell(metric, 1) : "no file"; };
  r.columns = {"metric", "WebSocket", sse_col, "target"};
  r.rows = {{"streams completed (done, finish length)", std::to_string(complete) + " / " + std::to_string(streams),
             S("streams completed"), "all"},
            {"reconnections made (FIN / RST)",
             std::to_string(reconnects) + " (" + std::to_string(fins) + " / " + std::to_string(rsts) + ")",
             S("reconnections made"), std::to_string(streams * drops)},
            {"tokens expected / received", std::to_string(expected) + " / " + std::to_string(received),
             S("tokens expected"), "equal"},
            {"tokens lost", std::to_string(lost), S("tokens lost"), "0"},
            {"events duplicated", std::to_string(dup), S("events duplicated"), "0"},
            {"seq gaps (SSE: event-id gaps)", std::to_string(gaps), S("event-id gaps"), "0"},
            {"tokens differing from the emission log", std::to_string(vs_log), S("tokens differing from the emission"),
             "0"},
            {"tokens differing from MockBackend::TokenAt", std::to_string(vs_ref), S("tokens differing from MockBackend"),
             "0"},
            {"streams with a failure / emission log missing",
             std::to_string(failed) + " / " + std::to_string(log_missing), S("streams with a failure"), "0 / 0"},
            {"error messages received", std::to_string(errors), "", "0"},
            {"resume: new connection to first event, p50 / p99 / max (ms)",
             Fmt(r50, 2) + " / " + Fmt(r99, 2) + " / " + Fmt(rmax, 2), "not measured", ""},
            {"wall time (s)", Fmt(wall_s, 1), "", ""}};
  r.verdicts = loadgen::ResumeStormVerdicts({static_cast<uint64_t>(streams), complete, reconnects,
                                             static_cast<uint64_t>(streams * drops), expected, received, lost, dup,
                                             gaps, vs_log, vs_ref, failed, log_missing});
  r.verdicts.push_back(bench::NoneOf("error messages received", errors));
  if (!finished) r.notes.push_back("the run hit its deadline before every stream finished");
  if (!first_failure.empty()) r.notes.push_back("first failure: " + first_failure);
  r.notes.push_back("Same streams, prompts, seeds, drop points (same generator and seed) and reconnect delays as "
                    "the SSE resume_storm scenario (bench/loadgen/scenarios.cc); each drop closes the WebSocket's "
                    "TCP connection without a close frame, and a new connection sends "
                    "{\"op\":\"resume\",\"stream\":id,\"after\":last_seq}. Each stream's token ids are checked "
                    "against the server's emission log (/lab/emissions, --lab) and against MockBackend::TokenAt.");
  r.notes.push_back(sse.found ? "The SSE column is copied from " + sse.file + " (" + sse.mode + " mode, " + sse.date +
                                    ", load average " + sse.loadavg + " at its start), written by build/bench/loadgen resume_storm; "
                                    "it is not rerun here."
                              : "No SSE result file " + sse.file + " was found: run bash bench/streams/run.sh "
                                "resume_storm first for the SSE column.");
  r.notes.push_back("The resume time includes, when the drop lost no event (the reconnect came back before the "
                    "next token), the wait for the next live token (20 ms apart at 50 tok/s in quick mode).");
  r.charts = {{"ws_resume_storm_resume.svg", "time from a resume connection's start to its first event (CDF), "
                                              "after FIN and after RST drops"}};
  r.raw_json = raw;
  return r.Write(o.out_dir, "ws_resume_storm");
}

// 2. ------------------------------------------------------------------------
namespace {

struct ConcRun {
  std::vector<double> ttft, gaps;
  double t50 = 0, t99 = 0, tmax = 0, g50 = 0, g99 = 0, gmax = 0, a50 = 0, a99 = 0, amax = 0, l50 = 0, l99 = 0,
         lmax = 0;
  int64_t hwm = 0, rss_idle = 0;
  uint64_t complete = 0, errors = 0, tokens_got = 0;
  bool finished = false;
  std::string raw, loadavg, server_command, first_failure;
};

Status ConcurrencyOnce(const Options& o, int rep, ConcRun* out) {
  out->loadavg = bench::LoadAvg();
  // bench/loadgen/scenarios.cc ConcurrencyOnce: the same sizes and flags.
  const int streams = 1000, rate = 20, ttft_ms = 200;
  const int tokens = o.full ? 200 : 40;
  const double ramp_ms = 1000;
  ServerProcess server;
  std::vector<std::string> args = {"--backend", "mock", "--mock-ttft-ms", std::to_string(ttft_ms),
                                   "--mock-tokens-per-s", std::to_string(rate), "--max-streams", "4096",
                                   "--max-connections", "4096"};
  if (Status st = StartServer(&server, o, args); !st.ok()) return st;
  out->rss_idle = server.StatusKb("VmRSS");
  WsEngine engine(server.port());
  if (Status st = engine.Init(); !st.ok()) return st;
  Streams s;
  for (int i = 0; i < streams; ++i) {
    WsScript sc;
    sc.generate = GenerateMessage(PromptFor(i), i, tokens);
    s.push_back(std::make_unique<WsStream>(&engine, sc, i));
  }
  double t0 = NowUs();
  for (int i = 0; i < streams; ++i) {
    WsStream* x = s[i].get();
    engine.At(t0 + ramp_ms * 1000.0 * i / streams, [x] { x->Start(); });
  }
  // The load generator's own lateness: a 10 ms timer, how late it fires.
  std::vector<double> loop_late_ms;
  std::function<void(double)> probe = [&](double due) {
    loop_late_ms.push_back((NowUs() - due) / 1000.0);
    bool running = false;
    for (const auto& x : s) running |= x->done_us == 0 && x->failure.empty();
    if (running) engine.At(due + 10000.0, [&probe, due] { probe(due + 10000.0); });
  };
  engine.At(t0 + 10000.0, [&probe, t0] { probe(t0 + 10000.0); });
  out->finished = RunAll(&engine, s, 120, "ws_concurrency rep " + std::to_string(rep));
  out->hwm = server.StatusKb("VmHWM");
  std::vector<double> added;
  out->raw = "{\"streams\":[";
  for (int i = 0; i < streams; ++i) {
    WsStream& x = *s[i];
    out->complete += x.done_us != 0 && static_cast<int>(x.tokens.size()) == tokens;
    out->errors += x.error_messages + !x.failure.empty();
    if (!x.failure.empty() && out->first_failure.empty()) out->first_failure = x.failure;
    // TTFT from the first connect's start, as the SSE scenario measures it
    // (there: connect + POST; here: connect + handshake + generate message).
    double t = x.first_token_us ? (x.first_token_us - x.start_us) / 1000.0 : std::nan("");
    if (!std::isnan(t)) out->ttft.push_back(t);
    std::vector<double> mine;
    for (size_t k = 1; k < x.token_us.size(); ++k) {
      if (x.token_us[k] > 0 && x.token_us[k - 1] > 0) mine.push_back((x.token_us[k] - x.token_us[k - 1]) / 1000.0);
    }
    out->tokens_got += x.tokens.size();
    out->gaps.insert(out->gaps.end(), mine.begin(), mine.end());
    double g50 = Percentile(&mine, 50), g99 = Percentile(&mine, 99);
    out->raw += std::string(i ? "," : "") + "{\"ttft_ms\":" + N(t) + ",\"tokens\":" + std::to_string(x.tokens.size()) +
                ",\"gap_p50_ms\":" + N(g50) + ",\"gap_p99_ms\":" + N(g99) + ",\"gap_max_ms\":" +
                N(mine.empty() ? std::nan("") : mine.back()) + ",\"errors\":" + std::to_string(x.error_messages) + "}";
  }
  out->raw += "]}";
  for (double g : out->gaps) added.push_back(g - 1000.0 / rate);
  Stats4(out->ttft, &out->t50, &out->t99, &out->tmax);
  Stats4(out->gaps, &out->g50, &out->g99, &out->gmax);
  Stats4(added, &out->a50, &out->a99, &out->amax);
  Stats4(loop_late_ms, &out->l50, &out->l99, &out->lmax);
  server.Stop();
  out->server_command = server.command_line();
  std::fprintf(stderr, "ws_concurrency rep %d: TTFT p50 %.1f p99 %.1f ms, added gap p99 %.2f ms, VmHWM %.1f MB\n",
               rep, out->t50, out->t99, out->a99, static_cast<double>(out->hwm) / 1024.0);
  return Status::Ok();
}

double MedianOf(const std::vector<ConcRun>& runs, double ConcRun::*field) {
  std::vector<double> v;
  for (const auto& r : runs) v.push_back(r.*field);
  return Percentile(&v, 50);
}

// "median (a, b, c)" of one statistic over the repetitions.
std::string MedianCell(const std::vector<ConcRun>& runs, double ConcRun::*field, int decimals) {
  std::string cell = Fmt(MedianOf(runs, field), decimals);
  if (runs.size() > 1) {
    cell += " (";
    for (size_t i = 0; i < runs.size(); ++i) cell += (i ? ", " : "") + Fmt(runs[i].*field, decimals);
    cell += ")";
  }
  return cell;
}

}  // namespace

Status WsConcurrency(const Options& o) {
  const int streams = 1000, rate = 20, ttft_ms = 200, reps = 3;
  const int tokens = o.full ? 200 : 40;
  const double ramp_ms = 1000;
  SseResult sse = ReadSse(o.out_dir, "concurrency.json");
  std::vector<ConcRun> runs(reps);
  for (int rep = 0; rep < reps; ++rep) {
    if (Status st = ConcurrencyOnce(o, rep + 1, &runs[rep]); !st.ok()) return st;
  }
  bench::CdfChart c1;
  c1.title = "WebSocket: TTFT, 1,000 concurrent streams (mock TTFT floor 200 ms), client clock";
  c1.x_axis.label = "time to first token (ms), from connect (handshake included)";
  bench::HistogramChart c2;
  c2.title = "WebSocket: inter-token gaps, 1,000 concurrent streams at 20 tokens/s (nominal 50 ms)";
  c2.x_axis.label = "gap between consecutive tokens (ms)";
  c2.bins = 60;
  for (int rep = 0; rep < reps; ++rep) {
    c1.sets.push_back({"rep " + std::to_string(rep + 1), runs[rep].ttft});
    c2.sets.push_back({"rep " + std::to_string(rep + 1), runs[rep].gaps});
  }
  if (Status st = loadgen::WriteTextFile(o.out_dir + "/ws_concurrency_ttft.svg", bench::RenderCdfChart(c1)); !st.ok())
    return st;
  if (Status st = loadgen::WriteTextFile(o.out_dir + "/ws_concurrency_gaps.svg", bench::RenderHistogram(c2)); !st.ok())
    return st;
  std::vector<double> hwm_mb, idle_mb;
  uint64_t complete = 0, errors = 0, tokens_got = 0;
  bool finished = true;
  std::string raw = "{\"reps\":[", loads, first_failure;
  for (int rep = 0; rep < reps; ++rep) {
    hwm_mb.push_back(static_cast<double>(runs[rep].hwm) / 1024.0);
    idle_mb.push_back(static_cast<double>(runs[rep].rss_idle) / 1024.0);
    complete += runs[rep].complete;
    errors += runs[rep].errors;
    tokens_got += runs[rep].tokens_got;
    finished &= runs[rep].finished;
    raw += (rep ? "," : "") + runs[rep].raw;
    loads += (rep ? "; " : "") + runs[rep].loadavg;
    if (first_failure.empty() && !runs[rep].first_failure.empty()) first_failure = runs[rep].first_failure;
  }
  raw += "]}";
  double hwm_max = *std::max_element(hwm_mb.begin(), hwm_mb.end());
  Report r;
  r.bench = "streams/ws_concurrency";
  r.title = "1,000 concurrent WebSocket streams at 20 tokens/s with a 200 ms TTFT floor";
  r.command = o.command + " (server, each repetition: " + runs[0].server_command + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"streams", N(streams)}, {"max_new_tokens", N(tokens)}, {"mock_tokens_per_s", N(rate)},
                              {"mock_ttft_ms", N(ttft_ms)}, {"ramp_ms", N(ramp_ms)}, {"repetitions", N(reps)},
                              {"transport", "\"websocket, one stream per connection\""}});
  // The SSE column: its p50 / p99 medians, or its single value.
  auto S = [&](const std::string& metric, bool single) {
    if (!sse.found) return std::string("no file");
    if (single) return sse.Cell(metric, 1);
    return Median(sse.Cell(metric, 1)) + " / " + Median(sse.Cell(metric, 2));
  };
  r.columns = {"metric (median of " + std::to_string(reps) + " runs; each run in brackets)", "p50", "p99", "max",
               "vs SSE p50 / p99 (" + sse.file + ")", "target"};
  r.rows = {{"TTFT (ms, client, from connect)", MedianCell(runs, &ConcRun::t50, 1), MedianCell(runs, &ConcRun::t99, 1),
             MedianCell(runs, &ConcRun::tmax, 1), S("TTFT", false), "p99 ≤ " + Fmt(loadgen::kConcurrencyTtftP99Ms, 0)},
            {"inter-token gap (ms)", MedianCell(runs, &ConcRun::g50, 2), MedianCell(runs, &ConcRun::g99, 2),
             MedianCell(runs, &ConcRun::gmax, 2), S("inter-token gap", false), ""},
            {"added inter-token latency, gap − 50 ms", MedianCell(runs, &ConcRun::a50, 2),
             MedianCell(runs, &ConcRun::a99, 2), MedianCell(runs, &ConcRun::amax, 2), S("added inter-token", false),
             "p99 ≤ " + Fmt(loadgen::kConcurrencyAddedGapP99Ms, 0)},
            {"load generator's own timer lateness (ms, 10 ms timer)", MedianCell(runs, &ConcRun::l50, 2),
             MedianCell(runs, &ConcRun::l99, 2), MedianCell(runs, &ConcRun::lmax, 2), S("load generator", false), ""},
            {"server peak RSS (VmHWM, MB), largest run", Fmt(hwm_max, 1), "", "", S("server peak RSS", true),
             "≤ " + Fmt(loadgen::kConcurrencyPeakRssMb, 0)},
            {"server RSS before a run (MB)", Fmt(Percentile(&idle_mb, 50), 1), "", "", S("server RSS before", true), ""},
            {"streams complete / errors, all runs", std::to_string(complete) + " / " + std::to_string(errors), "", "",
             S("streams complete", true), std::to_string(reps * streams) + " / 0"},
            {"tokens received, all runs", std::to_string(tokens_got), "", "", S("tokens received", true),
             std::to_string(reps * streams * tokens)}};
  r.verdicts = loadgen::ConcurrencyVerdicts({MedianOf(runs, &ConcRun::t99), MedianOf(runs, &ConcRun::a99), hwm_max,
                                             complete, errors, static_cast<uint64_t>(reps * streams), tokens_got,
                                             static_cast<uint64_t>(reps * streams * tokens)});
  if (!finished) r.notes.push_back("a run hit its deadline before every stream finished");
  if (!first_failure.empty()) r.notes.push_back("first failure: " + first_failure);
  r.notes.push_back("Same streams, prompts, seeds, server flags, 1 s ramp and 3 repetitions as the SSE concurrency "
                    "scenario (bench/loadgen/scenarios.cc), one WebSocket connection per stream. TTFT runs from the "
                    "start of connect() to the first token message, so it includes the WebSocket opening handshake "
                    "and the generate message (SSE: connect and the POST). Gaps are measured by the load generator, "
                    "which shares the machine's cores with the server: its own scheduling delay is included (the "
                    "timer-lateness row). Load average at the start of each run: " + loads + ".");
  r.notes.push_back(sse.found ? "The SSE column is copied from " + sse.file + " (" + sse.mode + " mode, " + sse.date +
                                    ", load average " + sse.loadavg + " at its start), medians of its runs, written by "
                                    "build/bench/loadgen concurrency; it is not rerun here, so the two were measured "
                                    "at different times on a shared 2-core machine: compare the load averages before "
                                    "the latencies."
                              : "No SSE result file " + sse.file + " was found: run bash bench/streams/run.sh "
                                "concurrency first for the SSE column.");
  r.charts = {{"ws_concurrency_ttft.svg", "WebSocket TTFT distribution (CDF), one curve per run"},
              {"ws_concurrency_gaps.svg", "WebSocket inter-token gap distribution, one curve per run"}};
  r.raw_json = raw;
  return r.Write(o.out_dir, "ws_concurrency");
}

}  // namespace tw::ws_loadgen

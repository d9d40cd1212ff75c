#include "loadgen/scenarios.h"

#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/mock_backend.h"
#include "json/json.h"
#include "lib/svg.h"
#include "loadgen/engine.h"
#include "loadgen/report.h"
#include "loadgen/server_process.h"
#include "loadgen/session.h"

namespace tw::loadgen {
namespace {

using Sessions = std::vector<std::unique_ptr<StreamSession>>;

std::string RequestBody(const std::vector<int32_t>& prompt, uint64_t seed, int max_new_tokens,
                        const std::string& policy = "") {
  std::string b = "{\"prompt_tokens\":[";
  for (size_t i = 0; i < prompt.size(); ++i) b += (i ? "," : "") + std::to_string(prompt[i]);
  b += "],\"seed\":" + std::to_string(seed) + ",\"max_new_tokens\":" + std::to_string(max_new_tokens);
  if (!policy.empty()) b += ",\"policy\":\"" + policy + "\"";
  return b + "}";
}

std::vector<int32_t> PromptFor(size_t i) {
  return {static_cast<int32_t>(1 + i % 50000), 464, static_cast<int32_t>(7 + i / 50000), 2068};
}

// Runs the engine until every session has ended (no connection open and no
// resume pending) or `seconds` pass; prints a progress line.
bool RunAll(Engine* e, const Sessions& s, double seconds, const std::string& label,
            const std::function<bool()>& extra_done = nullptr) {
  double t0 = NowUs();
  auto done = [&] {
    if (extra_done) return extra_done();
    for (const auto& x : s) {
      if (x->open || (x->done_us == 0 && x->failure.empty() && !x->stalled)) return false;
    }
    return e->open_count() == 0;
  };
  auto tick = [&] {
    size_t open = 0, finished = 0, failed = 0;
    uint64_t events = 0, hb = 0;
    for (const auto& x : s) {
      open += x->open;
      finished += x->done_us != 0;
      failed += !x->failure.empty();
      events += x->events;
      hb += x->heartbeats;
    }
    std::fprintf(stderr, "\r[%s] %5.1fs open %zu done %zu/%zu failed %zu events %llu heartbeats %llu   ",
                 label.c_str(), (NowUs() - t0) / 1e6, open, finished, s.size(), failed,
                 static_cast<unsigned long long>(events), static_cast<unsigned long long>(hb));
  };
  bool ok = e->Run(done, t0 + seconds * 1e6, tick, 1000);
  tick();
  std::fprintf(stderr, "\n");
  return ok;
}

struct Emission {
  bool found = false;
  std::vector<int32_t> tokens;
  bool exited = false;
  std::string finish_reason;
  int64_t cancel_to_exit_us = -1;
};

Emission GetEmission(uint16_t port, const std::string& id) {
  Emission em;
  int status = 0;
  std::string body;
  if (!HttpGet(port, "/lab/emissions/" + id, &status, &body).ok() || status != 200) return em;
  json::Value v;
  json::ParseLimits limits;
  limits.max_bytes = 64u << 20;
  if (!json::Parse(body, &v, limits).ok()) return em;
  em.found = true;
  if (const json::Value* t = v.Find("tokens"); t && t->is_array()) {
    for (const auto& x : t->items()) em.tokens.push_back(static_cast<int32_t>(x.as_int()));
  }
  if (const json::Value* x = v.Find("exited"); x && x->is_bool()) em.exited = x->as_bool();
  if (const json::Value* x = v.Find("finish_reason"); x && x->is_string()) em.finish_reason = x->as_string();
  if (const json::Value* x = v.Find("cancel_to_exit_us"); x && x->is_int()) em.cancel_to_exit_us = x->as_int();
  return em;
}

std::string Params(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  for (const auto& [k, v] : kv) {
    w.Key(k);
    w.Raw(v);
  }
  w.EndObject();
  return out;
}
std::string Q(const std::string& s) {
  std::string out;
  json::AppendQuoted(&out, s);
  return out;
}
std::string N(double v) { return std::isnan(v) ? "null" : Fmt(v, v == std::floor(v) ? 0 : 3); }

Status WriteChart(const std::string& dir, const std::string& file, const std::string& svg) {
  return WriteTextFile(dir + "/" + file, svg);
}

void Stats4(std::vector<double> v, double* p50, double* p99, double* mx) {
  *p50 = Percentile(&v, 50);
  *p99 = Percentile(&v, 99);
  *mx = v.empty() ? std::nan("") : v.back();
}

Status StartServer(ServerProcess* server, const Options& o, const std::vector<std::string>& args) {
  Status st = server->Start(o.server, args);
  if (!st.ok()) return Status::Error("starting " + o.server + ": " + st.message());
  return Status::Ok();
}

}  // namespace

// 1. ------------------------------------------------------------------------
Status ResumeStorm(const Options& o) {
  const int streams = 200, drops = 6;
  const int tokens = o.full ? 200 : 60;
  const int rate = o.full ? 20 : 50;
  ServerProcess server;
  std::vector<std::string> args = {"--backend", "mock", "--lab", "--mock-ttft-ms", "50", "--mock-tokens-per-s",
                                   std::to_string(rate), "--linger-ms", "5000"};
  if (Status st = StartServer(&server, o, args); !st.ok()) return st;
  Engine engine(server.port());
  if (Status st = engine.Init(); !st.ok()) return st;
  std::mt19937_64 rng(20261130);
  Sessions s;
  for (int i = 0; i < streams; ++i) {
    Script sc;
    sc.body = RequestBody(PromptFor(i), 1000 + i, tokens);
    // Event ids: 1 start, 2..tokens+1 tokens, tokens+2 done. Drop after 6
    // distinct ids among 1..tokens+1, alternating FIN and RST.
    std::vector<int> ids;
    for (int k = 1; k <= tokens + 1; ++k) ids.push_back(k);
    std::shuffle(ids.begin(), ids.end(), rng);
    sc.disconnect_after.assign(ids.begin(), ids.begin() + drops);
    std::sort(sc.disconnect_after.begin(), sc.disconnect_after.end());
    sc.alternate_reset = true;
    sc.reconnect_delay_ms = static_cast<double>(rng() % 50);
    s.push_back(std::make_unique<StreamSession>(&engine, server.port(), sc, i));
  }
  for (auto& x : s) x->Start();
  bool finished = RunAll(&engine, s, o.full ? 120 : 60, "resume_storm");
  uint64_t expected = 0, received = 0, lost = 0, dup = 0, gaps = 0, vs_log = 0, vs_ref = 0, complete = 0,
           reconnects = 0, log_missing = 0, failed = 0;
  std::string raw = "{\"streams\":[";
  for (int i = 0; i < streams; ++i) {
    StreamSession& x = *s[i];
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
    received += got;
    lost += l;
    dup += x.duplicates;
    gaps += x.gaps;
    vs_log += ml;
    vs_ref += mr;
    complete += x.done_us != 0 && x.finish_reason == "length";
    reconnects += x.connections - 1;
    failed += !x.failure.empty();
    raw += std::string(i ? "," : "") + "{\"stream\":" + Q(x.stream_id) + ",\"connections\":" +
           std::to_string(x.connections) + ",\"events\":" + std::to_string(x.events) + ",\"tokens\":" +
           std::to_string(got) + ",\"lost\":" + std::to_string(l) + ",\"duplicates\":" +
           std::to_string(x.duplicates) + ",\"gaps\":" + std::to_string(x.gaps) + ",\"mismatch_log\":" +
           std::to_string(ml) + ",\"mismatch_tokenat\":" + std::to_string(mr) + ",\"finish\":" +
           Q(x.finish_reason) + ",\"failure\":" + Q(x.failure) + "}";
  }
  raw += "]}";
  server.Stop();
  Report r;
  r.bench = "streams/resume_storm";
  r.title = "Resume storm: 200 streams x 6 forced disconnects (FIN/RST alternating), resumed with Last-Event-ID";
  r.command = o.command + " (server: " + server.command_line() + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"streams", N(streams)}, {"disconnects_per_stream", N(drops)},
                              {"max_new_tokens", N(tokens)}, {"mock_tokens_per_s", N(rate)},
                              {"mock_ttft_ms", "50"}, {"reconnect_delay_ms", "\"0-49 random\""},
                              {"linger_ms", "5000"}});
  r.columns = {"metric", "value", "target"};
  r.rows = {{"streams completed (done, finish length)", std::to_string(complete) + " / " + std::to_string(streams), "all"},
            {"reconnections made", std::to_string(reconnects), std::to_string(streams * drops)},
            {"tokens expected / received", std::to_string(expected) + " / " + std::to_string(received), "equal"},
            {"tokens lost", std::to_string(lost), "0"},
            {"events duplicated", std::to_string(dup), "0"},
            {"event-id gaps", std::to_string(gaps), "0"},
            {"tokens differing from the emission log", std::to_string(vs_log), "0"},
            {"tokens differing from MockBackend::TokenAt", std::to_string(vs_ref), "0"},
            {"streams with a failure / emission log missing", std::to_string(failed) + " / " + std::to_string(log_missing), "0 / 0"}};
  if (!finished) r.notes.push_back("the run hit its deadline before every stream finished");
  r.notes.push_back("Each stream's token ids are checked twice: against the server's emission log "
                    "(/lab/emissions, --lab) and against MockBackend::TokenAt recomputed in the load generator.");
  r.raw_json = raw;
  return r.Write(o.out_dir, "resume_storm");
}

// 2. ------------------------------------------------------------------------
Status CancelLatency(const Options& o) {
  ServerProcess server;
  std::vector<std::string> args = {"--backend", "mock", "--lab", "--linger-ms", "5000"};
  if (Status st = StartServer(&server, o, args); !st.ok()) return st;
  const std::vector<int> levels = {1, 10, 50};
  const std::vector<int> rounds = o.full ? std::vector<int>{200, 30, 8} : std::vector<int>{30, 5, 2};
  Report r;
  r.columns = {"concurrent streams", "samples", "DELETE→producer exit p50 (ms)", "p99 (ms)", "max (ms)",
               "client DELETE round trip p50 (ms)", "p99 (ms)", "204 answers", "target p50"};
  std::vector<bench::SampleSet> exit_sets, rtt_sets;
  std::string raw = "{\"levels\":[";
  size_t seq = 0;
  for (size_t li = 0; li < levels.size(); ++li) {
    int conc = levels[li];
    std::vector<double> exit_ms, rtt_ms;
    int ok204 = 0, samples = 0, missing = 0;
    std::string missing_example;
    int late_log = 0;
    for (int round = 0; round < rounds[li]; ++round) {
      Engine engine(server.port());
      if (Status st = engine.Init(); !st.ok()) return st;
      Sessions s;
      for (int i = 0; i < conc; ++i) {
        Script sc;
        sc.body = RequestBody(PromptFor(seq), seq, 1000);
        seq++;
        sc.delete_after = 4;  // start + 3 tokens
        s.push_back(std::make_unique<StreamSession>(&engine, server.port(), sc, i));
      }
      for (auto& x : s) x->Start();
      RunAll(&engine, s, 30, "cancel x" + std::to_string(conc) + " round " + std::to_string(round + 1), [&] {
        for (const auto& x : s) {
          if (x->delete_done_us == 0 && x->failure.empty()) return false;
        }
        return true;
      });
      for (auto& x : s) {
        samples++;
        if (x->delete_status == 204) ok204++;
        if (x->delete_done_us > 0) rtt_ms.push_back((x->delete_done_us - x->delete_sent_us) / 1000.0);
        Emission em = GetEmission(server.port(), x->stream_id);
        // The mock marks its log "exited" a moment after it finishes the
        // stream (which is what releases the 204): look again briefly.
        for (int tries = 0; em.found && !em.exited && tries < 20; ++tries) {
          late_log++;
          ::usleep(1000);
          em = GetEmission(server.port(), x->stream_id);
        }
        if (em.cancel_to_exit_us >= 0) {
          exit_ms.push_back(static_cast<double>(em.cancel_to_exit_us) / 1000.0);
        } else {
          missing++;
          if (missing_example.empty()) {
            missing_example = "found " + std::to_string(em.found) + ", exited " + std::to_string(em.exited) +
                              ", finish_reason '" + em.finish_reason + "', DELETE status " +
                              std::to_string(x->delete_status) + ", stream failure '" + x->failure + "'";
          }
        }
        x->CloseNow(false);
      }
    }
    double e50, e99, emax, r50, r99, rmax;
    Stats4(exit_ms, &e50, &e99, &emax);
    Stats4(rtt_ms, &r50, &r99, &rmax);
    r.rows.push_back({std::to_string(conc), std::to_string(samples), Fmt(e50, 3), Fmt(e99, 3), Fmt(emax, 3),
                      Fmt(r50, 3), Fmt(r99, 3), std::to_string(ok204) + " / " + std::to_string(samples), "≤ 0.5"});
    if (missing) r.notes.push_back(std::to_string(missing) + " stream(s) at " + std::to_string(conc) +
                                   " concurrent had no cancel_to_exit_us in the emission log (first: " +
                                   missing_example + ")");
    if (late_log) r.notes.push_back("at " + std::to_string(conc) + " concurrent, " + std::to_string(late_log) +
                                    " emission-log read(s) after the 204 still showed exited=false and were "
                                    "repeated 1 ms later (the mock records the exit just after finishing the stream)");
    exit_sets.push_back({std::to_string(conc) + " concurrent", exit_ms});
    rtt_sets.push_back({std::to_string(conc) + " concurrent", rtt_ms});
    raw += std::string(li ? "," : "") + "{\"concurrent\":" + std::to_string(conc) + ",\"cancel_to_exit_ms\":[";
    for (size_t k = 0; k < exit_ms.size(); ++k) raw += (k ? "," : "") + Fmt(exit_ms[k], 3);
    raw += "],\"delete_round_trip_ms\":[";
    for (size_t k = 0; k < rtt_ms.size(); ++k) raw += (k ? "," : "") + Fmt(rtt_ms[k], 3);
    raw += "]}";
  }
  raw += "]}";
  server.Stop();
  bench::CdfChart c1;
  c1.title = "Cancellation: DELETE received → mock producer exited (server clock)";
  c1.x_axis.label = "milliseconds";
  c1.sets = exit_sets;
  bench::CdfChart c2;
  c2.title = "Cancellation: client-observed DELETE round trip (204 after producer exit)";
  c2.x_axis.label = "milliseconds";
  c2.sets = rtt_sets;
  if (Status st = WriteChart(o.out_dir, "cancel_latency_exit.svg", bench::RenderCdfChart(c1)); !st.ok()) return st;
  if (Status st = WriteChart(o.out_dir, "cancel_latency_rtt.svg", bench::RenderCdfChart(c2)); !st.ok()) return st;
  r.bench = "streams/cancel_latency";
  r.title = "Cancellation latency: DELETE to producer exit at 1 / 10 / 50 concurrent streams";
  r.command = o.command + " (server: " + server.command_line() + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"levels", "[1,10,50]"},
                              {"rounds", "[" + std::to_string(rounds[0]) + "," + std::to_string(rounds[1]) + "," +
                                             std::to_string(rounds[2]) + "]"},
                              {"delete_after_event_id", "4"}, {"mock_tokens_per_s", "20"}, {"mock_ttft_ms", "200"}});
  r.notes.push_back("DELETE→exit is cancel_to_exit_us from /lab/emissions (the mock producer's own clock: from "
                    "Backend::Cancel to the producer's exit). The round trip is measured by the client from "
                    "sending DELETE to the 204, which the server sends only after the producer exited.");
  r.charts = {{"cancel_latency_exit.svg", "DELETE → producer exit (CDF)"},
              {"cancel_latency_rtt.svg", "client DELETE round trip (CDF)"}};
  r.raw_json = raw;
  return r.Write(o.out_dir, "cancel_latency");
}

// 3. ------------------------------------------------------------------------
Status Abandonment(const Options& o) {
  const int streams = o.full ? 200 : 40, tokens = 1000;
  const int rate = o.full ? 20 : 100;
  const double hold_s = o.full ? 20 : 4;
  const int linger_ms = 1000;
  Report r;
  r.columns = {"policy", "streams (stall / close)", "tokens requested", "produced by the end of the hold",
               "produced in all", "tokens saved", "saved %", "stalled: produced after stall p50",
               "cancelled by linger"};
  std::string raw = "{\"policies\":[";
  std::string server_cmd;
  const std::vector<std::string> policies = {"pause_producer", "drop_slow"};
  for (size_t pi = 0; pi < policies.size(); ++pi) {
    const std::string& policy = policies[pi];
    ServerProcess server;
    std::vector<std::string> args = {"--backend", "mock", "--lab", "--policy", policy, "--mock-ttft-ms", "50",
                                     "--mock-tokens-per-s", std::to_string(rate), "--linger-ms",
                                     std::to_string(linger_ms)};
    if (Status st = StartServer(&server, o, args); !st.ok()) return st;
    server_cmd += (pi ? "; " : "") + server.command_line();
    Engine engine(server.port());
    if (Status st = engine.Init(); !st.ok()) return st;
    Sessions s;
    const int stop_at = 11;  // start + 10 tokens
    for (int i = 0; i < streams; ++i) {
      Script sc;
      sc.body = RequestBody(PromptFor(i), 77 + i, tokens);
      sc.stop_reading_after = stop_at;
      sc.close_instead_of_stall = i % 2 == 1;
      s.push_back(std::make_unique<StreamSession>(&engine, server.port(), sc, i));
    }
    for (auto& x : s) x->Start();
    double t0 = NowUs();
    RunAll(&engine, s, hold_s, "abandon " + policy, [&] { return NowUs() - t0 > hold_s * 1e6; });
    std::vector<size_t> at_hold(streams);
    for (int i = 0; i < streams; ++i) at_hold[i] = GetEmission(server.port(), s[i]->stream_id).tokens.size();
    // Now the stalled clients leave too (FIN); wait out the linger.
    for (auto& x : s) x->CloseNow(false);
    double t1 = NowUs();
    RunAll(&engine, s, 10, "abandon " + policy + " linger",
           [&] { return NowUs() - t1 > (linger_ms + 1000) * 1000.0; });
    uint64_t produced = 0, produced_hold = 0, cancelled = 0;
    std::vector<double> stalled_extra;
    raw += std::string(pi ? "," : "") + "{\"policy\":" + Q(policy) + ",\"streams\":[";
    for (int i = 0; i < streams; ++i) {
      Emission em = GetEmission(server.port(), s[i]->stream_id);
      produced += em.tokens.size();
      produced_hold += at_hold[i];
      cancelled += em.finish_reason == "cancelled";
      if (i % 2 == 0) stalled_extra.push_back(static_cast<double>(at_hold[i]) - (stop_at - 1));
      raw += std::string(i ? "," : "") + "{\"action\":\"" + (i % 2 ? "close" : "stall") +
             "\",\"received\":" + std::to_string(s[i]->tokens.size()) + ",\"produced_at_hold_end\":" +
             std::to_string(at_hold[i]) + ",\"produced_final\":" + std::to_string(em.tokens.size()) +
             ",\"exited\":" + (em.exited ? "true" : "false") + ",\"finish_reason\":" + Q(em.finish_reason) + "}";
    }
    raw += "]}";
    uint64_t requested = static_cast<uint64_t>(streams) * tokens;
    double p50 = Percentile(&stalled_extra, 50);
    r.rows.push_back({policy, std::to_string(streams / 2) + " / " + std::to_string(streams - streams / 2),
                      std::to_string(requested), std::to_string(produced_hold), std::to_string(produced),
                      std::to_string(requested - produced),
                      Fmt(100.0 * static_cast<double>(requested - produced) / static_cast<double>(requested), 1),
                      Fmt(p50, 0), std::to_string(cancelled) + " / " + std::to_string(streams)});
    server.Stop();
  }
  raw += "]}";
  r.bench = "streams/abandonment";
  r.title = "Abandonment without DELETE: clients that stop reading or leave, pause_producer vs drop_slow";
  r.command = o.command + " (servers: " + server_cmd + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"streams", N(streams)}, {"max_new_tokens", N(tokens)}, {"mock_tokens_per_s", N(rate)},
                              {"stop_after_event_id", "11"}, {"hold_s", N(hold_s)}, {"linger_ms", N(linger_ms)}});
  r.notes.push_back("Half the clients stop reading after 10 tokens (socket left open), half close with a FIN "
                    "after 10 tokens; after the hold every client closes and the linger runs out. No DELETE is "
                    "ever sent. 'Tokens saved' = requested - produced (the mock's emission log).");
  r.notes.push_back("'stalled: produced after stall' counts tokens generated past the 10 a stalled client read, "
                    "at the end of the hold: what the ring lag bound, the output buffer and the socket buffers absorbed.");
  r.raw_json = raw;
  return r.Write(o.out_dir, "abandonment");
}

// 4. ------------------------------------------------------------------------
Status Concurrency(const Options& o) {
  const int streams = 1000, rate = 20, ttft_ms = 200;
  const int tokens = o.full ? 200 : 40;
  const double ramp_ms = 1000;
  ServerProcess server;
  std::vector<std::string> args = {"--backend", "mock", "--mock-ttft-ms", std::to_string(ttft_ms),
                                   "--mock-tokens-per-s", std::to_string(rate), "--max-streams", "4096",
                                   "--max-connections", "4096"};
  if (Status st = StartServer(&server, o, args); !st.ok()) return st;
  int64_t rss_idle = server.StatusKb("VmRSS");
  Engine engine(server.port());
  if (Status st = engine.Init(); !st.ok()) return st;
  Sessions s;
  for (int i = 0; i < streams; ++i) {
    Script sc;
    sc.body = RequestBody(PromptFor(i), i, tokens);
    s.push_back(std::make_unique<StreamSession>(&engine, server.port(), sc, i));
  }
  double t0 = NowUs();
  for (int i = 0; i < streams; ++i) {
    StreamSession* x = s[i].get();
    engine.At(t0 + ramp_ms * 1000.0 * i / streams, [x] { x->Start(); });
  }
  // The load generator's own lateness: a 10 ms timer, how late it fires.
  // (Its epoll loop is what timestamps token arrivals.)
  std::vector<double> loop_late_ms;
  std::function<void(double)> probe = [&](double due) {
    loop_late_ms.push_back((NowUs() - due) / 1000.0);
    bool running = false;
    for (const auto& x : s) running |= x->done_us == 0 && x->failure.empty();
    if (running) engine.At(due + 10000.0, [&probe, due] { probe(due + 10000.0); });
  };
  engine.At(t0 + 10000.0, [&probe, t0] { probe(t0 + 10000.0); });
  int64_t rss_peak_seen = 0;
  bool finished = RunAll(&engine, s, 120, "concurrency");
  int64_t hwm = server.StatusKb("VmHWM");
  rss_peak_seen = std::max<int64_t>(rss_peak_seen, hwm);
  std::vector<double> ttft, gaps, added;
  uint64_t complete = 0, errors = 0, tokens_got = 0;
  std::string raw = "{\"streams\":[";
  for (int i = 0; i < streams; ++i) {
    StreamSession& x = *s[i];
    complete += x.done_us != 0 && static_cast<int>(x.tokens.size()) == tokens;
    errors += x.error_events + !x.failure.empty();
    double t = x.first_token_us ? (x.first_token_us - x.start_us) / 1000.0 : std::nan("");
    if (!std::isnan(t)) ttft.push_back(t);
    std::vector<double> mine;
    for (size_t k = 1; k < x.token_us.size(); ++k) {
      if (x.token_us[k] > 0 && x.token_us[k - 1] > 0) mine.push_back((x.token_us[k] - x.token_us[k - 1]) / 1000.0);
    }
    tokens_got += x.tokens.size();
    gaps.insert(gaps.end(), mine.begin(), mine.end());
    double g50 = Percentile(&mine, 50), g99 = Percentile(&mine, 99);
    raw += std::string(i ? "," : "") + "{\"ttft_ms\":" + N(t) + ",\"tokens\":" + std::to_string(x.tokens.size()) +
           ",\"gap_p50_ms\":" + N(g50) + ",\"gap_p99_ms\":" + N(g99) + ",\"gap_max_ms\":" +
           N(mine.empty() ? std::nan("") : mine.back()) + ",\"errors\":" + std::to_string(x.error_events) + "}";
  }
  raw += "],\"gap_histogram_ms\":{";
  // All inter-token gaps as a histogram of 0.1 ms bins (raw enough to redraw).
  std::vector<double> sorted = gaps;
  std::sort(sorted.begin(), sorted.end());
  {
    std::vector<std::pair<long, long>> bins;
    for (double g : sorted) {
      long b = std::lround(g * 10);
      if (bins.empty() || bins.back().first != b) bins.push_back({b, 0});
      bins.back().second++;
    }
    for (size_t k = 0; k < bins.size(); ++k) {
      raw += std::string(k ? "," : "") + "\"" + Fmt(bins[k].first / 10.0, 1) + "\":" + std::to_string(bins[k].second);
    }
  }
  raw += "}}";
  for (double g : gaps) added.push_back(g - 1000.0 / rate);
  double t50, t99, tmax, g50, g99, gmax, a50, a99, amax;
  Stats4(ttft, &t50, &t99, &tmax);
  Stats4(gaps, &g50, &g99, &gmax);
  Stats4(added, &a50, &a99, &amax);
  double l50, l99, lmax;
  Stats4(loop_late_ms, &l50, &l99, &lmax);
  server.Stop();
  bench::CdfChart c1;
  c1.title = "TTFT, 1,000 concurrent streams (mock TTFT floor 200 ms), client clock";
  c1.x_axis.label = "time to first token (ms), from connect";
  c1.sets = {{"1000 streams", ttft}};
  bench::HistogramChart c2;
  c2.title = "Inter-token gaps, 1,000 concurrent streams at 20 tokens/s (nominal 50 ms)";
  c2.x_axis.label = "gap between consecutive tokens (ms)";
  c2.sets = {{"all gaps", gaps}};
  c2.bins = 60;
  if (Status st = WriteChart(o.out_dir, "concurrency_ttft.svg", bench::RenderCdfChart(c1)); !st.ok()) return st;
  if (Status st = WriteChart(o.out_dir, "concurrency_gaps.svg", bench::RenderHistogram(c2)); !st.ok()) return st;
  Report r;
  r.bench = "streams/concurrency";
  r.title = "1,000 concurrent streams at 20 tokens/s with a 200 ms TTFT floor";
  r.command = o.command + " (server: " + server.command_line() + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"streams", N(streams)}, {"max_new_tokens", N(tokens)}, {"mock_tokens_per_s", N(rate)},
                              {"mock_ttft_ms", N(ttft_ms)}, {"ramp_ms", N(ramp_ms)}});
  r.columns = {"metric", "p50", "p99", "max", "target"};
  r.rows = {{"TTFT (ms, client, from connect)", Fmt(t50, 1), Fmt(t99, 1), Fmt(tmax, 1), "p99 ≤ 210"},
            {"inter-token gap (ms)", Fmt(g50, 2), Fmt(g99, 2), Fmt(gmax, 2), ""},
            {"added inter-token latency, gap − 50 ms", Fmt(a50, 2), Fmt(a99, 2), Fmt(amax, 2), "p99 ≤ 5"},
            {"load generator's own timer lateness (ms, 10 ms timer)", Fmt(l50, 2), Fmt(l99, 2), Fmt(lmax, 2), ""},
            {"server peak RSS (VmHWM, MB)", Fmt(static_cast<double>(hwm) / 1024.0, 1), "", "", "≤ 100"},
            {"server RSS before the run (MB)", Fmt(static_cast<double>(rss_idle) / 1024.0, 1), "", "", ""},
            {"streams complete / errors", std::to_string(complete) + " / " + std::to_string(errors), "", "",
             "1000 / 0"},
            {"tokens received", std::to_string(tokens_got), "", "", std::to_string(streams * tokens)}};
  if (!finished) r.notes.push_back("the run hit its deadline before every stream finished");
  r.notes.push_back("Streams start evenly over the first second. Gaps are measured by the load generator, which "
                    "shares the 2 cores with the server: its own scheduling delay is included.");
  r.charts = {{"concurrency_ttft.svg", "TTFT distribution (CDF)"},
              {"concurrency_gaps.svg", "inter-token gap distribution"}};
  r.raw_json = raw;
  return r.Write(o.out_dir, "concurrency");
}

// 5. ------------------------------------------------------------------------
Status IdleSoak(const Options& o) {
  Report r;
  r.columns = {"part", "streams asked", "streams held (open at the end)", "drops", "slow-client detaches",
               "error events", "heartbeats received", "server peak RSS (MB)", "duration (s)"};
  std::string raw = "{";
  std::string cmds;
  // Part A: 1,000 streams at 5 tokens/s, heartbeats between tokens.
  {
    const int streams = 1000, rate = 5, tokens = o.full ? 300 : 40;
    ServerProcess server;
    std::vector<std::string> args = {"--backend", "mock", "--mock-ttft-ms", "200", "--mock-tokens-per-s",
                                     std::to_string(rate), "--heartbeat-ms", "150", "--max-streams", "4096",
                                     "--max-connections", "4096"};
    if (Status st = StartServer(&server, o, args); !st.ok()) return st;
    cmds = server.command_line();
    Engine engine(server.port());
    if (Status st = engine.Init(); !st.ok()) return st;
    Sessions s;
    for (int i = 0; i < streams; ++i) {
      Script sc;
      sc.body = RequestBody(PromptFor(i), i, tokens);
      s.push_back(std::make_unique<StreamSession>(&engine, server.port(), sc, i));
    }
    double t0 = NowUs();
    for (int i = 0; i < streams; ++i) {
      StreamSession* x = s[i].get();
      engine.At(t0 + 1000.0 * i, [x] { x->Start(); });
    }
    RunAll(&engine, s, tokens / rate + 60, "soak 1000 x 5 tok/s");
    double dur = (NowUs() - t0) / 1e6;
    uint64_t complete = 0, drops = 0, slow = 0, errs = 0, hb = 0;
    for (auto& x : s) {
      complete += x->done_us != 0 && static_cast<int>(x->tokens.size()) == tokens;
      drops += x->unexpected_ends + (x->done_us == 0);
      slow += x->last_error_type == "slow_client";
      errs += x->error_events;
      hb += x->heartbeats;
    }
    int64_t hwm = server.StatusKb("VmHWM");
    server.Stop();
    r.rows.push_back({"A: 1,000 streams x " + std::to_string(tokens) + " tokens at 5 tok/s, heartbeat 150 ms",
                      std::to_string(streams), std::to_string(complete) + " completed", std::to_string(drops),
                      std::to_string(slow), std::to_string(errs), std::to_string(hb),
                      Fmt(static_cast<double>(hwm) / 1024.0, 1), Fmt(dur, 1)});
    raw += "\"soak\":{\"streams\":1000,\"completed\":" + std::to_string(complete) + ",\"drops\":" +
           std::to_string(drops) + ",\"slow_client\":" + std::to_string(slow) + ",\"heartbeats\":" +
           std::to_string(hb) + ",\"vmhwm_kb\":" + std::to_string(hwm) + "}";
  }
  // Part B: 10,000 open idle streams (no token for an hour), held.
  {
    const int streams = 10000;
    const double hold_s = o.full ? 30 : 5;
    ServerProcess server;
    std::vector<std::string> args = {"--backend", "mock", "--mock-ttft-ms", "3600000", "--heartbeat-ms", "1000",
                                     "--max-streams", "11000", "--max-connections", "11000"};
    if (Status st = StartServer(&server, o, args); !st.ok()) return st;
    cmds += "; " + server.command_line();
    Engine engine(server.port(), EngineOptions{128, 16384, 0});
    if (Status st = engine.Init(); !st.ok()) return st;
    Sessions s;
    for (int i = 0; i < streams; ++i) {
      Script sc;
      sc.body = RequestBody(PromptFor(i), i, 16);
      s.push_back(std::make_unique<StreamSession>(&engine, server.port(), sc, i));
    }
    double t0 = NowUs();
    for (auto& x : s) x->Start();
    // Open phase: until every stream has its start event (or failed).
    RunAll(&engine, s, 120, "idle 10k open", [&] {
      for (const auto& x : s) {
        if (x->events == 0 && x->failure.empty()) return false;
      }
      return true;
    });
    double opened_s = (NowUs() - t0) / 1e6;
    std::vector<uint64_t> hb_before(streams);
    for (int i = 0; i < streams; ++i) hb_before[i] = s[i]->heartbeats;
    double t1 = NowUs();
    RunAll(&engine, s, hold_s + 1, "idle 10k hold", [&] { return NowUs() - t1 > hold_s * 1e6; });
    uint64_t held = 0, with_hb = 0, failed = 0, hb = 0, drops = 0, slow = 0, errs = 0;
    std::string first_failure;
    for (int i = 0; i < streams; ++i) {
      auto& x = s[i];
      held += x->open && x->events > 0;
      with_hb += x->heartbeats > hb_before[i];
      hb += x->heartbeats;
      drops += x->unexpected_ends;
      slow += x->last_error_type == "slow_client";
      errs += x->error_events;
      if (!x->failure.empty()) {
        failed++;
        if (first_failure.empty()) first_failure = x->failure;
      }
    }
    int64_t hwm = server.StatusKb("VmHWM");
    int64_t fds = server.OpenFds();
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    for (auto& x : s) x->CloseNow(false);
    server.Stop();
    r.rows.push_back({"B: 10,000 open idle streams, held " + Fmt(hold_s, 0) + " s (heartbeat 1 s)",
                      std::to_string(streams), std::to_string(held), std::to_string(drops), std::to_string(slow),
                      std::to_string(errs) + " (failed streams: " + std::to_string(failed) + ")", std::to_string(hb) + " (" + std::to_string(with_hb) +
                                                  " streams got one during the hold)",
                      Fmt(static_cast<double>(hwm) / 1024.0, 1), Fmt(opened_s, 1) + " to open + " + Fmt(hold_s, 0)});
    r.notes.push_back("Part B: the load generator's descriptor limit (RLIMIT_NOFILE) was " +
                      std::to_string(rl.rlim_cur) + " (the server inherits it); the server had " +
                      std::to_string(fds) + " descriptors open during the hold." +
                      (held < static_cast<uint64_t>(streams)
                           ? " Fewer than 10,000 held: first failure: " + first_failure
                           : std::string()));
    raw += ",\"idle\":{\"streams\":10000,\"held\":" + std::to_string(held) + ",\"failed\":" + std::to_string(failed) +
           ",\"heartbeats\":" + std::to_string(hb) + ",\"streams_with_heartbeat_in_hold\":" +
           std::to_string(with_hb) + ",\"vmhwm_kb\":" + std::to_string(hwm) + ",\"server_fds\":" +
           std::to_string(fds) + ",\"rlimit_nofile\":" + std::to_string(rl.rlim_cur) + ",\"open_s\":" +
           Fmt(opened_s, 2) + "}";
  }
  raw += "}";
  r.bench = "streams/idle_soak";
  r.title = "Idle soak: 1,000 streams at 5 tokens/s with heartbeats; 10,000 open idle streams";
  r.command = o.command + " (servers: " + cmds + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"soak_tokens", o.full ? "300" : "40"}, {"soak_rate", "5"},
                              {"soak_heartbeat_ms", "150"}, {"idle_streams", "10000"},
                              {"idle_hold_s", o.full ? "30" : "5"}});
  r.notes.push_back("A drop is a connection the server ended before the stream's done event; a slow-client "
                    "detach is an error event of type slow_client.");
  r.raw_json = raw;
  return r.Write(o.out_dir, "idle_soak");
}

// 6. ------------------------------------------------------------------------
namespace {

// Bytes a non-blocking loopback TCP socket accepts, written in `event_bytes`
// pieces, before send() says EAGAIN, while the peer reads nothing.
Status SocketAbsorb(size_t event_bytes, uint64_t* absorbed) {
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) return Status::FromErrno("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (::bind(ls, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(ls, 4) != 0 ||
      ::getsockname(ls, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Status st = Status::FromErrno("bind/listen");
    ::close(ls);
    return st;
  }
  int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (::connect(c, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    Status st = Status::FromErrno("connect");
    ::close(c);
    ::close(ls);
    return st;
  }
  int s = ::accept4(ls, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  ::close(ls);
  if (s < 0) {
    ::close(c);
    return Status::FromErrno("accept4");
  }
  std::string ev(event_bytes, 'x');
  uint64_t total = 0;
  int idle_rounds = 0;
  // Loopback moves data to the receiver's queue as it is sent; the window
  // may open a little after a pause, so stop after EAGAIN persists for 50 ms.
  while (idle_rounds < 50) {
    ssize_t n = ::send(s, ev.data(), ev.size(), MSG_NOSIGNAL);
    if (n > 0) {
      total += static_cast<uint64_t>(n);
      idle_rounds = 0;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      idle_rounds++;
      ::usleep(1000);
    } else {
      Status st = Status::FromErrno("send");
      ::close(s);
      ::close(c);
      return st;
    }
  }
  ::close(s);
  ::close(c);
  *absorbed = total;
  return Status::Ok();
}

std::string ReadSysctl(const std::string& path) {
  std::ifstream f(path);
  std::string v;
  std::getline(f, v);
  return v;
}

}  // namespace

Status Backpressure(const Options& o) {
  Report r;
  r.columns = {"measurement", "event size (bytes)", "absorbed p50 (KB)", "min (KB)", "max (KB)", "repeats",
               "seed's stack"};
  std::string raw = "{\"socket\":[";
  const std::vector<size_t> sizes = {133, 1024, 16384, 65536};
  const int reps = o.full ? 15 : 5;
  for (size_t si = 0; si < sizes.size(); ++si) {
    std::vector<double> kb;
    for (int k = 0; k < reps; ++k) {
      uint64_t got = 0;
      if (Status st = SocketAbsorb(sizes[si], &got); !st.ok()) return st;
      kb.push_back(static_cast<double>(got) / 1024.0);
    }
    raw += std::string(si ? "," : "") + "{\"event_bytes\":" + std::to_string(sizes[si]) + ",\"absorbed_kb\":[";
    for (size_t k = 0; k < kb.size(); ++k) raw += (k ? "," : "") + Fmt(kb[k], 1);
    raw += "]}";
    double p50 = Percentile(&kb, 50);
    r.rows.push_back({"loopback TCP socket, reader reads nothing (kernel buffers only)", std::to_string(sizes[si]),
                      Fmt(p50, 1), Fmt(kb.front(), 1), Fmt(kb.back(), 1), std::to_string(reps), "252–328 KB"});
  }
  raw += "]";
  // The server itself: an ordinary stream's bytes per token, and a
  // pause_producer stream whose client reads nothing (what did the server's
  // ring lag + output buffer + socket buffers let the producer run ahead?).
  ServerProcess server;
  std::vector<std::string> args = {"--backend", "mock", "--lab", "--mock-ttft-ms", "0", "--mock-tokens-per-s",
                                   "20000", "--policy", "pause_producer", "--linger-ms", "60000",
                                   "--max-new-tokens", "200000"};
  if (Status st = StartServer(&server, o, args); !st.ok()) return st;
  Engine engine(server.port());
  if (Status st = engine.Init(); !st.ok()) return st;
  Sessions s;
  {
    Script ordinary;
    ordinary.body = RequestBody(PromptFor(1), 5, 200);
    s.push_back(std::make_unique<StreamSession>(&engine, server.port(), ordinary, 0));
    Script stall;
    stall.body = RequestBody(PromptFor(2), 6, 200000);
    stall.stop_reading_after = 1;  // only the start event is read
    s.push_back(std::make_unique<StreamSession>(&engine, server.port(), stall, 1));
  }
  for (auto& x : s) x->Start();
  double t0 = NowUs();
  RunAll(&engine, s, 5, "backpressure server", [&] { return NowUs() - t0 > 3e6; });
  StreamSession& ord = *s[0];
  Emission stalled = GetEmission(server.port(), s[1]->stream_id);
  double per_token_event = ord.tokens.empty() ? std::nan("")
                                              : static_cast<double>(ord.token_event_bytes) / ord.tokens.size();
  double body_per_token = ord.tokens.empty() ? std::nan("") : static_cast<double>(ord.body_bytes) / ord.tokens.size();
  double wire_per_token = ord.tokens.empty() ? std::nan("") : static_cast<double>(ord.wire_bytes) / ord.tokens.size();
  double run_ahead_kb = static_cast<double>(stalled.tokens.size()) * per_token_event / 1024.0;
  s[1]->CloseNow(false);
  server.Stop();
  r.rows.push_back({"TokenWire server, pause_producer, client reads nothing: tokens produced before the "
                    "producer paused (" + std::to_string(stalled.tokens.size()) + ") × bytes per token event",
                    Fmt(per_token_event, 1), Fmt(run_ahead_kb, 1), "", "", "1", ""});
  r.rows.push_back({"ordinary stream (200 tokens): SSE bytes per token event / whole SSE body per token / "
                    "wire bytes per token (HTTP chunking included)",
                    Fmt(per_token_event, 1) + " / " + Fmt(body_per_token, 1) + " / " + Fmt(wire_per_token, 1), "",
                    "", "", "1", "73–76 B"});
  raw += ",\"server\":{\"ordinary_tokens\":" + std::to_string(ord.tokens.size()) + ",\"token_event_bytes\":" +
         std::to_string(ord.token_event_bytes) + ",\"body_bytes\":" + std::to_string(ord.body_bytes) +
         ",\"wire_bytes\":" + std::to_string(ord.wire_bytes) + ",\"stalled_tokens_produced\":" +
         std::to_string(stalled.tokens.size()) + ",\"stalled_exited\":" + (stalled.exited ? "true" : "false") + "}}";
  r.bench = "streams/backpressure";
  r.title = "Where backpressure begins: bytes absorbed before writes stop being accepted; bytes per token";
  r.command = o.command + " (server: " + server.command_line() + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"event_bytes", "[133,1024,16384,65536]"}, {"repeats", N(reps)},
                              {"tcp_wmem", Q(ReadSysctl("/proc/sys/net/ipv4/tcp_wmem"))},
                              {"tcp_rmem", Q(ReadSysctl("/proc/sys/net/ipv4/tcp_rmem"))}});
  r.notes.push_back("The socket rows are measured at the socket level by the load generator's own writer "
                    "(no lab flag was added to the server): a non-blocking loopback TCP socket with the kernel's "
                    "default (autotuned) buffers, written in event-sized pieces until send() has returned EAGAIN "
                    "for 50 ms while the peer reads nothing. tcp_wmem / tcp_rmem are in the parameters.");
  r.notes.push_back("The server row: with pause_producer the mock stops once the subscriber's lag passes "
                    "--subscriber-lag (256 events) after the connection's output buffer and the socket buffers "
                    "filled; tokens produced × the measured token-event size approximates the bytes the server "
                    "let run ahead.");
  r.raw_json = raw;
  return r.Write(o.out_dir, "backpressure");
}

}  // namespace tw::loadgen

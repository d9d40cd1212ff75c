// Scenarios 4-6: 1,000 concurrent streams, idle soak, backpressure.
#include "loadgen/scenarios.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <functional>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "backend/mock_backend.h"
#include "lib/result.h"
#include "lib/svg.h"
#include "loadgen/engine.h"
#include "loadgen/report.h"
#include "loadgen/scenario_util.h"
#include "loadgen/server_process.h"
#include "loadgen/session.h"

namespace tw::loadgen {

// 4. ------------------------------------------------------------------------
namespace {

struct ConcRun {
  std::vector<double> ttft, gaps;
  double t50, t99, tmax, g50, g99, gmax, a50, a99, amax, l50, l99, lmax;
  int64_t hwm = 0, rss_idle = 0;
  uint64_t complete = 0, errors = 0, tokens_got = 0;
  bool finished = false;
  std::string raw, server_command, loadavg;
};

Status ConcurrencyOnce(const Options& o, int rep, ConcRun* out) {
  out->loadavg = bench::LoadAvg();
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
  bool finished = RunAll(&engine, s, 120, "concurrency rep " + std::to_string(rep));
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
  out->ttft = std::move(ttft);
  out->gaps = std::move(gaps);
  out->t50 = t50; out->t99 = t99; out->tmax = tmax;
  out->g50 = g50; out->g99 = g99; out->gmax = gmax;
  out->a50 = a50; out->a99 = a99; out->amax = amax;
  out->l50 = l50; out->l99 = l99; out->lmax = lmax;
  out->hwm = hwm;
  out->rss_idle = rss_idle;
  out->complete = complete;
  out->errors = errors;
  out->tokens_got = tokens_got;
  out->finished = finished;
  out->raw = std::move(raw);
  out->server_command = server.command_line();
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

Status Concurrency(const Options& o) {
  const int streams = 1000, rate = 20, ttft_ms = 200, reps = 3;
  const int tokens = o.full ? 200 : 40;
  const double ramp_ms = 1000;
  std::vector<ConcRun> runs(reps);
  for (int rep = 0; rep < reps; ++rep) {
    if (Status st = ConcurrencyOnce(o, rep + 1, &runs[rep]); !st.ok()) return st;
  }
  bench::CdfChart c1;
  c1.title = "TTFT, 1,000 concurrent streams (mock TTFT floor 200 ms), client clock";
  c1.x_axis.label = "time to first token (ms), from connect";
  bench::HistogramChart c2;
  c2.title = "Inter-token gaps, 1,000 concurrent streams at 20 tokens/s (nominal 50 ms)";
  c2.x_axis.label = "gap between consecutive tokens (ms)";
  c2.bins = 60;
  for (int rep = 0; rep < reps; ++rep) {
    c1.sets.push_back({"rep " + std::to_string(rep + 1), runs[rep].ttft});
    c2.sets.push_back({"rep " + std::to_string(rep + 1), runs[rep].gaps});
  }
  if (Status st = WriteChart(o.out_dir, "concurrency_ttft.svg", bench::RenderCdfChart(c1)); !st.ok()) return st;
  if (Status st = WriteChart(o.out_dir, "concurrency_gaps.svg", bench::RenderHistogram(c2)); !st.ok()) return st;
  std::vector<double> hwm_mb, idle_mb;
  uint64_t complete = 0, errors = 0, tokens_got = 0;
  bool finished = true;
  std::string raw = "{\"reps\":[", loads;
  for (int rep = 0; rep < reps; ++rep) {
    hwm_mb.push_back(static_cast<double>(runs[rep].hwm) / 1024.0);
    idle_mb.push_back(static_cast<double>(runs[rep].rss_idle) / 1024.0);
    complete += runs[rep].complete;
    errors += runs[rep].errors;
    tokens_got += runs[rep].tokens_got;
    finished &= runs[rep].finished;
    raw += (rep ? "," : "") + runs[rep].raw;
    loads += (rep ? "; " : "") + runs[rep].loadavg;
  }
  raw += "]}";
  double hwm_max = *std::max_element(hwm_mb.begin(), hwm_mb.end());
  Report r;
  r.bench = "streams/concurrency";
  r.title = "1,000 concurrent streams at 20 tokens/s with a 200 ms TTFT floor";
  r.command = o.command + " (server, each repetition: " + runs[0].server_command + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"streams", N(streams)}, {"max_new_tokens", N(tokens)}, {"mock_tokens_per_s", N(rate)},
                              {"mock_ttft_ms", N(ttft_ms)}, {"ramp_ms", N(ramp_ms)}, {"repetitions", N(reps)}});
  r.columns = {"metric (median of " + std::to_string(reps) + " runs; each run in brackets)", "p50", "p99", "max",
               "target"};
  r.rows = {{"TTFT (ms, client, from connect)", MedianCell(runs, &ConcRun::t50, 1), MedianCell(runs, &ConcRun::t99, 1),
             MedianCell(runs, &ConcRun::tmax, 1), "p99 ≤ " + Fmt(kConcurrencyTtftP99Ms, 0)},
            {"inter-token gap (ms)", MedianCell(runs, &ConcRun::g50, 2), MedianCell(runs, &ConcRun::g99, 2),
             MedianCell(runs, &ConcRun::gmax, 2), ""},
            {"added inter-token latency, gap − 50 ms", MedianCell(runs, &ConcRun::a50, 2),
             MedianCell(runs, &ConcRun::a99, 2), MedianCell(runs, &ConcRun::amax, 2),
             "p99 ≤ " + Fmt(kConcurrencyAddedGapP99Ms, 0)},
            {"load generator's own timer lateness (ms, 10 ms timer)", MedianCell(runs, &ConcRun::l50, 2),
             MedianCell(runs, &ConcRun::l99, 2), MedianCell(runs, &ConcRun::lmax, 2), ""},
            {"server peak RSS (VmHWM, MB), largest run", Fmt(hwm_max, 1), "", "", "≤ " + Fmt(kConcurrencyPeakRssMb, 0)},
            {"server RSS before a run (MB)", Fmt(Percentile(&idle_mb, 50), 1), "", "", ""},
            {"streams complete / errors, all runs", std::to_string(complete) + " / " + std::to_string(errors), "", "",
             std::to_string(reps * streams) + " / 0"},
            {"tokens received, all runs", std::to_string(tokens_got), "", "", std::to_string(reps * streams * tokens)}};
  r.verdicts = ConcurrencyVerdicts({MedianOf(runs, &ConcRun::t99), MedianOf(runs, &ConcRun::a99), hwm_max, complete,
                                    errors, static_cast<uint64_t>(reps * streams), tokens_got,
                                    static_cast<uint64_t>(reps * streams * tokens)});
  if (!finished) r.notes.push_back("a run hit its deadline before every stream finished");
  r.notes.push_back("Streams start evenly over the first second. Gaps are measured by the load generator, which "
                    "shares the 2 cores with the server: its own scheduling delay is included (the timer-lateness "
                    "row shows how late its loop ran). Load average at the start of each run: " + loads + ".");
  r.charts = {{"concurrency_ttft.svg", "TTFT distribution (CDF), one curve per run"},
              {"concurrency_gaps.svg", "inter-token gap distribution, one curve per run"}};
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
    // A slow load generator meets the server's slow-client policy: capacity, judged on a machine not loaded.
    r.verdicts.push_back(bench::AllOf("soak streams completed (1,000 at 5 tokens/s)", complete, streams, true));
    r.verdicts.push_back({"soak drops / slow-client detaches / error events",
                          std::to_string(drops) + " / " + std::to_string(slow) + " / " + std::to_string(errs),
                          "0 each", drops == 0 && slow == 0 && errs == 0, true, ""});
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
    r.verdicts.push_back(bench::AllOf("idle streams held", held, streams, true));
    r.verdicts.push_back(bench::AllOf("idle streams with a heartbeat during the hold", with_hb, streams, true));
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
// `sndbuf_bytes` > 0 sets SO_SNDBUF on the writer (0: the kernel's autotuning).
Status SocketAbsorb(size_t event_bytes, int sndbuf_bytes, uint64_t* absorbed) {
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
  if (sndbuf_bytes > 0) ::setsockopt(s, SOL_SOCKET, SO_SNDBUF, &sndbuf_bytes, sizeof sndbuf_bytes);
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
  bool first = true;
  for (int sndbuf : {0, 65536}) {
    for (size_t si = 0; si < sizes.size(); ++si) {
      std::vector<double> kb;
      for (int k = 0; k < reps; ++k) {
        uint64_t got = 0;
        if (Status st = SocketAbsorb(sizes[si], sndbuf, &got); !st.ok()) return st;
        kb.push_back(static_cast<double>(got) / 1024.0);
      }
      raw += std::string(first ? "" : ",") + "{\"event_bytes\":" + std::to_string(sizes[si]) +
             ",\"so_sndbuf\":" + std::to_string(sndbuf) + ",\"absorbed_kb\":[";
      first = false;
      for (size_t k = 0; k < kb.size(); ++k) raw += (k ? "," : "") + Fmt(kb[k], 1);
      raw += "]}";
      double p50 = Percentile(&kb, 50);
      r.rows.push_back({std::string("loopback TCP socket, reader reads nothing, ") +
                            (sndbuf ? "SO_SNDBUF 64 KiB on the writer" : "kernel default buffers (autotuned)"),
                        std::to_string(sizes[si]), Fmt(p50, 1), Fmt(kb.front(), 1), Fmt(kb.back(), 1),
                        std::to_string(reps), "252–328 KB"});
    }
  }
  raw += "]";
  // The server itself: an ordinary stream's bytes per token, and a
  // pause_producer stream whose client reads nothing (how far did the ring
  // lag + output buffer + socket buffers let the producer run ahead?), with
  // the kernel's default send buffer and with --socket-send-buffer-bytes 65536.
  std::string server_cmds;
  for (int sndbuf : {0, 65536}) {
    ServerProcess server;
    std::vector<std::string> args = {"--backend", "mock", "--lab", "--mock-ttft-ms", "0", "--mock-tokens-per-s",
                                     "20000", "--policy", "pause_producer", "--linger-ms", "60000",
                                     "--max-new-tokens", "200000"};
    if (sndbuf) {
      args.push_back("--socket-send-buffer-bytes");
      args.push_back(std::to_string(sndbuf));
    }
    if (Status st = StartServer(&server, o, args); !st.ok()) return st;
    server_cmds += (sndbuf ? "; " : "") + server.command_line();
    Engine engine(server.port());
    if (Status st = engine.Init(); !st.ok()) return st;
    Sessions s;
    Script ordinary;
    ordinary.body = RequestBody(PromptFor(1), 5, 200);
    s.push_back(std::make_unique<StreamSession>(&engine, server.port(), ordinary, 0));
    Script stall;
    stall.body = RequestBody(PromptFor(2), 6, 200000);
    stall.stop_reading_after = 1;  // only the start event is read
    s.push_back(std::make_unique<StreamSession>(&engine, server.port(), stall, 1));
    for (auto& x : s) x->Start();
    double t0 = NowUs();
    RunAll(&engine, s, 5, "backpressure server", [&] { return NowUs() - t0 > 3e6; });
    StreamSession& ord = *s[0];
    Emission stalled = GetEmission(server.port(), s[1]->stream_id);
    double n = static_cast<double>(ord.tokens.size());
    double per_token_event = n > 0 ? static_cast<double>(ord.token_event_bytes) / n : std::nan("");
    double body_per_token = n > 0 ? static_cast<double>(ord.body_bytes) / n : std::nan("");
    double wire_per_token = n > 0 ? static_cast<double>(ord.wire_bytes) / n : std::nan("");
    double run_ahead_kb = static_cast<double>(stalled.tokens.size()) * per_token_event / 1024.0;
    s[1]->CloseNow(false);
    server.Stop();
    std::string label = sndbuf ? "--socket-send-buffer-bytes 65536" : "default send buffer";
    r.rows.push_back({"TokenWire server (" + label + "), pause_producer, client reads nothing: tokens produced "
                      "before the producer paused (" + std::to_string(stalled.tokens.size()) +
                      ") × bytes per token event",
                      Fmt(per_token_event, 1), Fmt(run_ahead_kb, 1), "", "", "1", ""});
    if (!sndbuf) {
      r.rows.push_back({"ordinary stream (200 tokens): SSE bytes per token event / whole SSE body per token / "
                        "wire bytes per token (HTTP chunking included)",
                        Fmt(per_token_event, 1) + " / " + Fmt(body_per_token, 1) + " / " + Fmt(wire_per_token, 1),
                        "", "", "", "1", "73–76 B"});
    }
    raw += std::string(",\"server") + (sndbuf ? "_sndbuf_65536" : "") + "\":{\"ordinary_tokens\":" +
           std::to_string(ord.tokens.size()) + ",\"token_event_bytes\":" + std::to_string(ord.token_event_bytes) +
           ",\"body_bytes\":" + std::to_string(ord.body_bytes) + ",\"wire_bytes\":" +
           std::to_string(ord.wire_bytes) + ",\"stalled_tokens_produced\":" + std::to_string(stalled.tokens.size()) +
           ",\"stalled_exited\":" + (stalled.exited ? "true" : "false") + "}";
  }
  raw += "}";
  r.bench = "streams/backpressure";
  r.title = "Where backpressure begins: bytes absorbed before writes stop being accepted; bytes per token";
  r.command = o.command + " (servers: " + server_cmds + ")";
  r.mode = o.full ? "full" : "quick";
  r.parameters_json = Params({{"event_bytes", "[133,1024,16384,65536]"}, {"so_sndbuf", "[0,65536]"}, {"repeats", N(reps)},
                              {"tcp_wmem", Q(ReadSysctl("/proc/sys/net/ipv4/tcp_wmem"))},
                              {"tcp_rmem", Q(ReadSysctl("/proc/sys/net/ipv4/tcp_rmem"))}});
  r.notes.push_back("The socket rows are measured at the socket level by the load generator's own writer "
                    "(no lab flag was added to the server): a non-blocking loopback TCP socket, with the kernel's "
                    "default (autotuned) buffers and with SO_SNDBUF 64 KiB (the kernel doubles it), written in "
                    "event-sized pieces until send() has returned EAGAIN for 50 ms while the peer reads nothing. "
                    "tcp_wmem / tcp_rmem are in the parameters: this kernel autotunes the send buffer up to 4 MiB, "
                    "which is why the default rows are ~4 MB while the 64 KiB rows land in the seed's range.");
  r.notes.push_back("The server row: with pause_producer the mock stops once the subscriber's lag passes "
                    "--subscriber-lag (256 events) after the connection's output buffer and the socket buffers "
                    "filled; tokens produced × the measured token-event size approximates the bytes the server "
                    "let run ahead.");
  r.raw_json = raw;
  return r.Write(o.out_dir, "backpressure");
}

}  // namespace tw::loadgen

// The streaming scenarios (scenarios_correctness.cc, scenarios_load.cc,
// scenarios_throughput.cc, scenarios_chaos.cc; their numbers are rendered
// into RESULTS.md). Each
// starts its own server child process (ServerProcess), drives it with an
// Engine of StreamSessions, checks what arrived against the mock's emission
// log (/lab/emissions/{id}) and MockBackend::TokenAt, and writes
// <out_dir>/<scenario>.json (report.h's convention) plus SVG charts.
//
// Thread: main only. Memory: per stream a StreamSession (tokens, timestamps).
#pragma once

#include <string>

#include "common/status.h"

namespace tw::loadgen {

struct Options {
  std::string server = "build/tokenwire";  // server binary
  std::string out_dir;                     // --out: a run's folder (required; never bench/results/)
  bool full = false;                       // BENCH=full sizes
  std::string command;                     // how the loadgen was invoked
};

Status ResumeStorm(const Options& o);
Status CancelLatency(const Options& o);
Status Abandonment(const Options& o);
Status Concurrency(const Options& o);
Status IdleSoak(const Options& o);
Status Backpressure(const Options& o);
// Token events one server core delivers and their CPU cost, beside a floor
// (scenarios_throughput.cc; needs build/bench/floor_writer).
Status Throughput(const Options& o);
// 32 streams from a real model (TW_BENCH_BACKEND, TW_BENCH_MODEL): tokens/s, TTFT.
Status ModelStreams(const Options& o);
// A mixed workload against the CPU backend for 60 s (full: 600 s), then the
// end state (scenarios_chaos.cc). Unlike the others it returns an error when
// one of its checks fails, so the loadgen exits 1.
Status Chaos(const Options& o);

}  // namespace tw::loadgen

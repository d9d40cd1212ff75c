// loadgen: TokenWire's streaming load generator (issue 3, bench section).
//
//   loadgen [--server build/tokenwire] [--out bench/results] [--full] SCENARIO...
//
// SCENARIO: resume_storm cancel_latency abandonment concurrency idle_soak
// backpressure, or all. Each one starts its own server process on an
// ephemeral loopback port, runs, and writes <out>/<scenario>.json and charts.
// A progress line goes to stderr while it runs. Exit status: 0 when every
// scenario ran (its targets met or not: the numbers are the result); 1 when
// one could not run (the server did not start, a file could not be written).
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "loadgen/report.h"
#include "loadgen/scenarios.h"

int main(int argc, char** argv) {
  tw::loadgen::Options o;
  std::vector<std::string> names;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--server" && i + 1 < argc) {
      o.server = argv[++i];
    } else if (a == "--out" && i + 1 < argc) {
      o.out_dir = argv[++i];
    } else if (a == "--full") {
      o.full = true;
    } else if (a == "--help" || a == "-h" || a.rfind("--", 0) == 0) {
      std::fprintf(stderr,
                   "usage: loadgen [--server BIN] [--out DIR] [--full] SCENARIO...\n"
                   "  scenarios: resume_storm cancel_latency abandonment concurrency idle_soak backpressure all\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      names.push_back(a);
    }
  }
  if (names.empty() || (names.size() == 1 && names[0] == "all")) {
    names = {"resume_storm", "cancel_latency", "abandonment", "concurrency", "idle_soak", "backpressure"};
  }
  // 10,000 connections need as many descriptors here and in the server (a
  // child: it inherits the limit). Raise the soft limit to the hard one.
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  int failed = 0;
  for (const auto& n : names) {
    tw::Status st;
    std::fprintf(stderr, "== %s (%s)\n", n.c_str(), o.full ? "full" : "quick");
    tw::loadgen::MarkScenarioStart();
    if (n == "resume_storm") st = tw::loadgen::ResumeStorm(o);
    else if (n == "cancel_latency") st = tw::loadgen::CancelLatency(o);
    else if (n == "abandonment") st = tw::loadgen::Abandonment(o);
    else if (n == "concurrency") st = tw::loadgen::Concurrency(o);
    else if (n == "idle_soak") st = tw::loadgen::IdleSoak(o);
    else if (n == "backpressure") st = tw::loadgen::Backpressure(o);
    else st = tw::Status::Error("unknown scenario '" + n + "'");
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", n.c_str(), st.message().c_str());
      failed++;
    }
  }
  return failed ? 1 : 0;
}

// ws_loadgen: the WebSocket twin of bench/loadgen (issue 6's WebSocket half).
//
//   ws_loadgen [--server build/tokenwire] [--out bench/results] [--full] SCENARIO...
//
// SCENARIO: ws_resume_storm ws_concurrency, or all. Each one starts its own
// server process on an ephemeral loopback port, runs, and writes
// <out>/<scenario>.json and charts. A progress line goes to stderr while it
// runs. Exit status: 0 when every scenario ran (its targets met or not: the
// numbers are the result); 1 when one could not run; 2 on a usage error.
#include <sys/resource.h>

#include <cstdio>
#include <string>
#include <vector>

#include "loadgen/report.h"
#include "ws_loadgen/ws_scenarios.h"

int main(int argc, char** argv) {
  tw::ws_loadgen::Options o;
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
                   "usage: ws_loadgen [--server BIN] [--out DIR] [--full] SCENARIO...\n"
                   "  scenarios: ws_resume_storm ws_concurrency all\n");
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      names.push_back(a);
    }
  }
  if (names.empty() || (names.size() == 1 && names[0] == "all")) names = {"ws_resume_storm", "ws_concurrency"};
  // 1,000 connections need as many descriptors here and in the server (a
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
    if (n == "ws_resume_storm") st = tw::ws_loadgen::WsResumeStorm(o);
    else if (n == "ws_concurrency") st = tw::ws_loadgen::WsConcurrency(o);
    else st = tw::Status::Error("unknown scenario '" + n + "'");
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", n.c_str(), st.message().c_str());
      failed++;
    }
  }
  return failed ? 1 : 0;
}

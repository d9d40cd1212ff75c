// ws_loadgen: the WebSocket twin of bench/loadgen.
//
//   ws_loadgen [--server build/tokenwire] --out DIR [--full] SCENARIO...
//
// SCENARIO: ws_resume_storm ws_concurrency, or all. Each one starts its own
// server process on an ephemeral loopback port, runs, and writes
// <out>/<scenario>.json and charts, then prints its verdicts (PASS / MISS
// against each target, or not judged on a loaded machine: bench/lib/verdict.h).
// A progress line goes to stderr while it runs. Exit status: 0 when every scenario ran (its targets met or not: the
// numbers are the result); 1 when one could not run; 2 on a usage error.
#include "loadgen/cli.h"
#include "ws_loadgen/ws_scenarios.h"

int main(int argc, char** argv) {
  return tw::loadgen::LoadgenMain(argc, argv, "ws_loadgen",
                                  {{"ws_resume_storm", tw::ws_loadgen::WsResumeStorm},
                                   {"ws_concurrency", tw::ws_loadgen::WsConcurrency}});
}

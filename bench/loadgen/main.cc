// loadgen: TokenWire's streaming load generator (the streams scenarios of
// `make bench`).
//
//   loadgen [--server build/tokenwire] --out DIR [--full] SCENARIO...
//
// SCENARIO: resume_storm cancel_latency abandonment concurrency idle_soak
// backpressure throughput chaos, or all. Each one starts its own server process on an
// ephemeral loopback port, runs, and writes <out>/<scenario>.json and charts,
// then prints its verdicts (PASS / MISS against each target, or not judged on
// a loaded machine: bench/lib/verdict.h). A progress line goes to stderr while
// it runs. Exit status: 0 when every
// scenario ran (its targets met or not: the numbers are the result); 1 when
// one could not run (the server did not start, a file could not be written),
// or when one of chaos's checks failed (its result file is written first).
#include <string>

#include "loadgen/cli.h"

int main(int argc, char** argv) {
  using namespace tw::loadgen;
  // model_streams needs a real model (bench/gpu/run.sh): not part of "all".
  for (int i = 1; i < argc; i++) {
    if (std::string(argv[i]) == "model_streams") return LoadgenMain(argc, argv, "loadgen", {{"model_streams", ModelStreams}});
  }
  return LoadgenMain(argc, argv, "loadgen",
                     {{"resume_storm", ResumeStorm},
                      {"cancel_latency", CancelLatency},
                      {"abandonment", Abandonment},
                      {"concurrency", Concurrency},
                      {"idle_soak", IdleSoak},
                      {"backpressure", Backpressure},
                      {"throughput", Throughput},
                      {"chaos", Chaos}});
}

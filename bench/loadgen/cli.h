// The command line both load generators share (bench/loadgen for SSE,
// bench/ws_loadgen for WebSocket):
//
//   PROGRAM [--server build/tokenwire] --out DIR [--full] SCENARIO...
//
// SCENARIO: a name from the program's table, or all (every one, in table
// order). DIR is the run's folder (bench/run.sh makes bench/runs/<date>/).
// Raises the descriptor soft limit to the hard one (thousands of
// connections here and in the server child, which inherits it), then runs
// each scenario; each prints its verdicts as it writes its result. Exit status: 0 when every scenario ran (its targets met or
// not: the numbers are the result); 1 when one could not run (the server did
// not start, a file could not be written) or, for a scenario made of
// pass/fail checks (chaos), when a check failed; 2 on a usage error.
#pragma once

#include <vector>

#include "common/status.h"
#include "loadgen/scenarios.h"

namespace tw::loadgen {

struct Scenario {
  const char* name;
  Status (*run)(const Options& o);
};

int LoadgenMain(int argc, char** argv, const char* program, const std::vector<Scenario>& scenarios);

}  // namespace tw::loadgen

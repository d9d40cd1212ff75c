// Two stream scenarios over WebSocket (resume storm, 1,000 streams), with exactly the
// parameters of their SSE twins in bench/loadgen/scenarios_*.cc (quick and
// full), so the two transports can be read side by side:
//
//   ws_resume_storm  200 streams x 6 forced disconnects (FIN/RST alternating),
//                    each followed by a new connection and
//                    {"op":"resume","after":last_seq}; tokens checked against
//                    the emission log (/lab/emissions) and MockBackend::TokenAt
//   ws_concurrency   1,000 streams at 20 tok/s, 200 ms TTFT floor, started
//                    over 1 s, 3 repetitions: TTFT, inter-token gaps, VmHWM
//
// Each starts its own server child process (bench/loadgen's ServerProcess),
// drives it with a WsEngine of WsStreams, and writes <out>/<scenario>.json in
// the bench convention (bench/loadgen/report.h) plus SVG charts; the SSE
// numbers are read from <out>/resume_storm.json and <out>/concurrency.json
// (whatever the SSE load generator last wrote) and shown beside ours.
//
// Thread: main only. Memory: per stream a WsStream (tokens, timestamps).
#pragma once

#include <string>

#include "common/status.h"
#include "loadgen/scenarios.h"

namespace tw::ws_loadgen {

// The same options as the SSE load generator's.
using Options = loadgen::Options;

Status WsResumeStorm(const Options& o);
Status WsConcurrency(const Options& o);

}  // namespace tw::ws_loadgen

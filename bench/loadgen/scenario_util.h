// Shared pieces of the streaming scenarios (scenarios_*.cc): request bodies
// and prompts, running an Engine of StreamSessions with a progress line,
// reading the mock's emission log, small JSON and statistics helpers, and
// starting the server child.
//
// Thread: main only. Allocation: what the caller's sessions hold.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "lib/stream_targets.h"
#include "loadgen/engine.h"
#include "loadgen/scenarios.h"
#include "loadgen/server_process.h"
#include "loadgen/session.h"

namespace tw::loadgen {

using Sessions = std::vector<std::unique_ptr<StreamSession>>;

// {"prompt_tokens":[...],"seed":S,"max_new_tokens":N[,"policy":P]}
std::string RequestBody(const std::vector<int32_t>& prompt, uint64_t seed, int max_new_tokens,
                        const std::string& policy = "");
// A distinct four-token prompt for stream i.
std::vector<int32_t> PromptFor(size_t i);

// Runs the engine until every session has ended (no connection open and no
// resume pending), or `extra_done()` when given, or `seconds` pass; prints a
// progress line on stderr. False on the deadline.
bool RunAll(Engine* e, const Sessions& s, double seconds, const std::string& label,
            const std::function<bool()>& extra_done = nullptr);

struct Emission {
  bool found = false;
  std::vector<int32_t> tokens;
  bool exited = false;
  std::string finish_reason;
  int64_t cancel_to_exit_us = -1;
};
// GET /lab/emissions/{id} (blocking; after a run). found=false if absent.
Emission GetEmission(uint16_t port, const std::string& id);

// A JSON object from (key, already-serialized value) pairs.
std::string Params(const std::vector<std::pair<std::string, std::string>>& kv);
std::string Q(const std::string& s);  // a JSON string literal
std::string N(double v);              // a JSON number, null for NaN

Status WriteChart(const std::string& dir, const std::string& file, const std::string& svg);
// p50, p99 (nearest rank) and max of v; NaN when empty.
void Stats4(std::vector<double> v, double* p50, double* p99, double* mx);
Status StartServer(ServerProcess* server, const Options& o, const std::vector<std::string>& args);

// The targets the SSE scenarios share with their WebSocket twins (bench/lib/stream_targets.h).
using bench::ConcurrencyTally;
using bench::ConcurrencyVerdicts;
using bench::kConcurrencyAddedGapP99Ms;
using bench::kConcurrencyPeakRssMb;
using bench::kConcurrencyTtftP99Ms;
using bench::ResumeStormVerdicts;
using bench::StormTally;

}  // namespace tw::loadgen

// The targets of the streams scenarios that the SSE load generator
// (bench/loadgen) and its WebSocket twin (bench/ws_loadgen) share, stated
// once, and the verdicts (bench/lib/verdict.h) each scenario records against
// them. tests/bench checks what they say.
//
// Thread-safety: any thread (no shared state). Never allocates beyond the
// verdicts it returns.
#pragma once

#include <cstdint>
#include <vector>

#include "verdict.h"

namespace tw::bench {

// A resume storm's counts over all its streams.
struct StormTally {
  uint64_t streams = 0, complete = 0;
  uint64_t reconnects = 0, planned_reconnects = 0;  // made; streams x disconnects per stream
  uint64_t expected = 0, received = 0;              // tokens
  uint64_t lost = 0, duplicates = 0, gaps = 0, vs_log = 0, vs_ref = 0, failed = 0, log_missing = 0;
};
// Every stream completed, every planned reconnection made (fewer means the
// storm tested less than it claims), every token received, none lost,
// duplicated or wrong: correctness checks, judged at any load.
std::vector<Verdict> ResumeStormVerdicts(const StormTally& t);

// 1,000 concurrent streams: the targets, in the rows' "target" cells too.
constexpr double kConcurrencyTtftP99Ms = 210;  // mock TTFT floor 200 ms + 10
constexpr double kConcurrencyAddedGapP99Ms = 5;
constexpr double kConcurrencyPeakRssMb = 100;
struct ConcurrencyTally {
  double ttft_p99_ms, added_gap_p99_ms, peak_rss_mb;  // medians of the runs' p99; the largest run's peak
  uint64_t complete, errors, streams;                 // all runs
  uint64_t tokens, planned_tokens;
};
std::vector<Verdict> ConcurrencyVerdicts(const ConcurrencyTally& t);

}  // namespace tw::bench

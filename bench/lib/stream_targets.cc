#include "stream_targets.h"

namespace tw::bench {

std::vector<Verdict> ResumeStormVerdicts(const StormTally& t) {
  return {AllOf("streams completed (done, finish length)", t.complete, t.streams, false),
          AllOf("reconnections made", t.reconnects, t.planned_reconnects, false),
          AllOf("tokens received", t.received, t.expected, false),
          NoneOfEach("tokens lost / duplicated / id gaps / differing from the emission log / from TokenAt; "
                     "failed streams / emission logs missing",
                     {t.lost, t.duplicates, t.gaps, t.vs_log, t.vs_ref, t.failed, t.log_missing})};
}

std::vector<Verdict> ConcurrencyVerdicts(const ConcurrencyTally& t) {
  // A slow load generator meets the server's slow-client policy: judged on a machine not loaded.
  const Verdict complete{"streams complete / error events, all runs",
                         Thousands(t.complete) + " / " + Thousands(t.errors), Thousands(t.streams) + " / 0",
                         t.complete == t.streams && t.errors == 0, true, ""};
  return {AtMost("TTFT p99 (median of the runs)", t.ttft_p99_ms, kConcurrencyTtftP99Ms, 1, "ms"),
          AtMost("added inter-token latency p99 (median of the runs)", t.added_gap_p99_ms, kConcurrencyAddedGapP99Ms,
                 2, "ms"),
          AtMost("server peak RSS", t.peak_rss_mb, kConcurrencyPeakRssMb, 1, "MB"), complete,
          AllOf("tokens received, all runs", t.tokens, t.planned_tokens, true)};
}

}  // namespace tw::bench

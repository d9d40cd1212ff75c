// Verdicts: each bench result states its targets once, where it measures
// them, as a "verdicts" array in its result file:
//
//   "verdicts": [{"check": "idle streams held", "measured": "9,478 of 10,000",
//                 "target": "10,000", "pass": false, "load_sensitive": true,
//                 "not_judged": ""}, ...]
//
// and build/bench/render --verdicts (or a bench program right after it writes
// its file) reads them back and says, for each, PASS or MISS against the
// target, or "not judged" and why. The one rule for a machine too loaded to
// judge lives here (TooLoaded).
//
// Thread-safety: any thread (no shared state). Never exits; never writes files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "json/json.h"

namespace tw::bench {

struct Verdict {
  std::string check;     // "idle streams held"
  std::string measured;  // "9,478 of 10,000"
  std::string target;    // "10,000", "≤ 5 ms"
  bool pass = false;
  // A timing or capacity target, which other work on the machine can make a
  // run miss: judged only when the machine was not loaded (TooLoaded). False
  // for a correctness check (a lost token is a bug at any load).
  bool load_sensitive = true;
  // Non-empty: why this run cannot judge the target whatever the load (the
  // quick mode's tiny model, for a target set for the GPT-2-small shape).
  std::string not_judged;
};

std::string Thousands(uint64_t v);  // 10000 -> "10,000"

// Builders: the target's number appears once, at the call. `unit` follows
// each number ("ms" after a space; "x" and "%" joined; "" for none);
// decimals apply to both numbers.
Verdict AtLeast(const std::string& check, double measured, double target, int decimals, const std::string& unit);
Verdict AtMost(const std::string& check, double measured, double target, int decimals, const std::string& unit);
// Every one of `want` happened: "9,478 of 10,000", target "10,000".
Verdict AllOf(const std::string& check, uint64_t got, uint64_t want, bool load_sensitive);
// A count that must be zero (lost tokens, gaps): a correctness check.
Verdict NoneOf(const std::string& check, uint64_t count);
// Several such counts in one line ("tokens lost / duplicated": "0 / 0", target "0 each").
Verdict NoneOfEach(const std::string& check, const std::vector<uint64_t>& counts);

// Writes `"verdicts": [...]` into the object `w` is inside.
void WriteVerdicts(json::Writer* w, const std::vector<Verdict>& verdicts);

// ---- Reading them back --------------------------------------------------------

// The 1-minute load average at a scenario's start and end (NaN if the result
// does not record it) and the machine's cores (0 if unknown).
struct MachineLoad {
  double start, end;
  int cores;
};
MachineLoad LoadOf(const json::Value& result);

// The rule: a machine is too loaded to judge a load-sensitive target when its
// 1-minute load average was at least its core count at the scenario's start
// (other work already filled every core before the bench's own server and
// load generator began), or at least twice its core count at the end (the
// bench's own processes account for up to one load per core).
bool TooLoaded(const MachineLoad& load);
std::string LoadRule();  // the rule in one sentence, for the verdicts' heading

struct VerdictTally {
  int pass = 0, miss = 0, not_judged = 0;
  int without = 0;  // results with no target
};

// One line per verdict of `result` ("idle streams held: 9,478 of 10,000 —
// MISS (target 10,000)"), counted into *tally; a result with an empty
// "verdicts" array gives one line saying it states no target, and one
// without the field one saying it records none.
std::vector<std::string> VerdictLines(const json::Value& result, VerdictTally* tally);
// "streams/idle_soak (quick mode; load average 0.39 → 0.30 on 2 cores)": the
// heading above a result's lines. `file` names it when the result has no "bench".
std::string VerdictHeading(const json::Value& result, const std::string& file);
// The heading, then each line indented by two spaces; every line ends in '\n'.
std::string VerdictBlock(const json::Value& result, const std::string& file, VerdictTally* tally);

}  // namespace tw::bench

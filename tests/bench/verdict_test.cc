// The verdicts a bench result records against its targets, as
// build/bench/render --verdicts reads them back (bench/lib/verdict.h): PASS
// and MISS with the measured value and the target, "not judged" on a machine
// too loaded for a timing target, a correctness check judged at any load, and
// the streams scenarios' shared targets (bench/lib/stream_targets.h): a
// resume storm that missed reconnections says so.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../bench/lib/stream_targets.h"
#include "../../bench/lib/verdict.h"
#include "json/json.h"

namespace tw::bench {
namespace {

// A result file as a scenario writes it: the machine, the load average at its
// start and end, and its verdicts.
json::Value Result(const std::vector<Verdict>& verdicts, const std::string& load_start, const std::string& load_end,
                   int cores = 2) {
  std::string text;
  json::Writer w(&text);
  w.BeginObject();
  w.Key("bench");
  w.String("streams/example");
  w.Key("machine");
  w.BeginObject();
  w.Key("cores");
  w.Int(cores);
  w.EndObject();
  w.Key("mode");
  w.String("quick");
  w.Key("loadavg_start");
  w.String(load_start + " 0.50 0.50");
  w.Key("loadavg_end");
  w.String(load_end + " 0.50 0.50");
  WriteVerdicts(&w, verdicts);
  w.EndObject();
  json::Value v;
  EXPECT_TRUE(json::Parse(text, &v).ok()) << text;
  return v;
}

std::vector<std::string> Lines(const json::Value& result, VerdictTally* tally) {
  return VerdictLines(result, tally);
}

TEST(Verdicts, CountsAreWrittenWithThousandsSeparators) {
  EXPECT_EQ(Thousands(0), "0");
  EXPECT_EQ(Thousands(999), "999");
  EXPECT_EQ(Thousands(1000), "1,000");
  EXPECT_EQ(Thousands(9478), "9,478");
  EXPECT_EQ(Thousands(1234567), "1,234,567");
}

TEST(Verdicts, AMissSaysTheMeasuredValueAndTheTarget) {
  VerdictTally tally;
  auto lines = Lines(Result({AllOf("idle streams held", 9478, 10000, true)}, "0.40", "0.90"), &tally);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "idle streams held: 9,478 of 10,000 — MISS (target 10,000)");
  EXPECT_EQ(tally.miss, 1);
  EXPECT_EQ(tally.pass, 0);
}

TEST(Verdicts, APassSaysSoWithItsTarget) {
  VerdictTally tally;
  auto lines = Lines(Result({AtMost("TTFT p99", 205.04, 210, 1, "ms")}, "0.40", "0.90"), &tally);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "TTFT p99: 205.0 ms — PASS (target ≤ 210.0 ms)");
  EXPECT_EQ(tally.pass, 1);
}

TEST(Verdicts, ALoadedMachineLeavesATimingTargetNotJudged) {
  // 3.1 at the start on 2 cores: other work filled both cores before the bench began.
  VerdictTally tally;
  auto lines = Lines(Result({AllOf("idle streams held", 9478, 10000, true)}, "3.10", "3.40"), &tally);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            "idle streams held: 9,478 of 10,000 — not judged: machine loaded (load 3.10 on 2 cores; target 10,000)");
  EXPECT_EQ(tally.not_judged, 1);
  EXPECT_EQ(tally.miss, 0);
}

TEST(Verdicts, TheLoadRuleReadsTheStartAgainstTheCoresAndTheEndAgainstTwiceThem) {
  EXPECT_FALSE(TooLoaded({1.99, 3.99, 2}));
  EXPECT_TRUE(TooLoaded({2.00, 0.50, 2}));  // the start at the core count
  EXPECT_TRUE(TooLoaded({0.50, 4.00, 2}));  // the end at twice the core count
  EXPECT_FALSE(TooLoaded({7.00, 7.00, 8}));
  EXPECT_FALSE(TooLoaded({9.00, 9.00, 0}));  // cores unknown: nothing to judge by
  // The end alone names the load when it broke the rule.
  VerdictTally tally;
  auto lines = Lines(Result({AtMost("TTFT p99", 250, 210, 1, "ms")}, "0.50", "4.20"), &tally);
  EXPECT_EQ(lines[0], "TTFT p99: 250.0 ms — not judged: machine loaded (load 4.20 on 2 cores; target ≤ 210.0 ms)");
}

TEST(Verdicts, ACorrectnessCheckIsJudgedAtAnyLoad) {
  VerdictTally tally;
  auto lines = Lines(Result({NoneOf("tokens lost", 3)}, "5.00", "6.00"), &tally);
  EXPECT_EQ(lines[0], "tokens lost: 3 — MISS (target 0)");
  EXPECT_EQ(tally.miss, 1);
}

TEST(Verdicts, AResumeStormThatMissedReconnectionsSaysSoEvenOnALoadedMachine) {
  StormTally t;
  t.streams = t.complete = 200;
  t.reconnects = 1186;
  t.planned_reconnects = 1200;
  t.expected = t.received = 12000;
  const std::vector<Verdict> v = ResumeStormVerdicts(t);
  VerdictTally tally;
  auto lines = Lines(Result(v, "3.10", "3.20"), &tally);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "streams completed (done, finish length): 200 of 200 — PASS (target 200)");
  EXPECT_EQ(lines[1], "reconnections made: 1,186 of 1,200 — MISS (target 1,200)");
  EXPECT_EQ(lines[2], "tokens received: 12,000 of 12,000 — PASS (target 12,000)");
  EXPECT_NE(lines[3].find("0 / 0 / 0 / 0 / 0 / 0 / 0 — PASS (target 0 each)"), std::string::npos) << lines[3];
  EXPECT_EQ(tally.miss, 1);
  EXPECT_EQ(tally.pass, 3);
  EXPECT_EQ(tally.not_judged, 0);
}

TEST(Verdicts, TheConcurrencyTargetsAreJudgedOnAnIdleMachineOnly) {
  const ConcurrencyTally t{221.9, 0.88, 29.6, 3000, 0, 3000, 120000, 120000};
  VerdictTally idle, loaded;
  auto a = Lines(Result(ConcurrencyVerdicts(t), "0.18", "0.38"), &idle);
  auto b = Lines(Result(ConcurrencyVerdicts(t), "2.50", "2.90"), &loaded);
  EXPECT_EQ(a[0], "TTFT p99 (median of the runs): 221.9 ms — MISS (target ≤ 210.0 ms)");
  EXPECT_EQ(idle.miss, 1);
  EXPECT_EQ(idle.pass, 4);
  EXPECT_EQ(loaded.not_judged, 5);
  EXPECT_NE(b[0].find("not judged: machine loaded (load 2.50 on 2 cores"), std::string::npos) << b[0];
}

TEST(Verdicts, AReasonGivenByTheBenchLeavesTheTargetNotJudged) {
  Verdict v = AtLeast("32 streams over back to back", 3.72, 10, 2, "x");
  v.not_judged = "quick mode's tiny model";
  VerdictTally tally;
  auto lines = Lines(Result({v}, "0.10", "0.20"), &tally);
  EXPECT_EQ(lines[0], "32 streams over back to back: 3.72x — not judged: quick mode's tiny model (target ≥ 10.00x)");
  EXPECT_EQ(tally.not_judged, 1);
}

TEST(Verdicts, AResultWithoutTargetsSaysWhichKindItIs) {
  VerdictTally tally;
  EXPECT_EQ(Lines(Result({}, "0.1", "0.1"), &tally)[0], "no target stated (a measurement)");
  json::Value old;
  ASSERT_TRUE(json::Parse(R"({"bench":"streams/idle_soak","rows":[]})", &old).ok());
  EXPECT_EQ(Lines(old, &tally)[0], "no verdicts recorded (a result written before results carried their targets)");
  EXPECT_EQ(tally.without, 2);
}

TEST(Verdicts, TheHeadingNamesTheBenchTheModeAndTheLoad) {
  EXPECT_EQ(VerdictHeading(Result({}, "0.39", "0.30"), "x.json"),
            "streams/example (quick mode; load average 0.39 → 0.30 on 2 cores)");
  json::Value bare;
  ASSERT_TRUE(json::Parse(R"({"benchmark":"http_keepalive_healthz"})", &bare).ok());
  EXPECT_EQ(VerdictHeading(bare, "http-1.json"), "http-1.json");
}

}  // namespace
}  // namespace tw::bench

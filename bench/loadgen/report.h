// Results of one bench scenario, written as one JSON file that follows the
// bench/results convention read by bench/render (RESULTS.md):
//
//   {"bench": "streams/<scenario>", "title": "...", "command": "...",
//    "machine": {"cpu": "...", "cores": N}, "date": "UTC ISO-8601",
//    "mode": "quick|full", "parameters": {...},
//    "loadavg_start": "1.0 0.8 0.5", "loadavg_end": "...",
//    "columns": ["...", ...], "rows": [["...", ...], ...],   // strings, shown as is
//    "notes": ["...", ...], "charts": [{"file": "x.svg", "caption": "..."}],
//    "verdicts": [{"check": ..., "measured": ..., "target": ..., "pass": ...}],  // bench/lib/verdict.h
//    "raw": {...}}                                          // per-stream measurements
//
// Also the small statistics the scenarios share (nearest-rank percentiles).
// Thread: any (no shared state). Never exits; file errors come back as Status.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "lib/verdict.h"

namespace tw::loadgen {

// Nearest-rank percentile (p in [0, 100]) of `v` (sorted in place); NaN if empty.
double Percentile(std::vector<double>* v, double p);

std::string Fmt(double v, int decimals);  // fixed decimals; "n/a" for NaN

struct Report {
  std::string bench;     // "streams/resume_storm"
  std::string title;
  std::string command;
  std::string mode;
  std::string parameters_json = "{}";  // an object, already serialized
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> notes;
  std::vector<std::pair<std::string, std::string>> charts;  // file, caption
  std::vector<bench::Verdict> verdicts;  // each target stated once, here; empty: a measurement
  std::string raw_json = "{}";

  // Writes dir/<file_stem>.json; machine and date are filled in here. Then
  // prints the verdicts on stderr (bench/lib/verdict.h's rule for a loaded machine).
  Status Write(const std::string& dir, const std::string& file_stem) const;
};

Status WriteTextFile(const std::string& path, const std::string& text);

// Remembers the load average at a scenario's start; Report::Write records it
// with the load average at the end (the machine is shared: say how busy it was).
void MarkScenarioStart();

}  // namespace tw::loadgen

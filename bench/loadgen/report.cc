#include "loadgen/report.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "json/json.h"
#include "lib/result.h"

namespace tw::loadgen {

double Percentile(std::vector<double>* v, double p) {
  if (v->empty()) return std::nan("");
  std::sort(v->begin(), v->end());
  double rank = std::ceil(p / 100.0 * static_cast<double>(v->size()));
  size_t i = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return (*v)[std::min(i, v->size() - 1)];
}

std::string Fmt(double v, int decimals) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Status::Error("open " + path + ": " + std::strerror(errno));
  f << text;
  f.close();
  if (!f) return Status::Error("write " + path + " failed");
  return Status::Ok();
}

namespace {
std::string g_loadavg_start;
}

void MarkScenarioStart() { g_loadavg_start = bench::LoadAvg(); }

Status Report::Write(const std::string& dir, const std::string& file_stem) const {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  w.Key("bench");
  w.String(bench);
  w.Key("title");
  w.String(title);
  w.Key("command");
  w.String(command);
  w.Key("machine");
  w.BeginObject();
  w.Key("cpu");
  w.String(bench::MachineCpu());
  w.Key("cores");
  w.Int(bench::MachineCores());
  w.EndObject();
  w.Key("date");
  w.String(bench::UtcNow());
  w.Key("mode");
  w.String(mode);
  w.Key("loadavg_start");
  w.String(g_loadavg_start);
  w.Key("loadavg_end");
  w.String(bench::LoadAvg());
  w.Key("parameters");
  w.Raw(parameters_json);
  w.Key("columns");
  w.BeginArray();
  for (const auto& c : columns) w.String(c);
  w.EndArray();
  w.Key("rows");
  w.BeginArray();
  for (const auto& r : rows) {
    w.BeginArray();
    for (const auto& cell : r) w.String(cell);
    w.EndArray();
  }
  w.EndArray();
  bench::WriteNotesAndCharts(&w, notes, charts);
  bench::WriteVerdicts(&w, verdicts);
  w.Key("raw");
  w.Raw(raw_json);
  w.EndObject();
  out += "\n";
  // Check what we wrote parses back (Raw pieces are ours, but be sure).
  json::Value check;
  json::ParseLimits limits;
  limits.max_bytes = 256u << 20;
  if (Status st = json::Parse(out, &check, limits); !st.ok()) {
    return Status::Error("report " + file_stem + " is not valid JSON: " + st.message());
  }
  if (Status st = WriteTextFile(dir + "/" + file_stem + ".json", out); !st.ok()) return st;
  bench::VerdictTally tally;
  std::fprintf(stderr, "%s", bench::VerdictBlock(check, file_stem + ".json", &tally).c_str());
  return Status::Ok();
}

}  // namespace tw::loadgen

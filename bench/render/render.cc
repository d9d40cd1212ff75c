// render: rewrites the generated part of RESULTS.md from the raw results in
// bench/results/, so that every number in RESULTS.md comes from a committed
// result file and the command recorded in it; or prints the verdicts of a
// run's results against their targets.
//
//   render [--results bench/results] [--out RESULTS.md]
//   render --results DIR --verdicts [FILE.json...]
//
// --verdicts: for each result file of DIR (or each FILE named), its
// "verdicts" (bench/lib/verdict.h): PASS or MISS against each target, or not
// judged (a machine too loaded, by the one rule there, or a mode the target
// is not set for), with the load average and the core count; then a count of
// each. Exit status 0 whatever the verdicts (the numbers are the result).
//
// Files that follow the bench convention (see bench/loadgen/report.h: "bench",
// "title", "command", "machine", "date", "columns", "rows", "notes",
// "charts") are rendered as they are: a heading, the provenance line, the
// table, the notes and the charts (SVG files next to the JSON). Two other
// shapes are adapted here: bench/http/run.sh's http-*.json and
// bench/cpu_model/run.sh's cpu_model-*.json (the newest file of each kind).
// Anything else is listed as not rendered.
//
// RESULTS.md keeps whatever is outside the markers
//   <!-- BEGIN GENERATED (bench/render) -->  ...  <!-- END GENERATED (bench/render) -->
// and the text between them is replaced (the file is created if missing).
// Chart links are relative to the output file's folder (a run's RESULTS.md
// sits beside its charts). Exit status: 0 on success; 1 if a file cannot be
// read or written, or a results file is not valid JSON; 2 on a usage error.
#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "json/json.h"
#include "lib/svg.h"
#include "lib/verdict.h"

namespace {

using tw::json::Value;

const char kBegin[] = "<!-- BEGIN GENERATED (bench/render) -->";
const char kEnd[] = "<!-- END GENERATED (bench/render) -->";

bool ReadFile(const std::string& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

std::string Str(const Value* v) {
  if (!v) return "";
  if (v->is_string()) return v->as_string();
  if (v->is_null()) return "n/a";
  return tw::json::Serialize(*v);
}

std::string Cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

// a / b (or b / a when `invert`) as "1.23x"; "n/a" when either is missing.
std::string Ratio(const Value* a, const Value* b, bool invert) {
  if (!a || !b || !a->is_number() || !b->is_number() || a->as_double() <= 0 || b->as_double() <= 0) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2fx", invert ? b->as_double() / a->as_double() : a->as_double() / b->as_double());
  return buf;
}

std::string Num(const Value* v, int decimals) {
  if (!v || !v->is_number()) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v->as_double());
  return buf;
}

void Table(std::string* md, const std::vector<std::string>& cols, const std::vector<std::vector<std::string>>& rows) {
  *md += "|";
  for (const auto& c : cols) *md += " " + Cell(c) + " |";
  *md += "\n|";
  for (size_t i = 0; i < cols.size(); ++i) *md += "---|";
  *md += "\n";
  for (const auto& r : rows) {
    *md += "|";
    for (size_t i = 0; i < cols.size(); ++i) *md += " " + Cell(i < r.size() ? r[i] : "") + " |";
    *md += "\n";
  }
  *md += "\n";
}

// The result's verdicts as a list (nothing for a result that records none).
void RenderVerdicts(std::string* md, const Value& d) {
  const Value* v = d.Find("verdicts");
  if (!v || !v->is_array() || v->items().empty()) return;
  tw::bench::VerdictTally tally;
  const tw::bench::MachineLoad load = tw::bench::LoadOf(d);
  char buf[128];
  std::snprintf(buf, sizeof buf, "Verdicts (load average %.2f → %.2f on %d cores):\n\n", load.start, load.end,
                load.cores);
  *md += buf;
  for (const std::string& line : tw::bench::VerdictLines(d, &tally)) *md += "- " + line + "\n";
  *md += "\n";
}

// `charts` is the prefix of a chart's link: "" when the output sits in the results folder.
void RenderConvention(std::string* md, const Value& d, const std::string& file, const std::string& charts) {
  *md += "### " + Str(d.Find("title")) + "\n\n";
  const Value* m = d.Find("machine");
  std::string machine = "unknown machine";
  if (m && m->Find("gpu")) machine = Str(m->Find("gpu"));  // bench/gpu/gpu_bench names the GPU alone
  else if (m) machine = Str(m->Find("cpu")) + ", " + Str(m->Find("cores")) + " cores";
  *md += "`" + file + "` · " + Str(d.Find("mode")) + " mode · " + Str(d.Find("date")) + " · " + machine;
  if (d.Find("loadavg_start")) {
    *md += " · load average " + Str(d.Find("loadavg_start")) + " → " + Str(d.Find("loadavg_end"));
  }
  *md += "\n\nCommand: `" + Str(d.Find("command")) + "`\n\n";
  std::vector<std::string> cols;
  if (const Value* c = d.Find("columns"); c && c->is_array()) {
    for (const auto& x : c->items()) cols.push_back(Str(&x));
  }
  std::vector<std::vector<std::string>> rows;
  if (const Value* r = d.Find("rows"); r && r->is_array()) {
    for (const auto& row : r->items()) {
      std::vector<std::string> cells;
      for (const auto& x : row.items()) cells.push_back(Str(&x));
      rows.push_back(cells);
    }
  }
  Table(md, cols, rows);
  if (const Value* n = d.Find("notes"); n && n->is_array()) {
    for (const auto& x : n->items()) *md += "- " + Str(&x) + "\n";
    if (!n->items().empty()) *md += "\n";
  }
  if (const Value* c = d.Find("charts"); c && c->is_array()) {
    for (const auto& x : c->items()) {
      *md += "![" + Str(x.Find("caption")) + "](" + charts + Str(x.Find("file")) + ")\n";
    }
    if (!c->items().empty()) *md += "\n";
  }
  RenderVerdicts(md, d);
}

// bench/http/run.sh: {"benchmark":"http_keepalive_healthz", "median":{...}, "runs":[...]}
void RenderHttp(std::string* md, const Value& d, const std::string& file) {
  *md += "### HTTP keep-alive GET /healthz: TokenWire vs nginx (wrk)\n\n";
  // "cpu": written since bench/http/run.sh names the CPU; older files have only "machine".
  const std::string cpu = d.Find("cpu") ? Str(d.Find("cpu")) + ", " : "";
  *md += "`" + file + "` · " + Str(d.Find("date")) + " · " + cpu + Str(d.Find("machine")) + " · nginx " +
         Str(d.Find("nginx_version")) + " · " + Str(d.Find("reps")) + " repetitions, medians\n\n";
  *md += "Command: `bash bench/http/run.sh` (" + Str(d.Find("command")) + ")\n\n";
  const Value* med = d.Find("median");
  const Value* tw = med ? med->Find("tokenwire") : nullptr;
  const Value* ng = med ? med->Find("nginx") : nullptr;
  Table(md, {"server", "requests/s (median)", "p99 latency ms (median)", "TokenWire / nginx"},
        {{"TokenWire", Num(tw ? tw->Find("requests_per_s") : nullptr, 0), Num(tw ? tw->Find("p99_ms") : nullptr, 3),
          Num(med ? med->Find("ratio_rps") : nullptr, 2)},
         {"nginx", Num(ng ? ng->Find("requests_per_s") : nullptr, 0), Num(ng ? ng->Find("p99_ms") : nullptr, 3), ""}});
}

// bench/cpu_model/run.sh: {"cpu", "nproc", "tokenwire": {...}, "pytorch_peer": {...}|null, ...}
void RenderCpuModel(std::string* md, const Value& d, const std::string& file) {
  *md += "### CPU model forward pass: TokenWire vs PyTorch\n\n";
  const Value* ours = d.Find("tokenwire");
  const Value* peer = d.Find("pytorch_peer");
  *md += "`" + file + "` · " + Str(d.Find("date")) + " · " + Str(d.Find("cpu")) + ", " + Str(d.Find("nproc")) +
         " cores · threads " + Str(ours ? ours->Find("threads") : nullptr) + " · load average before ours " +
         Str(d.Find("loadavg_before_ours")) + ", before the peer " + Str(d.Find("loadavg_before_peer")) + "\n\n";
  *md += "Command: `bash bench/cpu_model/run.sh`; PyTorch peer: " + Str(d.Find("pytorch_peer_status")) + "\n\n";
  std::vector<std::vector<std::string>> rows;
  const Value* pre = ours ? ours->Find("prefill") : nullptr;
  const Value* peer_pre = peer && peer->is_object() ? peer->Find("prefill_ms") : nullptr;
  const Value* our_pre = pre ? pre->Find("median_ms") : nullptr;
  rows.push_back({"prefill 200 tokens (ms, median)", Num(our_pre, 1), Num(peer_pre, 1),
                  Ratio(our_pre, peer_pre, true), Num(pre ? pre->Find("floor_ms") : nullptr, 1)});
  if (const Value* dec = ours ? ours->Find("decode") : nullptr; dec && dec->is_array()) {
    for (const auto& x : dec->items()) {
      const Value* b = x.Find("batch");
      const Value* p = nullptr;
      if (peer && peer->is_object()) {
        if (const Value* pd = peer->Find("decode"); pd && pd->is_array()) {
          for (const auto& y : pd->items()) {
            const Value* pb = y.Find("batch");
            if (b && pb && pb->is_int() && b->is_int() && pb->as_int() == b->as_int()) p = y.Find("tok_per_s");
          }
        }
      }
      std::string floor = "n/a";
      if (const Value* f = x.Find("floor_ms"); f && f->is_number() && b && b->is_number() && f->as_double() > 0) {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.1f", b->as_double() / f->as_double() * 1e3);
        floor = buf;
      }
      rows.push_back({"decode step B=" + Str(b) + ", ctx 200 (tokens/s)", Num(x.Find("tok_per_s"), 1), Num(p, 1),
                      Ratio(x.Find("tok_per_s"), p, false), floor});
    }
  }
  Table(md, {"metric", "TokenWire", "PyTorch", "TokenWire speed vs PyTorch", "machine floor"}, rows);
  if (const Value* smp = ours ? ours->Find("sampling_us_per_row") : nullptr; smp && smp->is_array()) {
    *md += "Sampling one row of a batch-32 step's logits (50257 ids), one thread (TokenWire only; the engine "
           "spreads a step's rows over its threads):\n\n";
    std::vector<std::vector<std::string>> srows;
    for (const auto& x : smp->items()) srows.push_back({Str(x.Find("case")), Num(x.Find("median_us"), 1)});
    Table(md, {"sampling", "us per row (median)"}, srows);
  }
  RenderVerdicts(md, d);
}

// Reads and parses dir/file into *v; false (and a message) if it cannot.
// make model's run (weights_tool/model.sh): model-train.json names the run
// {"benchmark":"model_train", "date", "machine", "isa", "threads", "command",
// "seconds", "val_loss", "val_loss_bf16", "log"}; its log (a CSV: step,
// train_loss, val_loss, lr, grad_norm, tokens, elapsed_s) is drawn into
// model-train.svg beside it, and the validation rows become the table.
bool RenderTraining(std::string* md, const Value& d, const std::string& file, const std::string& dir,
                    const std::string& charts) {
  *md += "### The default model's training (make model)\n\n";
  *md += "`" + file + "` · " + Str(d.Find("date")) + " · " + Str(d.Find("machine")) + " · kernels " +
         Str(d.Find("isa")) + " · " + Str(d.Find("threads")) + " threads · " + Str(d.Find("seconds")) + " s\n\n";
  *md += "Command: `" + Str(d.Find("command")) + "`\n\n";
  std::string csv;
  const std::string log = Str(d.Find("log"));
  if (!ReadFile(dir + "/" + log, &csv)) {
    std::fprintf(stderr, "render: cannot read %s/%s\n", dir.c_str(), log.c_str());
    return false;
  }
  tw::bench::Series train{"training loss (each step's batch)", {}, {}};
  tw::bench::Series val{"validation loss (fixed held-out windows)", {}, {}};
  std::vector<std::vector<std::string>> rows;
  std::istringstream lines(csv);
  std::string line;
  std::getline(lines, line);  // the header
  double window_sum = 0;
  int window_n = 0;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::istringstream cells(line);
    for (std::string c; std::getline(cells, c, ',');) f.push_back(c);
    if (f.size() < 7) continue;
    const double step = std::atof(f[0].c_str()), loss = std::atof(f[1].c_str());
    train.x.push_back(step);
    train.y.push_back(loss);
    window_sum += loss;
    window_n++;
    if (!f[2].empty()) {
      val.x.push_back(step);
      val.y.push_back(std::atof(f[2].c_str()));
      char mean[32], v[32], lr[32], sec[32];
      std::snprintf(mean, sizeof mean, "%.3f", window_sum / window_n);
      std::snprintf(v, sizeof v, "%.4f", std::atof(f[2].c_str()));
      std::snprintf(lr, sizeof lr, "%.2e", std::atof(f[3].c_str()));
      std::snprintf(sec, sizeof sec, "%.0f", std::atof(f[6].c_str()));
      rows.push_back({f[0], mean, v, lr, sec});
      window_sum = 0;
      window_n = 0;
    }
  }
  tw::bench::LineChart chart;
  chart.title = "The default model's loss per step (make model: 4 layers, 128 wide, fortunes)";
  chart.x_axis.label = "step";
  chart.x_axis.integer = true;
  chart.y_axis.label = "cross-entropy (nats per token)";
  chart.markers = false;
  chart.series = {train, val};
  const std::string svg = "model-train.svg";
  std::ofstream out(dir + "/" + svg, std::ios::binary | std::ios::trunc);
  out << tw::bench::RenderLineChart(chart);
  out.close();
  if (!out) {
    std::fprintf(stderr, "render: cannot write %s/%s\n", dir.c_str(), svg.c_str());
    return false;
  }
  Table(md, {"step", "training loss (mean since the row above)", "validation loss", "learning rate", "seconds"}, rows);
  *md += "Validation loss at the end: " + Str(d.Find("val_loss")) + " (float32 weights), " +
         Str(d.Find("val_loss_bf16")) + " with the weights rounded to bf16 as committed; uniform over the vocabulary "
         "is ln 50257 = 10.82.\n\n";
  *md += "![The default model's loss per step](" + charts + svg + ")\n\n";
  return true;
}

bool ReadResult(const std::string& dir, const std::string& file, Value* v) {
  std::string text;
  if (!ReadFile(dir + "/" + file, &text)) {
    std::fprintf(stderr, "render: cannot read %s/%s\n", dir.c_str(), file.c_str());
    return false;
  }
  tw::json::ParseLimits limits;
  limits.max_bytes = 256u << 20;
  if (tw::Status st = tw::json::Parse(text, v, limits); !st.ok()) {
    std::fprintf(stderr, "render: %s/%s: %s\n", dir.c_str(), file.c_str(), st.message().c_str());
    return false;
  }
  return true;
}

// --verdicts: each file's verdicts, then the count of each kind.
int PrintVerdicts(const std::string& dir, const std::vector<std::string>& files) {
  tw::bench::VerdictTally tally;
  std::printf("Verdicts of %s/ (%s):\n", dir.c_str(), tw::bench::LoadRule().c_str());
  for (const auto& f : files) {
    Value v;
    if (!ReadResult(dir, f, &v)) return 1;
    std::printf("%s", tw::bench::VerdictBlock(v, f, &tally).c_str());
  }
  std::printf("verdicts: %d PASS, %d MISS, %d not judged; %d result(s) without a target\n", tally.pass, tally.miss,
              tally.not_judged, tally.without);
  return 0;
}

// A chart link's prefix: "" when the output file sits in the results folder
// (a run's RESULTS.md), else the results folder as given (RESULTS.md at the root).
std::string ChartPrefix(const std::string& results_dir, const std::string& out) {
  auto trim = [](std::string p) {
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (p.rfind("./", 0) == 0) p = p.substr(2);
    return p;
  };
  const size_t slash = out.rfind('/');
  const std::string out_dir = slash == std::string::npos ? "." : trim(out.substr(0, slash));
  return trim(results_dir) == out_dir ? "" : trim(results_dir) + "/";
}

}  // namespace

int main(int argc, char** argv) {
  std::string results_dir = "bench/results", out = "RESULTS.md";
  bool verdicts = false;
  std::vector<std::string> named;  // --verdicts FILE...
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--results" && i + 1 < argc) results_dir = argv[++i];
    else if (a == "--out" && i + 1 < argc) out = argv[++i];
    else if (a == "--verdicts") verdicts = true;
    else if (verdicts && a.rfind("--", 0) != 0) named.push_back(a);
    else {
      std::fprintf(stderr, "usage: render [--results DIR] [--out RESULTS.md]\n"
                           "       render --results DIR --verdicts [FILE.json...]\n");
      return 2;
    }
  }
  std::vector<std::string> files;
  if (DIR* d = ::opendir(results_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 5 && n.substr(n.size() - 5) == ".json") files.push_back(n);
    }
    ::closedir(d);
  } else {
    std::fprintf(stderr, "render: cannot open %s\n", results_dir.c_str());
    return 1;
  }
  std::sort(files.begin(), files.end());
  if (verdicts) return PrintVerdicts(results_dir, named.empty() ? files : named);
  // Each WebSocket scenario right after its SSE twin, so they read side by side.
  const std::vector<std::string> order = {"streams/resume_storm",  "streams/ws_resume_storm",
                                          "streams/cancel_latency", "streams/abandonment",
                                          "streams/concurrency",   "streams/ws_concurrency",
                                          "streams/idle_soak",     "streams/backpressure",
                                          "streams/throughput",    "streams/chaos"};
  std::map<std::string, std::pair<std::string, Value>> convention;  // bench -> (file, doc)
  std::pair<std::string, Value> http, cpu, training;                // newest of each (files are sorted)
  std::vector<std::string> skipped;
  for (const auto& f : files) {
    Value v;
    if (!ReadResult(results_dir, f, &v)) return 1;
    if (v.Find("bench") && v.Find("columns") && v.Find("rows")) {
      std::string key = Str(v.Find("bench"));  // before v is moved from
      convention[key] = {f, std::move(v)};
    } else if (Str(v.Find("benchmark")) == "http_keepalive_healthz") {
      http = {f, std::move(v)};
    } else if (Str(v.Find("benchmark")) == "model_train") {
      training = {f, std::move(v)};
    } else if (v.Find("tokenwire") && v.Find("cpu") && v.Find("pytorch_peer_status")) {
      cpu = {f, std::move(v)};
    } else if ((v.Find("tokenwire") && v.Find("ggml")) || Str(v.Find("bench")) == "matmul_probe") {
      // bench/cpu_model/ggml_peer.sh's and matmul_probe's: read by hand into
      // sections below the generated part (RESULTS.md, "CPU decode beside
      // ggml" and the weight formats).
    } else {
      skipped.push_back(f);
    }
  }
  const std::string charts = ChartPrefix(results_dir, out);
  std::string md = std::string(kBegin) + "\n\n";
  md += "_Generated by `build/bench/render` from the JSON files in `" + results_dir +
        "/`; do not edit between the markers (run `make bench`, or `build/bench/render` alone)._\n\n";
  md += "## Streams (bench/loadgen)\n\n";
  for (const auto& name : order) {
    auto it = convention.find(name);
    if (it == convention.end()) {
      md += "### " + name + "\n\nNo result file yet.\n\n";
      continue;
    }
    RenderConvention(&md, it->second.second, it->second.first, charts);
  }
  md += "## Other benchmarks\n\n";
  for (const auto& [name, fv] : convention) {
    if (std::find(order.begin(), order.end(), name) == order.end()) RenderConvention(&md, fv.second, fv.first, charts);
  }
  if (!http.first.empty()) RenderHttp(&md, http.second, http.first);
  else md += "### HTTP keep-alive (bench/http)\n\nNo result file yet.\n\n";
  if (!cpu.first.empty()) RenderCpuModel(&md, cpu.second, cpu.first);
  else md += "### CPU model (bench/cpu_model)\n\nNo result file yet (`BENCH=cpu` or `BENCH=full`).\n\n";
  if (!training.first.empty() && !RenderTraining(&md, training.second, training.first, results_dir, charts)) return 1;
  if (!skipped.empty()) {
    md += "Not rendered (no known shape):";
    for (const auto& f : skipped) md += " `" + f + "`";
    md += "\n\n";
  }
  md += kEnd;
  md += "\n";

  std::string old, result;
  if (ReadFile(out, &old)) {
    size_t b = old.find(kBegin), e = old.find(kEnd);
    if (b != std::string::npos && e != std::string::npos && e > b) {
      size_t after = e + sizeof(kEnd) - 1;
      if (after < old.size() && old[after] == '\n') after++;
      result = old.substr(0, b) + md + old.substr(after);
    } else {
      result = old + (old.empty() || old.back() == '\n' ? "\n" : "\n\n") + md;
    }
  } else {
    result = "# TokenWire results\n\n" + md;
  }
  std::ofstream f(out, std::ios::binary | std::ios::trunc);
  f << result;
  f.close();
  if (!f) {
    std::fprintf(stderr, "render: cannot write %s\n", out.c_str());
    return 1;
  }
  std::fprintf(stderr, "render: wrote %s (%zu convention files, http %s, cpu_model %s, %zu not rendered)\n",
               out.c_str(), convention.size(), http.first.empty() ? "none" : http.first.c_str(),
               cpu.first.empty() ? "none" : cpu.first.c_str(), skipped.size());
  return 0;
}

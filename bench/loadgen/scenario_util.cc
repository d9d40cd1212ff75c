#include "loadgen/scenario_util.h"

#include <cmath>
#include <cstdio>

#include "json/json.h"
#include "loadgen/report.h"

namespace tw::loadgen {

std::string RequestBody(const std::vector<int32_t>& prompt, uint64_t seed, int max_new_tokens,
                        const std::string& policy) {
  std::string b = "{\"prompt_tokens\":[";
  for (size_t i = 0; i < prompt.size(); ++i) b += (i ? "," : "") + std::to_string(prompt[i]);
  b += "],\"seed\":" + std::to_string(seed) + ",\"max_new_tokens\":" + std::to_string(max_new_tokens);
  if (!policy.empty()) b += ",\"policy\":\"" + policy + "\"";
  return b + "}";
}

std::vector<int32_t> PromptFor(size_t i) {
  return {static_cast<int32_t>(1 + i % 50000), 464, static_cast<int32_t>(7 + i / 50000), 2068};
}

// Runs the engine until every session has ended (no connection open and no
// resume pending) or `seconds` pass; prints a progress line.
bool RunAll(Engine* e, const Sessions& s, double seconds, const std::string& label,
            const std::function<bool()>& extra_done) {
  double t0 = NowUs();
  auto done = [&] {
    if (extra_done) return extra_done();
    for (const auto& x : s) {
      if (x->open || (x->done_us == 0 && x->failure.empty() && !x->stalled)) return false;
    }
    return e->open_count() == 0;
  };
  auto tick = [&] {
    size_t open = 0, finished = 0, failed = 0;
    uint64_t events = 0, hb = 0;
    for (const auto& x : s) {
      open += x->open;
      finished += x->done_us != 0;
      failed += !x->failure.empty();
      events += x->events;
      hb += x->heartbeats;
    }
    std::fprintf(stderr, "\r[%s] %5.1fs open %zu done %zu/%zu failed %zu events %llu heartbeats %llu   ",
                 label.c_str(), (NowUs() - t0) / 1e6, open, finished, s.size(), failed,
                 static_cast<unsigned long long>(events), static_cast<unsigned long long>(hb));
  };
  bool ok = e->Run(done, t0 + seconds * 1e6, tick, 1000);
  tick();
  std::fprintf(stderr, "\n");
  return ok;
}

Emission GetEmission(uint16_t port, const std::string& id) {
  Emission em;
  int status = 0;
  std::string body;
  if (!HttpGet(port, "/lab/emissions/" + id, &status, &body).ok() || status != 200) return em;
  json::Value v;
  json::ParseLimits limits;
  limits.max_bytes = 64u << 20;
  if (!json::Parse(body, &v, limits).ok()) return em;
  em.found = true;
  if (const json::Value* t = v.Find("tokens"); t && t->is_array()) {
    for (const auto& x : t->items()) em.tokens.push_back(static_cast<int32_t>(x.as_int()));
  }
  if (const json::Value* x = v.Find("exited"); x && x->is_bool()) em.exited = x->as_bool();
  if (const json::Value* x = v.Find("finish_reason"); x && x->is_string()) em.finish_reason = x->as_string();
  if (const json::Value* x = v.Find("cancel_to_exit_us"); x && x->is_int()) em.cancel_to_exit_us = x->as_int();
  return em;
}

std::string Params(const std::vector<std::pair<std::string, std::string>>& kv) {
  std::string out;
  json::Writer w(&out);
  w.BeginObject();
  for (const auto& [k, v] : kv) {
    w.Key(k);
    w.Raw(v);
  }
  w.EndObject();
  return out;
}
std::string Q(const std::string& s) {
  std::string out;
  json::AppendQuoted(&out, s);
  return out;
}
std::string N(double v) { return std::isnan(v) ? "null" : Fmt(v, v == std::floor(v) ? 0 : 3); }

Status WriteChart(const std::string& dir, const std::string& file, const std::string& svg) {
  return WriteTextFile(dir + "/" + file, svg);
}

void Stats4(std::vector<double> v, double* p50, double* p99, double* mx) {
  *p50 = Percentile(&v, 50);
  *p99 = Percentile(&v, 99);
  *mx = v.empty() ? std::nan("") : v.back();
}

Status StartServer(ServerProcess* server, const Options& o, const std::vector<std::string>& args) {
  Status st = server->Start(o.server, args);
  if (!st.ok()) return Status::Error("starting " + o.server + ": " + st.message());
  return Status::Ok();
}

}  // namespace tw::loadgen

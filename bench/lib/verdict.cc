#include "verdict.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace tw::bench {

std::string Thousands(uint64_t v) {
  std::string digits = std::to_string(v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace {

std::string Number(double v, int decimals, const std::string& unit) {
  if (std::isnan(v)) return "n/a";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  // "x" and "%" stick to their number (3.72x, 0.9%); other units follow a space (210.0 ms).
  const bool joined = unit.empty() || unit == "x" || unit == "%";
  return std::string(buf) + (joined ? unit : " " + unit);
}

std::string Str(const json::Value* v) { return v && v->is_string() ? v->as_string() : ""; }

// The first field of a /proc/loadavg copy ("0.39 0.43 0.98"); NaN if none.
double FirstLoad(const json::Value* v) {
  const std::string s = Str(v);
  if (s.empty()) return std::nan("");
  char* end = nullptr;
  double x = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? std::nan("") : x;
}

std::string Load(double v) { return Number(v, 2, ""); }

}  // namespace

Verdict AtLeast(const std::string& check, double measured, double target, int decimals, const std::string& unit) {
  return {check, Number(measured, decimals, unit), "≥ " + Number(target, decimals, unit),
          !std::isnan(measured) && measured >= target, true, ""};
}

Verdict AtMost(const std::string& check, double measured, double target, int decimals, const std::string& unit) {
  return {check, Number(measured, decimals, unit), "≤ " + Number(target, decimals, unit),
          !std::isnan(measured) && measured <= target, true, ""};
}

Verdict AllOf(const std::string& check, uint64_t got, uint64_t want, bool load_sensitive) {
  return {check, Thousands(got) + " of " + Thousands(want), Thousands(want), got == want, load_sensitive, ""};
}

Verdict NoneOf(const std::string& check, uint64_t count) { return {check, Thousands(count), "0", count == 0, false, ""}; }

Verdict NoneOfEach(const std::string& check, const std::vector<uint64_t>& counts) {
  Verdict v{check, "", "0 each", true, false, ""};
  for (uint64_t c : counts) {
    v.measured += (v.measured.empty() ? "" : " / ") + Thousands(c);
    v.pass = v.pass && c == 0;
  }
  return v;
}

void WriteVerdicts(json::Writer* w, const std::vector<Verdict>& verdicts) {
  w->Key("verdicts");
  w->BeginArray();
  for (const Verdict& v : verdicts) {
    w->BeginObject();
    w->Key("check");
    w->String(v.check);
    w->Key("measured");
    w->String(v.measured);
    w->Key("target");
    w->String(v.target);
    w->Key("pass");
    w->Bool(v.pass);
    w->Key("load_sensitive");
    w->Bool(v.load_sensitive);
    w->Key("not_judged");
    w->String(v.not_judged);
    w->EndObject();
  }
  w->EndArray();
}

MachineLoad LoadOf(const json::Value& result) {
  MachineLoad l{FirstLoad(result.Find("loadavg_start")), FirstLoad(result.Find("loadavg_end")), 0};
  // The convention's {"machine": {"cores": N}}; bench/cpu_model/run.sh's "nproc".
  const json::Value* m = result.Find("machine");
  const json::Value* cores = m && m->is_object() ? m->Find("cores") : result.Find("nproc");
  if (cores && cores->is_int()) l.cores = static_cast<int>(cores->as_int());
  return l;
}

bool TooLoaded(const MachineLoad& load) {
  if (load.cores <= 0) return false;  // unknown: nothing to judge by
  return (!std::isnan(load.start) && load.start >= load.cores) ||
         (!std::isnan(load.end) && load.end >= 2.0 * load.cores);
}

std::string LoadRule() {
  return "a timing or capacity target is not judged when the 1-minute load average was at least the core count "
         "at the scenario's start, or at least twice the core count at its end; a correctness check is judged at "
         "any load";
}

std::vector<std::string> VerdictLines(const json::Value& result, VerdictTally* tally) {
  const json::Value* vs = result.Find("verdicts");
  if (!vs || !vs->is_array()) {
    tally->without++;
    return {"no verdicts recorded (a result written before results carried their targets)"};
  }
  if (vs->items().empty()) {
    tally->without++;
    return {"no target stated (a measurement)"};
  }
  const MachineLoad load = LoadOf(result);
  const bool loaded = TooLoaded(load);
  // The value that broke the rule, as the verdict names it.
  const double shown = !std::isnan(load.start) && load.start >= load.cores ? load.start : load.end;
  std::vector<std::string> lines;
  for (const json::Value& v : vs->items()) {
    const json::Value* p = v.Find("pass");
    const json::Value* ls = v.Find("load_sensitive");
    const bool pass = p && p->is_bool() && p->as_bool();
    const bool sensitive = !ls || !ls->is_bool() || ls->as_bool();
    const std::string why = Str(v.Find("not_judged"));
    std::string line = Str(v.Find("check")) + ": " + Str(v.Find("measured")) + " — ";
    const std::string target = "target " + Str(v.Find("target"));
    if (!why.empty()) {
      line += "not judged: " + why + " (" + target + ")";
      tally->not_judged++;
    } else if (sensitive && loaded) {
      line += "not judged: machine loaded (load " + Load(shown) + " on " + std::to_string(load.cores) + " cores; " +
              target + ")";
      tally->not_judged++;
    } else if (pass) {
      line += "PASS (" + target + ")";
      tally->pass++;
    } else {
      line += "MISS (" + target + ")";
      tally->miss++;
    }
    lines.push_back(line);
  }
  return lines;
}

std::string VerdictHeading(const json::Value& result, const std::string& file) {
  std::string name = Str(result.Find("bench"));
  if (name.empty()) name = file;
  std::vector<std::string> parts;
  if (const std::string mode = Str(result.Find("mode")); !mode.empty()) parts.push_back(mode + " mode");
  const MachineLoad load = LoadOf(result);
  if (!std::isnan(load.start) || !std::isnan(load.end)) {
    parts.push_back("load average " + Load(load.start) + " → " + Load(load.end) +
                    (load.cores > 0 ? " on " + std::to_string(load.cores) + " cores" : std::string()));
  }
  std::string heading = name;
  for (size_t i = 0; i < parts.size(); ++i) heading += (i ? "; " : " (") + parts[i];
  return parts.empty() ? heading : heading + ")";
}

std::string VerdictBlock(const json::Value& result, const std::string& file, VerdictTally* tally) {
  std::string out = VerdictHeading(result, file) + "\n";
  for (const std::string& line : VerdictLines(result, tally)) out += "  " + line + "\n";
  return out;
}

}  // namespace tw::bench

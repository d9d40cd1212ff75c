#include "result.h"

#include <sched.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace tw::bench {

std::string MachineCpu() {
  // The first processor's block: "model name", "cpu family", "model" and
  // "stepping" lines, each "key<tabs>: value".
  std::ifstream f("/proc/cpuinfo");
  std::string line, name, family, model, stepping;
  while (std::getline(f, line) && !line.empty()) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1);
    std::string value = colon + 2 <= line.size() ? line.substr(colon + 2) : "";
    if (key == "model name") name = value;
    else if (key == "cpu family") family = value;
    else if (key == "model") model = value;
    else if (key == "stepping") stepping = value;
  }
  if (name.empty()) name = "unknown CPU";
  if (family.empty() || model.empty()) return name;
  return name + " (family " + family + ", model " + model + (stepping.empty() ? "" : ", stepping " + stepping) + ")";
}

int MachineCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return CPU_COUNT(&set);
  return static_cast<int>(std::thread::hardware_concurrency());
}

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string LoadAvg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

void WriteNotesAndCharts(json::Writer* w, const std::vector<std::string>& notes,
                         const std::vector<std::pair<std::string, std::string>>& charts) {
  w->Key("notes");
  w->BeginArray();
  for (const std::string& n : notes) w->String(n);
  w->EndArray();
  w->Key("charts");
  w->BeginArray();
  for (const auto& [file, caption] : charts) {
    w->BeginObject();
    w->Key("file");
    w->String(file);
    w->Key("caption");
    w->String(caption);
    w->EndObject();
  }
  w->EndArray();
}

}  // namespace tw::bench

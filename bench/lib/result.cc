#include "result.h"

#include <sched.h>

#include <ctime>
#include <fstream>
#include <thread>

namespace tw::bench {

std::string MachineCpu() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos && colon + 2 <= line.size()) return line.substr(colon + 2);
    }
  }
  return "unknown CPU";
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

#include "loadgen/cli.h"

#include <sys/resource.h>

#include <cstdio>
#include <string>

#include "loadgen/report.h"

namespace tw::loadgen {

int LoadgenMain(int argc, char** argv, const char* program, const std::vector<Scenario>& scenarios) {
  Options o;
  std::vector<std::string> names;
  for (int i = 0; i < argc; ++i) o.command += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--server" && i + 1 < argc) {
      o.server = argv[++i];
    } else if (a == "--out" && i + 1 < argc) {
      o.out_dir = argv[++i];
    } else if (a == "--full") {
      o.full = true;
    } else if (a == "--help" || a == "-h" || a.rfind("--", 0) == 0) {
      std::string list;
      for (const Scenario& s : scenarios) list += std::string(s.name) + " ";
      std::fprintf(stderr, "usage: %s [--server BIN] --out DIR [--full] SCENARIO...\n  scenarios: %sall\n", program,
                   list.c_str());
      return a == "--help" || a == "-h" ? 0 : 2;
    } else {
      names.push_back(a);
    }
  }
  if (o.out_dir.empty()) {
    std::fprintf(stderr,
                 "%s: --out DIR is required: the run's own folder (bench/run.sh makes bench/runs/<date>/); the "
                 "committed reference results in bench/results/ are replaced only by bash bench/promote.sh RUN\n",
                 program);
    return 2;
  }
  if (names.empty() || (names.size() == 1 && names[0] == "all")) {
    names.clear();
    for (const Scenario& s : scenarios) names.push_back(s.name);
  }
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
  int failed = 0;
  for (const auto& n : names) {
    std::fprintf(stderr, "== %s (%s)\n", n.c_str(), o.full ? "full" : "quick");
    MarkScenarioStart();
    Status st = Status::Error("unknown scenario '" + n + "'");
    for (const Scenario& s : scenarios) {
      if (n == s.name) st = s.run(o);
    }
    if (!st.ok()) {
      std::fprintf(stderr, "%s: %s\n", n.c_str(), st.message().c_str());
      failed++;
    }
  }
  return failed ? 1 : 0;
}

}  // namespace tw::loadgen

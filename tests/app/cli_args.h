// argv for the flag parsers in tests: {"tokenwire", "cmd", args...}, the
// flags parsed from index 2.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace tw::app {

struct Args {
  explicit Args(std::vector<std::string> a) : strings(std::move(a)) {
    strings.insert(strings.begin(), {"tokenwire", "cmd"});
    for (auto& s : strings) argv.push_back(s.data());
  }
  int argc() const { return static_cast<int>(argv.size()); }
  std::vector<std::string> strings;
  std::vector<char*> argv;
};

}  // namespace tw::app

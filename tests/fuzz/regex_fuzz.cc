// libFuzzer target for the regular-expression front end: any input must
// build a grammar or fail cleanly, in every mode. A failure's message has
// the documented form ("regex column C: ..." with C inside the pattern); a
// grammar that was built must pass Check.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "grammar/regex.h"

namespace {

void Fail(const char* what, std::string_view pattern, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\npattern (%zu bytes): %.*s\n", what, detail.c_str(), pattern.size(),
               static_cast<int>(pattern.size()), pattern.data());
  std::abort();
}

void Try(std::string_view pattern, const tw::grammar::RegexOptions& opts) {
  tw::grammar::Grammar g;
  // Small limits, so that the fuzzer reaches them and stays fast.
  g.limits.max_rules = 2000;
  g.limits.max_elements = 20000;
  g.root = g.AddRule("root");
  tw::grammar::Element e;
  const tw::Status st = tw::grammar::AddRegex(pattern, opts, &g, "re", &e);
  if (!st.ok()) {
    int column = 0;
    int consumed = 0;
    if (std::sscanf(st.message().c_str(), "regex column %d: %n", &column, &consumed) != 1 || consumed == 0 ||
        st.message().size() <= static_cast<size_t>(consumed)) {
      Fail("error message not of the form 'regex column C: ...'", pattern, st.message());
    }
    if (column < 1 || static_cast<size_t>(column) > pattern.size()) {
      Fail("error column outside the pattern", pattern, st.message());
    }
    return;
  }
  g.AddAlt(g.root, {e});
  const tw::Status check = tw::grammar::Check(g);
  if (!check.ok()) Fail("the built grammar fails Check", pattern, check.message());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;
  const std::string_view pattern(reinterpret_cast<const char*>(data), size);
  Try(pattern, {.anchored = true, .json_string = false});
  Try(pattern, {.anchored = false, .json_string = true});
  Try(pattern, {.anchored = false, .json_string = false});
  Try(pattern, {.anchored = true, .json_string = true});
  return 0;
}

// libFuzzer target for the GBNF parser: any input must parse or fail
// cleanly. A failure's message is placed ("line L, column C: ..." or
// "line L: ..."); a success has passed Check, stays within the limits, has
// a root, and ToString works on it.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "grammar/gbnf.h"

namespace {

// "line " digits [", column " digits] ": " and a message.
bool IsPlaced(const std::string& m) {
  size_t i = 0;
  auto literal = [&](std::string_view s) {
    if (m.compare(i, s.size(), s) != 0) return false;
    i += s.size();
    return true;
  };
  auto number = [&] {
    const size_t start = i;
    while (i < m.size() && m[i] >= '0' && m[i] <= '9') ++i;
    return i > start && m[start] != '0';
  };
  if (!literal("line ") || !number()) return false;
  if (m.compare(i, 9, ", column ") == 0 && (!literal(", column ") || !number())) return false;
  return literal(": ") && i < m.size();
}

void Die(const char* what, const std::string& detail, std::string_view text) {
  std::fprintf(stderr, "%s: %s\n--- input ---\n%.*s\n", what, detail.c_str(), static_cast<int>(text.size()),
               text.data());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  tw::grammar::GrammarLimits limits;
  limits.max_rules = 2000;
  limits.max_elements = 20000;
  tw::grammar::Grammar g;
  const tw::Status st = tw::grammar::ParseGbnf(text, limits, &g);
  if (!st.ok()) {
    if (!IsPlaced(st.message())) Die("error without a line", st.message(), text);
    return 0;
  }
  if (const tw::Status c = tw::grammar::Check(g); !c.ok()) Die("parsed but Check fails", c.message(), text);
  if (static_cast<int>(g.rules.size()) > limits.max_rules || g.CountElements() > limits.max_elements) {
    Die("past the limits", std::to_string(g.rules.size()) + " rules", text);
  }
  if (g.root < 0 || g.rules[g.root].name != "root") Die("no root", g.ToString(), text);
  if (g.ToString().empty()) Die("empty ToString", "", text);
  return 0;
}

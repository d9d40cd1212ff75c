#include "support/recognizer.h"

#include <set>
#include <tuple>
#include <vector>

namespace tw::grammar::testing {

namespace {

struct Item {
  int rule, alt, dot, origin;
  bool operator<(const Item& o) const {
    return std::tie(rule, alt, dot, origin) < std::tie(o.rule, o.alt, o.dot, o.origin);
  }
};

std::vector<char> Nullable(const Grammar& g) {
  const int n = static_cast<int>(g.rules.size());
  std::vector<char> nullable(n, 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (int i = 0; i < n; ++i) {
      if (nullable[i]) continue;
      for (const Sequence& s : g.rules[i].alts) {
        bool all = true;
        for (const Element& e : s) all = all && e.kind == Element::kRule && nullable[e.rule];
        if (all) {
          nullable[i] = 1;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

}  // namespace

Verdict Recognize(const Grammar& g, std::string_view input) {
  const std::vector<char> nullable = Nullable(g);
  const size_t n = input.size();
  std::vector<std::set<Item>> sets(n + 1);
  std::vector<std::vector<Item>> order(n + 1);  // each set's items in insertion order (the worklist)
  auto add = [&](size_t i, Item it) {
    if (sets[i].insert(it).second) order[i].push_back(it);
  };
  for (int a = 0; a < static_cast<int>(g.rules[g.root].alts.size()); ++a) add(0, {g.root, a, 0, 0});
  for (size_t i = 0; i <= n; ++i) {
    for (size_t k = 0; k < order[i].size(); ++k) {
      const Item it = order[i][k];
      const Sequence& seq = g.rules[it.rule].alts[it.alt];
      if (it.dot < static_cast<int>(seq.size())) {
        const Element& e = seq[it.dot];
        if (e.kind == Element::kBytes) {
          if (i < n && e.bytes.Has(static_cast<uint8_t>(input[i]))) add(i + 1, {it.rule, it.alt, it.dot + 1, it.origin});
          continue;
        }
        for (int a = 0; a < static_cast<int>(g.rules[e.rule].alts.size()); ++a) add(i, {e.rule, a, 0, static_cast<int>(i)});
        if (nullable[e.rule]) add(i, {it.rule, it.alt, it.dot + 1, it.origin});
        continue;
      }
      // Complete: advance every item at the origin waiting for this rule.
      // (Items added to order[origin] later, when origin == i, are handled
      // by the nullable step above.)
      for (size_t j = 0; j < order[it.origin].size(); ++j) {
        const Item w = order[it.origin][j];
        const Sequence& ws = g.rules[w.rule].alts[w.alt];
        if (w.dot < static_cast<int>(ws.size()) && ws[w.dot].kind == Element::kRule && ws[w.dot].rule == it.rule) {
          add(i, {w.rule, w.alt, w.dot + 1, w.origin});
        }
      }
    }
  }
  if (order[n].empty()) return Verdict::kReject;
  for (const Item& it : order[n]) {
    if (it.rule == g.root && it.origin == 0 && it.dot == static_cast<int>(g.rules[it.rule].alts[it.alt].size())) {
      return Verdict::kComplete;
    }
  }
  return Verdict::kPrefix;
}

}  // namespace tw::grammar::testing

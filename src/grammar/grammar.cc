#include "grammar/grammar.h"

#include <algorithm>
#include <cstdio>
#include <map>

namespace tw::grammar {

namespace {

using ByteRanges = std::vector<std::pair<uint8_t, uint8_t>>;  // one (lo, hi) per byte of a sequence

int Utf8Encode(uint32_t cp, uint8_t* b) {
  if (cp <= 0x7F) {
    b[0] = static_cast<uint8_t>(cp);
    return 1;
  }
  if (cp <= 0x7FF) {
    b[0] = static_cast<uint8_t>(0xC0 | (cp >> 6));
    b[1] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp <= 0xFFFF) {
    b[0] = static_cast<uint8_t>(0xE0 | (cp >> 12));
    b[1] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
    b[2] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    return 3;
  }
  b[0] = static_cast<uint8_t>(0xF0 | (cp >> 18));
  b[1] = static_cast<uint8_t>(0x80 | ((cp >> 12) & 0x3F));
  b[2] = static_cast<uint8_t>(0x80 | ((cp >> 6) & 0x3F));
  b[3] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
  return 4;
}

// The UTF-8 byte sequences of the scalar values [lo, hi]: the range is cut
// until, within each piece, lo and hi encode to the same length and every
// byte position ranges over a full cross product (the construction of the
// regex crates' utf8 ranges), so each piece is one sequence of byte ranges.
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteRanges>* out) {
  std::vector<std::pair<uint32_t, uint32_t>> todo{{lo, hi}};
  while (!todo.empty()) {
    auto [a, b] = todo.back();
    todo.pop_back();
    if (a > b) continue;
    if (a <= 0xDFFF && b >= 0xD800) {  // surrogates are not scalar values
      if (a < 0xD800) todo.push_back({a, 0xD7FF});
      if (b > 0xDFFF) todo.push_back({0xE000, b});
      continue;
    }
    bool split = false;
    for (uint32_t max : {0x7Fu, 0x7FFu, 0xFFFFu}) {
      if (a <= max && b > max) {
        todo.push_back({a, max});
        todo.push_back({max + 1, b});
        split = true;
        break;
      }
    }
    if (split) continue;
    const int n = b <= 0x7F ? 1 : b <= 0x7FF ? 2 : b <= 0xFFFF ? 3 : 4;
    for (int i = 1; i < n && !split; ++i) {
      const uint32_t m = (1u << (6 * i)) - 1;
      if ((a & ~m) == (b & ~m)) continue;
      if ((a & m) != 0) {
        todo.push_back({a, a | m});
        todo.push_back({(a | m) + 1, b});
        split = true;
      } else if ((b & m) != m) {
        todo.push_back({a, (b & ~m) - 1});
        todo.push_back({b & ~m, b});
        split = true;
      }
    }
    if (split) continue;
    uint8_t ea[4], eb[4];
    Utf8Encode(a, ea);
    Utf8Encode(b, eb);
    ByteRanges seq;
    for (int i = 0; i < n; ++i) seq.push_back({ea[i], eb[i]});
    out->push_back(std::move(seq));
  }
}

void AppendByteSet(const ByteSet& s, std::string* out) {
  auto put = [&](int b) {
    char buf[8];
    if (b >= 0x20 && b < 0x7F && b != ']' && b != '\\' && b != '-' && b != '^') {
      out->push_back(static_cast<char>(b));
    } else {
      std::snprintf(buf, sizeof buf, "\\x%02X", b);
      out->append(buf);
    }
  };
  out->push_back('[');
  for (int b = 0; b < 256;) {
    if (!s.Has(static_cast<uint8_t>(b))) {
      ++b;
      continue;
    }
    int e = b;
    while (e + 1 < 256 && s.Has(static_cast<uint8_t>(e + 1))) ++e;
    put(b);
    if (e > b) {
      if (e > b + 1) out->push_back('-');
      put(e);
    }
    b = e + 1;
  }
  out->push_back(']');
}

}  // namespace

int Grammar::AddRule(std::string_view name) {
  std::string n(name.empty() ? "rule" : name);
  if (names_.count(n)) {
    int& k = next_suffix_[n];
    if (k < 2) k = 2;
    for (;; ++k) {
      std::string c = n + "-" + std::to_string(k);
      if (!names_.count(c)) {
        n = std::move(c);
        ++k;
        break;
      }
    }
  }
  const int index = static_cast<int>(rules.size());
  names_.emplace(n, index);
  rules.push_back(Rule{std::move(n), {}});
  return index;
}

int Grammar::FindRule(std::string_view name) const {
  auto it = names_.find(std::string(name));
  return it == names_.end() ? -1 : it->second;
}

int Grammar::CountElements() const {
  int n = 0;
  for (const Rule& r : rules) {
    for (const Sequence& s : r.alts) n += static_cast<int>(s.size());
  }
  return n;
}

std::string Grammar::ToString() const {
  std::string out;
  for (size_t i = 0; i < rules.size(); ++i) {
    out += rules[i].name;
    out += static_cast<int>(i) == root ? " (root) ::=" : " ::=";
    for (size_t a = 0; a < rules[i].alts.size(); ++a) {
      if (a > 0) out += " |";
      if (rules[i].alts[a].empty()) out += " \"\"";
      for (const Element& e : rules[i].alts[a]) {
        out.push_back(' ');
        if (e.kind == Element::kRule) {
          out += e.rule >= 0 && e.rule < static_cast<int>(rules.size()) ? rules[e.rule].name : "?";
        } else {
          AppendByteSet(e.bytes, &out);
        }
      }
    }
    out.push_back('\n');
  }
  return out;
}

Status Check(const Grammar& g) {
  const int n = static_cast<int>(g.rules.size());
  if (!g.overflow.empty()) return Status::Error(g.overflow);
  if (n > g.limits.max_rules) {
    return Status::Error("the grammar has " + std::to_string(n) + " rules (at most " +
                         std::to_string(g.limits.max_rules) + ")");
  }
  if (const int e = g.CountElements(); e > g.limits.max_elements) {
    return Status::Error("the grammar has " + std::to_string(e) + " elements (at most " +
                         std::to_string(g.limits.max_elements) + ")");
  }
  if (g.root < 0 || g.root >= n) return Status::Error("the grammar has no root rule");
  for (const Rule& r : g.rules) {
    if (r.alts.empty()) {
      return Status::Error("rule '" + r.name + "' is referenced but never defined (or matches nothing)");
    }
    for (const Sequence& s : r.alts) {
      for (const Element& e : s) {
        if (e.kind == Element::kRule && (e.rule < 0 || e.rule >= n)) {
          return Status::Error("rule '" + r.name + "' refers to a rule that does not exist");
        }
        if (e.kind == Element::kBytes && e.bytes.Empty()) {
          return Status::Error("rule '" + r.name + "' has a character class that matches nothing");
        }
      }
    }
  }
  // Nullable rules (can match the empty string), by a worklist in linear
  // time: an alternative of references only waits for each of them; when
  // the last becomes nullable, so does its rule.
  std::vector<char> nullable(n, 0);
  {
    struct Alt {
      int rule;
      int waiting;  // references not yet known nullable
    };
    std::vector<Alt> alts;
    std::vector<std::vector<int>> uses(n);  // rule -> the alternatives (by index) waiting on it, once per reference
    std::vector<int> todo;
    for (int i = 0; i < n; ++i) {
      for (const Sequence& s : g.rules[i].alts) {
        const bool refs_only =
            std::all_of(s.begin(), s.end(), [](const Element& e) { return e.kind == Element::kRule; });
        if (!refs_only) continue;
        if (s.empty() && !nullable[i]) {
          nullable[i] = 1;
          todo.push_back(i);
        }
        alts.push_back({i, static_cast<int>(s.size())});
        for (const Element& e : s) uses[e.rule].push_back(static_cast<int>(alts.size()) - 1);
      }
    }
    while (!todo.empty()) {
      const int r = todo.back();
      todo.pop_back();
      for (int a : uses[r]) {
        if (--alts[a].waiting == 0 && !nullable[alts[a].rule]) {
          nullable[alts[a].rule] = 1;
          todo.push_back(alts[a].rule);
        }
      }
    }
  }
  // Productive rules (match some string), by the same worklist: an
  // alternative waits for each of its references. A root that matches
  // nothing (a cycle of references with no way out) is refused.
  {
    std::vector<char> productive(n, 0);
    std::vector<int> waiting, owner, todo;
    std::vector<std::vector<int>> uses(n);
    for (int i = 0; i < n; ++i) {
      for (const Sequence& s : g.rules[i].alts) {
        int refs = 0;
        for (const Element& e : s) refs += e.kind == Element::kRule;
        if (refs == 0) {
          if (!productive[i]) todo.push_back(i);
          productive[i] = 1;
          continue;
        }
        waiting.push_back(refs);
        owner.push_back(i);
        for (const Element& e : s) {
          if (e.kind == Element::kRule) uses[e.rule].push_back(static_cast<int>(waiting.size()) - 1);
        }
      }
    }
    while (!todo.empty()) {
      const int r = todo.back();
      todo.pop_back();
      for (int a : uses[r]) {
        if (--waiting[a] == 0 && !productive[owner[a]]) {
          productive[owner[a]] = 1;
          todo.push_back(owner[a]);
        }
      }
    }
    if (!productive[g.root]) {
      std::string culprit;
      for (const Sequence& s : g.rules[g.root].alts) {
        for (const Element& e : s) {
          if (e.kind == Element::kRule && !productive[e.rule] && culprit.empty()) culprit = g.rules[e.rule].name;
        }
      }
      return Status::Error("the grammar matches nothing: rule '" + g.rules[g.root].name + "' never completes" +
                           (culprit.empty() ? std::string() : " (it needs '" + culprit + "', which never does)"));
    }
  }
  // Left recursion: an edge R -> S where S may come first in one of R's
  // alternatives (after nullable rules only). The matcher runs a cycle of
  // such edges forever only if one of them pushes a frame: a reference that
  // is not the last element of its alternative. A cycle of tail references
  // alone (x* over a body that may be empty: star ::= body star | "") pops
  // as it goes and is fine. So: the strongly connected components of the
  // graph, and a refusal for a pushing edge inside one.
  struct Edge {
    int to;
    bool tail;
  };
  std::vector<std::vector<Edge>> first(n);
  for (int i = 0; i < n; ++i) {
    for (const Sequence& s : g.rules[i].alts) {
      for (size_t k = 0; k < s.size(); ++k) {
        const Element& e = s[k];
        if (e.kind != Element::kRule) break;
        first[i].push_back({e.rule, k + 1 == s.size()});
        if (!nullable[e.rule]) break;
      }
    }
  }
  // Tarjan's components, with an explicit stack.
  std::vector<int> index(n, -1), low(n, 0), comp(n, -1), stack;
  std::vector<char> on_stack(n, 0);
  std::vector<std::pair<int, size_t>> dfs;
  int counter = 0, comps = 0;
  for (int start = 0; start < n; ++start) {
    if (index[start] >= 0) continue;
    dfs.push_back({start, 0});
    index[start] = low[start] = counter++;
    stack.push_back(start);
    on_stack[start] = 1;
    while (!dfs.empty()) {
      const int r = dfs.back().first;
      size_t& next = dfs.back().second;
      if (next < first[r].size()) {
        const int t = first[r][next++].to;
        if (index[t] < 0) {
          index[t] = low[t] = counter++;
          stack.push_back(t);
          on_stack[t] = 1;
          dfs.push_back({t, 0});
        } else if (on_stack[t]) {
          low[r] = std::min(low[r], index[t]);
        }
        continue;
      }
      if (low[r] == index[r]) {
        for (int x = -1; x != r;) {
          x = stack.back();
          stack.pop_back();
          on_stack[x] = 0;
          comp[x] = comps;
        }
        comps++;
      }
      dfs.pop_back();
      if (!dfs.empty()) low[dfs.back().first] = std::min(low[dfs.back().first], low[r]);
    }
  }
  for (int r = 0; r < n; ++r) {
    for (const Edge& e : first[r]) {
      if (e.tail || comp[e.to] != comp[r]) continue;
      // A cycle through this edge: back from e.to to r inside the component.
      std::vector<int> prev(n, -2);
      std::vector<int> queue{e.to};
      prev[e.to] = -1;
      for (size_t q = 0; q < queue.size() && prev[r] == -2; ++q) {
        for (const Edge& f : first[queue[q]]) {
          if (comp[f.to] == comp[r] && prev[f.to] == -2) {
            prev[f.to] = queue[q];
            queue.push_back(f.to);
          }
        }
      }
      std::vector<int> path;  // e.to ... r
      for (int x = r; x != -1 && x != -2; x = prev[x]) path.push_back(x);
      std::string cycle = g.rules[r].name;
      for (auto it = path.rbegin(); it != path.rend(); ++it) cycle += " -> " + g.rules[*it].name;
      if (r == e.to) cycle = g.rules[r].name + " -> " + g.rules[r].name;
      return Status::Error("rule '" + g.rules[r].name + "' is left-recursive (" + cycle + ")");
    }
  }
  return Status::Ok();
}

void AppendLiteral(std::string_view text, Sequence* seq) {
  for (char c : text) seq->push_back(Element::Byte(static_cast<uint8_t>(c)));
}

void AppendUtf8(uint32_t cp, std::string* out) {
  uint8_t b[4];
  const int n = Utf8Encode(cp, b);
  out->append(reinterpret_cast<const char*>(b), n);
}

std::vector<std::pair<uint32_t, uint32_t>> NormalizeCodepoints(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                              bool negated) {
  for (auto& [lo, hi] : ranges) {
    if (lo > hi) std::swap(lo, hi);
    hi = std::min(hi, kMaxCodepoint);
  }
  std::sort(ranges.begin(), ranges.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (const auto& r : ranges) {
    if (r.first > kMaxCodepoint) continue;
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  if (negated) {
    std::vector<std::pair<uint32_t, uint32_t>> comp;
    uint32_t next = 0;
    for (const auto& [lo, hi] : merged) {
      if (lo > next) comp.push_back({next, lo - 1});
      next = hi + 1;
    }
    if (next <= kMaxCodepoint) comp.push_back({next, kMaxCodepoint});
    merged = std::move(comp);
  }
  std::vector<std::pair<uint32_t, uint32_t>> out;
  for (const auto& [lo, hi] : merged) {
    if (hi < 0xD800 || lo > 0xDFFF) {
      out.push_back({lo, hi});
      continue;
    }
    if (lo < 0xD800) out.push_back({lo, 0xD7FF});
    if (hi > 0xDFFF) out.push_back({0xE000, hi});
  }
  return out;
}

Element CodepointClass(Grammar* g, std::vector<std::pair<uint32_t, uint32_t>> ranges, bool negated,
                       std::string_view hint) {
  const std::vector<std::pair<uint32_t, uint32_t>> merged = NormalizeCodepoints(std::move(ranges), negated);
  std::vector<ByteRanges> seqs;
  for (const auto& [lo, hi] : merged) Utf8Sequences(lo, hi, &seqs);
  ByteSet ascii;
  std::vector<Sequence> multi;
  for (const ByteRanges& s : seqs) {
    if (s.size() == 1) {
      ascii.AddRange(s[0].first, s[0].second);
      continue;
    }
    Sequence q;
    for (const auto& [lo, hi] : s) q.push_back(Element::Bytes(ByteSet::Range(lo, hi)));
    multi.push_back(std::move(q));
  }
  if (multi.empty() && !ascii.Empty()) return Element::Bytes(ascii);
  // Sequences that share their tail but not their lead byte merge into one
  // (e.g. [E1-EC][80-BF][80-BF] and [EE-EF][80-BF][80-BF]).
  std::vector<Sequence> alts;
  if (!ascii.Empty()) alts.push_back({Element::Bytes(ascii)});
  std::map<std::string, size_t> by_tail;  // the bytes of a sequence's tail sets -> its alternative
  for (Sequence& q : multi) {
    std::string tail;
    for (size_t i = 1; i < q.size(); ++i) {
      tail.append(reinterpret_cast<const char*>(q[i].bytes.bits), sizeof q[i].bytes.bits);
    }
    auto [it, fresh] = by_tail.try_emplace(std::move(tail), alts.size());
    if (fresh) {
      alts.push_back(std::move(q));
    } else {
      alts[it->second][0].bytes.AddAll(q[0].bytes);
    }
  }
  return Group(g, std::move(alts), hint);
}

Element Group(Grammar* g, std::vector<Sequence> alts, std::string_view hint) {
  const int r = g->AddRule(hint);
  g->rules[r].alts = std::move(alts);
  return Element::Ref(r);
}

Element Literals(Grammar* g, std::vector<std::string> literals, std::string_view hint) {
  std::sort(literals.begin(), literals.end());
  literals.erase(std::unique(literals.begin(), literals.end()), literals.end());
  // Each trie node is a rule over the sorted literals [lo, hi) sharing a
  // prefix of `depth` bytes: "" if one ends there, and per next byte that
  // byte then the child's rule (or the byte alone for a leaf). Built with
  // an explicit work list (no recursion on the literals' length).
  struct Node {
    int rule;
    size_t lo, hi, depth;
  };
  const int root = g->AddRule(hint);
  std::vector<Node> todo{{root, 0, literals.size(), 0}};
  while (!todo.empty()) {
    const Node n = todo.back();
    todo.pop_back();
    size_t i = n.lo;
    if (i < n.hi && literals[i].size() == n.depth) {
      g->AddAlt(n.rule, {});
      ++i;
    }
    while (i < n.hi) {
      const char b = literals[i][n.depth];
      size_t j = i;
      while (j < n.hi && literals[j][n.depth] == b) ++j;
      Sequence seq{Element::Byte(static_cast<uint8_t>(b))};
      const bool leaf = j == i + 1 && literals[i].size() == n.depth + 1;
      if (!leaf) {
        const int child = g->AddRule(std::string(hint) + "-t");
        seq.push_back(Element::Ref(child));
        todo.push_back({child, i, j, n.depth + 1});
      }
      g->AddAlt(n.rule, std::move(seq));
      i = j;
    }
  }
  return Element::Ref(root);
}

Element Repeat(Grammar* g, const Sequence& body, int min, int max, std::string_view hint) {
  if (min < 0) min = 0;
  if (max != kUnbounded && max < min) max = min;
  // A body of several elements is one rule, so that each copy is one element.
  Sequence unit = body;
  if (body.size() > 1) unit = {Group(g, {body}, std::string(hint) + "-item")};
  const long long copies = max == kUnbounded ? static_cast<long long>(min) + 1 : max;
  if (copies * static_cast<long long>(unit.size() + 1) > g->limits.max_elements) {
    if (g->overflow.empty()) {
      g->overflow = "a repetition of " + std::to_string(copies) + " items ('" + std::string(hint) +
                    "') passes the grammar's " + std::to_string(g->limits.max_elements) + " elements";
    }
    return Group(g, {{}}, hint);
  }
  const int rule = g->AddRule(hint);
  Grammar::Counted counted;
  counted.rule = rule;
  counted.min = min;
  counted.unit_size = static_cast<int32_t>(unit.size());
  Sequence seq;
  for (int i = 0; i < min; ++i) seq.insert(seq.end(), unit.begin(), unit.end());
  if (max == kUnbounded) {
    // star ::= unit star | ""  (right recursion: the matcher's tail call)
    const int star = g->AddRule(std::string(hint) + "-star");
    Sequence more = unit;
    more.push_back(Element::Ref(star));
    g->AddAlt(star, std::move(more));
    g->AddAlt(star, {});
    seq.push_back(Element::Ref(star));
  } else if (max > min) {
    // opt_k ::= unit opt_(k-1) | ""  for k = max - min down to 1.
    int inner = -1;
    for (int k = 1; k <= max - min; ++k) {
      const int opt = g->AddRule(std::string(hint) + "-opt");
      Sequence more = unit;
      if (inner >= 0) more.push_back(Element::Ref(inner));
      g->AddAlt(opt, std::move(more));
      g->AddAlt(opt, {});
      inner = opt;
      counted.opts.push_back(opt);
    }
    seq.push_back(Element::Ref(inner));
  }
  g->AddAlt(rule, std::move(seq));
  if (min > 1 || counted.opts.size() > 1) g->counted.push_back(std::move(counted));
  return Element::Ref(rule);
}

}  // namespace tw::grammar

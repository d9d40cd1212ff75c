#include "grammar/matcher.h"

#include <algorithm>
#include <cstring>
#include <numeric>

namespace tw::grammar {

namespace {

uint64_t PairKey(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// A token's bytes for error messages: printable ASCII as is, the rest \xHH.
std::string Printable(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

// ---- Vocabulary ---------------------------------------------------------------

Vocabulary::Vocabulary(std::vector<std::string> token_bytes, int32_t eos)
    : bytes_(std::move(token_bytes)), eos_(eos) {
  // Ids in byte order; a trie node per distinct prefix, laid out in
  // preorder while walking the sorted list once: the path from the root to
  // the current node is the previous token's prefix shared with this one.
  std::vector<int32_t> order;
  for (int32_t id = 0; id < size(); ++id) {
    if (!bytes_[id].empty() && id != eos_) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b]; });
  trie_.push_back(TrieNode{});
  std::vector<int32_t> path{0};  // path[d]: the node at depth d
  std::string_view prev;
  auto close_to = [&](size_t depth) {  // pops the path down to `depth` nodes below the root
    while (path.size() > depth + 1) {
      trie_[path.back()].end = static_cast<int32_t>(trie_.size());
      path.pop_back();
    }
  };
  for (int32_t id : order) {
    const std::string_view b = bytes_[id];
    size_t common = 0;
    while (common < prev.size() && common < b.size() && prev[common] == b[common]) ++common;
    close_to(common);
    for (size_t d = common; d < b.size(); ++d) {
      TrieNode n;
      n.byte = static_cast<uint8_t>(b[d]);
      n.subtree_first = static_cast<int32_t>(tokens_.size());  // this token is the subtree's first
      path.push_back(static_cast<int32_t>(trie_.size()));
      trie_.push_back(n);
    }
    TrieNode& leaf = trie_[path.back()];
    if (leaf.num_tokens == 0) leaf.first_token = static_cast<int32_t>(tokens_.size());
    // Equal byte strings are adjacent in the order, so a node's tokens are
    // consecutive in tokens_.
    tokens_.push_back(id);
    ++leaf.num_tokens;
    max_token_bytes_ = std::max(max_token_bytes_, static_cast<int>(b.size()));
    prev = b;
  }
  close_to(0);
  trie_[0].end = static_cast<int32_t>(trie_.size());
  // The bytes under each node, children before parents (reverse preorder);
  // kept for the large subtrees only.
  std::vector<ByteSet> under(trie_.size());
  for (int32_t i = static_cast<int32_t>(trie_.size()) - 1; i >= 0; --i) {
    for (int32_t c = i + 1; c < trie_[i].end; c = trie_[c].end) {
      under[i].Add(trie_[c].byte);
      under[i].AddAll(under[c]);
    }
    if (trie_[i].end - i >= kBelowMin) {
      trie_[i].below = static_cast<int32_t>(below_.size());
      below_.push_back(under[i]);
    }
  }
}

int Vocabulary::PrefixHorizon(const ByteSet& alphabet, int max_longer) const {
  MutexLock lock(horizons_mu_);
  for (const Horizon& x : horizons_) {
    if (x.alphabet == alphabet && x.max_longer == max_longer) return x.h;
  }
  // at_least[d]: the tokens whose prefix within the alphabet is d bytes or
  // longer -- those at or below the alphabet's trie paths of depth d.
  std::vector<int64_t> at_least(static_cast<size_t>(max_token_bytes_) + 2, 0);
  std::vector<std::pair<int32_t, int32_t>> todo{{0, 0}};  // (node, depth)
  while (!todo.empty()) {
    const auto [n, d] = todo.back();
    todo.pop_back();
    at_least[d] += TokensFrom(trie_[n].end) - trie_[n].subtree_first;
    for (int32_t k = n + 1; k < trie_[n].end; k = trie_[k].end) {
      if (alphabet.Has(trie_[k].byte)) todo.push_back({k, d + 1});
    }
  }
  int h = 0;
  while (at_least[h + 1] > max_longer) ++h;
  if (horizons_.size() >= kHorizonsKept) horizons_.erase(horizons_.begin());  // (any client may send new alphabets)
  horizons_.push_back({alphabet, max_longer, h});
  return h;
}

// ---- TokenGrammar: compiling ----------------------------------------------------

Status TokenGrammar::Compile(const Grammar& g, std::shared_ptr<const Vocabulary> vocab, const MatcherLimits& limits,
                             std::shared_ptr<TokenGrammar>* out) {
  if (Status st = Check(g); !st.ok()) return st;
  std::shared_ptr<TokenGrammar> tg(new TokenGrammar());
  tg->vocab_ = std::move(vocab);
  tg->limits_ = limits;
  tg->rule_alts_.resize(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (const Sequence& seq : g.rules[r].alts) {
      tg->rule_alts_[r].push_back(static_cast<int32_t>(tg->prog_.size()));
      for (const Element& e : seq) {
        Pos p;
        if (e.kind == Element::kBytes) {
          p.kind = Pos::kBytes;
          p.arg = static_cast<int32_t>(tg->sets_.size());
          tg->sets_.push_back(e.bytes);
        } else {
          p.kind = Pos::kRef;
          p.arg = e.rule;
        }
        tg->prog_.push_back(p);
      }
      tg->prog_.push_back(Pos{});  // kEnd
    }
  }
  tg->rule_of_.resize(tg->prog_.size());
  tg->refs_to_.resize(g.rules.size());
  for (size_t r = 0; r < g.rules.size(); ++r) {
    for (int32_t a : tg->rule_alts_[r]) {
      for (int32_t p = a;; ++p) {
        tg->rule_of_[p] = static_cast<int32_t>(r);
        if (tg->prog_[p].kind == Pos::kRef) tg->refs_to_[tg->prog_[p].arg].push_back(p);
        if (tg->prog_[p].kind == Pos::kEnd) break;
      }
    }
  }
  MutexLock lock(tg->mu_);
  for (const Grammar::Counted& c : g.counted) tg->AddChain(g, c);
  tg->follow_.resize(g.rules.size());
  tg->follow_done_.assign(g.rules.size(), 0);
  tg->scratch_nodes_.clear();
  tg->scratch_complete_ = tg->scratch_ret1_ = tg->scratch_escaped_ = false;
  tg->seen_.clear();
  for (int32_t a : tg->rule_alts_[g.root]) {
    if (Status st = tg->Expand(a, -1); !st.ok()) return st;
  }
  if (Status st = tg->Intern(&tg->initial_); !st.ok()) return st;
  *out = std::move(tg);
  return Status::Ok();
}

void TokenGrammar::AddChain(const Grammar& g, const Grammar::Counted& c) {
  const auto rule_ok = [&](int32_t r) { return r >= 0 && r < static_cast<int32_t>(g.rules.size()); };
  const auto same = [](const Element& a, const Element& b) {
    return a.kind == b.kind && (a.kind == Element::kRule ? a.rule == b.rule : a.bytes == b.bytes);
  };
  if (!rule_ok(c.rule) || c.unit_size < 1 || c.min < 0 || g.rules[c.rule].alts.size() != 1) return;
  const Sequence& seq = g.rules[c.rule].alts[0];
  const size_t u = static_cast<size_t>(c.unit_size);
  const size_t required = static_cast<size_t>(c.min) * u;
  if (seq.size() < required || seq.size() > required + 1) return;
  for (int32_t r : c.opts) {
    if (!rule_ok(r)) return;
  }
  Sequence unit;
  if (c.min > 0) {
    unit.assign(seq.begin(), seq.begin() + static_cast<std::ptrdiff_t>(u));
  } else if (!c.opts.empty() && !g.rules[c.opts[0]].alts.empty() && g.rules[c.opts[0]].alts[0].size() == u) {
    unit = g.rules[c.opts[0]].alts[0];
  } else {
    return;
  }
  // The shape Repeat built: min copies of the unit, then opts.back();
  // opts[k] = (unit opts[k - 1] | "").
  for (size_t i = 0; i < required; ++i) {
    if (!same(seq[i], unit[i % u])) return;
  }
  if (!c.opts.empty()) {
    if (seq.size() != required + 1 || seq[required].kind != Element::kRule || seq[required].rule != c.opts.back()) return;
  }
  for (size_t k = 0; k < c.opts.size(); ++k) {
    const Rule& r = g.rules[c.opts[k]];
    if (r.alts.size() != 2 || !r.alts[1].empty() || r.alts[0].size() != u + (k > 0 ? 1 : 0)) return;
    for (size_t j = 0; j < u; ++j) {
      if (!same(r.alts[0][j], unit[j])) return;
    }
    if (k > 0 && (r.alts[0][u].kind != Element::kRule || r.alts[0][u].rule != c.opts[k - 1])) return;
  }
  Chain ch;
  ch.rule = c.rule;
  ch.min = c.min;
  ch.unit_size = c.unit_size;
  ch.opts = c.opts;
  // The alphabet: every byte set the unit reaches through its references.
  std::vector<char> seen(g.rules.size(), 0);
  std::vector<const Sequence*> todo{&unit};
  while (!todo.empty()) {
    const Sequence* sq = todo.back();
    todo.pop_back();
    for (const Element& e : *sq) {
      if (e.kind == Element::kBytes) {
        ch.alphabet.AddAll(e.bytes);
      } else if (rule_ok(e.rule) && !seen[e.rule]) {
        seen[e.rule] = 1;
        for (const Sequence& alt : g.rules[e.rule].alts) todo.push_back(&alt);
      }
    }
  }
  const int32_t id = static_cast<int32_t>(chains_.size());
  chains_.push_back(std::move(ch));
  if (count_pos_.empty()) count_pos_.resize(prog_.size());
  const int32_t start = rule_alts_[c.rule][0];
  for (int32_t i = 0; i < c.min; ++i) {
    for (int32_t j = 0; j < c.unit_size; ++j) count_pos_[start + i * c.unit_size + j] = {id, c.min - i, 0, j, false};
  }
  for (size_t k = 0; k < c.opts.size(); ++k) {
    for (int32_t a = 0; a < 2; ++a) {
      for (int32_t p = rule_alts_[c.opts[k]][a];; ++p) {
        count_pos_[p] = {id, static_cast<int32_t>(k) + 1, a, p - rule_alts_[c.opts[k]][a], true};
        if (prog_[p].kind == Pos::kEnd) break;
      }
    }
  }
}

int32_t TokenGrammar::CanonicalPos(int32_t p, Horizon* hz) {
  if (count_pos_.empty() || p < 0) return p;
  const CountPos cp = count_pos_[p];
  if (cp.chain < 0) return p;
  Chain& ch = chains_[cp.chain];
  if (ch.h < 0) ch.h = vocab_->PrefixHorizon(ch.alphabet, kHorizonUncertain);
  if (cp.left <= ch.h) return p;
  // Shared: this table answers for every count past h.
  hz->h = hz->active ? std::min(hz->h, ch.h) : ch.h;
  hz->active = true;
  hz->alphabet.AddAll(ch.alphabet);
  if (cp.left == ch.h + 1) return p;
  if (cp.in_opts) return rule_alts_[ch.opts[ch.h]][cp.alt] + cp.offset;
  return rule_alts_[ch.rule][0] + (ch.min - ch.h - 1) * ch.unit_size + cp.offset;
}

Status TokenGrammar::SubtreeStays(int32_t node, int32_t state, bool* stays) {
  *stays = false;
  const Vocabulary& v = *vocab_;
  if (v.trie_[node].below < 0) return Status::Ok();
  const ByteSet& under = v.below_[v.trie_[node].below];
  for (int w = 0; w < 4; ++w) {
    for (uint64_t bits = under.bits[w]; bits != 0; bits &= bits - 1) {
      const uint8_t b = static_cast<uint8_t>(w * 64 + __builtin_ctzll(bits));
      int32_t to = next_[static_cast<size_t>(state) * 256 + b];
      if (to == kUnknown) {
        if (Status st = StepLocked(state, b, &to); !st.ok()) return st;
      }
      if (to != state) return Status::Ok();
    }
  }
  *stays = true;
  return Status::Ok();
}

int32_t TokenGrammar::NodeFor(int32_t pos, int32_t parent) {
  auto [it, fresh] = node_ids_.try_emplace(PairKey(pos, parent), static_cast<int32_t>(nodes_.size()));
  if (!fresh) return it->second;
  if (static_cast<int>(nodes_.size()) >= limits_.max_stack_nodes) {
    node_ids_.erase(it);
    return -1;
  }
  nodes_.push_back(Node{pos, parent, parent < 0 ? parent : nodes_[parent].bottom});
  return it->second;
}

Status TokenGrammar::Expand(int32_t pos, int32_t parent) {
  // The closure of (pos, parent) over references (push, or for a tail
  // reference keep the parent) and alternative ends (pop), collecting the
  // stacks whose top is a byte set. seen_ drops repeats within one step.
  work_.clear();
  work_.push_back({pos, parent});
  while (!work_.empty()) {
    const auto [p, par] = work_.back();
    work_.pop_back();
    const uint64_t key = PairKey(p, par);
    if (std::find(seen_.begin(), seen_.end(), key) != seen_.end()) continue;
    seen_.push_back(key);
    const Pos& e = prog_[p];
    if (e.kind == Pos::kBytes) {
      const int32_t n = NodeFor(p, par);
      if (n < 0) {
        return Status::Error("grammar: more than " + std::to_string(limits_.max_stack_nodes) +
                             " parse stack nodes (--grammar-max-states bounds the matcher)");
      }
      scratch_nodes_.push_back(n);
    } else if (e.kind == Pos::kEnd) {
      if (par >= 0) {
        work_.push_back({nodes_[par].pos, nodes_[par].parent});
      } else if (par == -1) {
        scratch_complete_ = true;
      } else if ((-2 - par) % 2 == 0) {
        // A table walk's rule ended: what may follow it, in any context.
        scratch_ret1_ = true;
        const int32_t rule = (-2 - par) / 2;
        for (int32_t q : FollowOf(rule)) work_.push_back({q, Expanded(rule)});
      } else {
        scratch_escaped_ = true;  // ... and what followed it ended too
      }
    } else {
      int32_t ret = par;  // a tail reference returns where this rule would
      if (prog_[p + 1].kind != Pos::kEnd) {
        ret = NodeFor(p + 1, par);
        if (ret < 0) {
          return Status::Error("grammar: more than " + std::to_string(limits_.max_stack_nodes) +
                               " parse stack nodes (--grammar-max-states bounds the matcher)");
        }
      }
      for (int32_t a : rule_alts_[e.arg]) work_.push_back({a, ret});
    }
  }
  return Status::Ok();
}

Status TokenGrammar::Intern(int32_t* out) {
  std::sort(scratch_nodes_.begin(), scratch_nodes_.end());
  scratch_nodes_.erase(std::unique(scratch_nodes_.begin(), scratch_nodes_.end()), scratch_nodes_.end());
  if (scratch_nodes_.empty() && !scratch_complete_ && !scratch_ret1_ && !scratch_escaped_) {
    *out = kDead;
    return Status::Ok();
  }
  if (static_cast<int>(scratch_nodes_.size()) > limits_.max_stacks_per_state) {
    return Status::Error("grammar: " + std::to_string(scratch_nodes_.size()) + " parses at once (at most " +
                         std::to_string(limits_.max_stacks_per_state) + "): the grammar is too ambiguous");
  }
  key_.assign(reinterpret_cast<const char*>(scratch_nodes_.data()), scratch_nodes_.size() * sizeof(int32_t));
  key_.push_back(static_cast<char>((scratch_complete_ ? 1 : 0) | (scratch_ret1_ ? 2 : 0) | (scratch_escaped_ ? 4 : 0)));
  auto it = state_ids_.find(key_);
  if (it != state_ids_.end()) {
    *out = it->second;
    return Status::Ok();
  }
  if (static_cast<int>(states_.size()) >= limits_.max_states) {
    return Status::Error("grammar: more than " + std::to_string(limits_.max_states) +
                         " matcher states (--grammar-max-states)");
  }
  State s;
  s.first = static_cast<int32_t>(stacks_.size());
  s.count = static_cast<int32_t>(scratch_nodes_.size());
  s.complete = scratch_complete_;
  s.ret1 = scratch_ret1_;
  s.escaped = scratch_escaped_;
  for (int32_t n : scratch_nodes_) {
    const int32_t b = nodes_[n].bottom;
    (b == -1 || (-2 - b) % 2 == 0 ? s.in_context : s.expanded) = true;
  }
  stacks_.insert(stacks_.end(), scratch_nodes_.begin(), scratch_nodes_.end());
  *out = static_cast<int32_t>(states_.size());
  states_.push_back(s);
  next_.resize(next_.size() + 256, kUnknown);
  state_ids_.emplace(key_, *out);
  return Status::Ok();
}

// ---- TokenGrammar: stepping -------------------------------------------------------

Status TokenGrammar::StepLocked(int32_t state, uint8_t byte, int32_t* next) {
  if (state < 0) {
    *next = kDead;
    return Status::Ok();
  }
  const int32_t known = next_[static_cast<size_t>(state) * 256 + byte];
  if (known != kUnknown) {
    *next = known;
    return Status::Ok();
  }
  // Every stack whose top takes the byte moves past it.
  scratch_nodes_.clear();
  scratch_complete_ = scratch_ret1_ = scratch_escaped_ = false;
  seen_.clear();
  const int32_t first = states_[state].first, count = states_[state].count;
  for (int32_t i = first; i < first + count; ++i) {
    const Node n = nodes_[stacks_[i]];
    if (!sets_[prog_[n.pos].arg].Has(byte)) continue;
    if (Status st = Expand(n.pos + 1, n.parent); !st.ok()) return st;
  }
  if (Status st = Intern(next); !st.ok()) return st;
  next_[static_cast<size_t>(state) * 256 + byte] = *next;  // next_ may have grown: index again
  ++stats_.steps_computed;
  return Status::Ok();
}

Status TokenGrammar::Step(int32_t state, uint8_t byte, int32_t* next) {
  MutexLock lock(mu_);
  return StepLocked(state, byte, next);
}

Status TokenGrammar::StepToken(int32_t state, int32_t id, int32_t* next) {
  *next = kDead;
  if (id < 0 || id >= vocab_->size() || id == vocab_->eos()) return Status::Ok();
  const std::string_view b = vocab_->bytes(id);
  if (b.empty()) return Status::Ok();
  MutexLock lock(mu_);
  int32_t s = state;
  for (unsigned char c : b) {
    if (Status st = StepLocked(s, c, &s); !st.ok()) return st;
    if (s == kDead) break;
  }
  *next = s;
  return Status::Ok();
}

bool TokenGrammar::IsComplete(int32_t state) {
  MutexLock lock(mu_);
  return state >= 0 && states_[state].complete;
}

bool TokenGrammar::CanContinue(int32_t state) {
  MutexLock lock(mu_);
  return state >= 0 && states_[state].count > 0;
}

// ---- TokenGrammar: masks -----------------------------------------------------------

Status TokenGrammar::WalkMask(int32_t state, uint64_t* mask) {
  MutexLock lock(mu_);
  const Vocabulary& v = *vocab_;
  std::memset(mask, 0, sizeof(uint64_t) * v.mask_words());
  auto set = [&](int32_t id) { mask[id >> 6] |= uint64_t{1} << (id & 63); };
  if (state < 0) return Status::Ok();
  if (states_[state].complete && v.eos() >= 0) set(v.eos());
  // Depth-first over the trie, each frame a node, the next child to try and
  // the state its prefix leads to; a dead byte cuts the child's subtree.
  struct Frame {
    int32_t node, child, state;
  };
  std::vector<Frame> frames;
  frames.reserve(v.max_token_bytes_ + 2);
  frames.push_back({0, 1, state});
  int64_t visited = 0;
  while (!frames.empty()) {
    Frame& f = frames.back();
    if (f.child >= v.trie_[f.node].end) {
      frames.pop_back();
      continue;
    }
    const int32_t c = f.child;
    const int32_t from = f.state;
    f.child = v.trie_[c].end;
    const Vocabulary::TrieNode& n = v.trie_[c];
    ++visited;
    int32_t to = next_[static_cast<size_t>(from) * 256 + n.byte];
    if (to == kUnknown) {
      if (Status st = StepLocked(from, n.byte, &to); !st.ok()) return st;
    }
    if (to == kDead) continue;
    for (int32_t k = 0; k < n.num_tokens; ++k) set(v.tokens_[n.first_token + k]);
    if (n.end > c + 1) frames.push_back({c, c + 1, to});
  }
  stats_.trie_nodes_visited += visited;
  return Status::Ok();
}

const std::vector<int32_t>& TokenGrammar::FollowOf(int32_t r) {
  if (follow_done_[r]) return follow_[r];
  // Each reference to r continues at the position after it; a reference
  // that ends its alternative continues wherever its own rule does.
  std::vector<int32_t>& out = follow_[r];
  std::vector<char> visited(rule_alts_.size(), 0);
  std::vector<int32_t> todo{r};
  visited[r] = 1;
  while (!todo.empty()) {
    const int32_t x = todo.back();
    todo.pop_back();
    for (int32_t q : refs_to_[x]) {
      const int32_t c = q + 1;
      if (prog_[c].kind != Pos::kEnd) {
        out.push_back(c);
      } else if (!visited[rule_of_[c]]) {
        visited[rule_of_[c]] = 1;
        todo.push_back(rule_of_[c]);
      }
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  follow_done_[r] = 1;
  return out;
}

Status TokenGrammar::TableFor(int32_t node, const PosTable** out) {
  // The stack's top frames, the deepest last, each at the position whose
  // table answers for it (CanonicalPos); a stack no deeper than
  // kTableDepth is its own key (its table is exact) unless a count in it
  // shares a table.
  int32_t pos[kTableDepth];
  Horizon hz;
  bool moved = false;
  int k = 0;
  int32_t x = node;
  while (k < kTableDepth && x >= 0) {
    pos[k] = CanonicalPos(nodes_[x].pos, &hz);
    moved |= pos[k] != nodes_[x].pos;
    ++k;
    x = nodes_[x].parent;
  }
  int32_t top = node;
  if (x >= 0 || moved) {
    // The same frames on the unknown context of the deepest one's rule (or,
    // for a whole stack, on the real bottom).
    int32_t parent = x >= 0 ? InContext(rule_of_[pos[k - 1]]) : -1;
    for (int j = k - 1; j >= 0; --j) {
      parent = NodeFor(pos[j], parent);
      if (parent < 0) {
        return Status::Error("grammar: more than " + std::to_string(limits_.max_stack_nodes) +
                             " parse stack nodes (--grammar-max-states bounds the matcher)");
      }
    }
    top = parent;
  }
  if (moved) ++stats_.tables_shared;
  PosTable& t = tables_[top];  // (an unordered_map's entries stay put)
  *out = &t;
  if (t.done) return Status::Ok();
  const Vocabulary& v = *vocab_;
  scratch_nodes_.clear();
  scratch_complete_ = scratch_ret1_ = scratch_escaped_ = false;
  scratch_nodes_.push_back(top);
  int32_t start;
  if (Status st = Intern(&start); !st.ok()) return st;
  std::vector<int32_t> accepted;
  struct Frame {
    int32_t node, child, state;
    bool uncertain;  // a continuation ended at a boundary above: the rest is the context's
    int32_t run;     // (hz.active) the path's length within hz.alphabet so far, or -1 once it left it
  };
  std::vector<Frame> frames;
  frames.reserve(v.max_token_bytes_ + 2);
  frames.push_back({0, 1, start, false, 0});
  // Every token of trie nodes [from, end) (a preorder range: one run of tokens_).
  auto all_uncertain = [&](int32_t from, int32_t end) {
    t.uncertain.insert(t.uncertain.end(), v.tokens_.begin() + v.TokensFrom(from), v.tokens_.begin() + v.TokensFrom(end));
  };
  int64_t visited = 0;
  while (!frames.empty()) {
    Frame& f = frames.back();
    if (f.child >= v.trie_[f.node].end) {
      frames.pop_back();
      continue;
    }
    const int32_t c = f.child;
    const int32_t from = f.state;
    const bool inherited = f.uncertain;
    const int32_t parent_run = f.run;
    f.child = v.trie_[c].end;
    const Vocabulary::TrieNode& n = v.trie_[c];
    ++visited;
    int32_t run = -1;
    if (hz.active) {
      run = parent_run >= 0 && hz.alphabet.Has(n.byte) ? parent_run + 1 : -1;
      if (run > hz.h) {  // a prefix past the horizon: the count left decides
        all_uncertain(c, n.end);
        continue;
      }
    }
    int32_t to = next_[static_cast<size_t>(from) * 256 + n.byte];
    if (to == kUnknown) {
      if (Status st = StepLocked(from, n.byte, &to); !st.ok()) return st;
    }
    if (to == kDead) {
      if (inherited) all_uncertain(c, n.end);
      continue;
    }
    const State s = states_[to];  // (a copy: SubtreeStays may add states)
    const bool unknown = inherited || s.escaped;
    const bool take = s.in_context || s.ret1 || s.complete;
    const bool doubt = !take && (s.expanded || unknown);
    if (take || doubt) {
      std::vector<int32_t>& into = take ? accepted : t.uncertain;
      into.insert(into.end(), v.tokens_.begin() + n.first_token, v.tokens_.begin() + n.first_token + n.num_tokens);
    }
    if (n.end == c + 1) continue;
    if (s.count > 0) {
      // A subtree none of whose bytes leaves the state ends every token in
      // it there: all of them share this node's verdict (a string's
      // content takes most of the vocabulary this way).
      bool stays = false;
      if (run < 0) {
        if (Status st = SubtreeStays(c, to, &stays); !st.ok()) return st;
      }
      if (stays) {
        ++stats_.subtrees_taken_whole;
        if (take || doubt) {
          std::vector<int32_t>& into = take ? accepted : t.uncertain;
          into.insert(into.end(), v.tokens_.begin() + v.TokensFrom(c + 1), v.tokens_.begin() + v.TokensFrom(n.end));
        }
        continue;
      }
      frames.push_back({c, c + 1, to, unknown, run});
    } else if (unknown) {
      all_uncertain(c + 1, n.end);
    }
  }
  // A long list as a mask (6.3 KB for GPT-2), a short one as ids.
  if (accepted.size() * 32 > static_cast<size_t>(v.size())) {
    t.bits.assign(static_cast<size_t>(v.mask_words()), 0);
    for (int32_t id : accepted) t.bits[id >> 6] |= uint64_t{1} << (id & 63);
  } else {
    t.ids = std::move(accepted);
  }
  t.done = true;
  stats_.trie_nodes_visited += visited;
  ++stats_.positions;
  return Status::Ok();
}

Status TokenGrammar::ComputeMask(int32_t state, uint64_t* mask) {
  const Vocabulary& v = *vocab_;
  const int words = v.mask_words();
  std::memset(mask, 0, sizeof(uint64_t) * words);
  if (state < 0) return Status::Ok();
  if (states_[state].complete && v.eos() >= 0) mask[v.eos() >> 6] |= uint64_t{1} << (v.eos() & 63);
  const int32_t count = states_[state].count;
  for (int32_t i = 0; i < count; ++i) {
    const int32_t node = stacks_[states_[state].first + i];  // (states_ and stacks_ may grow below)
    const PosTable* t;
    if (Status st = TableFor(node, &t); !st.ok()) return st;
    if (!t->bits.empty()) {
      for (int w = 0; w < words; ++w) mask[w] |= t->bits[w];
    } else {
      for (int32_t id : t->ids) mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
    if (t->uncertain.empty()) continue;
    // The uncertain tokens, through this stack alone.
    scratch_nodes_.assign(1, node);
    scratch_complete_ = scratch_ret1_ = scratch_escaped_ = false;
    int32_t alone;
    if (Status st = Intern(&alone); !st.ok()) return st;
    // A table lists them in the trie's preorder, so each token shares the
    // states of the prefix it has in common with the one before
    // (path_[d]: the state after its first d bytes); a dead prefix ends
    // every token that shares it.
    path_.assign(1, alone);
    std::string_view prev;
    for (int32_t id : t->uncertain) {
      if ((mask[id >> 6] >> (id & 63)) & 1) continue;
      ++stats_.uncertain_checks;
      const std::string_view bytes = v.bytes(id);
      size_t d = 0;
      while (d + 1 < path_.size() && d < bytes.size() && d < prev.size() && bytes[d] == prev[d]) ++d;
      path_.resize(d + 1);
      int32_t x = path_.back();
      for (; x != kDead && d < bytes.size(); ++d) {
        const uint8_t b = static_cast<uint8_t>(bytes[d]);
        int32_t y = next_[static_cast<size_t>(x) * 256 + b];
        if (y == kUnknown) {
          if (Status st = StepLocked(x, b, &y); !st.ok()) return st;
        }
        x = y;
        path_.push_back(x);
      }
      prev = bytes;
      if (x != kDead) mask[id >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  ++stats_.masks_computed;
  return Status::Ok();
}

Status TokenGrammar::FillMask(int32_t state, uint64_t* mask) {
  const int words = vocab_->mask_words();
  MutexLock lock(mu_);
  if (auto it = masks_.find(state); it != masks_.end()) {
    std::memcpy(mask, it->second.data(), sizeof(uint64_t) * words);
    ++stats_.mask_cache_hits;
    return Status::Ok();
  }
  if (Status st = ComputeMask(state, mask); !st.ok()) return st;
  if (limits_.max_cached_masks > 0) {
    if (static_cast<int>(masks_.size()) >= limits_.max_cached_masks) masks_.erase(masks_.begin());
    masks_.emplace(state, std::vector<uint64_t>(mask, mask + words));
  }
  return Status::Ok();
}

Status TokenGrammar::Warm(std::chrono::steady_clock::time_point deadline, int max_states) {
  MutexLock lock(mu_);
  std::vector<int32_t> queue{initial_};
  std::unordered_map<int32_t, char> seen{{initial_, 1}};
  for (size_t q = 0; q < queue.size(); ++q) {
    if (std::chrono::steady_clock::now() >= deadline) break;
    const int32_t state = queue[q];
    for (int32_t i = 0; i < states_[state].count; ++i) {
      const PosTable* t;
      if (Status st = TableFor(stacks_[states_[state].first + i], &t); !st.ok()) return st;
      if (std::chrono::steady_clock::now() >= deadline) return Status::Ok();
    }
    for (int b = 0; b < 256 && static_cast<int>(queue.size()) < max_states; ++b) {
      int32_t next;
      if (Status st = StepLocked(state, static_cast<uint8_t>(b), &next); !st.ok()) return st;
      if (next >= 0 && seen.emplace(next, 1).second) queue.push_back(next);
    }
  }
  return Status::Ok();
}

MatcherStats TokenGrammar::stats() {
  MutexLock lock(mu_);
  MatcherStats s = stats_;
  s.states = static_cast<int64_t>(states_.size());
  s.stack_nodes = static_cast<int64_t>(nodes_.size());
  return s;
}

// ---- Matcher --------------------------------------------------------------------------

Status Matcher::Accept(int32_t id) {
  if (grammar_ == nullptr) return Status::Ok();
  const Vocabulary& v = grammar_->vocab();
  refused_ = false;
  if (id >= 0 && id == v.eos()) {
    if (grammar_->IsComplete(state_)) return Status::Ok();
    refused_ = true;
    return Status::Error("grammar: end-of-text before the output is complete");
  }
  int32_t next;
  if (Status st = grammar_->StepToken(state_, id, &next); !st.ok()) return st;
  if (next == TokenGrammar::kDead) {
    refused_ = true;
    const std::string text = id >= 0 && id < v.size() ? Printable(v.bytes(id)) : std::string("?");
    return Status::Error("grammar: token " + std::to_string(id) + " (\"" + text + "\") is not allowed here");
  }
  state_ = next;
  return Status::Ok();
}

}  // namespace tw::grammar

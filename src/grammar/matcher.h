// The token matcher: which of the model's tokens a grammar allows next, as a
// bitmask over the vocabulary, and the grammar's state after each token.
//
// Design (docs/structured-output.md has the measurements):
//   - A grammar (grammar/grammar.h) is flattened into positions; a parse is
//     a pushdown STACK of positions, hash-consed into a node pool so that
//     equal stacks are one id and a stack shares its tail with others. A
//     tail reference (the last element of an alternative) does not push, so
//     right recursion -- every x* -- runs in constant stack.
//   - The matcher's state is a SET of such stacks (the grammar may be
//     ambiguous, and one byte may start several alternatives) plus whether
//     the grammar may end here; sets are interned, so a state is one int.
//   - States are the nodes of a DFA built lazily: Step(state, byte) is
//     computed once and then read from the state's 256-entry row. A token is
//     accepted by stepping its bytes.
//   - The allowed-token mask of a state walks the vocabulary's byte TRIE
//     (Vocabulary) along the DFA, cutting every subtree at its first dead
//     byte: a state inside a key literal touches a handful of trie nodes, a
//     state inside a string most of them. Masks are cached per state, so a
//     state seen before -- inside a string, between array items, in the
//     next request with the same schema -- costs a copy of 6.3 KB.
//   This is the token-trie walk over a pushdown automaton (the Outlines /
//   llguidance family) with the automaton determinised on the fly, which
//   makes the walk cheap enough to run uncached and the cache cheap enough
//   to share by every sequence of a compiled grammar.
//
// Threads: a TokenGrammar is shared by every sequence that uses it (the
// server's grammar cache hands one compiled grammar to many requests); its
// lazily built parts are guarded by its mutex, so any thread may call it.
// A Matcher (one sequence's state: a pointer and an int) belongs to one
// thread at a time.
// Memory: bounded by MatcherLimits per compiled grammar: the interned
// states (each with its 1 KB row of transitions), the stack
// nodes, the cached masks. Passing a bound is an error from the call that
// passed it (the request's stream ends with it), never unbounded growth.
// Never: recurses on the grammar's or the input's depth (explicit stacks).
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "grammar/grammar.h"

namespace tw::grammar {

// The model's tokens as byte strings, and the byte trie the mask walks.
// Built once per served model; shared by every compiled grammar.
class Vocabulary {
 public:
  // token_bytes[id]: the id's bytes; empty for a token no grammar text can
  // spell (end-of-text and other special tokens). `eos`: the end-of-text
  // id, allowed exactly where the grammar may end (-1: none).
  Vocabulary(std::vector<std::string> token_bytes, int32_t eos);

  int size() const { return static_cast<int>(bytes_.size()); }
  int32_t eos() const { return eos_; }
  std::string_view bytes(int32_t id) const { return bytes_[id]; }
  // Words of a mask: (size + 63) / 64.
  int mask_words() const { return (size() + 63) / 64; }
  int trie_nodes() const { return static_cast<int>(trie_.size()); }
  // The smallest h such that at most `max_longer` tokens begin with more
  // than h bytes of `alphabet` (digits: 3, with 107 longer, for GPT-2 and
  // 128). One walk of the trie along the alphabet's bytes, remembered per
  // (alphabet, max_longer): every grammar compiled for this vocabulary
  // shares it.
  int PrefixHorizon(const ByteSet& alphabet, int max_longer) const;

 private:
  friend class TokenGrammar;
  // The trie in preorder: node 0 is the root (no byte); a node's children
  // are node + 1, then each child's `end`, until the node's own `end`.
  struct TrieNode {
    uint8_t byte = 0;
    int32_t first_token = 0;  // tokens_[first_token, first_token + num_tokens) end here
    int32_t num_tokens = 0;
    int32_t end = 0;          // the index after this node's subtree
    // tokens_[subtree_first, ...) end at this node or below it: tokens_ is
    // in the trie's preorder, so the tokens of nodes [a, b) are
    // tokens_[TokensFrom(a), TokensFrom(b)).
    int32_t subtree_first = 0;
    int32_t below = -1;       // below_[below]: the bytes under this node, for subtrees of kBelowMin nodes or more
  };
  // Subtrees this large (in nodes) keep the set of bytes under them: a mask
  // walk takes such a subtree whole when none of those bytes leaves the
  // state it is in (matcher.cc, TableFor). 4,370 of GPT-2's 98,035 nodes.
  static constexpr int kBelowMin = 16;
  int32_t TokensFrom(int32_t node) const {
    return node < static_cast<int32_t>(trie_.size()) ? trie_[node].subtree_first : static_cast<int32_t>(tokens_.size());
  }
  std::vector<std::string> bytes_;
  int32_t eos_;
  std::vector<TrieNode> trie_;
  std::vector<int32_t> tokens_;  // ids, grouped by the trie node they end at, in preorder
  std::vector<ByteSet> below_;
  int max_token_bytes_ = 0;
  struct Horizon {
    ByteSet alphabet;
    int max_longer;
    int h;
  };
  static constexpr size_t kHorizonsKept = 64;
  mutable Mutex horizons_mu_;
  mutable std::vector<Horizon> horizons_ TW_GUARDED_BY(horizons_mu_);
};

struct MatcherLimits {
  // Interned states of one compiled grammar (--grammar-max-states): 1 KB of
  // transitions each. A string of maxLength N alone may take N of them (each
  // count is a state).
  int max_states = 65536;
  int max_stack_nodes = 1 << 20;  // stack nodes of one compiled grammar
  int max_stacks_per_state = 1024; // parses one state may hold (an ambiguous grammar's bound)
  int max_cached_masks = 256;     // masks kept per compiled grammar (6.3 KB each for GPT-2)
};

// Counters of one compiled grammar (for benches and /stats).
struct MatcherStats {
  int64_t positions = 0;       // tables of top frames computed
  int64_t uncertain_checks = 0;  // uncertain tokens stepped through at run time
  int64_t states = 0;
  int64_t stack_nodes = 0;
  int64_t steps_computed = 0;  // DFA transitions computed (the rest were table reads)
  int64_t masks_computed = 0;
  int64_t mask_cache_hits = 0;
  int64_t trie_nodes_visited = 0;
  int64_t subtrees_taken_whole = 0;  // trie subtrees a table took without walking them
  int64_t tables_shared = 0;   // table lookups that a count's canonical table answered
};

class TokenGrammar {
 public:
  // The state id of a dead end (no parse continues).
  static constexpr int32_t kDead = -1;

  // Flattens `g` (which must pass Check) for `vocab`.
  static Status Compile(const Grammar& g, std::shared_ptr<const Vocabulary> vocab, const MatcherLimits& limits,
                        std::shared_ptr<TokenGrammar>* out);

  const Vocabulary& vocab() const { return *vocab_; }
  int32_t initial_state() const { return initial_; }

  // The state after `byte`, or kDead.
  Status Step(int32_t state, uint8_t byte, int32_t* next);
  // The state after every byte of token `id`, or kDead (end-of-text and
  // empty tokens: kDead; the end-of-text id is the caller's to judge with
  // IsComplete).
  Status StepToken(int32_t state, int32_t id, int32_t* next);
  // Whether the grammar may end in `state` / some byte may follow it.
  bool IsComplete(int32_t state);
  bool CanContinue(int32_t state);
  // Writes the allowed-token mask of `state` (vocab().mask_words() words;
  // bit id % 64 of word id / 64), the end-of-text id included exactly when
  // IsComplete(state).
  Status FillMask(int32_t state, uint64_t* mask);
  // The same mask by the plain trie walk along the DFA (no position
  // tables, no cache): the tests' cross-check of FillMask.
  Status WalkMask(int32_t state, uint64_t* mask);

  // Builds ahead what the first tokens of most outputs will need: the
  // states reachable from the start byte by byte (breadth first, at most
  // `max_states` of them) and the tables of their stacks' top frames --
  // a string's content, a number's digits, the whitespace -- until
  // `deadline`. The compiler calls it on the prep thread, so that those
  // tables' trie walks are not paid between two tokens.
  Status Warm(std::chrono::steady_clock::time_point deadline, int max_states);

  MatcherStats stats();

 private:
  struct Pos {
    enum Kind : uint8_t { kBytes, kRef, kEnd };
    Kind kind = kEnd;
    int32_t arg = -1;  // kBytes: index into sets_; kRef: the rule
  };
  // A stack frame. parent -1 is the bottom of a real stack. The stacks of a
  // position's table walk (TableFor) stand on a sentinel instead: below
  // InContext(r) is the unknown context of rule r, below Expanded(r) the
  // unknown context of one of the positions that may follow r.
  struct Node {
    int32_t pos;
    int32_t parent;
    int32_t bottom;  // the sentinel (or -1) the stack stands on
  };
  struct State {
    int32_t first = 0;  // stacks_[first, first + count): node ids, sorted
    int32_t count = 0;
    bool complete = false;   // a real stack emptied: the grammar may end here
    // Table walks only: the walked rule ended at this byte boundary (ret1),
    // a continuation after it ended too (escaped); which sentinels the
    // stacks stand on.
    bool ret1 = false, escaped = false, in_context = false, expanded = false;
  };
  // The tokens of a stack's top kTableDepth frames (XGrammar's split, over
  // a few frames rather than one position): those the frames take whatever
  // the stack below them (accepted), and those that pop out of them into a
  // continuation that is not refused outright (uncertain: checked against
  // the real stack at run time). Every other token is refused there.
  struct PosTable {
    bool done = false;
    std::vector<uint64_t> bits;     // accepted, as a mask (when many) ...
    std::vector<int32_t> ids;       // ... or as a list
    std::vector<int32_t> uncertain;
  };
  // Frames a table covers: a string's content is 3 deep (the character
  // class, the repetition, the string rule's closing quote), so every
  // string of a schema shares one table.
  static constexpr int kTableDepth = 3;
  // Counted repetitions (Grammar::counted): a string of maxLength 100 is
  // 100 positions, one per count left, each with its own table -- unless
  // no token can tell two counts apart. A token consumes at most as many
  // units as the length of its longest prefix within the unit's bytes
  // (the chain's alphabet), so with more than h counts left every count
  // gives the same table for every token whose prefix is h bytes or fewer:
  // those positions share the table of count h + 1, in which the tokens
  // with a longer prefix are uncertain (checked against the real stack).
  // h is the smallest prefix length that leaves at most
  // kHorizonUncertain tokens longer (Vocabulary::PrefixHorizon; digits:
  // 3, with 107 tokens longer; a JSON string's characters: 16, with 72).
  static constexpr int kHorizonUncertain = 128;
  struct Chain {
    int32_t rule = -1, min = 0, unit_size = 1;
    std::vector<int32_t> opts;
    ByteSet alphabet;  // every byte the unit may consume
    int32_t h = -1;    // computed on first use (a walk of the trie)
  };
  struct CountPos {
    int32_t chain = -1;
    int32_t left = 0;     // counts left, the current one included
    int32_t alt = 0;      // (opt positions) which alternative of the opt rule
    int32_t offset = 0;   // the position within its unit (min) or alternative (opt)
    bool in_opts = false;
  };
  // What a table's key frames share (TableFor): tokens whose prefix within
  // `alphabet` is longer than h are uncertain in it.
  struct Horizon {
    bool active = false;
    ByteSet alphabet;
    int32_t h = 0;
  };
  // The position whose table answers for position p (p itself unless it is
  // a count with more than h + 1 left), adding its chain to *hz when p's
  // table is shared.
  int32_t CanonicalPos(int32_t p, Horizon* hz) TW_REQUIRES(mu_);
  // Adds the chain of a Grammar::Counted whose rules still have Repeat's shape.
  void AddChain(const Grammar& g, const Grammar::Counted& c) TW_REQUIRES(mu_);
  // Whether every byte under trie node `node` leads `state` back to itself
  // (then every token below it ends in `state`).
  Status SubtreeStays(int32_t node, int32_t state, bool* stays) TW_REQUIRES(mu_);
  static int32_t InContext(int32_t rule) { return -2 - 2 * rule; }
  static int32_t Expanded(int32_t rule) { return -3 - 2 * rule; }
  static constexpr int32_t kUnknown = -2;

  TokenGrammar() = default;
  int32_t NodeFor(int32_t pos, int32_t parent) TW_REQUIRES(mu_);
  // Adds to scratch_nodes_ the stacks reachable from (pos, parent) without
  // consuming a byte; sets scratch_complete_ when the grammar may end.
  Status Expand(int32_t pos, int32_t parent) TW_REQUIRES(mu_);
  // Interns scratch_nodes_ / scratch_complete_ as a state.
  Status Intern(int32_t* out) TW_REQUIRES(mu_);
  Status StepLocked(int32_t state, uint8_t byte, int32_t* next) TW_REQUIRES(mu_);
  // The positions that may come right after rule r ends, in any context
  // (through the ends of the rules that call it last), computed once.
  const std::vector<int32_t>& FollowOf(int32_t r) TW_REQUIRES(mu_);
  // The table of real stack `node`'s top kTableDepth frames, computed on
  // first use by a walk of the trie from those frames standing on
  // InContext(the rule of the deepest) -- or from the stack itself when it
  // is no deeper (then nothing is uncertain).
  Status TableFor(int32_t node, const PosTable** out) TW_REQUIRES(mu_);
  // The mask from the tables of the state's stacks' tops, the uncertain
  // tokens stepped through from each stack alone.
  Status ComputeMask(int32_t state, uint64_t* mask) TW_REQUIRES(mu_);

  std::shared_ptr<const Vocabulary> vocab_;
  MatcherLimits limits_;
  // The flattened grammar: each rule's alternatives are runs of positions
  // ending in kEnd; rule_alts_[r] lists where they start. Immutable after
  // Compile.
  std::vector<Pos> prog_;
  std::vector<ByteSet> sets_;
  std::vector<std::vector<int32_t>> rule_alts_;
  std::vector<int32_t> rule_of_;                 // (prog_) the rule each position is in
  std::vector<std::vector<int32_t>> refs_to_;    // rule -> the positions referring to it
  int32_t initial_ = kDead;
  std::vector<Chain> chains_ TW_GUARDED_BY(mu_);
  std::vector<CountPos> count_pos_;  // (prog_) empty when the grammar has no chains

  Mutex mu_;
  std::vector<Node> nodes_ TW_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, int32_t> node_ids_ TW_GUARDED_BY(mu_);     // (pos, parent) -> node
  std::vector<State> states_ TW_GUARDED_BY(mu_);
  // The DFA: next_[state * 256 + byte] is the state after the byte, kDead,
  // or kUnknown until computed (1 KB a state).
  std::vector<int32_t> next_ TW_GUARDED_BY(mu_);
  std::vector<int32_t> stacks_ TW_GUARDED_BY(mu_);                        // the states' node lists
  std::unordered_map<std::string, int32_t> state_ids_ TW_GUARDED_BY(mu_);  // a state's key -> id
  std::unordered_map<int32_t, std::vector<uint64_t>> masks_ TW_GUARDED_BY(mu_);
  std::unordered_map<int32_t, PosTable> tables_ TW_GUARDED_BY(mu_);  // the frames' top node -> table
  std::vector<std::vector<int32_t>> follow_ TW_GUARDED_BY(mu_);      // (rules) FollowOf
  std::vector<char> follow_done_ TW_GUARDED_BY(mu_);
  bool scratch_ret1_ TW_GUARDED_BY(mu_) = false;
  bool scratch_escaped_ TW_GUARDED_BY(mu_) = false;
  MatcherStats stats_ TW_GUARDED_BY(mu_);
  // Scratch of Expand / Intern / ComputeMask (kept to allocate once).
  std::vector<int32_t> scratch_nodes_ TW_GUARDED_BY(mu_);
  bool scratch_complete_ TW_GUARDED_BY(mu_) = false;
  std::vector<std::pair<int32_t, int32_t>> work_ TW_GUARDED_BY(mu_);
  std::vector<uint64_t> seen_ TW_GUARDED_BY(mu_);
  std::vector<int32_t> path_ TW_GUARDED_BY(mu_);  // (ComputeMask) the states along a token's bytes
  std::string key_ TW_GUARDED_BY(mu_);
};

// One sequence's place in a compiled grammar.
class Matcher {
 public:
  Matcher() = default;
  explicit Matcher(std::shared_ptr<TokenGrammar> grammar)
      : grammar_(std::move(grammar)), state_(grammar_->initial_state()) {}

  bool active() const { return grammar_ != nullptr; }
  // Advances by token `id`: an error naming the token if the grammar does
  // not allow it (then refused() is true; the end-of-text id is allowed
  // where the grammar may end, and leaves the state as it is), or one
  // naming a bound the grammar passed (MatcherLimits; refused() false).
  Status Accept(int32_t id);
  bool refused() const { return refused_; }
  // The allowed-token mask (TokenGrammar::FillMask).
  Status FillMask(uint64_t* mask) { return grammar_->FillMask(state_, mask); }
  bool IsComplete() const { return grammar_->IsComplete(state_); }
  bool CanContinue() const { return grammar_->CanContinue(state_); }
  int32_t state() const { return state_; }
  TokenGrammar* grammar() const { return grammar_.get(); }

 private:
  std::shared_ptr<TokenGrammar> grammar_;
  int32_t state_ = TokenGrammar::kDead;
  bool refused_ = false;
};

}  // namespace tw::grammar

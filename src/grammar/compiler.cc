#include "grammar/compiler.h"

#include <chrono>

#include "grammar/gbnf.h"
#include "grammar/regex.h"
#include "json/json.h"

namespace tw::grammar {

namespace {

using Clock = std::chrono::steady_clock;

int64_t MsSince(Clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
}

// root ::= "choice 1" | "choice 2" | ...
Status ChoiceGrammar(const std::vector<std::string>& choices, const GrammarLimits& limits, Grammar* out) {
  if (choices.empty()) return Status::Error("choice: the list is empty");
  Grammar g;
  g.limits = limits;
  g.root = g.AddRule("root");
  g.AddAlt(g.root, {Literals(&g, choices, "choice")});
  *out = std::move(g);
  return Check(*out);
}

std::string CacheKey(const GrammarSpec& spec) {
  std::string key(1, static_cast<char>('0' + static_cast<int>(spec.kind)));
  if (spec.kind == GrammarKind::kChoice) {
    for (const std::string& c : spec.choices) {
      key += std::to_string(c.size());
      key.push_back(':');
      key += c;
    }
  } else {
    key += spec.source;
  }
  return key;
}

}  // namespace

const char* GrammarKindName(GrammarKind k) {
  switch (k) {
    case GrammarKind::kJsonSchema: return "json_schema";
    case GrammarKind::kJsonObject: return "json_object";
    case GrammarKind::kRegex: return "regex";
    case GrammarKind::kChoice: return "choice";
    case GrammarKind::kGbnf: return "gbnf";
  }
  return "?";
}

Compiler::Compiler(std::shared_ptr<const Vocabulary> vocab, const CompilerOptions& options)
    : vocab_(std::move(vocab)), options_(options) {}

Status Compiler::CompileUncached(const GrammarSpec& spec, std::shared_ptr<TokenGrammar>* out) const {
  size_t bytes = spec.source.size();
  for (const std::string& c : spec.choices) bytes += c.size();
  if (bytes > options_.max_source_bytes) {
    return Status::Error(std::string(GrammarKindName(spec.kind)) + ": " + std::to_string(bytes) +
                         " bytes (at most " + std::to_string(options_.max_source_bytes) + ": --grammar-max-bytes)");
  }
  const Clock::time_point t0 = Clock::now();
  auto in_time = [&](const char* phase) {
    const int64_t ms = MsSince(t0);
    if (ms <= options_.max_compile_ms) return Status::Ok();
    return Status::Error(std::string(GrammarKindName(spec.kind)) + ": compiling took " + std::to_string(ms) +
                         " ms by the end of " + phase + " (at most " + std::to_string(options_.max_compile_ms) +
                         ": --grammar-max-compile-ms)");
  };
  Grammar g;
  Status st;
  switch (spec.kind) {
    case GrammarKind::kJsonSchema: {
      json::Value schema;
      json::ParseLimits pl;
      pl.max_bytes = options_.max_source_bytes;
      size_t offset = 0;
      st = json::Parse(spec.source, &schema, pl, &offset);
      if (!st.ok()) {
        st = Status::Error("json_schema: not JSON at byte " + std::to_string(offset) + ": " + st.message());
        break;
      }
      st = JsonSchemaGrammar(schema, options_.json, options_.grammar, &g);
      break;
    }
    case GrammarKind::kJsonObject: st = JsonObjectGrammar(options_.json, options_.grammar, &g); break;
    case GrammarKind::kRegex: st = RegexGrammar(spec.source, options_.grammar, &g); break;
    case GrammarKind::kChoice: st = ChoiceGrammar(spec.choices, options_.grammar, &g); break;
    case GrammarKind::kGbnf: st = ParseGbnf(spec.source, options_.grammar, &g); break;
  }
  if (!st.ok()) return st;
  if (st = in_time("the front end"); !st.ok()) return st;
  std::shared_ptr<TokenGrammar> tg;
  if (st = TokenGrammar::Compile(g, vocab_, options_.matcher, &tg); !st.ok()) return st;
  if (st = in_time("the flattening"); !st.ok()) return st;
  // The first mask now, on this (prep) thread: it is cached in tg.
  std::vector<uint64_t> mask(static_cast<size_t>(vocab_->mask_words()));
  if (st = tg->FillMask(tg->initial_state(), mask.data()); !st.ok()) return st;
  if (st = in_time("the first mask"); !st.ok()) return st;
  if (options_.warmup_ms > 0) {
    // A breadth-first walk of the first few hundred states; bounded by its
    // own time, whatever the compile bound leaves.
    const auto deadline = Clock::now() + std::chrono::milliseconds(options_.warmup_ms);
    if (st = tg->Warm(deadline, 512); !st.ok()) return st;
  }
  *out = std::move(tg);
  return Status::Ok();
}

Status Compiler::Compile(const GrammarSpec& spec, std::shared_ptr<TokenGrammar>* out) {
  const std::string key = CacheKey(spec);
  {
    MutexLock lock(mu_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      *out = it->second->second;
      stats_.hits++;
      return Status::Ok();
    }
    stats_.misses++;
  }
  std::shared_ptr<TokenGrammar> tg;
  Status st = CompileUncached(spec, &tg);
  MutexLock lock(mu_);
  if (!st.ok()) {
    stats_.refused++;
    return st;
  }
  if (auto it = index_.find(key); it != index_.end()) {
    *out = it->second->second;  // another thread finished first: share its
    return Status::Ok();
  }
  *out = tg;
  if (options_.cache_entries <= 0) return Status::Ok();
  lru_.emplace_front(key, std::move(tg));
  index_.emplace(key, lru_.begin());
  while (static_cast<int>(lru_.size()) > options_.cache_entries) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return Status::Ok();
}

CompilerStats Compiler::stats() const {
  MutexLock lock(mu_);
  CompilerStats s = stats_;
  s.entries = static_cast<int64_t>(lru_.size());
  return s;
}

}  // namespace tw::grammar

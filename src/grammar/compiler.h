// The grammar compiler the server runs on its prep threads: a request's
// structured-output field (a JSON Schema, "any JSON object", a regular
// expression, a list of choices, a GBNF grammar) to a compiled TokenGrammar
// for the served vocabulary, through a cache keyed by the field's content.
//
// Every compile is bounded: the source's size (max_source_bytes), the
// grammar's size (GrammarLimits), and its time (max_compile_ms, checked after
// each phase: the front end, the flattening, the first mask). A compile that
// passes a bound fails with a message naming the flag. The first mask (the
// allowed tokens before any output) is computed here, off the engine thread,
// so a request's time to first mask is spent while it is prepared; then, for
// warmup_ms, the tables the next tokens will likely need (TokenGrammar::Warm).
//
// The cache holds up to cache_entries compiled grammars, least recently used
// first out; a hit is shared (the TokenGrammar's lazily built matcher states
// and masks then serve every request with that schema). Refusals are not
// cached.
//
// Threads: any thread (a mutex guards the cache; compiles run outside it, so
// two threads compiling the same new grammar both compile, and the first to
// finish is kept). Memory: the cache's entries, each bounded by
// MatcherLimits; the sources are kept as the keys.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"
#include "grammar/matcher.h"

namespace tw::grammar {

enum class GrammarKind : uint8_t { kJsonSchema, kJsonObject, kRegex, kChoice, kGbnf };
// "json_schema", "json_object", "regex", "choice", "gbnf"
const char* GrammarKindName(GrammarKind k);

struct GrammarSpec {
  GrammarKind kind = GrammarKind::kJsonObject;
  // kJsonSchema: the schema as JSON text; kRegex: the pattern; kGbnf: the
  // grammar text; kJsonObject: unused.
  std::string source;
  std::vector<std::string> choices;  // kChoice: the strings, at least one
};

struct CompilerOptions {
  GrammarLimits grammar;          // --grammar-max-rules, --grammar-max-elements
  MatcherLimits matcher;          // --grammar-max-states, --grammar-cached-masks
  JsonSchemaOptions json;         // --json-max-whitespace
  size_t max_source_bytes = 64 << 10;  // --grammar-max-bytes: a schema, pattern, grammar or all choices
  int max_compile_ms = 2000;      // --grammar-max-compile-ms
  // After the first mask, the compile goes on building the tables the next
  // tokens are likely to need (TokenGrammar::Warm) for this long
  // (--grammar-warmup-ms; 0: none): time to first mask traded for the
  // tail of the time between masks.
  int warmup_ms = 0;
  int cache_entries = 16;         // --grammar-cache-entries (0: no cache)
};

struct CompilerStats {
  int64_t hits = 0;
  int64_t misses = 0;   // compiled (successfully or not)
  int64_t refused = 0;  // compiles that failed
  int64_t entries = 0;
};

class Compiler {
 public:
  Compiler(std::shared_ptr<const Vocabulary> vocab, const CompilerOptions& options);

  // The compiled grammar of `spec`, from the cache when it was compiled
  // before. Errors are the front end's (the keyword and its place, the line
  // and column, the regex column) or a bound's (naming its flag).
  Status Compile(const GrammarSpec& spec, std::shared_ptr<TokenGrammar>* out);

  const Vocabulary& vocab() const { return *vocab_; }
  const CompilerOptions& options() const { return options_; }
  CompilerStats stats() const;

 private:
  Status CompileUncached(const GrammarSpec& spec, std::shared_ptr<TokenGrammar>* out) const;

  std::shared_ptr<const Vocabulary> vocab_;
  CompilerOptions options_;
  mutable Mutex mu_;
  // Most recently used first; the map points into the list.
  std::list<std::pair<std::string, std::shared_ptr<TokenGrammar>>> lru_ TW_GUARDED_BY(mu_);
  std::unordered_map<std::string, decltype(lru_)::iterator> index_ TW_GUARDED_BY(mu_);
  CompilerStats stats_ TW_GUARDED_BY(mu_);
};

}  // namespace tw::grammar

// libFuzzer target for grammar/json_schema.h: any JSON text as a schema must
// compile or fail cleanly -- never crash, hang or pass its limits. A grammar
// that compiles must pass Check (JsonSchemaGrammar runs it; checked again),
// stay within the limits given, and have "root" as its root. Inputs that are
// not JSON are dropped; the limits are small so that each run stays fast.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "grammar/json_schema.h"
#include "json/json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  // The first byte picks the options; the rest is the schema.
  const uint8_t knobs = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  tw::json::ParseLimits plimits;
  plimits.max_bytes = 1 << 16;
  plimits.max_depth = 64;
  tw::json::Value schema;
  if (!tw::json::Parse(text, &schema, plimits).ok()) return 0;
  tw::grammar::JsonSchemaOptions opts;
  opts.max_whitespace = knobs & 7;
  opts.strict = (knobs & 8) != 0;
  tw::grammar::GrammarLimits limits;
  limits.max_rules = 4000;
  limits.max_elements = 40000;
  tw::grammar::Grammar g;
  const tw::Status s = tw::grammar::JsonSchemaGrammar(schema, opts, limits, &g);
  if (!s.ok()) {
    if (s.message().empty()) {
      std::fprintf(stderr, "an error without a message\n");
      std::abort();
    }
    return 0;
  }
  if (!tw::grammar::Check(g).ok() || g.root < 0 || g.rules[g.root].name != "root" ||
      static_cast<int>(g.rules.size()) > limits.max_rules || g.CountElements() > limits.max_elements) {
    std::fprintf(stderr, "a compiled grammar fails its own checks: %s\n", tw::grammar::Check(g).message().c_str());
    std::abort();
  }
  return 0;
}

// JSON Schema (draft 2020-12, the subset below) to grammar::Grammar, for
// response_format json_schema, guided_json and llama-server's json_schema.
//
// The grammar generates JSON text that is valid under the schema:
//   type (all seven; a list of types), properties, required,
//   additionalProperties (false, true or a schema), items, prefixItems,
//   minItems / maxItems, enum, const, anyOf / oneOf (as anyOf: a grammar
//   cannot exclude the overlap), allOf of one schema, minLength / maxLength,
//   pattern (grammar/regex.h, ECMA-262 search semantics), minimum / maximum
//   / exclusiveMinimum / exclusiveMaximum on integers, $ref to "#" and
//   "#/$defs/..." (recursive too; "definitions" too), format date,
//   date-time, time, uuid and email (as regular expressions), and the
//   annotations that do not constrain (title, description, $schema, $id,
//   $comment, default, examples, deprecated, readOnly, writeOnly).
// Every other keyword is refused by name with its place in the schema as a
// JSON pointer: "/properties/age: 'multipleOf' is not supported".
//
// Objects: properties come in the order the schema lists them (a grammar
// that allowed every order would grow factorially); a required one always,
// an optional one may be left out; then, when additional properties are
// allowed, any number of other keys (strings that are none of the listed
// names) with their values. Strings: the JSON string syntax (escapes
// included), each code point counted once by minLength / maxLength.
// Whitespace: between tokens, at most `max_whitespace` bytes of space, tab,
// CR or LF (0: compact JSON only), so a model cannot spin on spaces.
//
// Threads: pure functions. Memory: the grammar's, within `limits`.
#pragma once

#include "common/status.h"
#include "grammar/grammar.h"
#include "json/json.h"

namespace tw::grammar {

struct JsonSchemaOptions {
  // Whitespace bytes allowed between two JSON tokens (--json-max-whitespace).
  int max_whitespace = 8;
  // true (OpenAI's strict, XGrammar's strict mode): an object schema without
  // additionalProperties allows no other keys. false: JSON Schema's own
  // default (any other key, with any value).
  bool strict = true;
};

// *out: a grammar (root "root") of the JSON texts valid under `schema`.
Status JsonSchemaGrammar(const json::Value& schema, const JsonSchemaOptions& opts, const GrammarLimits& limits,
                         Grammar* out);

// *out: a grammar of any JSON object (response_format json_object).
Status JsonObjectGrammar(const JsonSchemaOptions& opts, const GrammarLimits& limits, Grammar* out);

}  // namespace tw::grammar

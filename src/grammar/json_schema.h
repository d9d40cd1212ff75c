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
//   "#/$defs/..." (recursive too; "definitions" and any other local JSON
//   pointer too), format date, date-time, time, uuid and email (as regular
//   expressions), uniqueItems: false, and the annotations that do not
//   constrain (title, description, $schema, $id, $comment, default,
//   examples, deprecated, readOnly, writeOnly, ...: a keyword JSON Schema
//   does not define is ignored, as JSON Schema ignores it).
// These keywords are refused by name with their place in the schema as a
// JSON pointer (the root is "/"): multipleOf, uniqueItems: true, contains,
// minContains, maxContains, not, if / then / else, dependentRequired,
// dependentSchemas, dependencies, patternProperties, propertyNames,
// unevaluatedItems, unevaluatedProperties, minProperties, maxProperties,
// additionalItems, $dynamicRef, $dynamicAnchor, $recursiveRef,
// $recursiveAnchor: "/properties/age: 'multipleOf' is not supported". So are
// the combinations a grammar cannot intersect: a keyword of one type's beside
// enum, const, anyOf, oneOf, allOf or $ref ("/: 'properties' beside 'anyOf'
// is not supported"; `type` beside them is fine: it narrows what they
// produce), pattern beside format or a length, minimum and its kin on a
// non-integer number ("'minimum' is supported only on integers"), a $ref to
// anything but a local pointer, an $id below the root that is not a "#..."
// fragment (it would move the base of $ref), an unknown format, a bound so
// large the grammar passes `limits` ("'maxLength' is too large for the
// grammar's limits"), and a schema nested deeper than 64.
//
// A schema without `type` is the union over the types, each constrained by
// the keywords that apply to it ({"maxLength": 3} also allows 5 and null).
//
// Objects: properties come in the order the schema lists them (a grammar
// that allowed every order would grow factorially); a required one always,
// an optional one may be left out; then a `required` name that is not in
// `properties` (with the additional properties' schema; refused when they
// are not allowed); then, when additional properties are allowed, any number
// of other keys (strings that are none of the listed names; while such a key
// still spells the start of a listed name, it is written without \u escapes
// and "\/", so that it cannot spell a listed name another way) with their
// values (two of those may be the same key: a grammar cannot remember the
// keys it wrote). Listed names are written as json::AppendQuoted writes them.
// Strings: the JSON string syntax (every escape; a surrogate pair only as a
// pair), each code point counted once by minLength / maxLength.
// Numbers: integers are written without "-0", without leading zeros, without
// a fraction or exponent (1.0 is an integer to JSON Schema, but the grammar
// writes it 1); an integer range is its exact set of digit strings, and a
// bound past int64 is brought to int64's edge (the grammar is then
// stricter). `type: number` is any JSON number ("-0" included).
// enum / const: each value's compact serialization (json::Serialize), object
// keys in the schema's order.
// The false schema matches nothing: a property whose schema is false may not
// appear, an anyOf alternative that is false is dropped, prefixItems stop
// before a false one; where a value is needed (the root, a required
// property, a $ref target) the compile fails ("/: the schema matches
// nothing"). A $ref cycle that never reaches a value is refused by Check as
// left recursion.
// Whitespace: between tokens, at most `max_whitespace` bytes of space, tab,
// CR or LF (0: compact JSON only), so a model cannot spin on spaces; none
// before or after the whole value.
//
// Threads: pure functions. Memory: the grammar's, within `limits` (the
// compiler stops early once the rule count passes them); recursion at most
// 64 levels, the schema's nesting and its $ref chain together (each $ref
// target is compiled once per set of allowed types).
// Never: throws, or loops on a $ref cycle.
#pragma once

#include "common/status.h"
#include "grammar/grammar.h"
#include "json/json.h"

namespace tw::grammar {

struct JsonSchemaOptions {
  // Whitespace bytes allowed between two JSON tokens (--json-max-whitespace).
  int max_whitespace = 8;
  // true (OpenAI's strict, XGrammar's strict mode): an object schema with
  // properties or required but without additionalProperties allows no other
  // keys (one that lists none, {"type": "object"}, is any object). false:
  // JSON Schema's own default (any other key, with any value).
  bool strict = true;
};

// *out: a grammar (root "root") of the JSON texts valid under `schema`.
Status JsonSchemaGrammar(const json::Value& schema, const JsonSchemaOptions& opts, const GrammarLimits& limits,
                         Grammar* out);

// *out: a grammar of any JSON object (response_format json_object).
Status JsonObjectGrammar(const JsonSchemaOptions& opts, const GrammarLimits& limits, Grammar* out);

}  // namespace tw::grammar

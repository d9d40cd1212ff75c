// A JSON Schema validator for the subset grammar/json_schema.h compiles, the
// tests' independent reference for what a schema means: it implements the
// keywords' draft 2020-12 semantics directly on json::Value trees (never
// through a grammar), so that generated or hand-written texts can be checked
// against the schema itself.
//
// Semantics (JSON Schema's, not the grammar's): key order is irrelevant;
// additionalProperties defaults to true; an integer-valued double (1.0) is an
// integer; numbers compare by value (1 == 1.0, in enum and const too); string
// lengths count code points; `pattern` is std::regex ECMAScript search over
// the UTF-8 bytes (so a pattern with non-ASCII classes is only approximate);
// formats date, time, date-time (RFC 3339, leap years and leap seconds as
// RFC 3339 says), uuid and email are checked by hand-written code; other
// formats are annotations. Keywords outside the subset are ignored (callers
// use it only on schemas the compiler accepts). An object with a key twice
// has every member checked.
//
// Threads: pure functions. Memory: recursion as deep as the instance and the
// $ref chain, bounded (a validation deeper than 256 levels fails).
#pragma once

#include <string>

#include "json/json.h"

namespace tw::grammar::testing {

// Whether `instance` is valid under `schema` (a whole schema document: $ref
// "#..." resolves against it). On false, *why (if non-null) says where and why.
bool Validate(const json::Value& schema, const json::Value& instance, std::string* why);

// The same for `schema`, a subschema of `root` (where its $refs resolve).
bool ValidateAt(const json::Value& root, const json::Value& schema, const json::Value& instance, std::string* why);

// The subschema a local $ref ("#", "#/$defs/x", any "#/..." pointer with ~0
// ~1 and %XX escapes) names in `root`, or nullptr.
const json::Value* ResolveRef(const json::Value& root, const std::string& ref);

// JSON Schema equality: numbers by value, objects whatever their key order.
bool JsonEqual(const json::Value& a, const json::Value& b);

}  // namespace tw::grammar::testing

// A small JSON reader for the conformance vector files (tests only).
//
// Reads the third-party case files under tests/data/http/ without depending
// on the project's own JSON layer (so a bug there cannot hide one here).
// Strings are decoded to UTF-8 bytes (\uXXXX and surrogate pairs included);
// numbers are kept as doubles. Malformed input yields a null Value and an
// error message.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tw::testing {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::map<std::string, JsonValue> object;

  bool is_null() const { return type == Type::kNull; }
  // Member lookup; a shared null value if absent or not an object.
  const JsonValue& operator[](const std::string& key) const;
  const std::string& str() const { return string; }
};

// Parses one JSON document. On error returns a null value and sets *error.
JsonValue ParseJson(std::string_view text, std::string* error);
// Parses one document per non-empty line.
std::vector<JsonValue> ParseJsonLines(std::string_view text, std::string* error);
// Standard base64 (RFC 4648) decode; sets *ok false on bad input.
std::string Base64Decode(std::string_view in, bool* ok);

}  // namespace tw::testing

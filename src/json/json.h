// JSON (RFC 8259) parser and writer.
//
// Parse() turns bytes into a Value tree. It is strict: the input must be valid
// UTF-8 (overlongs, surrogates encoded in UTF-8, and bytes over U+10FFFF are
// rejected), the grammar is RFC 8259's exactly, escapes include surrogate
// pairs (a lone surrogate escape is rejected), and two bounds hold: the input
// size (ParseLimits::max_bytes) and the nesting depth (max_depth). A failure
// names the byte offset where it was detected.
//
// Numbers: a number with no fraction and no exponent that fits int64 is kInt;
// every other number is kDouble (overflow to +-inf is rejected as an error,
// underflow rounds to 0). Duplicate object keys are kept in order; Find()
// returns the last one, as JavaScript does.
//
// Writer appends JSON text to a caller-owned std::string. It escapes control
// characters, '"' and '\\', and replaces invalid UTF-8 in its input with
// U+FFFD, so it never emits invalid UTF-8.
//
// Error offsets: the offset of the first byte that cannot continue a valid
// document (text.size() when the input ends too early; for a bad UTF-8
// sequence, the first byte that cannot belong to it; for a lone or mismatched
// surrogate escape, the backslash of the escape that is wrong or where the
// missing low surrogate escape should start; for the size bound, max_bytes;
// for a number out of range, the number's first byte).
//
// -0: the integer "-0" parses as kInt 0; a double -0.0 is written as "-0.0"
// (not "-0") so that it parses back as a double with its sign.
//
// Thread-safety: no shared state; a Value may be read from any thread; a
// Writer belongs to one thread at a time.
// Allocation: one node per value; Parse never allocates more than O(input)
// (bounded by max_bytes) plus one stack entry per open container (bounded by
// max_depth).
// Never: throws (other than std::bad_alloc), exits, or recurses on input
// nesting: Parse and Serialize keep explicit stacks. Note that destroying a
// Value is recursive, so max_depth should stay modest (the default is 64).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace tw::json {

struct ParseLimits {
  size_t max_bytes = 1 << 20;  // whole document, in bytes; larger input is rejected
  int max_depth = 64;          // arrays + objects open at once; 0 allows scalars only
};

class Value {
 public:
  enum class Kind { kNull, kBool, kInt, kDouble, kString, kArray, kObject };
  using Member = std::pair<std::string, Value>;

  Value() = default;  // null
  static Value Null() { return Value(); }
  static Value Bool(bool b);
  static Value Int(int64_t i);
  static Value Double(double d);
  static Value String(std::string s);
  static Value Array();
  static Value Object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kDouble; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool as_bool() const { return bool_; }
  int64_t as_int() const { return int_; }           // kInt only
  double as_double() const;                         // kInt or kDouble
  const std::string& as_string() const { return string_; }
  const std::vector<Value>& items() const { return items_; }      // kArray
  std::vector<Value>& items() { return items_; }
  const std::vector<Member>& members() const { return members_; }  // kObject
  std::vector<Member>& members() { return members_; }

  // Object lookup: the last member named `key`, or nullptr (also for non-objects).
  const Value* Find(std::string_view key) const;
  // Appends to an array / object (no effect on other kinds).
  void Push(Value v);
  void Set(std::string key, Value v);

 private:
  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  int64_t int_ = 0;
  double double_ = 0;
  std::string string_;
  std::vector<Value> items_;
  std::vector<Member> members_;
};

// Parses `text` as one JSON document (surrounding whitespace allowed).
// On failure returns an error whose message names the offset, and sets
// *error_offset (if non-null) to the byte offset where parsing failed; *out is
// then left unchanged.
Status Parse(std::string_view text, Value* out, const ParseLimits& limits = ParseLimits(),
             size_t* error_offset = nullptr);

// Whether some object in `v` (at any depth) has a key twice. RFC 8259 allows
// it ("names SHOULD be unique") and Parse keeps every member (Find: the last
// wins), so a reader that wants exactly one value per key asks this after
// parsing. On true, *path names the first such key in document order, with
// its enclosing keys and array indexes ("prompt", "stream_options.x",
// "messages[2].role"). Linear in the size of `v`; recursion as deep as `v`.
bool FindDuplicateKey(const Value& v, std::string* path);

// Appends `s` as a JSON string literal (with quotes) to *out.
void AppendQuoted(std::string* out, std::string_view s);

// Serializes a Value compactly (no spaces). Doubles use the shortest form that
// round-trips (non-finite doubles are written as null).
std::string Serialize(const Value& v);

// Streaming writer for building responses without a tree:
//   Writer w(&out); w.BeginObject(); w.Key("a"); w.Int(1); w.EndObject();
// Commas are inserted automatically. The caller keeps Begin/End and Key/value
// calls balanced; the Writer does not check (it never fails or allocates
// beyond *out and one bool per open container).
class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void BeginObject();
  void EndObject();
  void BeginArray();
  void EndArray();
  void Key(std::string_view k);
  void String(std::string_view s);
  void Int(int64_t i);
  void Double(double d);
  void Bool(bool b);
  void Null();
  void Raw(std::string_view json);  // an already-serialized value

 private:
  void Separate();
  std::string* out_;
  std::vector<bool> first_;  // per open container: no element written yet
  bool after_key_ = false;
};

}  // namespace tw::json

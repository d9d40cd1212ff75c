// JSON Schema to grammar (see json_schema.h for the subset and the choices).
//
// The compiler walks the schema top-down, keeping a JSON pointer for error
// messages and a depth (bounded by kMaxDepth: a schema nested deeper is
// refused, so the walk never recurses without bound). Each schema becomes
// one Element; `$ref` targets become one rule each (created before their
// body, so a recursive schema refers to its own rule and the compiler does
// not loop). Shared rules -- ws, string, number, the generic value -- are
// built once, on first use.
//
// How a schema becomes alternatives: `type` (or, without `type`, every type)
// gives a set of JSON types; each type present contributes one alternative
// built from the keywords that apply to it (minLength to strings, minimum
// to integers, properties to objects, ...), the others being ignored as JSON
// Schema ignores them. enum / const, anyOf / oneOf / allOf and $ref replace
// that construction; `type` beside them narrows what they may produce.

#include "grammar/json_schema.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "grammar/regex.h"
#include "json/utf8.h"

namespace tw::grammar {

namespace {

// The digits a generated number may have (json_schema.h): 18 in the integer
// part (an unbounded integer stays below 10^18, within int64), 16 after the
// point, 2 in the exponent (so every number fits a double).
constexpr int kMaxIntDigits = 18;
constexpr int kMaxFracDigits = 16;
constexpr int kMaxExpDigits = 2;

constexpr int kMaxDepth = 64;

// ---- JSON types as a bit set ------------------------------------------------

enum TypeBits : unsigned {
  kNull = 1,
  kBoolean = 2,
  kObject = 4,
  kArray = 8,
  kString = 16,
  kInteger = 32,  // integers only
  kNumber = 64,   // any number (always set together with kInteger)
};
constexpr unsigned kAllTypes = kNull | kBoolean | kObject | kArray | kString | kInteger | kNumber;

// The types a JSON value belongs to (2020-12: 1.0 is an integer too).
unsigned TypesOf(const json::Value& v) {
  switch (v.kind()) {
    case json::Value::Kind::kNull: return kNull;
    case json::Value::Kind::kBool: return kBoolean;
    case json::Value::Kind::kInt: return kInteger | kNumber;
    case json::Value::Kind::kDouble: {
      const double d = v.as_double();
      return std::isfinite(d) && d == std::floor(d) ? (kInteger | kNumber) : kNumber;
    }
    case json::Value::Kind::kString: return kString;
    case json::Value::Kind::kArray: return kArray;
    case json::Value::Kind::kObject: return kObject;
  }
  return 0;
}

// ---- keywords -----------------------------------------------------------------

// Keywords of JSON Schema that constrain and that this compiler does not
// implement. Anything not known at all is an annotation (JSON Schema ignores
// unknown keywords) and is ignored too.
const std::set<std::string>& RefusedKeywords() {
  static const std::set<std::string> k = {"multipleOf",
                                          "contains",
                                          "minContains",
                                          "maxContains",
                                          "not",
                                          "if",
                                          "then",
                                          "else",
                                          "dependentRequired",
                                          "dependentSchemas",
                                          "dependencies",
                                          "patternProperties",
                                          "propertyNames",
                                          "unevaluatedItems",
                                          "unevaluatedProperties",
                                          "$dynamicRef",
                                          "$dynamicAnchor",
                                          "$recursiveRef",
                                          "$recursiveAnchor",
                                          "minProperties",
                                          "maxProperties",
                                          "additionalItems",
                                          "uniqueItems"};
  return k;
}

bool IsStringKeyword(const std::string& k) {
  return k == "minLength" || k == "maxLength" || k == "pattern" || k == "format";
}
bool IsNumberKeyword(const std::string& k) {
  return k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum";
}
bool IsObjectKeyword(const std::string& k) {
  return k == "properties" || k == "required" || k == "additionalProperties";
}
bool IsArrayKeyword(const std::string& k) {
  return k == "items" || k == "prefixItems" || k == "minItems" || k == "maxItems";
}
// Keywords that replace the per-type construction.
bool IsCombinator(const std::string& k) {
  return k == "enum" || k == "const" || k == "anyOf" || k == "oneOf" || k == "allOf" || k == "$ref";
}
bool IsTypeSpecific(const std::string& k) {
  return IsStringKeyword(k) || IsNumberKeyword(k) || IsObjectKeyword(k) || IsArrayKeyword(k);
}

// A JSON pointer one level down ("~" and "/" escaped as RFC 6901 says).
std::string Child(const std::string& ptr, std::string_view key) {
  std::string out = ptr + "/";
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out.push_back(c);
    }
  }
  return out;
}
std::string Child(const std::string& ptr, size_t index) { return ptr + "/" + std::to_string(index); }

// The pointer as errors print it: the root is "/".
std::string Where(const std::string& ptr) { return ptr.empty() ? "/" : ptr; }

Status Refuse(const std::string& ptr, const std::string& what) { return Status::Error(Where(ptr) + ": " + what); }

// A non-negative integer keyword value (minLength, maxItems, ...), or an error.
Status Count(const json::Value& v, const std::string& ptr, const char* keyword, long long* out) {
  double d = 0;
  if (v.is_int()) {
    d = static_cast<double>(v.as_int());
  } else if (v.kind() == json::Value::Kind::kDouble) {
    d = v.as_double();
  } else {
    return Refuse(ptr, std::string("'") + keyword + "' must be a non-negative integer");
  }
  if (!(d >= 0) || d != std::floor(d)) {
    return Refuse(ptr, std::string("'") + keyword + "' must be a non-negative integer");
  }
  *out = d > 1e15 ? static_cast<long long>(1e15) : static_cast<long long>(d);
  return Status::Ok();
}

// ---- integer ranges as digit strings -----------------------------------------

using Int128 = __int128;

// The digit strings of [a, b] (same length, a <= b as numbers): sequences of
// digit sets, e.g. [120, 345] -> 12[0-9] | 1[3-9][0-9] | 2[0-9][0-9] |
// 3[0-3][0-9] | 34[0-5].
void SameLengthRange(const std::string& a, const std::string& b, size_t i, Sequence prefix,
                     std::vector<Sequence>* out) {
  if (i == a.size()) {
    out->push_back(std::move(prefix));
    return;
  }
  if (a[i] == b[i]) {
    prefix.push_back(Element::Byte(static_cast<uint8_t>(a[i])));
    SameLengthRange(a, b, i + 1, std::move(prefix), out);
    return;
  }
  const bool low_tail_zero = a.find_first_not_of('0', i + 1) == std::string::npos;
  const bool high_tail_nine = b.find_first_not_of('9', i + 1) == std::string::npos;
  char lo = a[i], hi = b[i];
  if (!low_tail_zero) {  // a[i] followed by [a's tail, 99..9]
    Sequence p = prefix;
    p.push_back(Element::Byte(static_cast<uint8_t>(a[i])));
    SameLengthRange(a, a.substr(0, i + 1) + std::string(a.size() - i - 1, '9'), i + 1, std::move(p), out);
    ++lo;
  }
  if (!high_tail_nine) {  // b[i] followed by [00..0, b's tail]
    Sequence p = prefix;
    p.push_back(Element::Byte(static_cast<uint8_t>(b[i])));
    SameLengthRange(b.substr(0, i + 1) + std::string(b.size() - i - 1, '0'), b, i + 1, std::move(p), out);
    --hi;
  }
  if (lo <= hi) {  // [lo-hi] then any digits
    Sequence p = std::move(prefix);
    p.push_back(Element::Bytes(ByteSet::Range(static_cast<uint8_t>(lo), static_cast<uint8_t>(hi))));
    for (size_t j = i + 1; j < a.size(); ++j) p.push_back(Element::Bytes(ByteSet::Range('0', '9')));
    out->push_back(std::move(p));
  }
}

std::string Decimal(Int128 v) {
  std::string s;
  do {
    s.push_back(static_cast<char>('0' + static_cast<int>(v % 10)));
    v /= 10;
  } while (v > 0);
  std::reverse(s.begin(), s.end());
  return s;
}

// ---- the compiler ---------------------------------------------------------------

class SchemaCompiler {
 public:
  SchemaCompiler(const json::Value& root, const JsonSchemaOptions& opts, Grammar* g)
      : root_(root), opts_(opts), g_(g) {}

  Status CompileRoot() {
    g_->root = g_->AddRule("root");
    Result r;
    if (Status s = Compile(root_, "", kAllTypes, 0, &r); !s.ok()) return s;
    if (r.nothing) return Refuse("", "the schema matches nothing");
    g_->AddAlt(g_->root, {r.elem});
    return Status::Ok();
  }

  Status CompileAnyObject() {
    g_->root = g_->AddRule("root");
    g_->AddAlt(g_->root, {GenericObject()});
    return Status::Ok();
  }

 private:
  // A compiled schema: one element, or "matches nothing" (the false schema,
  // an enum none of whose values has an allowed type, ...).
  struct Result {
    bool nothing = false;
    Element elem;
  };

  // ---- shared rules ----

  // The whitespace between two tokens; appended only when allowed.
  void Ws(Sequence* seq) {
    if (opts_.max_whitespace <= 0) return;
    if (ws_ < 0) {
      Sequence space = {Element::Bytes(WsSet())};
      const Element e = Repeat(g_, space, 0, opts_.max_whitespace, "ws");
      ws_ = e.rule;
    }
    seq->push_back(Element::Ref(ws_));
  }
  static ByteSet WsSet() {
    ByteSet s;
    for (char c : {' ', '\t', '\n', '\r'}) s.Add(static_cast<uint8_t>(c));
    return s;
  }
  // `text` with whitespace allowed before and after: ws "," ws.
  Element Punct(char c, int* cache, const char* name) {
    if (*cache < 0) {
      Sequence s;
      Ws(&s);
      s.push_back(Element::Byte(static_cast<uint8_t>(c)));
      Ws(&s);
      *cache = Group(g_, {s}, name).rule;
    }
    return Element::Ref(*cache);
  }
  Element Comma() { return Punct(',', &comma_, "comma"); }
  Element Colon() { return Punct(':', &colon_, "colon"); }

  // One character of a JSON string as written: a raw code point (U+0020 and
  // above but '"' and '\') or an escape (a surrogate pair counts as one).
  Element StringChar() {
    if (char_ >= 0) return Element::Ref(char_);
    char_ = g_->AddRule("char");
    const Element raw = CodepointClass(g_, {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, kMaxCodepoint}}, false, "char-raw");
    g_->AddAlt(char_, {raw});
    ByteSet simple;
    for (char c : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) simple.Add(static_cast<uint8_t>(c));
    g_->AddAlt(char_, {Element::Byte('\\'), Element::Bytes(simple)});
    ByteSet hex = ByteSet::Range('0', '9');
    hex.AddRange('a', 'f');
    hex.AddRange('A', 'F');
    auto set = [](std::string_view chars) {
      ByteSet s;
      for (char c : chars) s.Add(static_cast<uint8_t>(c));
      return s;
    };
    const Element h = Element::Bytes(hex);
    const Element u = Element::Byte('u'), bs = Element::Byte('\\'), d = Element::Bytes(set("Dd"));
    // \uXXXX outside the surrogates: [0-9A-Ca-c]... | [Dd][0-7].. | [EFef]...
    g_->AddAlt(char_, {bs, u, Element::Bytes(set("0123456789ABCabc")), h, h, h});
    g_->AddAlt(char_, {bs, u, d, Element::Bytes(ByteSet::Range('0', '7')), h, h});
    g_->AddAlt(char_, {bs, u, Element::Bytes(set("EFef")), h, h, h});
    // A high surrogate escape and then a low one.
    g_->AddAlt(char_, {bs, u, d, Element::Bytes(set("89ABab")), h, h, bs, u, d, Element::Bytes(set("CDEFcdef")), h, h});
    return Element::Ref(char_);
  }

  Element AnyString() {
    if (string_ < 0) {
      string_ = g_->AddRule("string");
      g_->AddAlt(string_,
                 {Element::Byte('"'), Repeat(g_, {StringChar()}, 0, kUnbounded, "string-chars"), Element::Byte('"')});
    }
    return Element::Ref(string_);
  }

  // [0-9]{0,max}, one rule per max. Numbers are bounded (json_schema.h):
  // every generated number fits a double, every integer an int64, and a
  // model cannot spin on digits.
  Element Digits(int max) {
    auto it = digits_.find(max);
    if (it == digits_.end()) {
      it = digits_.emplace(max, Repeat(g_, {Element::Bytes(ByteSet::Range('0', '9'))}, 0, max, "digits").rule).first;
    }
    return Element::Ref(it->second);
  }

  Element AnyNumber() {
    if (number_ >= 0) return Element::Ref(number_);
    const Element digit = Element::Bytes(ByteSet::Range('0', '9'));
    const Element minus = Group(g_, {{}, {Element::Byte('-')}}, "number-sign");
    const Element integral =
        Group(g_, {{Element::Byte('0')}, {Element::Bytes(ByteSet::Range('1', '9')), Digits(kMaxIntDigits - 1)}},
              "number-int");
    const Element frac = Group(g_, {{}, {Element::Byte('.'), digit, Digits(kMaxFracDigits - 1)}}, "number-frac");
    ByteSet e, sign;
    e.Add('e');
    e.Add('E');
    sign.Add('+');
    sign.Add('-');
    const Element exp = Group(
        g_,
        {{},
         {Element::Bytes(e), digit, Digits(kMaxExpDigits - 1)},
         {Element::Bytes(e), Element::Bytes(sign), digit, Digits(kMaxExpDigits - 1)}},
        "number-exp");
    number_ = Group(g_, {{minus, integral, frac, exp}}, "number").rule;
    return Element::Ref(number_);
  }

  // Any integer: 0 or an optionally negative number without leading zeros
  // ("-0" is not produced: see json_schema.h).
  Element AnyInteger() {
    if (integer_ < 0) {
      integer_ = Group(g_,
                       {{Element::Byte('0')},
                        {Element::Bytes(ByteSet::Range('1', '9')), Digits(kMaxIntDigits - 1)},
                        {Element::Byte('-'), Element::Bytes(ByteSet::Range('1', '9')), Digits(kMaxIntDigits - 1)}},
                       "integer")
                     .rule;
    }
    return Element::Ref(integer_);
  }

  // Alternatives of one element each: none (the schema matches nothing),
  // the one, or a group of them.
  void OneOfAlternatives(std::vector<Sequence> alts, std::string_view name, Result* out) {
    if (alts.empty()) {
      out->nothing = true;
    } else if (alts.size() == 1) {
      out->elem = alts[0][0];
    } else {
      out->elem = Group(g_, std::move(alts), name);
    }
  }

  Element Literal(std::string_view text, std::string_view name) {
    Sequence s;
    AppendLiteral(text, &s);
    return Group(g_, {s}, name);
  }
  Element Null() {
    if (null_ < 0) null_ = Literal("null", "null").rule;
    return Element::Ref(null_);
  }
  Element Boolean() {
    if (boolean_ < 0) {
      Sequence t, f;
      AppendLiteral("true", &t);
      AppendLiteral("false", &f);
      boolean_ = Group(g_, {t, f}, "boolean").rule;
    }
    return Element::Ref(boolean_);
  }

  // '{' ws '}' | '{' ws member (comma member)* ws '}' for a member of
  // `key` colon `value`.
  std::vector<Sequence> ObjectOf(const Element& key, const Element& value, std::string_view name) {
    Sequence member = {key, Colon(), value};
    const Element m = Group(g_, {member}, std::string(name) + "-member");
    const Element more = Repeat(g_, {Comma(), m}, 0, kUnbounded, std::string(name) + "-more");
    Sequence empty = {Element::Byte('{')}, full = {Element::Byte('{')};
    Ws(&empty);
    Ws(&full);
    empty.push_back(Element::Byte('}'));
    full.push_back(m);
    full.push_back(more);
    Ws(&full);
    full.push_back(Element::Byte('}'));
    return {empty, full};
  }

  Element GenericObject() {
    if (object_ < 0) {
      object_ = g_->AddRule("object");
      g_->rules[object_].alts = ObjectOf(AnyString(), GenericValue(), "object");
    }
    return Element::Ref(object_);
  }

  Element GenericArray() {
    if (array_ < 0) {
      array_ = g_->AddRule("array");
      const Element more = Repeat(g_, {Comma(), GenericValue()}, 0, kUnbounded, "array-more");
      Sequence empty = {Element::Byte('[')}, full = {Element::Byte('[')};
      Ws(&empty);
      Ws(&full);
      empty.push_back(Element::Byte(']'));
      full.push_back(GenericValue());
      full.push_back(more);
      Ws(&full);
      full.push_back(Element::Byte(']'));
      g_->AddAlt(array_, empty);
      g_->AddAlt(array_, full);
    }
    return Element::Ref(array_);
  }

  // Any JSON value (the schemas true and {}).
  Element GenericValue() {
    if (value_ < 0) {
      value_ = g_->AddRule("value");
      const Element alts[] = {GenericObject(), GenericArray(), AnyString(), AnyNumber(), Boolean(), Null()};
      for (const Element& e : alts) g_->AddAlt(value_, {e});
    }
    return Element::Ref(value_);
  }

  // `body` min..max times, refused by `keyword` when the grammar would pass
  // its limits.
  Status Repeated(const Sequence& body, long long min, long long max, const std::string& ptr, const char* keyword,
                  std::string_view hint, Element* out) {
    const long long rules_left = g_->limits.max_rules - static_cast<long long>(g_->rules.size());
    const long long span = max == kUnbounded ? 2 : max - min + 2;
    const long long elements = (max == kUnbounded ? min + 1 : max) * static_cast<long long>(body.size() + 1);
    if (span > rules_left || elements > g_->limits.max_elements) {
      return Refuse(ptr, "'" + std::string(keyword) + "' is too large for the grammar's limits (" +
                             std::to_string(g_->limits.max_rules) + " rules, " +
                             std::to_string(g_->limits.max_elements) + " elements)");
    }
    *out = Repeat(g_, body, static_cast<int>(min), max == kUnbounded ? kUnbounded : static_cast<int>(max), hint);
    if (!g_->overflow.empty()) return Refuse(ptr, "'" + std::string(keyword) + "': " + g_->overflow);
    return Status::Ok();
  }

  // ---- schemas ----

  Status Compile(const json::Value& s, const std::string& ptr, unsigned mask, int depth, Result* out) {
    if (depth > kMaxDepth) return Refuse(ptr, "the schema is nested deeper than " + std::to_string(kMaxDepth));
    if (static_cast<int>(g_->rules.size()) > g_->limits.max_rules) {  // stop early; Check would refuse it
      return Refuse(ptr, "the grammar passes its limit of " + std::to_string(g_->limits.max_rules) + " rules");
    }
    if (s.is_bool()) {
      if (!s.as_bool()) {
        out->nothing = true;
        return Status::Ok();
      }
      return ByTypes(json::Value::Object(), ptr, mask, depth, out);
    }
    if (!s.is_object()) return Refuse(ptr, "a schema must be an object or a boolean");

    // Refused keywords first, so that the message names them.
    for (const auto& [k, v] : s.members()) {
      if (RefusedKeywords().count(k)) {
        if (k == "uniqueItems" && v.is_bool() && !v.as_bool()) continue;  // false asserts nothing
        return Refuse(ptr, "'" + k + "' is not supported");
      }
    }
    // A nested $id with a URI would move the base $ref resolves against
    // (a fragment-only one, "#/properties/x" as generators write, does not).
    if (const json::Value* id = s.Find("$id");
        id && !ptr.empty() && id->is_string() && !id->as_string().empty() && id->as_string()[0] != '#') {
      return Refuse(ptr, "'$id' below the root is not supported (only \"#...\" fragments)");
    }
    // The type keyword narrows the mask.
    if (const json::Value* t = s.Find("type")) {
      unsigned types = 0;
      if (Status st = ParseType(*t, ptr, &types); !st.ok()) return st;
      mask &= types;
    }
    // A combinator: only type and annotations beside it.
    std::string combinator;
    for (const auto& [k, v] : s.members()) {
      if (!IsCombinator(k)) continue;
      if (!combinator.empty() && !((combinator == "enum" && k == "const") || (combinator == "const" && k == "enum"))) {
        return Refuse(ptr, "'" + k + "' beside '" + combinator + "' is not supported");
      }
      if (combinator.empty()) combinator = k;
    }
    if (!combinator.empty()) {
      for (const auto& [k, v] : s.members()) {
        if (IsTypeSpecific(k)) return Refuse(ptr, "'" + k + "' beside '" + combinator + "' is not supported");
      }
      if (combinator == "enum" || combinator == "const") return EnumOrConst(s, ptr, mask, out);
      if (combinator == "$ref") return Ref(*s.Find("$ref"), ptr, mask, depth, out);
      return Combination(combinator, *s.Find(combinator), ptr, mask, depth, out);
    }
    return ByTypes(s, ptr, mask, depth, out);
  }

  Status ParseType(const json::Value& t, const std::string& ptr, unsigned* types) {
    auto one = [&](const json::Value& v) -> Status {
      static const std::map<std::string, unsigned> kNames = {
          {"null", kNull},     {"boolean", kBoolean}, {"object", kObject},           {"array", kArray},
          {"string", kString}, {"integer", kInteger}, {"number", kNumber | kInteger}};
      if (!v.is_string() || !kNames.count(v.as_string())) {
        return Refuse(ptr, "'type' must name JSON types (null, boolean, object, array, string, integer, number)");
      }
      *types |= kNames.at(v.as_string());
      return Status::Ok();
    };
    if (!t.is_array()) return one(t);
    for (const json::Value& v : t.items()) {
      if (Status s = one(v); !s.ok()) return s;
    }
    return Status::Ok();
  }

  // enum / const: each allowed value as its compact serialization.
  Status EnumOrConst(const json::Value& s, const std::string& ptr, unsigned mask, Result* out) {
    std::vector<const json::Value*> values;
    const json::Value* en = s.Find("enum");
    const json::Value* co = s.Find("const");
    if (en) {
      if (!en->is_array()) return Refuse(ptr, "'enum' must be an array");
      for (const json::Value& v : en->items()) values.push_back(&v);
    }
    std::vector<std::string> alts;  // as one trie of literals (one parse however many are alive)
    std::set<std::string> seen;
    auto add = [&](const json::Value& v) {
      if (!(TypesOf(v) & mask)) return;
      const std::string text = json::Serialize(v);
      if (!seen.insert(text).second) return;
      alts.push_back(text);
    };
    if (co) {
      // With both: const, if enum has it too (compared as serialized).
      if (!en || std::any_of(values.begin(), values.end(),
                             [&](const json::Value* v) { return json::Serialize(*v) == json::Serialize(*co); })) {
        add(*co);
      }
    } else {
      for (const json::Value* v : values) add(*v);
    }
    if (alts.empty()) {
      out->nothing = true;
      return Status::Ok();
    }
    out->elem = Literals(g_, std::move(alts), co ? "const" : "enum");
    return Status::Ok();
  }

  // anyOf / oneOf (both as anyOf) / allOf of one schema.
  Status Combination(const std::string& keyword, const json::Value& list, const std::string& ptr, unsigned mask,
                     int depth, Result* out) {
    if (!list.is_array() || list.items().empty()) return Refuse(ptr, "'" + keyword + "' must be a non-empty array");
    if (keyword == "allOf" && list.items().size() != 1) {
      return Refuse(
          ptr, "'allOf' is supported with exactly one schema (it has " + std::to_string(list.items().size()) + ")");
    }
    std::vector<Sequence> alts;
    for (size_t i = 0; i < list.items().size(); ++i) {
      Result r;
      if (Status s = Compile(list.items()[i], Child(Child(ptr, keyword), i), mask, depth + 1, &r); !s.ok()) return s;
      if (!r.nothing) alts.push_back({r.elem});
    }
    OneOfAlternatives(std::move(alts), keyword, out);
    return Status::Ok();
  }

  // $ref to the root or a local JSON pointer ("#/$defs/x"): one rule per
  // target (and type mask).
  Status Ref(const json::Value& ref, const std::string& ptr, unsigned mask, int depth, Result* out) {
    if (!ref.is_string()) return Refuse(ptr, "'$ref' must be a string");
    const std::string& r = ref.as_string();
    if (r.empty() || r[0] != '#' || (r.size() > 1 && r[1] != '/')) {
      return Refuse(ptr, "'$ref' to '" + r + "' is not supported (only \"#\" and \"#/...\" pointers)");
    }
    const std::string key = r + "|" + std::to_string(mask);
    if (auto it = refs_.find(key); it != refs_.end()) {
      out->elem = Element::Ref(it->second);
      return Status::Ok();
    }
    const json::Value* target = &root_;
    std::string target_ptr;
    for (size_t pos = 1; pos < r.size();) {
      const size_t next = std::min(r.find('/', pos + 1), r.size());
      const std::string token = Unescape(r.substr(pos + 1, next - pos - 1));
      target_ptr = Child(target_ptr, token);
      pos = next;
      const json::Value* child = nullptr;
      if (target->is_object()) {
        child = target->Find(token);
      } else if (target->is_array() && !token.empty() && token.find_first_not_of("0123456789") == std::string::npos &&
                 token.size() < 9 && std::stoul(token) < target->items().size()) {
        child = &target->items()[std::stoul(token)];
      }
      if (!child) return Refuse(ptr, "'$ref' to '" + r + "': no such place in the schema");
      target = child;
    }
    std::string name = "ref";
    if (const size_t slash = r.rfind('/'); slash != std::string::npos && slash + 1 < r.size()) {
      name = "ref-" + r.substr(slash + 1);
    }
    const int rule = g_->AddRule(name);
    refs_[key] = rule;
    Result body;
    if (Status s = Compile(*target, target_ptr, mask, depth + 1, &body); !s.ok()) return s;
    if (body.nothing) return Refuse(ptr, "'$ref' to '" + r + "' matches nothing");
    g_->AddAlt(rule, {body.elem});
    out->elem = Element::Ref(rule);
    return Status::Ok();
  }

  // "~1" -> "/", "~0" -> "~", and %XX (a pointer in a URI fragment).
  static std::string Unescape(const std::string& token) {
    std::string out;
    for (size_t i = 0; i < token.size(); ++i) {
      if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
        out.push_back(token[i + 1] == '0' ? '~' : '/');
        ++i;
      } else if (token[i] == '%' && i + 2 < token.size() && std::isxdigit(static_cast<unsigned char>(token[i + 1])) &&
                 std::isxdigit(static_cast<unsigned char>(token[i + 2]))) {
        out.push_back(static_cast<char>(std::stoi(token.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        out.push_back(token[i]);
      }
    }
    return out;
  }

  // The union over the types in `mask`, each constrained by its keywords.
  Status ByTypes(const json::Value& s, const std::string& ptr, unsigned mask, int depth, Result* out) {
    std::vector<Sequence> alts;
    auto has = [&](bool (*pred)(const std::string&)) {
      return std::any_of(s.members().begin(), s.members().end(), [&](const auto& m) { return pred(m.first); });
    };
    if ((mask & kAllTypes) == kAllTypes && !has(IsTypeSpecific)) {
      out->elem = GenericValue();
      return Status::Ok();
    }
    if (mask & kNull) alts.push_back({Null()});
    if (mask & kBoolean) alts.push_back({Boolean()});
    if (mask & kObject) {
      Result r;
      if (Status st = ObjectSchema(s, ptr, depth, &r); !st.ok()) return st;
      if (!r.nothing) alts.push_back({r.elem});
    }
    if (mask & kArray) {
      Result r;
      if (Status st = ArraySchema(s, ptr, depth, &r); !st.ok()) return st;
      if (!r.nothing) alts.push_back({r.elem});
    }
    if (mask & kString) {
      Result r;
      if (Status st = StringSchema(s, ptr, &r); !st.ok()) return st;
      if (!r.nothing) alts.push_back({r.elem});
    }
    if (mask & kNumber) {
      for (const auto& [k, v] : s.members()) {
        if (IsNumberKeyword(k)) return Refuse(ptr, "'" + k + "' is supported only on integers (type \"integer\")");
      }
      alts.push_back({AnyNumber()});
    } else if (mask & kInteger) {
      Result r;
      if (Status st = IntegerSchema(s, ptr, &r); !st.ok()) return st;
      if (!r.nothing) alts.push_back({r.elem});
    }
    OneOfAlternatives(std::move(alts), "types", out);
    return Status::Ok();
  }

  // ---- strings ----

  Status StringSchema(const json::Value& s, const std::string& ptr, Result* out) {
    const json::Value* min_len = s.Find("minLength");
    const json::Value* max_len = s.Find("maxLength");
    const json::Value* pattern = s.Find("pattern");
    const json::Value* format = s.Find("format");
    if (pattern && format) return Refuse(ptr, "'pattern' beside 'format' is not supported");
    if ((pattern || format) && (min_len || max_len)) {
      return Refuse(ptr, std::string("'") + (min_len ? "minLength" : "maxLength") + "' beside '" +
                             (pattern ? "pattern" : "format") + "' is not supported");
    }
    if (pattern) {
      if (!pattern->is_string()) return Refuse(ptr, "'pattern' must be a string");
      RegexOptions ro;
      ro.anchored = false;
      ro.json_string = true;
      return RegexString(pattern->as_string(), ro, ptr, "pattern", out);
    }
    if (format) {
      if (!format->is_string()) return Refuse(ptr, "'format' must be a string");
      const char* re = FormatRegex(format->as_string());
      if (!re) return Refuse(ptr, "'format' \"" + format->as_string() + "\" is not supported");
      RegexOptions ro;
      ro.anchored = true;
      ro.json_string = true;
      return RegexString(re, ro, ptr, "format", out);
    }
    long long min = 0, max = kUnbounded;
    if (min_len) {
      if (Status st = Count(*min_len, ptr, "minLength", &min); !st.ok()) return st;
    }
    if (max_len) {
      if (Status st = Count(*max_len, ptr, "maxLength", &max); !st.ok()) return st;
      if (max < min) {
        out->nothing = true;
        return Status::Ok();
      }
    }
    if (min == 0 && max == kUnbounded) {
      out->elem = AnyString();
      return Status::Ok();
    }
    const std::string key = std::to_string(min) + ".." + std::to_string(max);
    if (auto it = strings_.find(key); it != strings_.end()) {
      out->elem = Element::Ref(it->second);
      return Status::Ok();
    }
    Element chars;
    const char* keyword = (min_len && min >= g_->limits.max_elements / 2) || !max_len ? "minLength" : "maxLength";
    if (Status st = Repeated({StringChar()}, min, max, ptr, keyword, "string-chars", &chars); !st.ok()) return st;
    out->elem = Group(g_, {{Element::Byte('"'), chars, Element::Byte('"')}}, "string-" + key);
    strings_[key] = out->elem.rule;
    return Status::Ok();
  }

  Status RegexString(const std::string& re, const RegexOptions& ro, const std::string& ptr, const char* keyword,
                     Result* out) {
    Element inside;
    if (Status st = AddRegex(re, ro, g_, keyword, &inside); !st.ok()) {
      return Refuse(ptr, "'" + std::string(keyword) + "': " + st.message());
    }
    out->elem = Group(g_, {{Element::Byte('"'), inside, Element::Byte('"')}}, std::string(keyword) + "-string");
    return Status::Ok();
  }

  // RFC 3339 full-date (with each month's days and leap years), partial-time
  // with an offset (no leap second: 60 is refused), date-time; RFC 4122's
  // 8-4-4-4-12 hex; an e-mail address (a dot-atom or quoted local part, a
  // host name or an address literal).
  static const char* FormatRegex(const std::string& format) {
    static const std::string kDate =
        "(?:[0-9]{4}-(?:(?:0[1-9]|1[0-2])-(?:0[1-9]|1[0-9]|2[0-8])|(?:0[13-9]|1[0-2])-(?:29|30)|"
        "(?:0[13578]|1[02])-31)|(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)-02-29)";
    static const std::string kTime =
        "(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]+)?(?:[Zz]|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])";
    static const std::string kDateTime = kDate + "[Tt]" + kTime;
    static const std::string kUuid = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    static const std::string kAtom = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+";
    static const std::string kLabel = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?";
    static const std::string kOctet = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
    static const std::string kEmail = "(?:" + kAtom + "(?:\\." + kAtom +
                                      ")*|\"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*\")@(?:" + kLabel +
                                      "(?:\\." + kLabel + ")*|\\[(?:" + kOctet + "(?:\\." + kOctet +
                                      "){3}|IPv6:[0-9A-Fa-f:.]+)\\])";
    if (format == "date") return kDate.c_str();
    if (format == "time") return kTime.c_str();
    if (format == "date-time") return kDateTime.c_str();
    if (format == "uuid") return kUuid.c_str();
    if (format == "email") return kEmail.c_str();
    return nullptr;
  }

  // ---- integers ----

  // The integer bounds of minimum / maximum / exclusive*, each optional.
  Status IntegerBounds(const json::Value& s, const std::string& ptr, bool* has_lo, Int128* lo, bool* has_hi,
                       Int128* hi) {
    constexpr Int128 kBig = static_cast<Int128>(1) << 80;  // past every int64, still exact
    for (const char* k : {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"}) {
      const json::Value* v = s.Find(k);
      if (!v) continue;
      if (!v->is_number()) return Refuse(ptr, std::string("'") + k + "' must be a number");
      Int128 floor_v = 0, ceil_v = 0;
      if (v->is_int()) {
        floor_v = ceil_v = v->as_int();
      } else {
        const double d = v->as_double();
        if (!std::isfinite(d)) return Refuse(ptr, std::string("'") + k + "' must be finite");
        const double f = std::floor(d), c = std::ceil(d);
        floor_v = f >= 1e24 ? kBig : f <= -1e24 ? -kBig : static_cast<Int128>(f);
        ceil_v = c >= 1e24 ? kBig : c <= -1e24 ? -kBig : static_cast<Int128>(c);
      }
      const std::string key = k;
      if (key == "minimum" || key == "exclusiveMinimum") {
        const Int128 b = key == "minimum" ? ceil_v : floor_v + 1;
        *lo = *has_lo ? std::max(*lo, b) : b;
        *has_lo = true;
      } else {
        const Int128 b = key == "maximum" ? floor_v : ceil_v - 1;
        *hi = *has_hi ? std::min(*hi, b) : b;
        *has_hi = true;
      }
    }
    return Status::Ok();
  }

  Status IntegerSchema(const json::Value& s, const std::string& ptr, Result* out) {
    bool has_lo = false, has_hi = false;
    Int128 lo = 0, hi = 0;
    if (Status st = IntegerBounds(s, ptr, &has_lo, &lo, &has_hi, &hi); !st.ok()) return st;
    if (!has_lo && !has_hi) {
      out->elem = AnyInteger();
      return Status::Ok();
    }
    // Bounds past int64 are brought in to int64's range: the grammar never
    // produces an integer of more than 19 digits when a bound is given.
    constexpr Int128 kMin = static_cast<Int128>(INT64_MIN), kMax = static_cast<Int128>(INT64_MAX);
    if ((has_lo && has_hi && lo > hi) || (has_lo && lo > kMax) || (has_hi && hi < kMin)) {
      out->nothing = true;
      return Status::Ok();
    }
    // An open side is int64's edge: every integer the grammar produces fits
    // an int64 (json_schema.h).
    lo = has_lo ? std::max(lo, kMin) : kMin;
    hi = has_hi ? std::min(hi, kMax) : kMax;
    has_lo = has_hi = true;
    std::vector<Sequence> alts;
    if (!has_hi || hi >= 0) NonNegative(has_lo ? std::max<Int128>(lo, 0) : 0, has_hi, hi, {}, &alts);
    if (!has_lo || lo < 0) {
      Sequence minus = {Element::Byte('-')};
      NonNegative(has_hi && hi < 0 ? -hi : 1, has_lo, -lo, minus, &alts);
    }
    out->elem = Group(g_, std::move(alts), "integer-range");
    return Status::Ok();
  }

  // The decimal numbers in [a, b] (b absent: no upper bound), no leading
  // zeros, each alternative after `prefix`.
  void NonNegative(Int128 a, bool has_b, Int128 b, const Sequence& prefix, std::vector<Sequence>* out) {
    const std::string sa = Decimal(a);
    const size_t la = sa.size(), lb = has_b ? Decimal(b).size() : la;
    for (size_t len = la; len <= lb; ++len) {
      const std::string lo = len == la ? sa : "1" + std::string(len - 1, '0');
      const std::string hi = has_b && len == lb ? Decimal(b) : std::string(len, '9');
      SameLengthRange(lo, hi, 0, prefix, out);
    }
    if (!has_b) {  // longer than a: [1-9] then la or more digits
      Sequence seq = prefix;
      seq.push_back(Element::Bytes(ByteSet::Range('1', '9')));
      for (size_t i = 0; i < la; ++i) seq.push_back(Element::Bytes(ByteSet::Range('0', '9')));
      seq.push_back(Digits(std::max(0, kMaxIntDigits - 1 - static_cast<int>(la))));
      out->push_back(std::move(seq));
    }
  }

  // ---- objects ----

  // One member slot of an object, in order.
  struct Slot {
    Element member;  // "name" colon value, or (repeated) additional key colon value
    bool required = false;
    bool repeated = false;  // the additional properties: any number
  };

  Status ObjectSchema(const json::Value& s, const std::string& ptr, int depth, Result* out) {
    const json::Value* props = s.Find("properties");
    const json::Value* req = s.Find("required");
    const json::Value* addl = s.Find("additionalProperties");
    if (props && !props->is_object()) return Refuse(ptr, "'properties' must be an object");
    if (req && !req->is_array()) return Refuse(ptr, "'required' must be an array of strings");
    std::vector<std::string> required;
    if (req) {
      for (const json::Value& r : req->items()) {
        if (!r.is_string()) return Refuse(ptr, "'required' must be an array of strings");
        if (std::find(required.begin(), required.end(), r.as_string()) == required.end())
          required.push_back(r.as_string());
      }
    }
    // The additional properties' value schema, if any are allowed.
    // strict forbids other keys only where the schema lists some: a bare
    // {"type": "object"} stays any object.
    const bool closed = opts_.strict && (props || req);
    Result extra;
    extra.nothing = !addl && closed;
    if (addl) {
      if (Status st = Compile(*addl, Child(ptr, "additionalProperties"), kAllTypes, depth + 1, &extra); !st.ok())
        return st;
    } else if (!closed) {
      extra.elem = GenericValue();
    }
    std::vector<Slot> slots;
    std::vector<std::string> names;  // every listed name, excluded from the additional keys
    auto is_required = [&](const std::string& n) {
      return std::find(required.begin(), required.end(), n) != required.end();
    };
    if (props) {
      std::set<std::string> seen;
      for (const auto& [name, sub] : props->members()) {
        if (!seen.insert(name).second) continue;
        names.push_back(name);
        const std::string sub_ptr = Child(Child(ptr, "properties"), name);
        Result r;
        if (Status st = Compile(sub, sub_ptr, kAllTypes, depth + 1, &r); !st.ok()) return st;
        if (r.nothing) {
          if (is_required(name)) return Refuse(ptr, "'required' names \"" + name + "\", whose schema matches nothing");
          continue;  // the property may not appear at all
        }
        slots.push_back({Member(name, r.elem), is_required(name), false});
      }
    }
    for (const std::string& name : required) {
      if (std::find(names.begin(), names.end(), name) != names.end()) continue;
      if (extra.nothing) {
        return Refuse(ptr, "'required' names \"" + name +
                               "\", which is not in 'properties', and additional properties are not allowed");
      }
      names.push_back(name);
      slots.push_back({Member(name, extra.elem), true, false});
    }
    if (!extra.nothing) {
      slots.push_back({Group(g_, {{OtherKey(names), Colon(), extra.elem}}, "additional"), false, true});
    }
    out->elem = Members(slots, "object");
    return Status::Ok();
  }

  Element Member(const std::string& name, const Element& value) {
    std::string key;
    json::AppendQuoted(&key, name);
    Sequence seq;
    AppendLiteral(key, &seq);
    seq.push_back(Colon());
    seq.push_back(value);
    return Group(g_, {seq}, "member");
  }

  // The object of these slots in order: a required one always, an optional
  // one possibly not, the repeated one any number of times, commas between
  // the members present. With Rest(i) = the members from slot i on, each
  // after a comma (some member came before), and First(i) = the members
  // from slot i on with at least one present, the first without a comma:
  //   Rest(i)  = comma m_i Rest(i+1)            (required)
  //            | comma m_i Rest(i+1) | Rest(i+1) (optional)
  //            = (comma m_i)*                    (repeated: the last slot)
  //   First(i) = m_i Rest(i+1)                   (required)
  //            | m_i Rest(i+1) | First(i+1)      (optional; First(n) none)
  // and the object '{' ws First(0) ws '}', or '{' ws '}' when no slot is
  // required. Linear in the number of slots, whatever the subset present.
  Element Members(const std::vector<Slot>& slots, std::string_view name) {
    const size_t n = slots.size();
    std::vector<Element> rest(n + 1);
    std::vector<int> first(n + 1, -1);
    std::vector<bool> rest_empty(n + 1, false);
    rest_empty[n] = true;
    for (size_t i = n; i-- > 0;) {
      const Slot& s = slots[i];
      auto then = [&](Sequence seq) {
        if (!rest_empty[i + 1]) seq.push_back(rest[i + 1]);
        return seq;
      };
      if (s.repeated) {  // always the last slot: First = m (comma m)*
        rest[i] = Repeat(g_, {Comma(), s.member}, 0, kUnbounded, std::string(name) + "-rest");
        first[i] = Group(g_, {{s.member, rest[i]}}, std::string(name) + "-first").rule;
        continue;
      }
      std::vector<Sequence> alts = {then({Comma(), s.member})};
      if (!s.required) alts.push_back(rest_empty[i + 1] ? Sequence{} : Sequence{rest[i + 1]});
      rest[i] = Group(g_, std::move(alts), std::string(name) + "-rest");
      std::vector<Sequence> first_alts = {then({s.member})};
      if (!s.required && first[i + 1] >= 0) first_alts.push_back({Element::Ref(first[i + 1])});
      first[i] = Group(g_, std::move(first_alts), std::string(name) + "-first").rule;
    }
    const bool all_optional = std::none_of(slots.begin(), slots.end(), [](const Slot& s) { return s.required; });
    std::vector<Sequence> alts;
    if (all_optional) {
      Sequence empty = {Element::Byte('{')};
      Ws(&empty);
      empty.push_back(Element::Byte('}'));
      alts.push_back(std::move(empty));
    }
    if (first[0] >= 0) {
      Sequence full = {Element::Byte('{')};
      Ws(&full);
      full.push_back(Element::Ref(first[0]));
      Ws(&full);
      full.push_back(Element::Byte('}'));
      alts.push_back(std::move(full));
    }
    return Group(g_, std::move(alts), name);
  }

  // A JSON string key that is none of `names`. The listed names are written
  // canonically (json::AppendQuoted), so the complement is taken over their
  // canonical spellings, one "unit" (a code point as AppendQuoted writes it)
  // at a time, along a trie of the names: while the key so far spells the
  // start of some name, the next unit either continues a name (staying in the
  // trie), or is any other unit (after which the key is free), or the closing
  // quote when the key so far is not itself a name. Inside the trie a key
  // uses no \u escape and no "\/" (the ways to spell a code point other than
  // AppendQuoted's), so that no key spells a listed name another way.
  Element OtherKey(const std::vector<std::string>& names) {
    if (names.empty()) return AnyString();
    struct Node {
      std::map<std::string, int> children;  // unit (canonical bytes) -> node
      bool terminal = false;
    };
    std::vector<Node> nodes(1);
    for (const std::string& name : names) {
      std::string quoted;
      json::AppendQuoted(&quoted, name);
      const std::string body = quoted.substr(1, quoted.size() - 2);
      int at = 0;
      for (size_t i = 0; i < body.size();) {
        const size_t len = UnitLength(body, i);
        const std::string unit = body.substr(i, len);
        i += len;
        auto it = nodes[at].children.find(unit);
        if (it == nodes[at].children.end()) {
          nodes.push_back({});
          it = nodes[at].children.emplace(unit, static_cast<int>(nodes.size()) - 1).first;
        }
        at = it->second;
      }
      nodes[at].terminal = true;
    }
    // The rest of any key, closing quote included.
    const Element free_tail =
        Group(g_, {{Repeat(g_, {StringChar()}, 0, kUnbounded, "key-chars"), Element::Byte('"')}}, "key-tail");
    std::vector<int> rule(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i) rule[i] = g_->AddRule("key-trie");
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& node = nodes[i];
      if (!node.terminal) g_->AddAlt(rule[i], {Element::Byte('"')});
      std::vector<std::pair<uint32_t, uint32_t>> taken = {{'"', '"'}, {'\\', '\\'}};
      std::set<char> taken_escapes;
      for (const auto& [unit, child] : node.children) {
        Sequence seq;
        AppendLiteral(unit, &seq);
        seq.push_back(Element::Ref(rule[child]));
        g_->AddAlt(rule[i], std::move(seq));
        if (unit[0] == '\\') {
          taken_escapes.insert(unit[1]);
        } else {
          const uint32_t cp = DecodeUnit(unit);
          taken.push_back({cp, cp});
        }
      }
      // Another raw code point (U+0020 and above) ...
      std::vector<std::pair<uint32_t, uint32_t>> allowed = {{0x20, kMaxCodepoint}};
      const Element other = CodepointClass(g_, Subtract(allowed, taken), false, "key-other");
      g_->AddAlt(rule[i], {other, free_tail});
      // ... or another of the short escapes.
      ByteSet esc;
      for (char c : {'"', '\\', 'b', 'f', 'n', 'r', 't'}) {
        if (!taken_escapes.count(c)) esc.Add(static_cast<uint8_t>(c));
      }
      if (!esc.Empty()) g_->AddAlt(rule[i], {Element::Byte('\\'), Element::Bytes(esc), free_tail});
    }
    return Group(g_, {{Element::Byte('"'), Element::Ref(rule[0])}}, "other-key");
  }

  // The length of the canonical unit at s[i]: an escape (\x or \u00XX) or
  // one UTF-8 code point.
  static size_t UnitLength(const std::string& s, size_t i) {
    if (s[i] == '\\') return s[i + 1] == 'u' ? 6 : 2;
    size_t bad = 0;
    const size_t n = json::Utf8SequenceLength(s, i, &bad);
    return n == 0 ? 1 : n;
  }
  static uint32_t DecodeUnit(const std::string& u) {
    const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(u[i])); };
    switch (u.size()) {
      case 1: return b(0);
      case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
      case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
      default: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    }
  }
  // `ranges` less the single code points of `taken`.
  static std::vector<std::pair<uint32_t, uint32_t>> Subtract(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                                                             std::vector<std::pair<uint32_t, uint32_t>> taken) {
    std::sort(taken.begin(), taken.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    for (auto [lo, hi] : ranges) {
      uint32_t next = lo;
      for (const auto& [t, unused] : taken) {
        if (t < next || t > hi) continue;
        if (t > next) out.push_back({next, t - 1});
        next = t + 1;
      }
      if (next <= hi) out.push_back({next, hi});
    }
    return out;
  }

  // ---- arrays ----

  Status ArraySchema(const json::Value& s, const std::string& ptr, int depth, Result* out) {
    const json::Value* prefix = s.Find("prefixItems");
    const json::Value* items = s.Find("items");
    long long min = 0, max = kUnbounded;
    if (const json::Value* v = s.Find("minItems")) {
      if (Status st = Count(*v, ptr, "minItems", &min); !st.ok()) return st;
    }
    if (const json::Value* v = s.Find("maxItems")) {
      if (Status st = Count(*v, ptr, "maxItems", &max); !st.ok()) return st;
    }
    if (prefix && !prefix->is_array()) return Refuse(ptr, "'prefixItems' must be an array of schemas");
    if (items && items->is_array()) {
      return Refuse(ptr, "'items' as an array (draft 7 tuples) is not supported: use 'prefixItems'");
    }
    // The element schemas: the prefix's, then the items'.
    std::vector<Element> slots;
    if (prefix) {
      for (size_t i = 0; i < prefix->items().size(); ++i) {
        Result r;
        if (Status st = Compile(prefix->items()[i], Child(Child(ptr, "prefixItems"), i), kAllTypes, depth + 1, &r);
            !st.ok()) {
          return st;
        }
        if (r.nothing) {  // no array reaches this position
          max = max == kUnbounded ? static_cast<long long>(i) : std::min<long long>(max, i);
          break;
        }
        slots.push_back(r.elem);
      }
    }
    Result rest;
    if (items) {
      if (Status st = Compile(*items, Child(ptr, "items"), kAllTypes, depth + 1, &rest); !st.ok()) return st;
    } else {
      rest.elem = GenericValue();
    }
    const long long k = static_cast<long long>(slots.size());
    if (rest.nothing || (prefix && k < static_cast<long long>(prefix->items().size()))) {
      max = max == kUnbounded ? k : std::min(max, k);
    }
    if (max != kUnbounded && max < min) {
      out->nothing = true;
      return Status::Ok();
    }
    std::vector<Sequence> alts;
    if (min == 0) {
      Sequence empty = {Element::Byte('[')};
      Ws(&empty);
      empty.push_back(Element::Byte(']'));
      alts.push_back(std::move(empty));
    }
    if (max == kUnbounded || max > 0) {
      // tail(i): the elements from position i (0-based) on, each after a
      // comma; positions past the prefix repeat the items schema.
      const long long fixed = max == kUnbounded ? k : std::min(k, max);
      Element tail;
      bool tail_empty = false;
      if (fixed == k && !rest.nothing && (max == kUnbounded || max > k)) {
        const long long rmin = std::max(0LL, min - std::max(k, 1LL));
        const long long rmax = max == kUnbounded ? kUnbounded : max - std::max(k, 1LL);
        if (Status st = Repeated({Comma(), rest.elem}, rmin, rmax, ptr, max == kUnbounded ? "minItems" : "maxItems",
                                 "items", &tail);
            !st.ok()) {
          return st;
        }
      } else {
        tail_empty = true;
      }
      for (long long i = fixed - 1; i >= 1; --i) {
        Sequence more = {Comma(), slots[i]};
        if (!tail_empty) more.push_back(tail);
        std::vector<Sequence> t = {more};
        if (i >= min) t.push_back({});  // stop with i elements
        tail = Group(g_, std::move(t), "items-tail");
        tail_empty = false;
      }
      Sequence full = {Element::Byte('[')};
      Ws(&full);
      full.push_back(k > 0 ? slots[0] : rest.elem);
      if (!tail_empty) full.push_back(tail);
      Ws(&full);
      full.push_back(Element::Byte(']'));
      alts.push_back(std::move(full));
    }
    out->elem = Group(g_, std::move(alts), "array");
    return Status::Ok();
  }

  const json::Value& root_;
  const JsonSchemaOptions& opts_;
  Grammar* g_;
  int ws_ = -1, comma_ = -1, colon_ = -1, char_ = -1, string_ = -1, number_ = -1, integer_ = -1;
  std::map<int, int> digits_;  // Digits(max): max -> its rule
  int null_ = -1, boolean_ = -1, object_ = -1, array_ = -1, value_ = -1;
  std::map<std::string, int> refs_;     // "$ref|mask" -> rule
  std::map<std::string, int> strings_;  // "min..max" -> rule
};

}  // namespace

Status JsonSchemaGrammar(const json::Value& schema, const JsonSchemaOptions& opts, const GrammarLimits& limits,
                         Grammar* out) {
  Grammar g;
  g.limits = limits;
  SchemaCompiler c(schema, opts, &g);
  if (Status s = c.CompileRoot(); !s.ok()) return s;
  if (Status s = Check(g); !s.ok()) return s;
  *out = std::move(g);
  return Status::Ok();
}

Status JsonObjectGrammar(const JsonSchemaOptions& opts, const GrammarLimits& limits, Grammar* out) {
  Grammar g;
  g.limits = limits;
  const json::Value empty = json::Value::Object();
  SchemaCompiler c(empty, opts, &g);
  if (Status s = c.CompileAnyObject(); !s.ok()) return s;
  if (Status s = Check(g); !s.ok()) return s;
  *out = std::move(g);
  return Status::Ok();
}

}  // namespace tw::grammar

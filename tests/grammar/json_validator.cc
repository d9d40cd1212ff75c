#include "grammar/json_validator.h"

// GCC 12's <regex> trips -Wmaybe-uninitialized inside libstdc++ when built
// with the sanitizers at -O1 (a false positive in std::function's move);
// the warning is off for this file only.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cctype>
#include <cmath>
#include <regex>
#include <string_view>
#include <vector>

namespace tw::grammar::testing {

namespace {

using Kind = json::Value::Kind;

constexpr int kMaxDepth = 256;

bool IsInteger(const json::Value& v) {
  if (v.is_int()) return true;
  if (v.kind() != Kind::kDouble) return false;
  const double d = v.as_double();
  return std::isfinite(d) && d == std::floor(d);
}

// Numbers as long double: exact for every int64 and every double on x86-64.
long double Num(const json::Value& v) {
  return v.is_int() ? static_cast<long double>(v.as_int()) : static_cast<long double>(v.as_double());
}

bool HasType(const json::Value& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_bool();
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return IsInteger(v);
  return false;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// ---- formats -------------------------------------------------------------

bool Digits(std::string_view s, size_t pos, size_t n, int* value) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *value = v;
  return true;
}

bool IsDate(std::string_view s) {
  int y, m, d;
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return false;
  if (!Digits(s, 0, 4, &y) || !Digits(s, 5, 2, &m) || !Digits(s, 8, 2, &d)) return false;
  if (m < 1 || m > 12 || d < 1) return false;
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

// RFC 3339 full-time; a leap second (:60) only where the time in UTC is 23:59.
bool IsTime(std::string_view s) {
  int h, m, sec;
  if (s.size() < 9 || s[2] != ':' || s[5] != ':') return false;
  if (!Digits(s, 0, 2, &h) || !Digits(s, 3, 2, &m) || !Digits(s, 6, 2, &sec)) return false;
  if (h > 23 || m > 59 || sec > 60) return false;
  size_t i = 8;
  if (i < s.size() && s[i] == '.') {
    const size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return false;
  }
  if (i >= s.size()) return false;
  int offset = 0;  // minutes east of UTC
  if (s[i] == 'Z' || s[i] == 'z') {
    if (i + 1 != s.size()) return false;
  } else if (s[i] == '+' || s[i] == '-') {
    int oh, om;
    if (s.size() != i + 6 || s[i + 3] != ':' || !Digits(s, i + 1, 2, &oh) || !Digits(s, i + 4, 2, &om)) return false;
    if (oh > 23 || om > 59) return false;
    offset = (s[i] == '+' ? 1 : -1) * (oh * 60 + om);
  } else {
    return false;
  }
  if (sec == 60) {
    const int utc = ((h * 60 + m - offset) % 1440 + 1440) % 1440;
    if (utc != 23 * 60 + 59) return false;
  }
  return true;
}

bool IsDateTime(std::string_view s) {
  return s.size() > 11 && (s[10] == 'T' || s[10] == 't') && IsDate(s.substr(0, 10)) && IsTime(s.substr(11));
}

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool IsUuid(std::string_view s) {
  if (s.size() != 36) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    if (dash ? s[i] != '-' : !IsHex(s[i])) return false;
  }
  return true;
}

bool IsAtext(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-/=?^_`{|}~").find(c) != std::string_view::npos;
}

bool IsHostname(std::string_view s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    const std::string_view label =
        s.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    for (char c : label) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

bool IsIpv4(std::string_view s) {
  int parts = 0;
  size_t i = 0;
  while (true) {
    size_t j = i;
    while (j < s.size() && s[j] >= '0' && s[j] <= '9') ++j;
    if (j == i || j - i > 3 || (j - i > 1 && s[i] == '0')) return false;
    int v = 0;
    Digits(s, i, j - i, &v);
    if (v > 255) return false;
    ++parts;
    if (j == s.size()) return parts == 4;
    if (s[j] != '.' || parts == 4) return false;
    i = j + 1;
  }
}

// RFC 5321's Mailbox: a dot-atom or quoted local part, then a domain or an
// address literal.
bool IsEmail(std::string_view s) {
  size_t i = 0;
  if (!s.empty() && s[0] == '"') {
    for (i = 1; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\') ++i;
      if (i < s.size() && (static_cast<unsigned char>(s[i]) < 0x20 || s[i] == 0x7F)) return false;
    }
    if (i >= s.size()) return false;
    ++i;  // the closing quote
  } else {
    bool after_dot = true;  // at the start, a dot is as wrong as after a dot
    for (; i < s.size() && s[i] != '@'; ++i) {
      if (s[i] == '.') {
        if (after_dot) return false;
        after_dot = true;
      } else if (IsAtext(s[i])) {
        after_dot = false;
      } else {
        return false;
      }
    }
    if (i == 0 || after_dot) return false;
  }
  if (i >= s.size() || s[i] != '@') return false;
  const std::string_view domain = s.substr(i + 1);
  if (domain.size() >= 2 && domain.front() == '[' && domain.back() == ']') {
    const std::string_view lit = domain.substr(1, domain.size() - 2);
    if (lit.substr(0, 5) == "IPv6:") {
      const std::string_view a = lit.substr(5);
      if (a.empty() || a.find(':') == std::string_view::npos) return false;
      for (char c : a) {
        if (!IsHex(c) && c != ':' && c != '.') return false;
      }
      return true;
    }
    return IsIpv4(lit);
  }
  return IsHostname(domain);
}

bool FormatOk(const std::string& format, const std::string& s) {
  if (format == "date") return IsDate(s);
  if (format == "time") return IsTime(s);
  if (format == "date-time") return IsDateTime(s);
  if (format == "uuid") return IsUuid(s);
  if (format == "email") return IsEmail(s);
  return true;  // an annotation
}

}  // namespace

const json::Value* ResolveRef(const json::Value& root, const std::string& ref) {
  if (ref.empty() || ref[0] != '#') return nullptr;
  const json::Value* cur = &root;
  size_t pos = 1;
  while (pos < ref.size()) {
    if (ref[pos] != '/') return nullptr;
    const size_t next = std::min(ref.find('/', pos + 1), ref.size());
    std::string token;
    for (size_t i = pos + 1; i < next; ++i) {
      if (ref[i] == '~' && i + 1 < next) {
        token.push_back(ref[i + 1] == '1' ? '/' : '~');
        ++i;
      } else if (ref[i] == '%' && i + 2 < next && IsHex(ref[i + 1]) && IsHex(ref[i + 2])) {
        token.push_back(static_cast<char>(std::stoi(ref.substr(i + 1, 2), nullptr, 16)));
        i += 2;
      } else {
        token.push_back(ref[i]);
      }
    }
    if (cur->is_object()) {
      cur = cur->Find(token);
    } else if (cur->is_array() && !token.empty() && token.size() < 9 &&
               token.find_first_not_of("0123456789") == std::string::npos && std::stoul(token) < cur->items().size()) {
      cur = &cur->items()[std::stoul(token)];
    } else {
      cur = nullptr;
    }
    if (!cur) return nullptr;
    pos = next;
  }
  return cur;
}

namespace {

// ---- the validator ----------------------------------------------------------

class Validator {
 public:
  explicit Validator(const json::Value& root) : root_(root) {}

  bool Check(const json::Value& s, const json::Value& v, const std::string& at, int depth, std::string* why) {
    if (depth > kMaxDepth) return Fail(why, at, "validation deeper than 256 levels");
    if (s.is_bool()) return s.as_bool() || Fail(why, at, "the schema is false");
    if (!s.is_object()) return Fail(why, at, "the schema is not an object");
    if (const json::Value* t = s.Find("type")) {
      bool ok = false;
      if (t->is_string()) ok = HasType(v, t->as_string());
      for (const json::Value& x : t->items()) ok = ok || (x.is_string() && HasType(v, x.as_string()));
      if (!ok) return Fail(why, at, "wrong type");
    }
    if (const json::Value* e = s.Find("enum")) {
      bool ok = false;
      for (const json::Value& x : e->items()) ok = ok || JsonEqual(x, v);
      if (!ok) return Fail(why, at, "not in enum");
    }
    if (const json::Value* c = s.Find("const"); c && !JsonEqual(*c, v)) return Fail(why, at, "not the const");
    if (const json::Value* r = s.Find("$ref")) {
      const json::Value* target = r->is_string() ? Resolve(r->as_string()) : nullptr;
      if (!target) return Fail(why, at, "unresolvable $ref");
      if (!Check(*target, v, at, depth + 1, why)) return false;
    }
    if (const json::Value* a = s.Find("allOf")) {
      for (const json::Value& x : a->items()) {
        if (!Check(x, v, at, depth + 1, why)) return false;
      }
    }
    if (const json::Value* a = s.Find("anyOf")) {
      bool ok = false;
      for (const json::Value& x : a->items()) ok = ok || Check(x, v, at, depth + 1, nullptr);
      if (!ok) return Fail(why, at, "no anyOf alternative matches");
    }
    if (const json::Value* a = s.Find("oneOf")) {
      int n = 0;
      for (const json::Value& x : a->items()) n += Check(x, v, at, depth + 1, nullptr);
      if (n != 1) return Fail(why, at, std::to_string(n) + " oneOf alternatives match");
    }
    if (v.is_string() && !CheckString(s, v.as_string(), at, why)) return false;
    if (v.is_number() && !CheckNumber(s, v, at, why)) return false;
    if (v.is_object() && !CheckObject(s, v, at, depth, why)) return false;
    if (v.is_array() && !CheckArray(s, v, at, depth, why)) return false;
    return true;
  }

 private:
  static bool Fail(std::string* why, const std::string& at, const std::string& what) {
    if (why) *why = (at.empty() ? "/" : at) + ": " + what;
    return false;
  }

  const json::Value* Resolve(const std::string& ref) const { return ResolveRef(root_, ref); }

  bool CheckString(const json::Value& s, const std::string& str, const std::string& at, std::string* why) {
    const size_t n = CodePoints(str);
    if (const json::Value* m = s.Find("minLength"); m && m->is_number() && n < Num(*m)) {
      return Fail(why, at, "shorter than minLength");
    }
    if (const json::Value* m = s.Find("maxLength"); m && m->is_number() && n > Num(*m)) {
      return Fail(why, at, "longer than maxLength");
    }
    if (const json::Value* p = s.Find("pattern"); p && p->is_string()) {
      try {
        if (!std::regex_search(str, std::regex(p->as_string(), std::regex::ECMAScript))) {
          return Fail(why, at, "does not match the pattern");
        }
      } catch (const std::regex_error&) {
        return Fail(why, at, "std::regex cannot compile the pattern");
      }
    }
    if (const json::Value* f = s.Find("format"); f && f->is_string() && !FormatOk(f->as_string(), str)) {
      return Fail(why, at, "not a valid " + f->as_string());
    }
    return true;
  }

  bool CheckNumber(const json::Value& s, const json::Value& v, const std::string& at, std::string* why) {
    const long double x = Num(v);
    auto bound = [&](const char* k) -> const json::Value* {
      const json::Value* b = s.Find(k);
      return b && b->is_number() ? b : nullptr;
    };
    if (const json::Value* b = bound("minimum"); b && x < Num(*b)) return Fail(why, at, "below minimum");
    if (const json::Value* b = bound("maximum"); b && x > Num(*b)) return Fail(why, at, "above maximum");
    if (const json::Value* b = bound("exclusiveMinimum"); b && x <= Num(*b))
      return Fail(why, at, "not above exclusiveMinimum");
    if (const json::Value* b = bound("exclusiveMaximum"); b && x >= Num(*b))
      return Fail(why, at, "not below exclusiveMaximum");
    return true;
  }

  bool CheckObject(const json::Value& s, const json::Value& v, const std::string& at, int depth, std::string* why) {
    const json::Value* props = s.Find("properties");
    if (const json::Value* req = s.Find("required")) {
      for (const json::Value& r : req->items()) {
        if (r.is_string() && !v.Find(r.as_string())) return Fail(why, at, "no required \"" + r.as_string() + "\"");
      }
    }
    const json::Value* addl = s.Find("additionalProperties");
    for (const auto& [k, x] : v.members()) {
      const std::string here = at + "/" + k;
      const json::Value* sub = props && props->is_object() ? props->Find(k) : nullptr;
      if (sub) {
        if (!Check(*sub, x, here, depth + 1, why)) return false;
      } else if (addl && !Check(*addl, x, here, depth + 1, why)) {
        return false;
      }
    }
    return true;
  }

  bool CheckArray(const json::Value& s, const json::Value& v, const std::string& at, int depth, std::string* why) {
    const size_t n = v.items().size();
    if (const json::Value* m = s.Find("minItems"); m && m->is_number() && n < Num(*m))
      return Fail(why, at, "too few items");
    if (const json::Value* m = s.Find("maxItems"); m && m->is_number() && n > Num(*m))
      return Fail(why, at, "too many items");
    const json::Value* prefix = s.Find("prefixItems");
    const size_t k = prefix && prefix->is_array() ? prefix->items().size() : 0;
    const json::Value* items = s.Find("items");
    for (size_t i = 0; i < n; ++i) {
      const std::string here = at + "/" + std::to_string(i);
      if (i < k) {
        if (!Check(prefix->items()[i], v.items()[i], here, depth + 1, why)) return false;
      } else if (items && !Check(*items, v.items()[i], here, depth + 1, why)) {
        return false;
      }
    }
    return true;
  }

  const json::Value& root_;
};

}  // namespace

bool JsonEqual(const json::Value& a, const json::Value& b) {
  if (a.is_number() && b.is_number()) return Num(a) == Num(b);
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kNull: return true;
    case Kind::kBool: return a.as_bool() == b.as_bool();
    case Kind::kString: return a.as_string() == b.as_string();
    case Kind::kArray:
      if (a.items().size() != b.items().size()) return false;
      for (size_t i = 0; i < a.items().size(); ++i) {
        if (!JsonEqual(a.items()[i], b.items()[i])) return false;
      }
      return true;
    case Kind::kObject:
      if (a.members().size() != b.members().size()) return false;
      for (const auto& [k, x] : a.members()) {
        const json::Value* y = b.Find(k);
        if (!y || !JsonEqual(x, *y)) return false;
      }
      return true;
    default: return false;
  }
}

bool Validate(const json::Value& schema, const json::Value& instance, std::string* why) {
  Validator v(schema);
  return v.Check(schema, instance, "", 0, why);
}

bool ValidateAt(const json::Value& root, const json::Value& schema, const json::Value& instance, std::string* why) {
  Validator v(root);
  return v.Check(schema, instance, "", 0, why);
}

}  // namespace tw::grammar::testing

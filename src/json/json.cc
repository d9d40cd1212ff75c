// JSON (RFC 8259) parser and writer. See json.h for the contract.
//
// The parser is a loop over an explicit stack of open containers (one Frame
// per '[' or '{'), so its native stack use is constant whatever the input;
// ParseLimits::max_depth bounds the explicit stack. Every failure goes through
// Parser::Fail, which records the byte offset.
#include "json/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <system_error>
#include <unordered_set>

#include "json/utf8.h"

namespace tw::json {

// ---- Value --------------------------------------------------------------------

Value Value::Bool(bool b) {
  Value v;
  v.kind_ = Kind::kBool;
  v.bool_ = b;
  return v;
}

Value Value::Int(int64_t i) {
  Value v;
  v.kind_ = Kind::kInt;
  v.int_ = i;
  return v;
}

Value Value::Double(double d) {
  Value v;
  v.kind_ = Kind::kDouble;
  v.double_ = d;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.kind_ = Kind::kString;
  v.string_ = std::move(s);
  return v;
}

Value Value::Array() {
  Value v;
  v.kind_ = Kind::kArray;
  return v;
}

Value Value::Object() {
  Value v;
  v.kind_ = Kind::kObject;
  return v;
}

double Value::as_double() const {
  return kind_ == Kind::kInt ? static_cast<double>(int_) : double_;
}

const Value* Value::Find(std::string_view key) const {
  if (kind_ != Kind::kObject) return nullptr;
  // Last one wins, as in JavaScript: scan from the end.
  for (auto it = members_.rbegin(); it != members_.rend(); ++it) {
    if (it->first == key) return &it->second;
  }
  return nullptr;
}

void Value::Push(Value v) {
  if (kind_ == Kind::kArray) items_.push_back(std::move(v));
}

void Value::Set(std::string key, Value v) {
  if (kind_ == Kind::kObject) members_.emplace_back(std::move(key), std::move(v));
}

// ---- Duplicate keys ---------------------------------------------------------

namespace {

bool FindDuplicateIn(const Value& v, std::string* path) {
  if (v.is_array()) {
    for (size_t i = 0; i < v.items().size(); i++) {
      std::string sub;
      if (FindDuplicateIn(v.items()[i], &sub)) {
        *path = "[" + std::to_string(i) + "]" + (sub.empty() || sub[0] == '[' ? "" : ".") + sub;
        return true;
      }
    }
    return false;
  }
  if (!v.is_object()) return false;
  const std::vector<Value::Member>& m = v.members();
  // Few members (every request we read): compare pairwise; many: a set.
  if (m.size() <= 16) {
    for (size_t i = 1; i < m.size(); i++) {
      for (size_t j = 0; j < i; j++) {
        if (m[i].first == m[j].first) {
          *path = m[i].first;
          return true;
        }
      }
    }
  } else {
    std::unordered_set<std::string_view> seen;
    seen.reserve(m.size());
    for (const Value::Member& kv : m) {
      if (!seen.insert(kv.first).second) {
        *path = kv.first;
        return true;
      }
    }
  }
  for (const Value::Member& kv : m) {
    std::string sub;
    if (FindDuplicateIn(kv.second, &sub)) {
      *path = kv.first + (sub[0] == '[' ? "" : ".") + sub;
      return true;
    }
  }
  return false;
}

}  // namespace

bool FindDuplicateKey(const Value& v, std::string* path) {
  path->clear();
  return FindDuplicateIn(v, path);
}

// ---- Parser -------------------------------------------------------------------

namespace {

bool IsWs(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }

int HexValue(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::string ByteName(unsigned char c) {
  char buf[16];
  if (c >= 0x21 && c < 0x7f) {
    std::snprintf(buf, sizeof(buf), "'%c'", c);
  } else {
    std::snprintf(buf, sizeof(buf), "0x%02X", c);
  }
  return buf;
}

// One open container while parsing.
struct Frame {
  Value container;  // kArray or kObject
  std::string key;  // objects: the key of the member whose value is being parsed
};

class Parser {
 public:
  Parser(std::string_view text, const ParseLimits& limits, size_t* error_offset)
      : s_(text), n_(text.size()), limits_(limits), error_offset_(error_offset) {}

  Status Run(Value* out);

 private:
  Status Fail(size_t at, std::string_view what) {
    if (error_offset_ != nullptr) *error_offset_ = at;
    return Status::Error("json: " + std::string(what) + " at byte " + std::to_string(at));
  }
  // Failure at pos_: "unexpected end of input" if pos_ == n_, else names the byte.
  Status FailHere(std::string_view expected) {
    if (pos_ >= n_) return Fail(pos_, std::string("unexpected end of input, expected ") +
                                          std::string(expected));
    return Fail(pos_, "unexpected byte " + ByteName(Byte(pos_)) + ", expected " +
                          std::string(expected));
  }
  unsigned char Byte(size_t i) const { return static_cast<unsigned char>(s_[i]); }
  void SkipWs() {
    while (pos_ < n_ && IsWs(Byte(pos_))) pos_++;
  }

  Status ParseScalar(Value* v);
  Status ParseLiteral(std::string_view word, Value v, Value* out);
  Status ParseNumber(Value* v);
  Status ParseString(std::string* out);
  Status ParseHex4(uint32_t* unit);
  // Parses `"key"` ws ':' at pos_ (after optional leading whitespace).
  Status ParseKeyColon(std::string* key);

  std::string_view s_;
  size_t n_;
  size_t pos_ = 0;
  const ParseLimits& limits_;
  size_t* error_offset_;
};

Status Parser::Run(Value* out) {
  if (n_ > limits_.max_bytes) {
    return Fail(limits_.max_bytes, "document is " + std::to_string(n_) +
                                       " bytes, over max_bytes " +
                                       std::to_string(limits_.max_bytes));
  }
  std::vector<Frame> stack;  // bounded by limits_.max_depth
  Value cur;
  for (;;) {
    // A value starts here.
    SkipWs();
    if (pos_ >= n_) return FailHere("a value");
    unsigned char c = Byte(pos_);
    if (c == '[' || c == '{') {
      if (limits_.max_depth < 0 || stack.size() >= static_cast<size_t>(limits_.max_depth)) {
        return Fail(pos_, "nesting deeper than max_depth " + std::to_string(limits_.max_depth));
      }
      const bool is_object = c == '{';
      stack.push_back(Frame{is_object ? Value::Object() : Value::Array(), std::string()});
      pos_++;
      SkipWs();
      const unsigned char close = is_object ? '}' : ']';
      if (pos_ < n_ && Byte(pos_) == close) {
        pos_++;
        cur = std::move(stack.back().container);
        stack.pop_back();
      } else {
        if (is_object) {
          Status st = ParseKeyColon(&stack.back().key);
          if (!st.ok()) return st;
        }
        continue;  // parse the first element
      }
    } else {
      Status st = ParseScalar(&cur);
      if (!st.ok()) return st;
    }
    // `cur` is complete: attach it to its container, closing containers as
    // long as their closing bracket follows.
    for (;;) {
      if (stack.empty()) {
        SkipWs();
        if (pos_ != n_) return FailHere("end of input after the document");
        *out = std::move(cur);
        return Status::Ok();
      }
      Frame& top = stack.back();
      const bool is_object = top.container.is_object();
      if (is_object) {
        top.container.Set(std::move(top.key), std::move(cur));
        top.key.clear();
      } else {
        top.container.Push(std::move(cur));
      }
      SkipWs();
      if (pos_ < n_ && Byte(pos_) == ',') {
        pos_++;
        if (is_object) {
          Status st = ParseKeyColon(&top.key);
          if (!st.ok()) return st;
        }
        break;  // parse the next element
      }
      if (pos_ < n_ && Byte(pos_) == (is_object ? '}' : ']')) {
        pos_++;
        cur = std::move(top.container);
        stack.pop_back();
        continue;
      }
      return FailHere(is_object ? "',' or '}'" : "',' or ']'");
    }
  }
}

Status Parser::ParseKeyColon(std::string* key) {
  SkipWs();
  if (pos_ >= n_ || Byte(pos_) != '"') return FailHere("a string key");
  Status st = ParseString(key);
  if (!st.ok()) return st;
  SkipWs();
  if (pos_ >= n_ || Byte(pos_) != ':') return FailHere("':'");
  pos_++;
  return Status::Ok();
}

Status Parser::ParseScalar(Value* v) {
  switch (Byte(pos_)) {
    case '"': {
      std::string s;
      Status st = ParseString(&s);
      if (!st.ok()) return st;
      *v = Value::String(std::move(s));
      return Status::Ok();
    }
    case 't':
      return ParseLiteral("true", Value::Bool(true), v);
    case 'f':
      return ParseLiteral("false", Value::Bool(false), v);
    case 'n':
      return ParseLiteral("null", Value::Null(), v);
    default:
      if (Byte(pos_) == '-' || IsDigit(Byte(pos_))) return ParseNumber(v);
      return FailHere("a value");
  }
}

Status Parser::ParseLiteral(std::string_view word, Value v, Value* out) {
  for (char w : word) {
    if (pos_ >= n_ || s_[pos_] != w) return FailHere("literal " + std::string(word));
    pos_++;
  }
  *out = std::move(v);
  return Status::Ok();
}

Status Parser::ParseNumber(Value* v) {
  const size_t start = pos_;
  if (Byte(pos_) == '-') pos_++;
  const size_t int_start = pos_;
  if (pos_ >= n_ || !IsDigit(Byte(pos_))) return FailHere("a digit");
  if (Byte(pos_) == '0') {
    pos_++;
    if (pos_ < n_ && IsDigit(Byte(pos_))) return Fail(pos_, "leading zero in number");
  } else {
    while (pos_ < n_ && IsDigit(Byte(pos_))) pos_++;
  }
  const size_t int_end = pos_;
  size_t frac_start = pos_, frac_end = pos_;
  bool is_integer = true;
  if (pos_ < n_ && Byte(pos_) == '.') {
    is_integer = false;
    pos_++;
    frac_start = pos_;
    if (pos_ >= n_ || !IsDigit(Byte(pos_))) return FailHere("a digit after '.'");
    while (pos_ < n_ && IsDigit(Byte(pos_))) pos_++;
    frac_end = pos_;
  }
  // Decimal exponent, saturated (only its sign matters once it is this large).
  constexpr int64_t kExpCap = int64_t{1} << 40;
  int64_t exp = 0;
  if (pos_ < n_ && (Byte(pos_) == 'e' || Byte(pos_) == 'E')) {
    is_integer = false;
    pos_++;
    bool neg = false;
    if (pos_ < n_ && (Byte(pos_) == '+' || Byte(pos_) == '-')) {
      neg = Byte(pos_) == '-';
      pos_++;
    }
    if (pos_ >= n_ || !IsDigit(Byte(pos_))) return FailHere("a digit in the exponent");
    while (pos_ < n_ && IsDigit(Byte(pos_))) {
      if (exp < kExpCap) exp = exp * 10 + (Byte(pos_) - '0');
      pos_++;
    }
    if (neg) exp = -exp;
  }
  const char* first = s_.data() + start;
  const char* last = s_.data() + pos_;
  if (is_integer) {
    int64_t i = 0;
    auto [ptr, ec] = std::from_chars(first, last, i);
    if (ec == std::errc() && ptr == last) {
      *v = Value::Int(i);
      return Status::Ok();
    }
    // Too big for int64: fall through to double.
  }
  double d = 0;
  auto [ptr, ec] = std::from_chars(first, last, d);
  if (ec == std::errc() && ptr == last) {
    *v = Value::Double(d);
    return Status::Ok();
  }
  if (ec != std::errc::result_out_of_range) return Fail(start, "unparsable number");
  // Out of range: overflow (an error) or underflow (rounds to zero)? The
  // magnitude is about 10^(m + exp), m being the position of the first nonzero
  // digit relative to the decimal point.
  int64_t m = 0;
  if (Byte(int_start) != '0') {
    m = static_cast<int64_t>(std::min<size_t>(int_end - int_start, kExpCap));
  } else {
    size_t i = frac_start;
    while (i < frac_end && Byte(i) == '0') i++;
    m = -static_cast<int64_t>(std::min<size_t>(i - frac_start, kExpCap));
  }
  if (m + exp > 0) return Fail(start, "number out of double range");
  *v = Value::Double(Byte(start) == '-' ? -0.0 : 0.0);
  return Status::Ok();
}

Status Parser::ParseHex4(uint32_t* unit) {
  uint32_t u = 0;
  for (int i = 0; i < 4; i++) {
    if (pos_ >= n_) return FailHere("4 hex digits after \\u");
    const int h = HexValue(Byte(pos_));
    if (h < 0) return FailHere("4 hex digits after \\u");
    u = (u << 4) | static_cast<uint32_t>(h);
    pos_++;
  }
  *unit = u;
  return Status::Ok();
}

Status Parser::ParseString(std::string* out) {
  out->clear();
  pos_++;  // opening quote
  for (;;) {
    // Copy the run of plain ASCII in one go.
    const size_t run = pos_;
    while (pos_ < n_) {
      const unsigned char c = Byte(pos_);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      pos_++;
    }
    out->append(s_.data() + run, pos_ - run);
    if (pos_ >= n_) return Fail(pos_, "unterminated string");
    const unsigned char c = Byte(pos_);
    if (c == '"') {
      pos_++;
      return Status::Ok();
    }
    if (c < 0x20) return Fail(pos_, "unescaped control character " + ByteName(c) + " in string");
    if (c >= 0x80) {
      size_t bad = 0;
      const size_t len = Utf8SequenceLength(s_, pos_, &bad);
      if (len == 0) return Fail(bad, "invalid UTF-8 in string");
      out->append(s_.data() + pos_, len);
      pos_ += len;
      continue;
    }
    // Escape.
    const size_t esc = pos_;
    pos_++;
    if (pos_ >= n_) return Fail(pos_, "unterminated string");
    const unsigned char e = Byte(pos_);
    switch (e) {
      case '"': out->push_back('"'); pos_++; continue;
      case '\\': out->push_back('\\'); pos_++; continue;
      case '/': out->push_back('/'); pos_++; continue;
      case 'b': out->push_back('\b'); pos_++; continue;
      case 'f': out->push_back('\f'); pos_++; continue;
      case 'n': out->push_back('\n'); pos_++; continue;
      case 'r': out->push_back('\r'); pos_++; continue;
      case 't': out->push_back('\t'); pos_++; continue;
      case 'u': break;
      default: return Fail(pos_, "invalid escape \\" + ByteName(e) + " in string");
    }
    pos_++;
    uint32_t cp = 0;
    Status st = ParseHex4(&cp);
    if (!st.ok()) return st;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail(esc, "lone low surrogate escape");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      // Must be followed at once by a low surrogate escape.
      const size_t esc2 = pos_;
      if (pos_ + 1 >= n_ || Byte(pos_) != '\\' || Byte(pos_ + 1) != 'u') {
        return Fail(esc2, "high surrogate escape not followed by a low surrogate escape");
      }
      pos_ += 2;
      uint32_t lo = 0;
      st = ParseHex4(&lo);
      if (!st.ok()) return st;
      if (lo < 0xDC00 || lo > 0xDFFF) {
        return Fail(esc2, "high surrogate escape not followed by a low surrogate escape");
      }
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    AppendUtf8(out, cp);
  }
}

}  // namespace

Status Parse(std::string_view text, Value* out, const ParseLimits& limits, size_t* error_offset) {
  Parser p(text, limits, error_offset);
  return p.Run(out);
}

// ---- Writing --------------------------------------------------------------------

void AppendQuoted(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    const size_t run = i;
    while (i < n) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
      i++;
    }
    out->append(s.data() + run, i - run);
    if (i >= n) break;
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      size_t bad = 0;
      const size_t len = Utf8SequenceLength(s, i, &bad);
      if (len > 0) {
        out->append(s.data() + i, len);
        i += len;
      } else {
        // One U+FFFD per maximal ill-formed subpart (Unicode's recommended
        // practice): the bad byte starts the next attempt unless it was the lead.
        out->append("\xEF\xBF\xBD");
        i = bad > i ? bad : i + 1;
      }
      continue;
    }
    i++;
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 0xF]);
    }
  }
  out->push_back('"');
}

namespace {

void AppendInt(std::string* out, int64_t i) {
  char buf[24];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), i);
  (void)ec;  // 24 bytes always suffice for int64
  out->append(buf, ptr);
}

void AppendDouble(std::string* out, double d) {
  if (!std::isfinite(d)) {
    out->append("null");
    return;
  }
  if (d == 0 && std::signbit(d)) {
    // "-0" would parse back as the integer 0; keep the sign and the kind.
    out->append("-0.0");
    return;
  }
  char buf[32];
  auto [ptr, ec] = std::to_chars(buf, buf + sizeof(buf), d);
  (void)ec;  // the shortest form of a double is at most 24 bytes
  out->append(buf, ptr);
}

}  // namespace

std::string Serialize(const Value& v) {
  std::string out;
  // Iterative, like the parser: one entry per open container.
  struct Open {
    const Value* v;
    size_t next;  // index of the next item / member to write
  };
  std::vector<Open> stack;
  const Value* cur = &v;
  for (;;) {
    if (cur != nullptr) {
      switch (cur->kind()) {
        case Value::Kind::kNull: out.append("null"); break;
        case Value::Kind::kBool: out.append(cur->as_bool() ? "true" : "false"); break;
        case Value::Kind::kInt: AppendInt(&out, cur->as_int()); break;
        case Value::Kind::kDouble: AppendDouble(&out, cur->as_double()); break;
        case Value::Kind::kString: AppendQuoted(&out, cur->as_string()); break;
        case Value::Kind::kArray:
          out.push_back('[');
          stack.push_back({cur, 0});
          break;
        case Value::Kind::kObject:
          out.push_back('{');
          stack.push_back({cur, 0});
          break;
      }
      cur = nullptr;
    }
    if (stack.empty()) return out;
    Open& top = stack.back();
    if (top.v->is_array()) {
      const auto& items = top.v->items();
      if (top.next == items.size()) {
        out.push_back(']');
        stack.pop_back();
        continue;
      }
      if (top.next > 0) out.push_back(',');
      cur = &items[top.next++];
    } else {
      const auto& members = top.v->members();
      if (top.next == members.size()) {
        out.push_back('}');
        stack.pop_back();
        continue;
      }
      if (top.next > 0) out.push_back(',');
      AppendQuoted(&out, members[top.next].first);
      out.push_back(':');
      cur = &members[top.next++].second;
    }
  }
}

// ---- Writer ---------------------------------------------------------------------

void Writer::Separate() {
  if (after_key_) {
    after_key_ = false;  // the value of a member: the comma came before its key
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_->push_back(',');
    first_.back() = false;
  }
}

void Writer::BeginObject() {
  Separate();
  out_->push_back('{');
  first_.push_back(true);
}

void Writer::EndObject() {
  out_->push_back('}');
  if (!first_.empty()) first_.pop_back();
  after_key_ = false;
}

void Writer::BeginArray() {
  Separate();
  out_->push_back('[');
  first_.push_back(true);
}

void Writer::EndArray() {
  out_->push_back(']');
  if (!first_.empty()) first_.pop_back();
  after_key_ = false;
}

void Writer::Key(std::string_view k) {
  Separate();
  AppendQuoted(out_, k);
  out_->push_back(':');
  after_key_ = true;
}

void Writer::String(std::string_view s) {
  Separate();
  AppendQuoted(out_, s);
}

void Writer::Int(int64_t i) {
  Separate();
  AppendInt(out_, i);
}

void Writer::Double(double d) {
  Separate();
  AppendDouble(out_, d);
}

void Writer::Bool(bool b) {
  Separate();
  out_->append(b ? "true" : "false");
}

void Writer::Null() {
  Separate();
  out_->append("null");
}

void Writer::Raw(std::string_view json) {
  Separate();
  out_->append(json);
}

}  // namespace tw::json

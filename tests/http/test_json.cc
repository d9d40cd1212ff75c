#include "http/test_json.h"

namespace tw::testing {
namespace {

class Reader {
 public:
  explicit Reader(std::string_view s) : s_(s) {}

  bool Parse(JsonValue* out, std::string* error) {
    SkipWs();
    if (!Value(out, 0)) {
      *error = "JSON error at byte " + std::to_string(pos_) + ": " + err_;
      return false;
    }
    SkipWs();
    if (pos_ != s_.size()) {
      *error = "trailing bytes at " + std::to_string(pos_);
      return false;
    }
    return true;
  }

 private:
  bool Fail(const char* why) {
    err_ = why;
    return false;
  }
  void SkipWs() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r')) {
      pos_++;
    }
  }
  bool Literal(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return Fail("bad literal");
    pos_ += word.size();
    return true;
  }
  bool Value(JsonValue* out, int depth) {
    if (depth > 64) return Fail("nesting too deep");
    if (pos_ >= s_.size()) return Fail("unexpected end");
    const char c = s_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') {
      out->type = JsonValue::Type::kString;
      return String(&out->string);
    }
    if (c == 't') {
      out->type = JsonValue::Type::kBool;
      out->boolean = true;
      return Literal("true");
    }
    if (c == 'f') {
      out->type = JsonValue::Type::kBool;
      return Literal("false");
    }
    if (c == 'n') return Literal("null");
    return Number(out);
  }
  bool Number(JsonValue* out) {
    const size_t start = pos_;
    while (pos_ < s_.size() && std::string_view("+-0123456789.eE").find(s_[pos_]) !=
                                   std::string_view::npos) {
      pos_++;
    }
    if (pos_ == start) return Fail("unexpected character");
    out->type = JsonValue::Type::kNumber;
    out->number = std::stod(std::string(s_.substr(start, pos_ - start)));
    return true;
  }
  bool Hex4(unsigned* v) {
    if (pos_ + 4 > s_.size()) return Fail("short \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
      const char h = s_[pos_++];
      *v <<= 4;
      if (h >= '0' && h <= '9') *v |= h - '0';
      else if (h >= 'a' && h <= 'f') *v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') *v |= h - 'A' + 10;
      else return Fail("bad hex digit");
    }
    return true;
  }
  static void AppendUtf8(unsigned cp, std::string* out) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
  bool String(std::string* out) {
    pos_++;  // opening quote
    for (;;) {
      if (pos_ >= s_.size()) return Fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (pos_ >= s_.size()) return Fail("unterminated escape");
      const char e = s_[pos_++];
      switch (e) {
        case '"': out->push_back('"'); break;
        case '\\': out->push_back('\\'); break;
        case '/': out->push_back('/'); break;
        case 'b': out->push_back('\b'); break;
        case 'f': out->push_back('\f'); break;
        case 'n': out->push_back('\n'); break;
        case 'r': out->push_back('\r'); break;
        case 't': out->push_back('\t'); break;
        case 'u': {
          unsigned cp = 0;
          if (!Hex4(&cp)) return false;
          if (cp >= 0xD800 && cp < 0xDC00) {
            unsigned lo = 0;
            if (s_.substr(pos_, 2) != "\\u") return Fail("lone high surrogate");
            pos_ += 2;
            if (!Hex4(&lo) || lo < 0xDC00 || lo > 0xDFFF) return Fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return Fail("bad escape");
      }
    }
  }
  bool Array(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kArray;
    pos_++;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == ']') {
      pos_++;
      return true;
    }
    for (;;) {
      SkipWs();
      out->array.emplace_back();
      if (!Value(&out->array.back(), depth + 1)) return false;
      SkipWs();
      if (pos_ >= s_.size()) return Fail("unterminated array");
      const char c = s_[pos_++];
      if (c == ']') return true;
      if (c != ',') return Fail("expected , or ]");
    }
  }
  bool Object(JsonValue* out, int depth) {
    out->type = JsonValue::Type::kObject;
    pos_++;
    SkipWs();
    if (pos_ < s_.size() && s_[pos_] == '}') {
      pos_++;
      return true;
    }
    for (;;) {
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != '"') return Fail("expected key");
      std::string key;
      if (!String(&key)) return false;
      SkipWs();
      if (pos_ >= s_.size() || s_[pos_] != ':') return Fail("expected :");
      pos_++;
      SkipWs();
      if (!Value(&out->object[key], depth + 1)) return false;
      SkipWs();
      if (pos_ >= s_.size()) return Fail("unterminated object");
      const char c = s_[pos_++];
      if (c == '}') return true;
      if (c != ',') return Fail("expected , or }");
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
  const char* err_ = "";
};

}  // namespace

const JsonValue& JsonValue::operator[](const std::string& key) const {
  static const JsonValue kNull;
  if (type != Type::kObject) return kNull;
  auto it = object.find(key);
  return it == object.end() ? kNull : it->second;
}

JsonValue ParseJson(std::string_view text, std::string* error) {
  JsonValue v;
  Reader r(text);
  if (!r.Parse(&v, error)) return JsonValue();
  return v;
}

std::vector<JsonValue> ParseJsonLines(std::string_view text, std::string* error) {
  std::vector<JsonValue> out;
  size_t line = 0;
  while (!text.empty()) {
    line++;
    const size_t nl = text.find('\n');
    const std::string_view one = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    if (one.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    std::string err;
    out.push_back(ParseJson(one, &err));
    if (!err.empty()) {
      *error = "line " + std::to_string(line) + ": " + err;
      return {};
    }
  }
  return out;
}

std::string Base64Decode(std::string_view in, bool* ok) {
  *ok = true;
  std::string out;
  unsigned acc = 0;
  int bits = 0;
  for (char c : in) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=') break;
    else {
      *ok = false;
      return "";
    }
    acc = (acc << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace tw::testing

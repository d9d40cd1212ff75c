#include "openai/chat_template.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace tw::openai {

namespace {

constexpr std::string_view kPlaceholder = "{content}";

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r'; }

// One line's parse, with the offset of the first problem.
struct LineError {
  size_t at = 0;
  std::string what;
};

// A quoted string from text[*i] (the opening quote): the decoded bytes and
// where its placeholders are. *i ends after the closing quote.
bool ParseQuoted(std::string_view text, size_t* i, size_t end, std::string* out,
                 std::vector<size_t>* placeholders, LineError* err) {
  size_t p = *i + 1;
  while (p < end) {
    const char c = text[p];
    if (c == '"') {
      *i = p + 1;
      return true;
    }
    if (c == '\\') {
      if (p + 1 >= end) break;
      const char e = text[p + 1];
      switch (e) {
        case 'n': *out += '\n'; break;
        case 't': *out += '\t'; break;
        case 'r': *out += '\r'; break;
        case '"': *out += '"'; break;
        case '\\': *out += '\\'; break;
        default:
          *err = {p, std::string("unknown escape '\\") + e + "' (use \\n \\t \\r \\\" or \\\\)"};
          return false;
      }
      p += 2;
      continue;
    }
    if (c == '{') {
      if (p + 1 < end && text[p + 1] == '{') {
        *out += '{';
        p += 2;
        continue;
      }
      if (text.substr(p, kPlaceholder.size()) == kPlaceholder && p + kPlaceholder.size() <= end) {
        placeholders->push_back(out->size());
        p += kPlaceholder.size();
        continue;
      }
      *err = {p, "a '{' that is neither '{{' nor the placeholder {content}"};
      return false;
    }
    if (c == '}') {
      if (p + 1 < end && text[p + 1] == '}') {
        *out += '}';
        p += 2;
        continue;
      }
      *err = {p, "a stray '}' (write '}}' for a literal brace)"};
      return false;
    }
    *out += c;
    p++;
  }
  *err = {*i, "the string is not closed (a '\"' before the end of the line)"};
  return false;
}

std::string At(size_t line, size_t byte) {
  return "line " + std::to_string(line) + ", byte " + std::to_string(byte) + ": ";
}

}  // namespace

ChatTemplate ChatTemplate::Plain() {
  ChatTemplate t;
  t.system_ = {"", "\n\n"};
  t.user_ = {"User: ", "\n"};
  t.assistant_ = {"Assistant: ", "\n"};
  t.generation_ = "Assistant:";
  t.stop_ = {"\nUser:"};
  t.name_ = "plain";
  return t;
}

Status ChatTemplate::Parse(std::string_view text, ChatTemplate* out) {
  if (text.size() > kMaxTemplateBytes) {
    return Status::Error("line 1, byte " + std::to_string(kMaxTemplateBytes) + ": the template is " +
                         std::to_string(text.size()) + " bytes; at most " + std::to_string(kMaxTemplateBytes));
  }
  ChatTemplate t;
  t.name_ = "file";
  bool seen_system = false, seen_user = false, seen_assistant = false, seen_generation = false;
  size_t line_no = 0;
  size_t start = 0;
  while (start <= text.size()) {
    line_no++;
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    size_t i = start;
    while (i < end && IsBlank(text[i])) i++;
    if (i == end || text[i] == '#') {
      start = end + 1;
      continue;
    }
    // key
    const size_t key_at = i;
    while (i < end && ((text[i] >= 'a' && text[i] <= 'z') || text[i] == '_')) i++;
    const std::string key(text.substr(key_at, i - key_at));
    bool* seen = nullptr;
    Part* part = nullptr;
    if (key == "system") {
      seen = &seen_system, part = &t.system_;
    } else if (key == "user") {
      seen = &seen_user, part = &t.user_;
    } else if (key == "assistant") {
      seen = &seen_assistant, part = &t.assistant_;
    } else if (key == "generation") {
      seen = &seen_generation;
    } else if (key != "stop") {
      return Status::Error(At(line_no, key_at) + (key.empty() ? std::string("expected a key") : "unknown key '" + key + "'") +
                           " (system, user, assistant, generation or stop)");
    }
    if (seen != nullptr && *seen) return Status::Error(At(line_no, key_at) + "'" + key + "' is given twice");
    while (i < end && IsBlank(text[i])) i++;
    if (i >= end || text[i] != '=') return Status::Error(At(line_no, i) + "expected '=' after '" + key + "'");
    i++;
    while (i < end && IsBlank(text[i])) i++;
    if (i >= end || text[i] != '"') return Status::Error(At(line_no, i) + "expected a '\"' to open the string");
    std::string value;
    std::vector<size_t> holes;
    LineError err;
    const size_t quote_at = i;
    if (!ParseQuoted(text, &i, end, &value, &holes, &err)) return Status::Error(At(line_no, err.at) + err.what);
    while (i < end && IsBlank(text[i])) i++;
    if (i < end) return Status::Error(At(line_no, i) + "unexpected text after the closing '\"'");
    if (part != nullptr) {
      if (holes.size() != 1) {
        return Status::Error(At(line_no, quote_at) + "'" + key + "' must contain {content} exactly once (it has " +
                             std::to_string(holes.size()) + ")");
      }
      part->before = value.substr(0, holes[0]);
      part->after = value.substr(holes[0]);
    } else {
      if (!holes.empty()) {
        return Status::Error(At(line_no, quote_at) + "'" + key + "' cannot contain {content} (write {{content}} for the text)");
      }
      if (key == "generation") {
        t.generation_ = value;
      } else {
        if (value.empty() || value.size() > kMaxTemplateStopBytes) {
          return Status::Error(At(line_no, quote_at) + "a stop string must be 1.." +
                               std::to_string(kMaxTemplateStopBytes) + " bytes (this one is " +
                               std::to_string(value.size()) + ")");
        }
        if (t.stop_.size() >= kMaxTemplateStops) {
          return Status::Error(At(line_no, key_at) + "at most " + std::to_string(kMaxTemplateStops) +
                               " stop lines");
        }
        t.stop_.push_back(value);
      }
    }
    if (seen != nullptr) *seen = true;
    start = end + 1;
  }
  const char* missing = !seen_system       ? "system"
                        : !seen_user       ? "user"
                        : !seen_assistant  ? "assistant"
                        : !seen_generation ? "generation"
                                           : nullptr;
  if (missing != nullptr) {
    return Status::Error(At(line_no, text.size()) + "the template has no '" + missing +
                         "' line (system, user, assistant and generation are required)");
  }
  *out = std::move(t);
  return Status::Ok();
}

Status ChatTemplate::Load(const std::string& path, ChatTemplate* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return Status::Error("--chat-template " + path + ": fopen: " + std::strerror(errno));
  std::string text;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && text.size() <= kMaxTemplateBytes) text.append(buf, n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) return Status::Error("--chat-template " + path + ": read failed");
  Status s = Parse(text, out);
  if (!s.ok()) return Status::Error("--chat-template " + path + ": " + s.message());
  return Status::Ok();
}

std::string ChatTemplate::Render(const std::vector<ChatMessage>& messages) const {
  std::string out;
  for (const ChatMessage& m : messages) {
    const Part& p = m.role == ChatRole::kSystem ? system_ : m.role == ChatRole::kUser ? user_ : assistant_;
    out += p.before;
    out += m.content;
    out += p.after;
  }
  out += generation_;
  return out;
}

}  // namespace tw::openai

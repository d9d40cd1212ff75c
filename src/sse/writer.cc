#include "sse/writer.h"

namespace tw::sse {
namespace {

// Appends `s` with any CR/LF written as a space (see the header's precondition).
void AppendSingleLine(std::string* out, std::string_view s) {
  for (char c : s) out->push_back(c == '\r' || c == '\n' ? ' ' : c);
}

// Appends "<prefix><line>\n" for each line of `value`, splitting at LF, CR and
// CRLF. An empty value is one empty line.
void AppendLines(std::string* out, std::string_view prefix, std::string_view value) {
  size_t start = 0;
  while (true) {
    size_t end = value.find_first_of("\r\n", start);
    out->append(prefix);
    if (end == std::string_view::npos) {
      out->append(value.substr(start));
      out->push_back('\n');
      return;
    }
    out->append(value.substr(start, end - start));
    out->push_back('\n');
    start = end + 1;
    if (value[end] == '\r' && start < value.size() && value[start] == '\n') start++;
  }
}

void AppendBody(std::string* out, std::string_view event, std::string_view data) {
  if (!event.empty()) {
    out->append("event: ");
    AppendSingleLine(out, event);
    out->push_back('\n');
  }
  AppendLines(out, "data: ", data);
  out->push_back('\n');
}

}  // namespace

void AppendRetry(std::string* out, uint64_t ms) {
  out->append("retry: ");
  out->append(std::to_string(ms));
  out->append("\n\n");
}

void AppendEvent(std::string* out, uint64_t id, std::string_view event, std::string_view data) {
  out->append("id: ");
  out->append(std::to_string(id));
  out->push_back('\n');
  AppendBody(out, event, data);
}

void AppendEventNoId(std::string* out, std::string_view event, std::string_view data) {
  AppendBody(out, event, data);
}

void AppendComment(std::string* out, std::string_view text) {
  AppendLines(out, ": ", text);
  out->push_back('\n');
}

}  // namespace tw::sse

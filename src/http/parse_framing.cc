#include "http/parse_framing.h"

#include "http/parse_syntax.h"

namespace tw::http {
namespace {

bool Fail(ParseFailure* failure, int status, std::string_view reason, size_t offset) {
  if (failure != nullptr) {
    failure->status = status;
    failure->reason = reason;
    failure->offset = offset;
  }
  return false;
}

// reg-name / IP-literal / port characters: unreserved, pct-encoded, sub-delims,
// ":" and the brackets of an IP-literal (RFC 3986 §3.2.2).
bool IsHostByte(unsigned char c) {
  if (IsAlpha(c) || IsDigit(c)) return true;
  switch (c) {
    case '-': case '.': case '_': case '~': case '%': case '!': case '$': case '&':
    case '\'': case '(': case ')': case '*': case '+': case ',': case ';': case '=':
    case ':': case '[': case ']':
      return true;
    default:
      return false;
  }
}

bool IsHostValue(std::string_view v) {
  for (unsigned char c : v) {
    if (!IsHostByte(c)) return false;
  }
  return true;
}

// authority-form for CONNECT: uri-host ":" port, port non-empty digits.
bool IsAuthorityForm(std::string_view t) {
  const size_t colon = t.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == t.size()) return false;
  const std::string_view host = t.substr(0, colon);
  for (unsigned char c : t.substr(colon + 1)) {
    if (!IsDigit(c)) return false;
  }
  if (host.front() == '[') {
    if (host.back() != ']' || host.size() < 3) return false;
    for (unsigned char c : host.substr(1, host.size() - 2)) {
      if (!(HexValue(c) >= 0 || c == ':' || c == '.')) return false;
    }
    return true;
  }
  for (unsigned char c : host) {
    if (!IsHostByte(c) || c == ':' || c == '[' || c == ']') return false;
  }
  return true;
}

// Length of "scheme:" at the start of t (scheme = ALPHA *( ALPHA / DIGIT /
// "+" / "-" / "." )), or 0 if t does not start with one.
size_t SchemeLength(std::string_view t) {
  if (t.empty() || !IsAlpha(static_cast<unsigned char>(t[0]))) return 0;
  for (size_t i = 1; i < t.size(); i++) {
    const unsigned char c = static_cast<unsigned char>(t[i]);
    if (c == ':') return i + 1;
    if (!(IsAlpha(c) || IsDigit(c) || c == '+' || c == '-' || c == '.')) return 0;
  }
  return 0;
}

// Calls fn(element) for each non-empty element of a comma-separated list of
// tokens, trimmed (RFC 9110 §5.6.1; empty elements are ignored).
template <typename Fn>
void ForEachListElement(std::string_view v, Fn fn) {
  while (!v.empty()) {
    const size_t comma = v.find(',');
    const std::string_view element =
        TrimWhitespace(comma == std::string_view::npos ? v : v.substr(0, comma));
    if (!element.empty()) fn(element);
    if (comma == std::string_view::npos) break;
    v.remove_prefix(comma + 1);
  }
}

// Running state of the Transfer-Encoding list over all its field lines.
struct CodingList {
  size_t codings = 0;
  bool chunked_seen = false;
  bool chunked_last = false;
  bool chunked_twice = false;
  bool chunked_with_params = false;
};

// Parses one Transfer-Encoding field value: #transfer-coding where
// transfer-coding = token *( OWS ";" OWS token BWS "=" BWS ( token / quoted-string ) ).
// Returns false on a grammar error.
bool ParseCodings(std::string_view v, CodingList* list) {
  size_t i = 0;
  auto peek = [&](void) -> int { return i < v.size() ? static_cast<unsigned char>(v[i]) : -1; };
  auto skip_ws = [&]() {
    while (i < v.size() && IsWhitespace(static_cast<unsigned char>(v[i]))) i++;
  };
  auto token = [&]() -> std::string_view {
    const size_t s = i;
    while (i < v.size() && IsTchar(static_cast<unsigned char>(v[i]))) i++;
    return v.substr(s, i - s);
  };
  for (;;) {
    skip_ws();
    if (peek() < 0) return true;
    if (peek() == ',') {  // empty element
      i++;
      continue;
    }
    const std::string_view name = token();
    if (name.empty()) return false;
    bool has_params = false;
    for (;;) {
      skip_ws();
      if (peek() != ';') break;
      i++;
      skip_ws();
      if (token().empty()) return false;
      skip_ws();
      if (peek() != '=') return false;
      i++;
      skip_ws();
      if (peek() == '"') {
        i++;
        for (;;) {
          const int c = peek();
          if (c < 0) return false;
          i++;
          if (c == '"') break;
          if (c == '\\') {
            const int e = peek();
            if (e < 0 || !(IsWhitespace(static_cast<unsigned char>(e)) ||
                           IsVchar(static_cast<unsigned char>(e)) ||
                           IsObsText(static_cast<unsigned char>(e)))) {
              return false;
            }
            i++;
          } else if (!IsQdtext(static_cast<unsigned char>(c))) {
            return false;
          }
        }
      } else if (token().empty()) {
        return false;
      }
      has_params = true;
    }
    list->codings++;
    if (EqualsIgnoreCase(name, "chunked")) {
      if (list->chunked_seen) list->chunked_twice = true;
      if (has_params) list->chunked_with_params = true;
      list->chunked_seen = true;
      list->chunked_last = true;
    } else {
      list->chunked_last = false;
    }
    skip_ws();
    if (peek() < 0) return true;
    if (peek() != ',') return false;
    i++;
  }
}

}  // namespace

TargetForm ClassifyTarget(std::string_view method, std::string_view target) {
  if (target.empty()) return TargetForm::kInvalid;
  if (method == "CONNECT") {
    return IsAuthorityForm(target) ? TargetForm::kAuthority : TargetForm::kInvalid;
  }
  if (target == "*") return method == "OPTIONS" ? TargetForm::kAsterisk : TargetForm::kInvalid;
  if (target[0] == '/') return TargetForm::kOrigin;
  if (SchemeLength(target) > 0) return TargetForm::kAbsolute;
  return TargetForm::kInvalid;
}

void SplitTarget(std::string_view method, std::string_view target, std::string_view* path,
                 std::string_view* query) {
  *query = {};
  const TargetForm form = ClassifyTarget(method, target);
  if (form == TargetForm::kAuthority || form == TargetForm::kAsterisk ||
      form == TargetForm::kInvalid) {
    *path = target;
    return;
  }
  std::string_view rest = target;
  if (form == TargetForm::kAbsolute) {
    rest.remove_prefix(SchemeLength(rest));
    if (rest.substr(0, 2) == "//") {
      rest.remove_prefix(2);
      const size_t end = rest.find_first_of("/?#");
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end);
    }
  }
  const size_t hash = rest.find('#');
  if (hash != std::string_view::npos) rest = rest.substr(0, hash);
  const size_t q = rest.find('?');
  if (q != std::string_view::npos) {
    *query = rest.substr(q + 1);
    rest = rest.substr(0, q);
  }
  *path = rest.empty() ? std::string_view("/") : rest;
}

bool InterpretHead(const RequestHeadView& head, const char* base, size_t max_body_bytes,
                   bool require_host, MessageFraming* out, ParseFailure* failure) {
  *out = MessageFraming();
  const bool http11 = head.minor_version == 1;
  auto offset_of = [base](std::string_view s) { return static_cast<size_t>(s.data() - base); };

  size_t host_count = 0;
  const HeaderView* content_length = nullptr;
  const HeaderView* first_te = nullptr;
  CodingList codings;
  bool te_grammar_ok = true;
  bool conn_close = false;
  bool conn_keep_alive = false;
  bool conn_upgrade = false;
  bool has_upgrade_header = false;

  for (size_t i = 0; i < head.num_headers; i++) {
    const HeaderView& h = head.headers[i];
    if (EqualsIgnoreCase(h.name, "host")) {
      if (++host_count > 1) return Fail(failure, 400, "more than one Host header", offset_of(h.name));
      if (!IsHostValue(h.value)) return Fail(failure, 400, "invalid Host header value", offset_of(h.name));
    } else if (EqualsIgnoreCase(h.name, "content-length")) {
      if (content_length != nullptr) {
        return Fail(failure, 400, "more than one Content-Length header", offset_of(h.name));
      }
      content_length = &h;
    } else if (EqualsIgnoreCase(h.name, "transfer-encoding")) {
      if (first_te == nullptr) first_te = &h;
      if (!ParseCodings(h.value, &codings)) te_grammar_ok = false;
    } else if (EqualsIgnoreCase(h.name, "connection")) {
      ForEachListElement(h.value, [&](std::string_view option) {
        if (EqualsIgnoreCase(option, "close")) conn_close = true;
        if (EqualsIgnoreCase(option, "keep-alive")) conn_keep_alive = true;
        if (EqualsIgnoreCase(option, "upgrade")) conn_upgrade = true;
      });
    } else if (EqualsIgnoreCase(h.name, "expect")) {
      if (http11 && EqualsIgnoreCase(h.value, "100-continue")) out->expect_continue = true;
    } else if (EqualsIgnoreCase(h.name, "upgrade")) {
      if (!h.value.empty()) has_upgrade_header = true;
    }
  }

  if (require_host && http11 && host_count == 0) {
    return Fail(failure, 400, "HTTP/1.1 request without Host header", offset_of(head.method));
  }

  uint64_t length = 0;
  if (content_length != nullptr) {
    const std::string_view v = content_length->value;
    if (v.empty()) return Fail(failure, 400, "empty Content-Length", offset_of(content_length->name));
    for (unsigned char c : v) {
      if (!IsDigit(c)) {
        return Fail(failure, 400, "Content-Length is not a decimal number",
                    offset_of(content_length->value));
      }
      const uint64_t d = c - '0';
      if (length > (UINT64_MAX - d) / 10) {
        return Fail(failure, 400, "Content-Length overflows 64 bits",
                    offset_of(content_length->value));
      }
      length = length * 10 + d;
    }
  }

  if (first_te != nullptr) {
    const size_t at = offset_of(first_te->name);
    if (content_length != nullptr) {
      return Fail(failure, 400, "both Content-Length and Transfer-Encoding", at);
    }
    if (!http11) return Fail(failure, 400, "Transfer-Encoding in an HTTP/1.0 request", at);
    if (!te_grammar_ok) return Fail(failure, 400, "invalid Transfer-Encoding value", at);
    if (codings.codings == 0) return Fail(failure, 400, "empty Transfer-Encoding", at);
    if (codings.chunked_twice) return Fail(failure, 400, "chunked applied more than once", at);
    if (!codings.chunked_last) {
      return Fail(failure, 400, "final transfer coding is not chunked (length unknown)", at);
    }
    if (codings.chunked_with_params) return Fail(failure, 400, "parameters on chunked", at);
    if (codings.codings > 1) {
      return Fail(failure, 501, "transfer codings other than chunked are not implemented", at);
    }
  }

  const bool is_connect = head.method == "CONNECT";
  if (!is_connect) {
    if (first_te != nullptr) {
      out->body = MessageFraming::Body::kChunked;
    } else if (content_length != nullptr && length > 0) {
      if (length > max_body_bytes) {
        return Fail(failure, 413, "Content-Length larger than max_body_bytes",
                    offset_of(content_length->value));
      }
      out->body = MessageFraming::Body::kLength;
      out->content_length = length;
    }
  }
  out->keep_alive = http11 ? !conn_close : (conn_keep_alive && !conn_close);
  out->upgrade = is_connect || (http11 && conn_upgrade && has_upgrade_header);
  return true;
}

}  // namespace tw::http

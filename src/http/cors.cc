#include "http/cors.h"

#include "http/parse_syntax.h"

namespace tw::http {
namespace {

// scheme "://" host [":" port], nothing more: what a browser puts in Origin.
Status CheckOrigin(std::string_view o) {
  const size_t sep = o.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return Status::Error("--allowed-origins: '" + std::string(o) + "' is not scheme://host[:port]");
  }
  for (char c : o.substr(0, sep)) {
    if (!IsAlpha(static_cast<unsigned char>(c)) && !IsDigit(static_cast<unsigned char>(c)) && c != '+' &&
        c != '-' && c != '.') {
      return Status::Error("--allowed-origins: '" + std::string(o) + "' has a bad scheme");
    }
  }
  std::string_view host = o.substr(sep + 3);
  if (host.empty()) return Status::Error("--allowed-origins: '" + std::string(o) + "' has no host");
  for (char c : host) {
    if (c == '/') {
      return Status::Error("--allowed-origins: '" + std::string(o) +
                           "' has a path; an origin is scheme://host[:port] with no '/' after it");
    }
    if (!IsVchar(static_cast<unsigned char>(c)) || c == ',') {
      return Status::Error("--allowed-origins: '" + std::string(o) + "' holds a byte an origin cannot");
    }
  }
  return Status::Ok();
}

}  // namespace

bool CorsPolicy::Allows(std::string_view origin) const {
  if (origin.empty()) return false;
  if (any) return true;
  for (const std::string& o : origins) {
    if (o == origin) return true;
  }
  return false;
}

Status ParseAllowedOrigins(std::string_view list, CorsPolicy* out) {
  *out = CorsPolicy();
  if (TrimWhitespace(list) == "*") {
    out->any = true;
    return Status::Ok();
  }
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view o = TrimWhitespace(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    if (o.empty()) continue;
    if (o == "*") return Status::Error("--allowed-origins: '*' stands alone, not in a list");
    if (o == "null") {
      return Status::Error("--allowed-origins: 'null' is the origin of every sandboxed page and file:// "
                           "document; allow '*' if that is meant");
    }
    if (Status s = CheckOrigin(o); !s.ok()) return s;
    out->origins.emplace_back(o);
  }
  return Status::Ok();
}

bool IsHeaderNameList(std::string_view v) {
  bool any = false;
  while (true) {
    const size_t comma = v.find(',');
    std::string_view name = TrimWhitespace(v.substr(0, comma));
    for (char c : name) {
      if (!IsTchar(static_cast<unsigned char>(c))) return false;
    }
    any = any || !name.empty();
    if (comma == std::string_view::npos) return any;
    v.remove_prefix(comma + 1);
  }
}

void AppendCorsHeaders(const CorsPolicy& policy, const Request& request, Headers* out) {
  if (!policy.enabled()) return;
  out->emplace_back("Vary", "Origin");
  std::string_view origin = request.Header("Origin");
  if (!policy.Allows(origin)) return;
  out->emplace_back("Access-Control-Allow-Origin", std::string(origin));
  out->emplace_back("Access-Control-Expose-Headers", std::string(kCorsExposeHeaders));
}

bool PreflightHeaders(const CorsPolicy& policy, const Request& request, Headers* out) {
  if (request.method != "OPTIONS" || !request.HasHeader("Access-Control-Request-Method") ||
      !policy.Allows(request.Header("Origin"))) {
    return false;
  }
  out->emplace_back("Access-Control-Allow-Methods", std::string(kCorsAllowMethods));
  std::string_view asked = request.Header("Access-Control-Request-Headers");
  out->emplace_back("Access-Control-Allow-Headers",
                    std::string(IsHeaderNameList(asked) ? TrimWhitespace(asked) : kDefaultAllowHeaders));
  out->emplace_back("Access-Control-Max-Age", std::to_string(kPreflightMaxAgeSeconds));
  return true;
}

}  // namespace tw::http

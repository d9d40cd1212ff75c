// CORS: which web pages may read this server's answers (the Fetch
// standard's CORS protocol), decided once per request by the HTTP layer so
// that every answer carries the same headers: a handler's, a streamed one,
// and the errors no handler writes (404, 405, 413, a refused API key).
//
// A policy is a list of exact origins ("https://app.example",
// "http://127.0.0.1:5173": scheme://host[:port] as a browser sends it in
// `Origin`, compared byte for byte) or "*" (every origin). An empty policy
// (the default) sends no CORS header at all.
//
// For a request whose Origin the policy allows, every response carries
//   Access-Control-Allow-Origin: <that origin>   (echoed, also under "*")
//   Access-Control-Expose-Headers: X-Request-Id, X-Stream-Id, Retry-After
// and with any policy set every response carries `Vary: Origin` (the
// answer depends on it, so a cache must key on it).
//
// A preflight (OPTIONS with Origin and Access-Control-Request-Method) from
// an allowed origin is answered here, before routing and before any API key
// check (browsers send none with it): 204 with Allow-Methods, Allow-Headers
// (the requested list echoed when it is a valid list of header names, else
// kDefaultAllowHeaders) and Max-Age. Any other OPTIONS goes to the router
// like any other method (405 with Allow on a known path, 404 elsewhere),
// without Allow-Origin unless its Origin is allowed (docs/DECISIONS.md).
//
// Threads: pure functions over a policy that is read-only once the server
// starts. Allocates only the headers it appends.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "http/request_reader.h"
#include "http/response.h"

namespace tw::http {

inline constexpr std::string_view kCorsAllowMethods = "GET, POST, DELETE, OPTIONS";
inline constexpr std::string_view kCorsExposeHeaders = "X-Request-Id, X-Stream-Id, Retry-After";
// Allow-Headers when the preflight asks for none, or asks in a list that is
// not one of header names.
inline constexpr std::string_view kDefaultAllowHeaders = "Authorization, Content-Type, X-Request-Id, Last-Event-ID";
// How long a browser may cache a preflight answer (Chromium caps it at 7200).
inline constexpr int kPreflightMaxAgeSeconds = 600;

struct CorsPolicy {
  bool any = false;                  // "*"
  std::vector<std::string> origins;  // exact origins

  bool enabled() const { return any || !origins.empty(); }
  // An empty Origin (none sent) is never allowed.
  bool Allows(std::string_view origin) const;
};

// Parses --allowed-origins: "*", or origins separated by commas (spaces
// around them ignored), each scheme://host[:port] with nothing after it
// ("https://a.example/" is refused, naming the slash; "null" is refused:
// it is every sandboxed page and file:// at once). "" is the empty policy.
Status ParseAllowedOrigins(std::string_view list, CorsPolicy* out);

// True when `v` is a comma-separated list of RFC 9110 tokens with optional
// whitespace around the commas and at least one name
// (Access-Control-Request-Headers: "authorization, content-type").
bool IsHeaderNameList(std::string_view v);

// The headers every response to `request` carries under `policy` (above).
void AppendCorsHeaders(const CorsPolicy& policy, const Request& request, Headers* out);

// True when `request` is a preflight from an allowed origin; then *out gets
// the 204's preflight headers (Allow-Methods, Allow-Headers, Max-Age; the
// AppendCorsHeaders ones are the caller's).
bool PreflightHeaders(const CorsPolicy& policy, const Request& request, Headers* out);

}  // namespace tw::http

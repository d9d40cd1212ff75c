// Router: maps (method, path) to a Handler.
//
// Patterns are literal paths whose segments may be "{name}", which matches
// exactly one non-empty path segment and is captured (Responder::Param).
// Matching is on the raw path (no percent-decoding, no trailing-slash
// folding); routes are tried in registration order. Unknown path → 404
// not_found; a path that matches with other methods only → 405
// method_not_allowed with "Allow: GET, DELETE" (registered order); both
// through Responder::SendError, so in the envelope the server's
// error_body chooses for the path.
//
// Threads: Add() before the server starts; Dispatch() on the loop thread.
// Allocates the route table at Add() and the captured params per request.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "http/request_reader.h"
#include "http/server.h"

namespace tw::http {

class Router {
 public:
  void Add(std::string method, std::string pattern, Handler handler);
  // Calls the matching handler, or answers 404/405 through responder.
  void Dispatch(const Request& request, Responder responder) const;
  // Whether some route (of any method) matches `path`: false is the 404.
  bool HasPath(std::string_view path) const;

 private:
  struct Segment {
    std::string text;  // literal, or the parameter name
    bool param = false;
  };
  struct Route {
    std::string method;
    std::vector<Segment> segments;
    Handler handler;
  };
  static bool Match(const Route& route, std::string_view path, PathParams* params);

  std::vector<Route> routes_;
};

}  // namespace tw::http

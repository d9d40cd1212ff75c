#include "http/router.h"

#include <memory>

namespace tw::http {
namespace {

// Splits "/a/b/c" into {"a","b","c"}; "/" gives {""}.
std::vector<std::string_view> SplitPath(std::string_view path) {
  std::vector<std::string_view> out;
  if (!path.empty() && path[0] == '/') path.remove_prefix(1);
  size_t start = 0;
  while (true) {
    size_t slash = path.find('/', start);
    if (slash == std::string_view::npos) {
      out.push_back(path.substr(start));
      return out;
    }
    out.push_back(path.substr(start, slash - start));
    start = slash + 1;
  }
}

}  // namespace

void Router::Add(std::string method, std::string pattern, Handler handler) {
  Route r;
  r.method = std::move(method);
  for (std::string_view seg : SplitPath(pattern)) {
    Segment s;
    if (seg.size() >= 3 && seg.front() == '{' && seg.back() == '}') {
      s.param = true;
      s.text = std::string(seg.substr(1, seg.size() - 2));
    } else {
      s.text = std::string(seg);
    }
    r.segments.push_back(std::move(s));
  }
  r.handler = std::move(handler);
  routes_.push_back(std::move(r));
}

bool Router::Match(const Route& route, std::string_view path, PathParams* params) {
  if (path.empty() || path[0] != '/') return false;
  std::vector<std::string_view> segs = SplitPath(path);
  if (segs.size() != route.segments.size()) return false;
  for (size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = route.segments[i];
    if (s.param) {
      if (segs[i].empty()) return false;
    } else if (segs[i] != s.text) {
      return false;
    }
  }
  if (params) {
    params->clear();
    for (size_t i = 0; i < segs.size(); ++i) {
      if (route.segments[i].param) params->emplace_back(route.segments[i].text, std::string(segs[i]));
    }
  }
  return true;
}

bool Router::HasPath(std::string_view path) const {
  for (const Route& r : routes_) {
    if (Match(r, path, nullptr)) return true;
  }
  return false;
}

void Router::Dispatch(const Request& request, Responder responder) const {
  std::vector<std::string_view> methods;  // of routes matching the path
  for (const Route& r : routes_) {
    if (r.method == request.method) {
      auto params = std::make_shared<PathParams>();
      if (Match(r, request.path, params.get())) {
        responder.params_ = std::move(params);
        r.handler(request, std::move(responder));
        return;
      }
    } else if (Match(r, request.path, nullptr)) {
      bool seen = false;
      for (std::string_view m : methods) seen = seen || m == r.method;
      if (!seen) methods.push_back(r.method);
    }
  }
  if (!methods.empty()) {
    std::string allow;
    for (std::string_view m : methods) {
      if (!allow.empty()) allow += ", ";
      allow += m;
    }
    responder.SendError(ApiError::Make(ErrorCode::kMethodNotAllowed, "method " + request.method +
                                                                     " is not allowed on " + request.path +
                                                                     " (allowed: " + allow + ")"),
                        {{"Allow", allow}});
    return;
  }
  responder.SendError(ApiError::Make(ErrorCode::kNotFound, "no route for " + request.method + " " + request.path));
}

}  // namespace tw::http

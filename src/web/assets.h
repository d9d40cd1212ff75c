// Web assets: the teaching page served at GET / (DESIGN.md §4) — one HTML
// file, one script, one style sheet, written by hand in src/web/page/ and
// embedded in the binary (assets.cc, with the assembler's .incbin), so the
// static build needs no files beside it and the page has no external assets.
//
// Threads: any; everything here is immutable after program start.
// Allocates nothing: each Asset's fields view bytes in the binary's
// read-only data (bound: the three files' sizes, a few tens of KiB).
// Never reads the file system at run time: editing src/web/page/ needs a
// rebuild (the Makefile's interop block makes assets.o depend on those files,
// since -MMD cannot see .incbin inputs).
#pragma once

#include <span>
#include <string_view>

#include "http/response.h"

namespace tw::web {

struct Asset {
  std::string_view path;          // URL path it is served at: "/", "/page.js", "/page.css"
  std::string_view content_type;  // full Content-Type value, charset included
  std::string_view body;          // the file's bytes (no trailing NUL)
};

// Every embedded asset; the page ("/") first.
std::span<const Asset> Assets();

// The asset served at `path` (exact match, no query string), or nullptr.
const Asset* FindAsset(std::string_view path);

// Headers every asset is sent with: no caching (a rebuilt server serves the
// new page at once), nosniff, and a Content-Security-Policy that allows only
// this origin (the page's own script, style, fetch/EventSource and WebSocket).
http::Headers AssetHeaders();

}  // namespace tw::web

// Embeds src/web/page/{index.html,page.js,page.css} (common/embed.h).
// The Makefile lists the page's files as prerequisites of this object.
#include "web/assets.h"

#include "common/embed.h"

asm(TW_EMBED_FILE("tw_web_index_html", "src/web/page/index.html")
        TW_EMBED_FILE("tw_web_page_js", "src/web/page/page.js")
            TW_EMBED_FILE("tw_web_page_css", "src/web/page/page.css"));

extern "C" {
extern const char tw_web_index_html_begin[];
extern const char tw_web_index_html_end[];
extern const char tw_web_page_js_begin[];
extern const char tw_web_page_js_end[];
extern const char tw_web_page_css_begin[];
extern const char tw_web_page_css_end[];
}

namespace tw::web {

namespace {

std::string_view Blob(const char* begin, const char* end) {
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

}  // namespace

std::span<const Asset> Assets() {
  // Built on first use (the blobs' bounds are link-time symbols).
  static const Asset kAssets[] = {
      {"/", "text/html; charset=utf-8", Blob(tw_web_index_html_begin, tw_web_index_html_end)},
      {"/page.js", "text/javascript; charset=utf-8", Blob(tw_web_page_js_begin, tw_web_page_js_end)},
      {"/page.css", "text/css; charset=utf-8", Blob(tw_web_page_css_begin, tw_web_page_css_end)},
  };
  return kAssets;
}

const Asset* FindAsset(std::string_view path) {
  for (const Asset& a : Assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

http::Headers AssetHeaders() {
  return {
      {"Cache-Control", "no-cache"},
      {"X-Content-Type-Options", "nosniff"},
      // 'self' covers same-origin ws:/wss: in CSP Level 3 browsers; ws: and
      // wss: are named too for older ones.
      {"Content-Security-Policy",
       "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self' ws: wss:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
  };
}

}  // namespace tw::web

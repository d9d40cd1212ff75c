// Embeds src/web/page/{index.html,page.js,page.css} with the assembler's
// .incbin, as src/tokenizer/embedded.cc does for the tokenizer's data.
//
// The path is absolute, built from TW_SOURCE_DIR (the repository root, set by
// the Makefile), so g++ and clang++ find the files wherever they are invoked.
// Each blob gets a begin and an end label in its own read-only section;
// .pushsection/.popsection leave the compiler's current section untouched.
// Note: make's -MMD does not see .incbin inputs; the Makefile's interop block
// adds the page's files as prerequisites of this object.
#include "web/assets.h"

#ifndef TW_SOURCE_DIR
#error "TW_SOURCE_DIR (the repository root) must be defined by the build"
#endif

#define TW_WEB_EMBED(name, path)                  \
  ".pushsection .rodata.tw_web,\"a\"\n"           \
  ".balign 16\n"                                  \
  ".globl " name "_begin\n"                       \
  ".hidden " name "_begin\n"                      \
  name "_begin:\n"                                \
  ".incbin \"" TW_SOURCE_DIR "/" path "\"\n"      \
  ".globl " name "_end\n"                         \
  ".hidden " name "_end\n"                        \
  name "_end:\n"                                  \
  ".byte 0\n"                                     \
  ".popsection\n"

asm(TW_WEB_EMBED("tw_web_index_html", "src/web/page/index.html")
        TW_WEB_EMBED("tw_web_page_js", "src/web/page/page.js")
            TW_WEB_EMBED("tw_web_page_css", "src/web/page/page.css"));

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

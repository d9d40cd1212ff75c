// The teaching page at GET / (src/web): what is embedded, and how the server
// serves it. The reference for every body is the file in src/web/page/ read
// from disk, not the embedded copy. The page's behaviour in a browser (SSE,
// WebSocket, drop and resume) is tested by `make interop`
// (tests/interop/browser/), which needs Chromium.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "app/app_fixture.h"
#include "client/http_client.h"
#include "web/assets.h"

namespace tw {
namespace {

std::string ReadSource(const std::string& rel) {
  std::ifstream in(std::string(TW_SOURCE_DIR) + "/" + rel, std::ios::binary);
  EXPECT_TRUE(in.good()) << rel;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Expected {
  const char* path;
  const char* file;
  const char* content_type;
};
const Expected kExpected[] = {
    {"/", "src/web/page/index.html", "text/html; charset=utf-8"},
    {"/page.js", "src/web/page/page.js", "text/javascript; charset=utf-8"},
    {"/page.css", "src/web/page/page.css", "text/css; charset=utf-8"},
};

TEST(WebAssets, EmbeddedBytesEqualTheSourceFiles) {
  ASSERT_EQ(web::Assets().size(), std::size(kExpected));
  EXPECT_EQ(web::Assets()[0].path, "/");
  for (const Expected& e : kExpected) {
    const web::Asset* a = web::FindAsset(e.path);
    ASSERT_NE(a, nullptr) << e.path;
    EXPECT_EQ(a->content_type, e.content_type);
    std::string want = ReadSource(e.file);
    ASSERT_GT(want.size(), 100u) << e.file;
    EXPECT_TRUE(a->body == want) << e.path << ": embedded " << a->body.size() << " bytes, file "
                                 << want.size() << " bytes (stale build? touch src/web/assets.cc)";
  }
}

TEST(WebAssets, LookupIsExact) {
  EXPECT_EQ(web::FindAsset("/index.html"), nullptr);
  EXPECT_EQ(web::FindAsset("/page.js?v=1"), nullptr);
  EXPECT_EQ(web::FindAsset("page.js"), nullptr);
  EXPECT_EQ(web::FindAsset(""), nullptr);
  EXPECT_EQ(web::FindAsset("/PAGE.JS"), nullptr);
}

// "No external assets": every src/href in the HTML and every url() in the
// CSS is a path on this server that serves an embedded asset (or an anchor).
TEST(WebAssets, ThePageReferencesOnlyEmbeddedAssets) {
  std::string_view html = web::FindAsset("/")->body;
  std::set<std::string> refs;  // the values of every src="…" and href="…"
  for (std::string_view attr : {" src=\"", " href=\""}) {
    for (size_t at = html.find(attr); at != std::string_view::npos; at = html.find(attr, at + 1)) {
      size_t begin = at + attr.size(), end = html.find('"', begin);
      ASSERT_NE(end, std::string_view::npos);
      refs.emplace(html.substr(begin, end - begin));
    }
  }
  EXPECT_TRUE(refs.count("/page.js")) << "the page must load its script";
  EXPECT_TRUE(refs.count("/page.css")) << "the page must load its style sheet";
  for (const std::string& r : refs) {
    if (!r.empty() && r[0] == '#') continue;
    EXPECT_NE(web::FindAsset(r), nullptr) << "index.html refers to '" << r << "', which is not embedded";
  }
  std::string css(web::FindAsset("/page.css")->body);
  EXPECT_EQ(css.find("url("), std::string::npos) << "page.css loads something";
  EXPECT_EQ(css.find("@import"), std::string::npos);
  std::string js(web::FindAsset("/page.js")->body);
  EXPECT_EQ(js.find("import "), std::string::npos) << "page.js imports a module";
  EXPECT_EQ(js.find("http://"), std::string::npos) << "page.js names another origin";
  EXPECT_EQ(js.find("https://"), std::string::npos) << "page.js names another origin";
}

TEST(WebServe, EachAssetWithItsTypeAndHeaders) {
  testing::AppServer server;
  for (const Expected& e : kExpected) {
    client::Response r = server.Call("GET", e.path);
    EXPECT_EQ(r.head.status, 200) << e.path;
    const std::string* ct = r.head.Find("Content-Type");
    ASSERT_NE(ct, nullptr) << e.path;
    EXPECT_EQ(*ct, e.content_type);
    EXPECT_TRUE(r.body == ReadSource(e.file)) << e.path << ": " << r.body.size() << " bytes";
    const std::string* cc = r.head.Find("Cache-Control");
    ASSERT_NE(cc, nullptr);
    EXPECT_EQ(*cc, "no-cache");
    const std::string* nosniff = r.head.Find("X-Content-Type-Options");
    ASSERT_NE(nosniff, nullptr);
    EXPECT_EQ(*nosniff, "nosniff");
    const std::string* csp = r.head.Find("Content-Security-Policy");
    ASSERT_NE(csp, nullptr);
    EXPECT_NE(csp->find("script-src 'self'"), std::string::npos) << *csp;
    EXPECT_NE(csp->find("connect-src 'self'"), std::string::npos) << *csp;
  }
}

TEST(WebServe, OtherPathsAndMethods) {
  testing::AppServer server;
  client::Response r = server.Call("GET", "/index.html");
  EXPECT_EQ(r.head.status, 404);
  r = server.Call("POST", "/", "{}");
  EXPECT_EQ(r.head.status, 405);
  const std::string* allow = r.head.Find("Allow");
  ASSERT_NE(allow, nullptr);
  EXPECT_EQ(*allow, "GET");
  // The query string (the page's scenario parameters) does not change the route.
  r = server.Call("GET", "/?prompt=hi&max_tokens=5&transport=ws&autorun=1&drop_after=2");
  EXPECT_EQ(r.head.status, 200);
  EXPECT_TRUE(r.body == ReadSource("src/web/page/index.html"));
}

// With --api-key the page stays open (it is static); the API it calls does not.
TEST(WebServe, ThePageNeedsNoApiKey) {
  testing::AppServer server({"--api-key", "sekret"});
  EXPECT_EQ(server.Call("GET", "/").head.status, 200);
  EXPECT_EQ(server.Call("GET", "/page.js").head.status, 200);
  EXPECT_EQ(server.Call("POST", "/v1/streams", R"({"prompt":"hi","max_new_tokens":1})").head.status, 401);
}

// The page (and nginx, docs/nginx.conf) open /v1/ws?stream=<id> for a
// resume; the server must accept the upgrade and ignore the query.
TEST(WebServe, WebSocketUpgradeIgnoresTheStreamQuery) {
  testing::AppServer server;
  client::HttpClient c;
  ASSERT_OK(c.Connect(server.port()));
  client::Request req;
  req.target = "/v1/ws?stream=s_a_0123456789abcdef0123456789abcdef";
  req.headers = {{"Upgrade", "websocket"},
                 {"Connection", "Upgrade"},
                 {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                 {"Sec-WebSocket-Version", "13"}};
  ASSERT_OK(c.SendRequest(req));
  client::ResponseHead head;
  ASSERT_OK(c.ReadHead(&head));
  EXPECT_EQ(head.status, 101);
  const std::string* accept = head.Find("Sec-WebSocket-Accept");
  ASSERT_NE(accept, nullptr);
  EXPECT_EQ(*accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");  // RFC 6455 §1.3's example key
}

}  // namespace
}  // namespace tw

// llhttp's request vectors (tests/data/http/llhttp, MIT) fed through
// RequestReader whole, at every split point and bytewise, in two modes:
//  1. require_host = false (llhttp requires no Host): each of the 133
//     strict-mode cases must come out as llhttp's server expectation, except
//     the cases in Deviations() (reasons in tests/data/http/DEVIATIONS.md).
//  2. the production default (Host required, RFC 9112 §3.2): the same, except
//     that a case whose llhttp-parsed messages include an HTTP/1.1 head
//     without Host (read from llhttp's own message log, not from us) is 400
//     at that message.
#include <gtest/gtest.h>

#include <strings.h>

#include <map>
#include <string>

#include "http/reader_harness.h"
#include "http/test_json.h"
#include "support/chunking.h"

namespace tw::http {
namespace {

using testing::JsonValue;

// Our outcome, reduced to what llhttp's expectations talk about.
struct Expect {
  std::string kind;  // respond | incomplete | reject | upgrade | respond-then-close
  int n = 0;         // complete requests before the end / error
  int status = 0;    // for reject
};

struct Deviation {
  Expect without_host_rule;  // mode 1 (require_host = false)
  Expect with_host_rule;     // mode 2 (default limits)
};

// Cases where we deliberately differ from llhttp strict mode. Reasons are in
// tests/data/http/DEVIATIONS.md (same ids).
const std::map<std::string, Deviation>& Deviations() {
  static const std::map<std::string, Deviation> kMap = {
      // Framing headers are checked when the head is complete; it never is.
      {"024", {{"incomplete", 0, 0}, {"incomplete", 0, 0}}},
      {"025", {{"incomplete", 0, 0}, {"incomplete", 0, 0}}},
      // Any token is a method; the server answers 501/405 for unknown ones.
      {"046", {{"respond-then-close", 1, 0}, {"respond-then-close", 1, 0}}},
      {"056", {{"respond", 1, 0}, {"reject", 0, 400}}},
      // A well-formed HTTP version we do not implement is 505.
      {"061", {{"reject", 0, 505}, {"reject", 0, 505}}},
      // asterisk-form is for OPTIONS only.
      {"081", {{"reject", 0, 400}, {"reject", 0, 400}}},
      // ICE/1.0 and RTSP/1.0 are not HTTP.
      {"088", {{"reject", 0, 400}, {"reject", 0, 400}}},
      {"089", {{"reject", 0, 400}, {"reject", 0, 400}}},
      {"090", {{"reject", 0, 400}, {"reject", 0, 400}}},
      // HTTP/0.9 (no version) is not supported.
      {"116", {{"reject", 0, 400}, {"reject", 0, 400}}},
      // Codings other than chunked are not implemented: 501 (HTTP/1.1
      // without Host is 400 first).
      {"144", {{"reject", 0, 501}, {"reject", 0, 400}}},
      {"145", {{"reject", 0, 501}, {"reject", 0, 400}}},
  };
  return kMap;
}

std::string Describe(const testing::ReaderOutcome& o) {
  std::string s;
  if (o.error) {
    s = "reject " + std::to_string(o.status);
  } else if (o.upgrade_pending) {
    s = "upgrade";
  } else if (o.closed) {
    s = "respond-then-close";
  } else if (o.requests.empty()) {
    s = "incomplete";
  } else {
    s = "respond";
  }
  return s + " n=" + std::to_string(o.requests.size());
}

bool Matches(const Expect& e, const testing::ReaderOutcome& o) {
  if (static_cast<int>(o.requests.size()) != e.n) return false;
  if (e.kind == "reject") return o.error && o.status == e.status;
  if (o.error) return false;
  if (e.kind == "upgrade") return o.upgrade_pending;
  if (o.upgrade_pending) return false;
  if (e.kind == "respond-then-close") return o.closed;
  if (e.kind == "incomplete") return e.n == 0 && !o.closed;
  if (e.kind == "respond") {
    // A request with Connection: close (or 1.0 without keep-alive) closes
    // after it: allowed only when that last request asked for it.
    return !o.closed || !o.requests.back().keep_alive;
  }
  return false;
}

// llhttp's span log writes a TAB as the two characters "\t"; header values
// keep their trailing whitespace there (RFC 9112 §5 strips it: so do we).
std::string LlhttpHeaderValue(const std::string& logged) {
  std::string v;
  for (size_t i = 0; i < logged.size(); i++) {
    if (logged[i] == '\\' && i + 1 < logged.size() && logged[i + 1] == 't') {
      v.push_back('\t');
      i++;
    } else {
      v.push_back(logged[i]);
    }
  }
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
  return v;
}

// Compares our requests with llhttp's completed messages.
std::string CompareMessages(const JsonValue& c, const testing::ReaderOutcome& o) {
  const auto& msgs = c["messages"].array;
  const size_t complete = static_cast<size_t>(c["messages_complete"].number);
  for (size_t i = 0; i < o.requests.size() && i < complete; i++) {
    const JsonValue& m = msgs[i];
    const Request& r = o.requests[i];
    if (r.method != m["method"].str()) return "method " + r.method;
    if (r.target != m["url"].str()) return "target " + r.target;
    if ("1." + std::to_string(r.minor_version) != m["version"].str()) return "version";
    // llhttp lists trailer fields after the headers; we discard trailers,
    // so extra entries are allowed only for chunked messages.
    const auto& hs = m["headers"].array;
    const bool chunked = m["chunks"].number > 0;
    if (hs.size() != r.headers.size() && !(chunked && hs.size() > r.headers.size())) {
      return "header count";
    }
    for (size_t k = 0; k < r.headers.size(); k++) {
      if (r.headers[k].first != hs[k].array[0].str()) return "header name " + r.headers[k].first;
      if (r.headers[k].second != LlhttpHeaderValue(hs[k].array[1].str())) {
        return "header value [" + testing::Printable(r.headers[k].second) + "] vs [" +
               testing::Printable(hs[k].array[1].str()) + "]";
      }
    }
    if (r.body != m["body"].str()) return "body [" + testing::Printable(r.body) + "]";
  }
  return "";
}

// Index of the first message (among the first `reached`) that llhttp parsed
// to the end of its head as HTTP/1.1 without a Host header, or -1.
int FirstHostlessMessage(const JsonValue& c, int reached) {
  const auto& msgs = c["messages"].array;
  for (int i = 0; i < reached && i < static_cast<int>(msgs.size()); i++) {
    const JsonValue& m = msgs[i];
    if (m["headers_complete"].is_null() || m["version"].str() != "1.1") continue;
    bool has_host = false;
    for (const auto& h : m["headers"].array) {
      if (h.array[0].str().size() == 4 && strncasecmp(h.array[0].str().c_str(), "host", 4) == 0) {
        has_host = true;
      }
    }
    if (!has_host) return i;
  }
  return -1;
}

TEST(LlhttpConformance, AllStrictCases) {
  bool ok = false;
  const std::string text = testing::ReadFile(testing::DataPath("http/llhttp/cases.jsonl"), &ok);
  ASSERT_TRUE(ok);
  std::string err;
  const std::vector<JsonValue> cases = testing::ParseJsonLines(text, &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(cases.size(), 166u);

  int strict = 0;
  int as_llhttp = 0;
  int deviating = 0;
  int hostless = 0;
  int upgrades_checked = 0;
  std::map<std::string, int> by_kind;
  for (const JsonValue& c : cases) {
    if (!c["strict_applicable"].boolean) continue;
    strict++;
    const std::string id = c["id"].str();
    bool b64ok = false;
    const std::string raw = testing::Base64Decode(c["raw_b64"].str(), &b64ok);
    ASSERT_TRUE(b64ok) << id;

    ReaderLimits no_host;
    no_host.require_host = false;
    std::string mismatch;
    const testing::ReaderOutcome o = testing::RunAllChunkings(raw, no_host, &mismatch);
    EXPECT_EQ(mismatch, "") << "case " << id << " differs between chunkings";
    const testing::ReaderOutcome strict_o = testing::RunAllChunkings(raw, ReaderLimits(), &mismatch);
    EXPECT_EQ(mismatch, "") << "case " << id << " (Host required) differs between chunkings";

    Expect want;
    const std::string se = c["server_expect"].str();
    const int complete = static_cast<int>(c["messages_complete"].number);
    if (se == "respond") {
      want = {"respond", complete, 0};
    } else if (se == "incomplete") {
      want = {"incomplete", 0, 0};
    } else if (se == "reject") {
      want = {"reject", 0, 400};
    } else if (se == "upgrade") {
      want = {"upgrade", 1, 0};
    } else if (se == "h2-preface") {
      want = {"reject", 0, 400};
    } else if (se == "respond-then-close") {
      want = {"respond-then-close", 1, 0};
    } else {
      ADD_FAILURE() << "unknown server_expect " << se;
      continue;
    }
    auto dev = Deviations().find(id);
    const bool deviates = dev != Deviations().end();
    if (deviates) {
      deviating++;
      want = dev->second.without_host_rule;
    } else {
      as_llhttp++;
    }
    by_kind[want.kind]++;
    EXPECT_TRUE(Matches(want, o))
        << "case " << id << " (" << c["name"].str() << "): want " << want.kind << " n=" << want.n
        << " status=" << want.status << (deviates ? " [deviation]" : "") << ", got "
        << Describe(o) << "\n  input: " << testing::Printable(raw)
        << "\n  outcome: " << testing::Render(o);
    EXPECT_EQ(CompareMessages(c, o), "") << "case " << id;
    if (want.kind == "upgrade") {
      // The bytes after the hand-off stay for the new protocol: llhttp's log
      // says where the message completed ("off=N message complete").
      size_t off = std::string::npos;
      for (const auto& line : c["expected_log"].array) {
        const std::string& l = line.str();
        if (l.find(" message complete") != std::string::npos) off = std::stoul(l.substr(4));
      }
      ASSERT_NE(off, std::string::npos) << id;
      EXPECT_EQ(o.leftover, raw.substr(off)) << "case " << id << " leftover after upgrade";
      upgrades_checked++;
    }

    // Mode 2: Host required.
    Expect want_strict = want;
    if (deviates) {
      want_strict = dev->second.with_host_rule;
    } else if (want.kind != "reject") {
      // Heads reached: the n complete ones, plus the pending one for
      // "incomplete" and "upgrade"-less waits.
      const int reached = want.n + (want.kind == "incomplete" ? 1 : 0);
      const int k = FirstHostlessMessage(c, reached);
      if (k >= 0) {
        want_strict = {"reject", k, 400};
        hostless++;
      }
    }
    EXPECT_TRUE(Matches(want_strict, strict_o))
        << "case " << id << " with Host required: want " << want_strict.kind
        << " n=" << want_strict.n << " status=" << want_strict.status << ", got "
        << Describe(strict_o) << "\n  outcome: " << testing::Render(strict_o);
  }
  EXPECT_EQ(strict, 133);
  EXPECT_EQ(upgrades_checked, 9);
  // The totals, so that any change of outcome shows here.
  EXPECT_EQ(as_llhttp, 121);
  EXPECT_EQ(deviating, 12);
  EXPECT_EQ(hostless, 52);
  EXPECT_EQ(as_llhttp + deviating, 133);
  EXPECT_EQ(deviating, static_cast<int>(Deviations().size())) << "a deviation id is not a strict case";
  std::printf("llhttp: %d strict cases: %d as llhttp, %d deviations; expected kinds:", strict,
              as_llhttp, deviating);
  for (const auto& [k, n] : by_kind) std::printf(" %s=%d", k.c_str(), n);
  std::printf("; with Host required %d more are 400\n", hostless);
}

}  // namespace
}  // namespace tw::http

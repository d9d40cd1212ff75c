// aws/http-desync-guardian's request-smuggling cases (tests/data/http/
// desync-guardian, Apache-2.0) fed through RequestReader whole, at every
// split point and bytewise, each twice: as written, and with "Host: h"
// inserted after the request line when the case has no Host line (most cases
// lack one, and an HTTP/1.1 request without Host is 400 before any framing
// rule is looked at; the second run makes the framing rules themselves
// decide).
//   Severe (58): 400 in both runs.
//   Compliant (28): the outcome of each is listed in kCompliant with the
//   reason; the ones we reject are explained in tests/data/http/DEVIATIONS.md.
#include <gtest/gtest.h>
#include <strings.h>

#include <cstdio>
#include <map>
#include <string>

#include "http/reader_harness.h"
#include "http/test_json.h"
#include "support/chunking.h"

namespace tw::http {
namespace {

using testing::JsonValue;

std::string WithHost(const std::string& raw) {
  const size_t eol = raw.find("\r\n");
  if (eol == std::string::npos) return raw;
  for (size_t p = raw.find("\r\n"); p != std::string::npos; p = raw.find("\r\n", p + 2)) {
    if (strncasecmp(raw.c_str() + p + 2, "host:", 5) == 0) return raw;
  }
  return raw.substr(0, eol + 2) + "Host: h\r\n" + raw.substr(eol + 2);
}

// "accept" = a request came out, or the reader waits for a body it was told
// about; otherwise the error status.
std::string Verdict(const testing::ReaderOutcome& o) {
  if (o.error) return std::to_string(o.status);
  return "accept";
}

struct Verdicts {
  const char* as_is;
  const char* with_host;
};

// Our verdict on each Compliant case. Without Host every one is 400 (they are
// HTTP/1.1 requests without Host: RFC 9112 §3.2 MUST). With Host inserted:
const std::map<std::string, Verdicts>& CompliantVerdicts() {
  static const std::map<std::string, Verdicts> kMap = {
      {"more-compliant-tests#1", {"400", "accept"}},
      {"more-compliant-tests#2", {"400", "accept"}},
      {"more-compliant-tests#3", {"400", "accept"}},
      {"more-compliant-tests#4", {"400", "accept"}},
      {"more-compliant-tests#5", {"400", "accept"}},
      {"more-compliant-tests#6", {"400", "501"}},   // gzip, chunked: gzip not implemented
      {"more-compliant-tests#7", {"400", "413"}},   // Content-Length 4000000 > max_body_bytes
      {"more-compliant-tests#8", {"400", "501"}},   // deflate, identity, chunked
      {"more-compliant-tests#9", {"400", "501"}},   // five TE lines ending in chunked
      {"more-compliant-tests#10", {"400", "400"}},  // "chunked;custom_param;": parameter without "="
      {"rfc-compliant#1", {"400", "accept"}},
      {"rfc-compliant#2", {"400", "accept"}},
      {"rfc-compliant#3", {"400", "accept"}},
      {"rfc-compliant#4", {"400", "accept"}},
      {"rfc-compliant#5", {"400", "accept"}},
      {"rfc-compliant#6", {"400", "accept"}},
      {"rfc-compliant#7", {"400", "accept"}},
      {"rfc-compliant#8", {"400", "accept"}},
      {"rfc-compliant#9", {"400", "501"}},    // gzip/deflate/identity/compress, chunked
      {"rfc-compliant#10", {"400", "501"}},   // the same as one list
      {"rfc-compliant#11", {"400", "400"}},   // "gzip ;" and "chunked;custom_param;": bad grammar
      {"rfc-compliant#12", {"400", "accept"}},
      {"rfc-compliant#13", {"400", "400"}},   // raw UTF-8 in the target
      {"rfc-compliant#14", {"400", "400"}},   // empty target ("GET  HTTP/1.1")
      {"uri-specific-test-cases#11", {"400", "accept"}},
      {"uri-specific-test-cases#12", {"400", "accept"}},
      {"uri-specific-test-cases#13", {"400", "accept"}},
      {"uri-specific-test-cases#14", {"400", "accept"}},
  };
  return kMap;
}

TEST(DesyncGuardian, AllCases) {
  bool ok = false;
  const std::string text =
      testing::ReadFile(testing::DataPath("http/desync-guardian/cases.jsonl"), &ok);
  ASSERT_TRUE(ok);
  std::string err;
  const std::vector<JsonValue> cases = testing::ParseJsonLines(text, &err);
  ASSERT_EQ(err, "");
  ASSERT_EQ(cases.size(), 158u);

  int severe = 0;
  int compliant = 0;
  std::map<std::string, int> tally;  // "<tier> <as-is>/<with-host>" -> count
  for (const JsonValue& c : cases) {
    const std::string id = c["id"].str();
    const std::string tier = c["tier"].str();
    bool b64 = false;
    const std::string raw = testing::Base64Decode(c["raw_b64"].str(), &b64);
    ASSERT_TRUE(b64) << id;
    std::string m1;
    std::string m2;
    const testing::ReaderOutcome a = testing::RunAllChunkings(raw, ReaderLimits(), &m1);
    const testing::ReaderOutcome b = testing::RunAllChunkings(WithHost(raw), ReaderLimits(), &m2);
    EXPECT_EQ(m1, "") << id << " differs between chunkings";
    EXPECT_EQ(m2, "") << id << " (with Host) differs between chunkings";
    const std::string va = Verdict(a);
    const std::string vb = Verdict(b);
    tally[tier + " " + va + "/" + vb]++;
    if (tier == "Severe") {
      severe++;
      EXPECT_EQ(va, "400") << id << ": " << testing::Printable(raw) << "\n" << testing::Render(a);
      EXPECT_EQ(vb, "400") << id << " with Host: " << testing::Render(b);
    } else if (tier == "Compliant") {
      compliant++;
      auto it = CompliantVerdicts().find(id);
      ASSERT_NE(it, CompliantVerdicts().end()) << id;
      EXPECT_EQ(va, it->second.as_is) << id << ": " << testing::Render(a);
      EXPECT_EQ(vb, it->second.with_host) << id << " with Host: " << testing::Render(b);
    }
  }
  EXPECT_EQ(severe, 58);
  EXPECT_EQ(compliant, 28);
  // Everything we do with the four tiers, so that any change shows here.
  const std::map<std::string, int> want = {
      {"Severe 400/400", 58},
      {"Compliant 400/accept", 18},
      {"Compliant 400/501", 5},
      {"Compliant 400/413", 1},
      {"Compliant 400/400", 4},
      {"Acceptable 400/400", 11},
      {"Acceptable 400/accept", 2},
      {"Acceptable 505/505", 2},
      {"Ambiguous 400/400", 45},
      {"Ambiguous 400/accept", 10},
      {"Ambiguous 505/505", 2},
  };
  EXPECT_EQ(tally, want);
  for (const auto& [k, n] : tally) std::printf("desync-guardian %s: %d\n", k.c_str(), n);
}

}  // namespace
}  // namespace tw::http

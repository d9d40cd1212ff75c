// The SSE writer: exact bytes for DESIGN.md §5's records, and a round trip
// through the parser (at every split point) that must give back the same
// events, ids, retry and comments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "sse/parser.h"
#include "sse/sse_test_util.h"
#include "sse/writer.h"
#include "support/chunking.h"

namespace tw::sse {
namespace {

using testing::Outcome;
using testing::Render;
using testing::RenderPieces;
using testing::RunParser;

TEST(SseWriter, ExactBytes) {
  std::string out;
  AppendRetry(&out, 1000);
  EXPECT_EQ(out, "retry: 1000\n\n");
  out.clear();
  AppendEvent(&out, 2, "token", "{\"index\":0}");
  EXPECT_EQ(out, "id: 2\nevent: token\ndata: {\"index\":0}\n\n");
  out.clear();
  AppendEventNoId(&out, "error", "{}");
  EXPECT_EQ(out, "event: error\ndata: {}\n\n");
  out.clear();
  AppendComment(&out, "ping");
  EXPECT_EQ(out, ": ping\n\n");
  out.clear();
  AppendEvent(&out, 7, "", "x");
  EXPECT_EQ(out, "id: 7\ndata: x\n\n");
}

TEST(SseWriter, AppendsWithoutClearing) {
  std::string out = "prefix|";
  AppendEvent(&out, 1, "start", "a");
  EXPECT_EQ(out, "prefix|id: 1\nevent: start\ndata: a\n\n");
}

TEST(SseWriter, MultiLineDataSplitAtLfCrAndCrlf) {
  std::string out;
  AppendEvent(&out, 1, "t", "a\nb\r\nc\rd\n");
  EXPECT_EQ(out, "id: 1\nevent: t\ndata: a\ndata: b\ndata: c\ndata: d\ndata: \n\n");
  out.clear();
  AppendEvent(&out, 1, "t", "");
  EXPECT_EQ(out, "id: 1\nevent: t\ndata: \n\n");
  out.clear();
  AppendComment(&out, "a\nb");
  EXPECT_EQ(out, ": a\n: b\n\n");
}

TEST(SseWriter, LineBreaksInEventNameCannotBreakFraming) {
  std::string out;
  AppendEvent(&out, 1, "bad\r\nname", "x");
  EXPECT_EQ(out, "id: 1\nevent: bad  name\ndata: x\n\n");
}

struct Written {
  uint64_t id;  // 0: written with AppendEventNoId
  std::string type;
  std::string data;
};

TEST(SseWriter, RoundTripThroughParser) {
  const std::vector<Written> written = {
      {1, "start", "{\"stream\":\"s_1\"}"},
      {2, "token", "plain"},
      {3, "token", "two\nlines"},
      {4, "token", ""},
      {5, "token", "\n"},
      {6, "token", " leading space and trailing\n"},
      {7, "token", "caf\xC3\xA9 \xF0\x9F\x98\x80 : colon"},
      {0, "error", "{\"resume_from\":8}"},
      {18446744073709551615ull, "done", "last"},
  };
  std::string stream;
  AppendRetry(&stream, 250);
  AppendComment(&stream, "ping");
  std::string last_id;
  std::vector<Event> expected;
  for (const Written& w : written) {
    if (w.id == 0) {
      AppendEventNoId(&stream, w.type, w.data);
    } else {
      AppendEvent(&stream, w.id, w.type, w.data);
      last_id = std::to_string(w.id);
    }
    expected.push_back({w.type, w.data, last_id});
    AppendComment(&stream, "ping");
  }

  Outcome o = RunParser({stream});
  ASSERT_EQ(o.status, "");
  ASSERT_EQ(o.events.size(), expected.size()) << Render(o);
  for (size_t i = 0; i < expected.size(); i++) {
    EXPECT_EQ(o.events[i].type, expected[i].type) << i;
    EXPECT_EQ(o.events[i].data, expected[i].data) << i;
    EXPECT_EQ(o.events[i].id, expected[i].id) << i;
  }
  // The error event without id: keeps the last real id (7), not a new one.
  EXPECT_EQ(o.events[7].id, "7");
  EXPECT_EQ(o.last_event_id, "18446744073709551615");
  EXPECT_EQ(o.retry_ms, 250u);
  EXPECT_EQ(o.comments.size(), written.size() + 1);
  EXPECT_EQ(tw::testing::CheckSameForAllChunkings(stream, RenderPieces), "");
}

TEST(SseWriter, CrInDataArrivesAsLf) {
  std::string stream;
  AppendEvent(&stream, 1, "token", "a\r\nb\rc");
  Outcome o = RunParser({stream});
  ASSERT_EQ(o.events.size(), 1u);
  EXPECT_EQ(o.events[0].data, "a\nb\nc");
}

}  // namespace
}  // namespace tw::sse

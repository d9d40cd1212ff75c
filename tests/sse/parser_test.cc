// The SSE parser against the rules of HTML Living Standard §9.2.6, one test per
// rule. Expected results are written out by hand from the standard's text, and
// every input is also fed at every split point and one byte at a time
// (tests/support/chunking.h), which must give exactly the same outcome.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "sse/parser.h"
#include "sse/sse_test_util.h"
#include "support/chunking.h"

namespace tw::sse {
namespace {

using testing::Escape;
using testing::Outcome;
using testing::Render;
using testing::RenderPieces;
using testing::RunParser;
using namespace std::string_view_literals;

struct Expected {
  std::vector<Event> events;
  std::string last_event_id;
  std::optional<uint64_t> retry_ms;
  std::vector<std::string> comments;
};

// Checks the whole-input outcome against `want`, then that every chunking
// gives the same outcome.
void Check(std::string_view input, const Expected& want) {
  SCOPED_TRACE("input: " + Escape(input));
  Outcome got = RunParser({input});
  EXPECT_EQ(got.status, "");
  ASSERT_EQ(got.events.size(), want.events.size()) << Render(got);
  for (size_t i = 0; i < want.events.size(); i++) {
    EXPECT_EQ(Escape(got.events[i].type), Escape(want.events[i].type)) << "event " << i;
    EXPECT_EQ(Escape(got.events[i].data), Escape(want.events[i].data)) << "event " << i;
    EXPECT_EQ(Escape(got.events[i].id), Escape(want.events[i].id)) << "event " << i;
  }
  EXPECT_EQ(got.last_event_id, want.last_event_id);
  EXPECT_EQ(got.retry_ms, want.retry_ms);
  EXPECT_EQ(got.comments, want.comments);
  EXPECT_EQ(tw::testing::CheckSameForAllChunkings(input, RenderPieces), "");
}

Event Msg(std::string data, std::string id = "") { return {"message", std::move(data), std::move(id)}; }

TEST(SseParser, SingleEvent) { Check("data: hello\n\n", {{Msg("hello")}}); }

TEST(SseParser, DataLinesJoinedWithLf) {
  Check("data: a\ndata: b\ndata: c\n\n", {{Msg("a\nb\nc")}});
  Check("data:msg\ndata:msg\n\n", {{Msg("msg\nmsg")}});
}

TEST(SseParser, OnlyTheFinalLfIsRemoved) {
  Check("data: a\ndata:\n\n", {{Msg("a\n")}});
  Check("data:\ndata:\n\n", {{Msg("\n")}});
}

TEST(SseParser, EmptyDataFieldDispatchesEmptyString) {
  Check("data\n\n", {{Msg("")}});
  Check("data:\n\n", {{Msg("")}});
}

TEST(SseParser, LineEndingsLfCrCrlfAndMixed) {
  Expected two{{Msg("a\nb"), Msg("c")}};
  Check("data: a\ndata: b\n\ndata: c\n\n", two);
  Check("data: a\rdata: b\r\rdata: c\r\r", two);
  Check("data: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n", two);
  Check("data: a\rdata: b\n\r\ndata: c\r\r", two);
}

TEST(SseParser, CrAtEndOfPieceThenLfIsOneLineEnd) {
  // Explicit pieces (the split-point sweep also covers this): a CR that ends
  // one read and an LF that starts the next must not make an empty line,
  // which would dispatch "a" on its own.
  Outcome o = RunParser({"data: a\r", "\ndata: b\r", "\n\r", "\n"});
  ASSERT_EQ(o.events.size(), 1u) << Render(o);
  EXPECT_EQ(o.events[0].data, "a\nb");
}

TEST(SseParser, TwoCrsAreTwoLineEnds) {
  Check("data: a\r\rdata: b\r\r", {{Msg("a"), Msg("b")}});
  Outcome o = RunParser({"data: a\r", "\r", "data: b\r", "\r"});
  ASSERT_EQ(o.events.size(), 2u) << Render(o);
}

TEST(SseParser, LeadingBomStrippedOnce) {
  Check("\xEF\xBB\xBF" "data: x\n\n", {{Msg("x")}});
  // A second BOM is part of the first line's field name, which is then unknown.
  Check("\xEF\xBB\xBF\xEF\xBB\xBF" "data: x\n\ndata: y\n\n", {{Msg("y")}});
  // A BOM elsewhere is ordinary data.
  Check("data: \xEF\xBB\xBFz\n\n", {{Msg("\xEF\xBB\xBFz")}});
}

TEST(SseParser, BomStrippedAgainAfterReconnect) {
  std::vector<Event> events;
  Parser p([&](const Event& e) { events.push_back(e); });
  ASSERT_TRUE(p.Feed("\xEF\xBB\xBF" "id: 4\ndata: a\n\n").ok());
  p.Finish();
  ASSERT_TRUE(p.Feed("\xEF\xBB\xBF" "data: b\n\n").ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].data, "b");
  EXPECT_EQ(events[1].id, "4");  // the new stream's id buffer starts at last_event_id
}

TEST(SseParser, CommentsIgnored) {
  Check(": ping\n\ndata: x\n\n", {{Msg("x")}, "", std::nullopt, {"ping"}});
  Check("data: a\n:\n: c d\ndata: b\n\n", {{Msg("a\nb")}, "", std::nullopt, {"", "c d"}});
  Check(":data: x\n\n", {{}, "", std::nullopt, {"data: x"}});
}

TEST(SseParser, FieldNameAndValue) {
  Check("data:x\n\n", {{Msg("x")}});
  Check("data:  x\n\n", {{Msg(" x")}});          // only one space is removed
  Check("data: a:b: c\n\n", {{Msg("a:b: c")}});  // first colon splits
  Check("data :x\n\ndata: y\n\n", {{Msg("y")}}); // "data " is another field
  Check("Data: x\n\ndata: y\n\n", {{Msg("y")}}); // names are case-sensitive
  Check("data:\tx\n\n", {{Msg("\tx")}});         // only a space is removed
}

TEST(SseParser, EventType) {
  Check("event: token\ndata: x\n\ndata: y\n\n", {{{"token", "x", ""}, Msg("y")}});
  Check("event:\ndata: x\n\n", {{Msg("x")}});  // empty type means "message"
  Check("event: a\nevent: b\ndata: x\n\n", {{{"b", "x", ""}}});
  // A dispatch with no data resets the type.
  Check("event: lost\n\ndata: x\n\n", {{Msg("x")}});
}

TEST(SseParser, IdCarriedAcrossEvents) {
  Check("id: 3\ndata: a\n\ndata: b\n\nid: 4\ndata: c\n\n",
        {{Msg("a", "3"), Msg("b", "3"), Msg("c", "4")}, "4"});
  // An empty id resets it.
  Check("id: 1\ndata: a\n\nid\ndata: b\n\n", {{Msg("a", "1"), Msg("b", "")}, ""});
  Check("id: 1\ndata: a\n\nid:\ndata: b\n\n", {{Msg("a", "1"), Msg("b", "")}, ""});
}

TEST(SseParser, EmptyEventUpdatesLastEventIdWithoutDispatch) {
  Check("id: 7\n\n", {{}, "7"});
  Check("id: 7\n\ndata: x\n\n", {{Msg("x", "7")}, "7"});
}

TEST(SseParser, IdContainingNulIgnored) {
  Check("id: 1\ndata: a\n\nid: 2\0x\ndata: b\n\n"sv,
        {{Msg("a", "1"), Msg("b", "1")}, "1"});
}

TEST(SseParser, NulInDataPassesThrough) {
  Check("data: a\0b\n\n"sv, {{Msg(std::string("a\0b"sv))}});
}

TEST(SseParser, RetryOnlyWhenAllDigits) {
  Check("retry: 1500\n\n", {{}, "", 1500});
  Check("retry: 0\n", {{}, "", 0});
  Check("retry: 1000\nretry: 15x\nretry: -1\nretry: 1.5\nretry:  20\nretry:\nretry\n",
        {{}, "", 1000});
  Check("retry: 99999999999999999999999\n", {{}, "", UINT64_MAX});
  Check("retry: 18446744073709551615\n", {{}, "", UINT64_MAX});
  Check("retry: 18446744073709551614\n", {{}, "", UINT64_MAX - 1});
  // Takes effect at its line, even if the event is never finished.
  Check("retry: 42\ndata: x", {{}, "", 42});
}

TEST(SseParser, UnknownFieldsIgnored) {
  Check("foo: bar\ndata: x\nbaz\n\n", {{Msg("x")}});
}

TEST(SseParser, UnfinishedEventAtEndDiscarded) {
  Check("data: a\n\ndata: b\n", {{Msg("a")}});
  Check("data: a\n\ndata: b", {{Msg("a")}});
  Check("data: a\n\nid: 9\n", {{Msg("a")}, ""});  // no empty line: id never committed
}

TEST(SseParser, Utf8PassesThroughAcrossPieces) {
  Check("data: \xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\n\n", {{Msg("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80")}});
}

// Expected replacement counts follow the WHATWG "UTF-8 decode" (one U+FFFD per
// maximal subpart of an ill-formed sequence, Unicode §3.9); Python's
// bytes.decode("utf-8", "replace") gives the same strings for these inputs.
TEST(SseParser, InvalidUtf8BecomesReplacementCharacters) {
  const std::string r = "\xEF\xBF\xBD";  // U+FFFD
  Check("data: \xFF\n\n", {{Msg(r)}});
  Check("data: \xC0\xAF\n\n", {{Msg(r + r)}});                // overlong lead
  Check("data: \xED\xA0\x80\n\n", {{Msg(r + r + r)}});        // surrogate
  Check("data: \xF4\x90\x80\x80\n\n", {{Msg(r + r + r + r)}}); // > U+10FFFF
  Check("data: \xE2\x82" "A\n\n", {{Msg(r + "A")}});           // truncated, then ASCII
  Check("data: \xF0\x9F\x98\n\n", {{Msg(r)}});                 // truncated before LF
  Check("data: \x80\x80\n\n", {{Msg(r + r)}});                 // lone continuations
  Check("data: \xE0\x80\xAF\n\n", {{Msg(r + r + r)}});         // overlong 3-byte
}

TEST(SseParser, InvalidBomPrefixIsNotStripped) {
  const std::string r = "\xEF\xBF\xBD";
  // EF BB then 'd': U+FFFD then "data..." — the line's name is "\uFFFDdata".
  Check("\xEF\xBB" "data: x\n\ndata: y\n\n", {{Msg("y")}});
}

TEST(SseParser, LineBoundIsAnError) {
  ParserLimits limits;
  limits.max_line_bytes = 16;
  std::string input = "data: 0123456789\n\ndata: 0123456789A\n\n";
  Outcome o = RunParser({input}, limits);
  ASSERT_EQ(o.events.size(), 1u);
  EXPECT_NE(o.status.find("line over its bound (16 bytes) at byte offset 34"), std::string::npos)
      << o.status;
  auto feed = [&](const std::vector<std::string_view>& pieces) {
    return Render(RunParser(pieces, limits));
  };
  EXPECT_EQ(tw::testing::CheckSameForAllChunkings(input, feed), "");
  // Multi-byte characters count by their UTF-8 bytes.
  std::string wide = "data: \xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\xE2\x82\xAC\n\n";  // 18 bytes
  EXPECT_NE(RunParser({wide}, limits).status, "");
  EXPECT_EQ(tw::testing::CheckSameForAllChunkings(wide, feed), "");
}

TEST(SseParser, DataBoundIsAnErrorAndFinishClearsIt) {
  ParserLimits limits;
  limits.max_data_bytes = 8;
  std::vector<Event> events;
  Parser p([&](const Event& e) { events.push_back(e); }, limits);
  ASSERT_TRUE(p.Feed("data: 123\ndata: 456\n\n").ok());  // 8 bytes with the LFs
  Status s = p.Feed("data: 123\ndata: 4567\n\n");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("data buffer over its bound (8 bytes)"), std::string::npos) << s.message();
  EXPECT_FALSE(p.Feed("data: ok\n\n").ok());  // stays failed
  p.Finish();
  ASSERT_TRUE(p.Feed("data: ok\n\n").ok());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "123\n456");
  EXPECT_EQ(events[1].data, "ok");
}

TEST(SseParser, ServerStreamFromDesign) {
  // DESIGN.md §5's example stream, with a heartbeat and a subscriber-level error.
  std::string input =
      "retry: 1000\n\n"
      "id: 1\nevent: start\ndata: {\"stream\":\"s_1\",\"model\":\"gpt2\",\"prompt_tokens\":5}\n\n"
      ": ping\n\n"
      "id: 2\nevent: token\ndata: {\"index\":0,\"token\":6342,\"text\":\" Paris\"}\n\n"
      "event: error\ndata: {\"error\":{\"type\":\"slow_client\"},\"resume_from\":3}\n\n";
  Check(input,
        {{{"start", "{\"stream\":\"s_1\",\"model\":\"gpt2\",\"prompt_tokens\":5}", "1"},
          {"token", "{\"index\":0,\"token\":6342,\"text\":\" Paris\"}", "2"},
          {"error", "{\"error\":{\"type\":\"slow_client\"},\"resume_from\":3}", "2"}},
         "2",
         1000,
         {"ping"}});
}

TEST(SseParser, BytesConsumedCountsEverything) {
  Parser p(nullptr);
  ASSERT_TRUE(p.Feed("data: a\n").ok());
  ASSERT_TRUE(p.Feed("\xE2\x82").ok());
  EXPECT_EQ(p.bytes_consumed(), 10u);
}

}  // namespace
}  // namespace tw::sse

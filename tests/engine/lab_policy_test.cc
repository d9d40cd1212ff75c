// The lab policy `naive` on the engine side: a stream marked
// waits_for_readers() gates the whole step loop until its readers have taken
// its last event (the test plays the hub: it publishes SetDeliveredThrough).
// Also: --policy naive|unbounded are refused without --lab.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "app/app_fixture.h"
#include "app/config.h"
#include "engine/engine_test_util.h"
#include "stream/hub.h"

namespace tw::testing {
namespace {

using engine::EngineOptions;

backend::GenerationRequest Greedy(int seed, int new_tokens) {
  backend::GenerationRequest r;
  for (int k = 0; k < 5; k++) r.prompt_tokens.push_back(static_cast<int32_t>((seed * 7919 + k * 104729) % 50000));
  r.max_new_tokens = new_tokens;
  return r;
}

std::shared_ptr<stream::Stream> GatedStream(const std::string& id) { return NewGatedStream(id); }

// A reader that keeps up: publishes "everything taken" until stopped.
class KeepUpReader {
 public:
  explicit KeepUpReader(std::shared_ptr<stream::Stream> s)
      : s_(std::move(s)), t_([this] {
          while (!stop_.load()) {
            s_->SetDeliveredThrough(s_->head_seq());
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        }) {}
  ~KeepUpReader() {
    stop_ = true;
    t_.join();
  }

 private:
  std::shared_ptr<stream::Stream> s_;
  std::atomic<bool> stop_{false};
  std::thread t_;
};

std::vector<int32_t> SoloTokens(const backend::GenerationRequest& r) {
  auto e = MakeEngine(EngineOptions());
  auto s = NewStream("solo");
  EXPECT_TRUE(e->Submit(s, r, nullptr));
  return WaitAndRead(*s).tokens;
}

TEST(LabNaive, OneStalledReaderStallsAHealthyStreamUntilItReads) {
  const backend::GenerationRequest ra = Greedy(1, 24), rb = Greedy(2, 24);
  const std::vector<int32_t> want_a = SoloTokens(ra), want_b = SoloTokens(rb);
  ASSERT_EQ(want_b.size(), 24u);

  auto e = MakeEngine(EngineOptions());
  auto slow = GatedStream("slow");
  auto healthy = GatedStream("healthy");
  KeepUpReader healthy_reader(healthy);
  ASSERT_TRUE(e->Submit(slow, ra, nullptr));
  ASSERT_TRUE(e->Submit(healthy, rb, nullptr));
  // The slow stream's reader has taken nothing: after its first step the
  // engine waits, and the healthy stream gets at most the tokens of the step
  // that ran before the gate closed.
  // Counted, not slept: the healthy reader's progress wakes the engine every
  // ~100 us, and each wake finds the gate closed (reader_waits); after 200
  // such chances to step, it still has not.
  ASSERT_TRUE(WaitFor([&] { return e->stats().reader_waits >= 200; }));
  EXPECT_LE(TokenCount(*healthy), 2u);
  EXPECT_LE(TokenCount(*slow), 2u);
  EXPECT_FALSE(healthy->finished());
  EXPECT_EQ(e->stats().kv_blocks_free < e->stats().kv_blocks_total, true);

  // The slow reader reads: both run to the end, with the tokens they have alone.
  KeepUpReader slow_reader(slow);
  EXPECT_EQ(WaitAndRead(*healthy).tokens, want_b);
  EXPECT_EQ(WaitAndRead(*slow).tokens, want_a);
  engine::EngineStats st = WaitQuiet(*e);
  EXPECT_EQ(st.double_releases, 0u);
  EXPECT_EQ(st.releases, st.admitted);
}

TEST(LabNaive, ReadersThatKeepUpDoNotSlowAnything) {
  const backend::GenerationRequest r = Greedy(3, 30);
  auto e = MakeEngine(EngineOptions());
  auto s = GatedStream("kept-up");
  KeepUpReader reader(s);
  ASSERT_TRUE(e->Submit(s, r, nullptr));
  Outcome o = WaitAndRead(*s);
  EXPECT_EQ(o.tokens, SoloTokens(r));
  EXPECT_EQ(o.finish_reason, "length");
}

TEST(LabNaive, CancelOfTheStalledStreamReleasesTheOthersAndShutdownEndsAWait) {
  auto e = MakeEngine(EngineOptions());
  auto slow = GatedStream("slow");
  auto healthy = GatedStream("healthy");
  KeepUpReader healthy_reader(healthy);
  ASSERT_TRUE(e->Submit(slow, Greedy(4, 40), nullptr));
  ASSERT_TRUE(e->Submit(healthy, Greedy(5, 20), nullptr));
  ASSERT_TRUE(WaitFor([&] { return e->stats().reader_waits > 0; }));
  // Cancel reaches the engine while its loop waits for the slow reader.
  e->Cancel(slow->id());
  Outcome so = WaitAndRead(*slow);
  EXPECT_EQ(so.finish_reason, "cancelled");
  Outcome ho = WaitAndRead(*healthy);
  EXPECT_EQ(ho.finish_reason, "length");
  EXPECT_EQ(ho.tokens.size(), 20u);
  WaitQuiet(*e);

  // A new stalled stream, then shutdown: the wait ends and the stream is
  // finished once, cancelled.
  auto stuck = GatedStream("stuck");
  ASSERT_TRUE(e->Submit(stuck, Greedy(6, 40), nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*stuck) >= 1; }));
  e->Shutdown();
  Outcome st = Read(*stuck);
  EXPECT_EQ(st.finish_reason, "cancelled");
  EXPECT_EQ(st.terminal_events, 1);
  EXPECT_EQ(e->stats().double_releases, 0u);
}

// Without the gate (any production policy), a stream whose reader never
// reads does not hold the others back.
TEST(LabNaive, UngatedStreamsDoNotWaitForReaders) {
  auto e = MakeEngine(EngineOptions());
  auto unread = NewStream("unread");
  auto other = NewStream("other");
  ASSERT_TRUE(e->Submit(unread, Greedy(7, 20), nullptr));
  ASSERT_TRUE(e->Submit(other, Greedy(8, 20), nullptr));
  EXPECT_EQ(WaitAndRead(*other).tokens.size(), 20u);
  EXPECT_EQ(WaitAndRead(*unread).tokens.size(), 20u);
  EXPECT_EQ(e->stats().reader_waits, 0u);
}

Status ParseFlags(std::vector<std::string> args, app::Config* cfg) {
  args.insert(args.begin(), {"tokenwire", "serve"});
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return app::ParseServeFlags(static_cast<int>(argv.size()), argv.data(), 2, cfg);
}

TEST(LabPolicyFlags, NeedLabAndAreNamedInTheError) {
  for (const char* p : {"naive", "unbounded"}) {
    app::Config cfg;
    Status s = ParseFlags({"--policy", p}, &cfg);
    ASSERT_FALSE(s.ok()) << p;
    EXPECT_NE(s.message().find("--lab"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(p), std::string::npos) << s.message();
    app::Config before, after;
    ASSERT_TRUE(ParseFlags({"--lab", "--policy", p}, &before).ok()) << p;
    ASSERT_TRUE(ParseFlags({std::string("--policy=") + p, "--lab"}, &after).ok()) << p;
    EXPECT_EQ(before.policy, p);
    EXPECT_EQ(after.policy, p);
    stream::Policy parsed;
    EXPECT_FALSE(stream::ParsePolicy(p, &parsed));  // per request: never
    ASSERT_TRUE(stream::ParsePolicy(p, &parsed, /*allow_lab=*/true));
    EXPECT_TRUE(stream::IsLabPolicy(parsed));
    EXPECT_STREQ(stream::PolicyName(parsed), p);
  }
  app::Config cfg;
  EXPECT_FALSE(ParseFlags({"--lab", "--policy", "fastest"}, &cfg).ok());
  cfg = app::Config();
  Status pad = ParseFlags({"--lab-pad-bytes", "100"}, &cfg);
  ASSERT_FALSE(pad.ok());
  EXPECT_NE(pad.message().find("--lab"), std::string::npos) << pad.message();
  cfg = app::Config();
  ASSERT_TRUE(ParseFlags({"--lab-pad-bytes", "100", "--lab"}, &cfg).ok());
  EXPECT_EQ(cfg.lab_pad_bytes, 100);
  cfg = app::Config();
  EXPECT_FALSE(ParseFlags({"--lab", "--lab-pad-bytes", "70000"}, &cfg).ok());
  cfg = app::Config();
  ASSERT_TRUE(ParseFlags({"--policy", "pause_producer"}, &cfg).ok());
  stream::Policy parsed;
  ASSERT_TRUE(stream::ParsePolicy("pause_producer", &parsed));
  EXPECT_FALSE(stream::IsLabPolicy(parsed));
}

// ---- through the HTTP server (App, --backend cpu, the tiny golden GPT-2) ----

// Server flags for a stalled reader to show within a short stream: padded
// events, small socket and output buffers. The lag bound (40) and the resume
// window (64) leave a healthy reader room for a burst: when the test machine
// starves the server's I/O thread for a few milliseconds the tiny model runs
// ahead, and the backlog then goes out at once through the small buffers
// (with a bound of 16 such a reader was detached about once in eight runs of
// two copies of this test side by side). The stalled reader takes ~6 events
// of a 100- or 120-token stream, so it crosses the bound all the same.
std::vector<std::string> LabServer(const char* policy) {
  return {"--backend", "cpu", "--model", DataPath("golden/tiny-gpt2"), "--threads", "1", "--policy", policy,
          "--lab-pad-bytes", "1024", "--max-output-bytes", "4096", "--socket-send-buffer-bytes", "1024",
          "--linger-ms", "10000", "--retain-ms", "60000", "--resume-window", "64", "--subscriber-lag", "40"};
}

// A client that reads the start event and then nothing (SO_RCVBUF 1 KiB).
std::unique_ptr<client::SseClient> StalledClient(uint16_t port, std::string* stream_id, int tokens = 100) {
  client::SseOptions o;
  o.http.rcvbuf_bytes = 1024;
  o.max_events = 1;
  auto c = std::make_unique<client::SseClient>(o);
  EXPECT_TRUE(c->Connect(port).ok());
  EXPECT_TRUE(c->Post("/v1/stream", R"({"prompt":"I stall","max_new_tokens":)" + std::to_string(tokens) + "}").ok());
  Status read = c->ReadEvents();
  EXPECT_TRUE(read.ok()) << read.message() << " (HTTP " << c->result().head.status << ": "
                         << c->result().error_body << ")";
  const std::string* id = c->result().head.Find("X-Stream-Id");
  EXPECT_NE(id, nullptr);
  if (id) *stream_id = *id;
  return c;
}

struct HealthyRead {
  std::atomic<int> tokens{0};
  std::atomic<bool> done{false};
  std::string finish_reason;  // written before done
};

std::thread HealthyClient(uint16_t port, HealthyRead* out, int tokens = 100) {
  return std::thread([port, out, tokens] {
    client::SseOptions o;
    o.http.io_timeout_ms = 30000;
    client::SseClient c(o);
    EXPECT_TRUE(c.Connect(port).ok());
    EXPECT_TRUE(c.Post("/v1/stream", R"({"prompt":"I read","max_new_tokens":)" + std::to_string(tokens) + "}").ok());
    Status s = c.ReadEvents([&](const sse::Event& ev) {
      if (ev.type == "token") out->tokens++;
      if (ev.type == "done") out->finish_reason = ParseEvent(ev.data).Find("finish_reason")->as_string();
      return true;
    });
    EXPECT_TRUE(s.ok()) << s.message();
    out->done = true;
  });
}

TEST(LabHttp, NaiveStalledClientStallsAHealthyOneUntilItLeaves) {
  AppServer srv(LabServer("naive"));
  std::string slow_id;
  auto slow = StalledClient(srv.port(), &slow_id);
  HealthyRead healthy;
  std::thread t = HealthyClient(srv.port(), &healthy);
  // Counted, not slept: the engine has stopped at the naive gate (its
  // reader_waits counts each time it found the gate closed) while the
  // healthy stream was unfinished, and stays stopped: its wake-ups keep
  // finding the gate closed. (A sleep would pass trivially on a host too
  // slow to make the 100 tokens in that time.)
  auto reader_waits = [&] {
    return srv.Stats().Find("engine")->Find("reader_waits")->as_int();
  };
  ASSERT_TRUE(WaitUntil([&] { return reader_waits() >= 1; }, 10000));
  EXPECT_FALSE(healthy.done.load());
  EXPECT_LT(healthy.tokens.load(), 100);
  json::Value st = srv.CallJson("GET", "/v1/streams/" + slow_id);
  EXPECT_EQ(st.Find("policy")->as_string(), "naive");
  EXPECT_EQ(st.Find("state")->as_string(), "running");
  slow->http().Close();  // the stalled reader leaves: the gate opens
  t.join();
  EXPECT_TRUE(healthy.done.load());
  EXPECT_EQ(healthy.tokens.load(), 100);
  EXPECT_EQ(healthy.finish_reason, "length");
}

// unbounded keeps what the stalled client has not taken and detaches
// nobody; drop_slow (same server otherwise) detaches it and holds only the
// resume window. Both let the healthy stream run to the end meanwhile.
TEST(LabHttp, UnboundedHoldsTheStalledClientsEventsWhereDropSlowDetaches) {
  for (const char* policy : {"unbounded", "drop_slow"}) {
    SCOPED_TRACE(policy);
    const bool unbounded = std::string(policy) == "unbounded";
    AppServer srv(LabServer(policy));
    std::string slow_id;
    auto slow = StalledClient(srv.port(), &slow_id, 120);
    HealthyRead healthy;
    std::thread t = HealthyClient(srv.port(), &healthy, 120);
    t.join();
    EXPECT_EQ(healthy.tokens.load(), 120);
    json::Value st;
    ASSERT_TRUE(WaitFor([&] {
      st = srv.CallJson("GET", "/v1/streams/" + slow_id);
      return st.Find("state")->as_string() == "finished";
    }));
    const int64_t held = st.Find("last_event_id")->as_int() - st.Find("oldest_available")->as_int() + 1;
    EXPECT_EQ(st.Find("policy")->as_string(), policy);
    if (unbounded) {
      EXPECT_EQ(st.Find("subscribers")->as_int(), 1);
      EXPECT_GT(held, 64) << "the events the stalled client has not taken, beyond the window";
      EXPECT_GT(st.Find("bytes_held")->as_int(), 64 * 1024);
    } else {
      EXPECT_EQ(st.Find("subscribers")->as_int(), 0);
      EXPECT_EQ(held, 64) << "the resume window";
    }
    std::string metrics = srv.Call("GET", "/metrics").body;
    EXPECT_NE(metrics.find(std::string("\ntokenwire_slow_client_detaches_total ") + (unbounded ? "0" : "1") + "\n"),
              std::string::npos);
    slow->http().Close();
  }
}

// The unbounded policy's safety cap, set by its flag: past 60 held events the
// oldest go, and the stalled client whose cursor they held is detached.
TEST(LabHttp, UnboundedStopsAtItsEventCap) {
  std::vector<std::string> flags = LabServer("unbounded");
  flags.insert(flags.end(), {"--lab-unbounded-max-events", "60"});
  AppServer srv(flags);
  std::string slow_id;
  auto slow = StalledClient(srv.port(), &slow_id);
  HealthyRead healthy;
  std::thread t = HealthyClient(srv.port(), &healthy);
  t.join();
  EXPECT_EQ(healthy.tokens.load(), 100);
  json::Value st;
  ASSERT_TRUE(WaitFor([&] {
    st = srv.CallJson("GET", "/v1/streams/" + slow_id);
    return st.Find("state")->as_string() == "finished";
  }));
  const int64_t held = st.Find("last_event_id")->as_int() - st.Find("oldest_available")->as_int() + 1;
  EXPECT_LE(held, 60);
  EXPECT_EQ(st.Find("subscribers")->as_int(), 0);
  std::string metrics = srv.Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("\ntokenwire_slow_client_detaches_total 1\n"), std::string::npos);
  slow->http().Close();
}

// Not a lab flag, but tested here beside the other serve flags of the cpu
// backend: --prefill-batch-tokens, removed when a step became one pass over
// its decodes and prompt chunks, is refused naming what replaced it.
TEST(EngineFlags, TheRemovedPrefillBatchTokensIsRefusedNamingItsReplacement) {
  for (const char* v : {"16", "64"}) {
    app::Config cfg;
    Status s = ParseFlags({"--prefill-batch-tokens", v}, &cfg);
    ASSERT_FALSE(s.ok()) << v;
    EXPECT_NE(s.message().find("--prefill-batch-tokens was removed"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--max-num-batched-tokens"), std::string::npos) << s.message();
  }
  app::Config cfg;
  Status s = ParseFlags({"--prefill-batch-tokens=16"}, &cfg);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("was removed"), std::string::npos) << s.message();
}

TEST(LabPolicyFlags, NaiveNeedsTheCpuEngine) {
  app::Config cfg;
  Status s = ParseFlags({"--lab", "--policy", "naive", "--backend", "mock"}, &cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--backend cpu"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tw::testing

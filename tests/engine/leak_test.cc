// The engine behind the real HTTP server (App, --backend cpu, the tiny golden
// GPT-2): 300 streams from up to 48 concurrent clients on --max-batch 8.
// About a third read to the end, half disconnect after 0-40 tokens (FIN or
// RST), the rest read slowly and then disconnect. Afterwards every KV block
// is free, no stream, waiting or running sequence is left, each sequence
// released its blocks exactly once, and every stream read to the end equals
// the non-streamed /v1/generate answer for the same request.
//
// The leavers ask for 100 tokens and the server cancels a stream as soon as
// its last subscriber leaves (--linger-ms 0), so when a leaver's disconnect
// is seen its generation has 60 or more steps left. Leavers used to ask for
// 16-48 tokens under a 30 ms linger: on a fast machine (a step of the tiny
// model takes well under a millisecond) every abandoned stream finished
// before its linger expired, and "some were cancelled" failed.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "app/app_fixture.h"
#include "support/chunking.h"

namespace tw::testing {
namespace {

// Kinds (i % 6): 0,1 read to the end; 2,3,4 leave after 0-40 tokens; 5 reads
// slowly, then leaves.
std::string Body(int i) {
  const int max_new_tokens = i % 6 < 2 ? 16 + i % 33 : 100;
  std::string b = R"({"prompt":"Stream number )" + std::to_string(i) + R"( says","max_new_tokens":)" +
                  std::to_string(max_new_tokens);
  if (i % 2 == 1) b += R"(,"temperature":0.8,"top_k":40,"seed":)" + std::to_string(i);
  return b + "}";
}

// The sum of every /metrics sample whose line starts with `name`.
double MetricSum(const std::string& text, const std::string& name) {
  double sum = 0;
  for (size_t at = text.find("\n" + name); at != std::string::npos; at = text.find("\n" + name, at + 1)) {
    size_t sp = text.find(' ', at + 1);
    sum += std::atof(text.c_str() + sp + 1);
  }
  return sum;
}

struct FullRead {
  int i;
  std::vector<int64_t> tokens;
  std::string text;
  std::string finish_reason;
};

TEST(EngineLeak, ThreeHundredStreamsThroughHttp) {
  AppServer srv({"--backend", "cpu", "--model", DataPath("golden/tiny-gpt2"), "--max-batch", "8",
                 "--threads", "1", "--linger-ms", "0", "--max-waiting", "64"});
  constexpr int kStreams = 300, kClients = 48;
  std::atomic<int> next{0};
  std::atomic<int> errors{0};
  std::mutex mu;
  std::vector<FullRead> full;  // guarded by mu
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; t++) {
    clients.emplace_back([&, t] {
      std::mt19937 rng(7000 + t);
      for (int i = next++; i < kStreams; i = next++) {
        const int kind = i % 6;  // see Body
        client::SseOptions o;
        o.close_with_reset = (rng() % 2) == 0;
        // A stream waits in the queue behind up to --max-waiting others
        // before its first token: seconds under ThreadSanitizer on a busy
        // machine. A hang still fails here, after two minutes of silence.
        o.http.io_timeout_ms = 120000;
        int leave_after = 0;
        if (kind >= 2 && kind <= 4) leave_after = static_cast<int>(rng() % 41);
        if (kind == 5) leave_after = 5 + static_cast<int>(rng() % 20);
        if (kind >= 2 && kind <= 4 && leave_after == 0) o.max_events = 1;  // only the start event
        std::unique_ptr<client::SseClient> cp;
        for (int attempt = 0;; attempt++) {
          cp = std::make_unique<client::SseClient>(o);
          Status cs = cp->Connect(srv.port());
          if (cs.ok()) cs = cp->Post("/v1/stream", Body(i));
          if (!cs.ok()) {
            ADD_FAILURE() << "stream " << i << ": " << cs.message();
            break;
          }
          if (cp->is_event_stream() || cp->result().head.status != 503 || attempt > 200) break;
          cp->http().Close();
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // overloaded: retry
        }
        client::SseClient& c = *cp;
        if (!c.is_event_stream()) {
          ADD_FAILURE() << "stream " << i << ": status " << c.result().head.status << " "
                        << c.result().error_body;
          errors++;
          continue;
        }
        FullRead fr{i, {}, {}, {}};
        int tokens_seen = 0;
        Status st = c.ReadEvents([&](const sse::Event& ev) {
          if (ev.type == "token") {
            json::Value d = ParseJson(ev.data);
            fr.tokens.push_back(d.Find("token")->as_int());
            fr.text += d.Find("text")->as_string();
            tokens_seen++;
            if (kind == 5) std::this_thread::sleep_for(std::chrono::milliseconds(3));
            if (kind >= 2 && tokens_seen >= leave_after) return false;  // the client leaves
          } else if (ev.type == "done") {
            fr.finish_reason = ParseJson(ev.data).Find("finish_reason")->as_string();
          }
          return true;
        });
        if (!st.ok()) {
          ADD_FAILURE() << "stream " << i << ": " << st.message();
          errors++;
          continue;
        }
        if (kind >= 2) {
          if (o.close_with_reset) {
            c.http().CloseWithReset();
          } else {
            c.http().Close();
          }
          continue;
        }
        EXPECT_TRUE(c.result().ended) << "stream " << i;
        std::lock_guard<std::mutex> lock(mu);
        full.push_back(std::move(fr));
      }
    });
  }
  for (auto& th : clients) th.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(full.size(), 100u);

  // Streamed == non-streamed for the same request (a sample of the full reads).
  for (size_t k = 0; k < full.size(); k += 5) {
    const FullRead& fr = full[k];
    EXPECT_EQ(fr.finish_reason, "length") << fr.i;
    int status = 0;
    json::Value g = srv.CallJson("POST", "/v1/generate", Body(fr.i), &status);
    ASSERT_EQ(status, 200);
    std::vector<int64_t> gt;
    for (const auto& t : g.Find("tokens")->items()) gt.push_back(t.as_int());
    EXPECT_EQ(gt, fr.tokens) << "stream " << fr.i;
    EXPECT_EQ(g.Find("text")->as_string(), fr.text) << "stream " << fr.i;
  }

  ASSERT_TRUE(srv.WaitIdle(30000));
  json::Value engine;
  ASSERT_TRUE(WaitUntil(
      [&] {
        engine = *srv.Stats().Find("engine");
        return engine.Find("running")->as_int() == 0 && engine.Find("waiting")->as_int() == 0 &&
               engine.Find("kv_blocks_free")->as_int() == engine.Find("kv_blocks_total")->as_int();
      },
      10000))
      << json::Serialize(engine);
  EXPECT_EQ(engine.Find("backend")->as_string(), "cpu");
  EXPECT_EQ(engine.Find("double_releases")->as_int(), 0);
  EXPECT_EQ(engine.Find("releases")->as_int(), engine.Find("admitted")->as_int());
  EXPECT_EQ(engine.Find("finished")->as_int(), engine.Find("submitted")->as_int());
  EXPECT_GE(engine.Find("submitted")->as_int(), kStreams);
  // Every stream ended once, and abandoned streams were cancelled rather
  // than run to their end (the 100 full reads ran to theirs).
  std::string metrics = srv.Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("tokenwire_engine_step_seconds_count"), std::string::npos);
  EXPECT_NE(metrics.find("tokenwire_kv_blocks_free"), std::string::npos);
  const double created = MetricSum(metrics, "tokenwire_streams_created_total ");
  const double cancelled = MetricSum(metrics, "tokenwire_streams_finished_total{outcome=\"cancelled\"}");
  EXPECT_EQ(MetricSum(metrics, "tokenwire_streams_finished_total{"), created) << metrics;
  EXPECT_GE(created, kStreams);
  EXPECT_GE(cancelled, 1) << metrics;
  EXPECT_LE(cancelled, created - 100) << metrics;
  std::printf("abandoned streams: %.0f of %d cancelled before their end\n", cancelled, kStreams - 100);
}

// /v1/generate and /v1/stream agree through the server for greedy, seeded
// and stop-string requests, and /stats shows the engine.
TEST(EngineLeak, StreamEqualsGenerate) {
  AppServer srv({"--backend", "cpu", "--model", DataPath("golden/tiny-gpt2"), "--max-batch", "4",
                 "--threads", "1"});
  for (std::string body : {std::string(R"({"prompt":"Hello world","max_new_tokens":40})"),
                           std::string(R"({"prompt":"Seeded","max_new_tokens":30,"temperature":1.0,"seed":3})"),
                           std::string(R"({"prompt_tokens":[464,3139,286,4881,318],"max_new_tokens":20})")}) {
    client::SseResult res;
    Status ps = client::PostSse(srv.port(), "/v1/stream", body, &res);
    ASSERT_TRUE(ps.ok()) << ps.message();
    std::vector<int64_t> tokens;
    std::string text;
    for (const auto& ev : res.events) {
      if (ev.type != "token") continue;
      json::Value d = ParseJson(ev.data);
      tokens.push_back(d.Find("token")->as_int());
      text += d.Find("text")->as_string();
    }
    int status = 0;
    json::Value g = srv.CallJson("POST", "/v1/generate", body, &status);
    ASSERT_EQ(status, 200) << body;
    std::vector<int64_t> gt;
    for (const auto& t : g.Find("tokens")->items()) gt.push_back(t.as_int());
    EXPECT_EQ(gt, tokens) << body;
    EXPECT_EQ(g.Find("text")->as_string(), text) << body;
  }
  json::Value st = srv.Stats();
  EXPECT_EQ(st.Find("engine")->Find("backend")->as_string(), "cpu");
  EXPECT_EQ(st.Find("engine")->Find("double_releases")->as_int(), 0);
}

// A request refused by --max-waiting (503 overloaded) never became a
// stream: tokenwire_streams_created_total does not count it, so created
// minus finished is the number of live streams, and both add up at the end.
TEST(EngineLeak, RefusedRequestsAreNotCountedAsCreatedStreams) {
  AppServer srv({"--backend", "cpu", "--model", DataPath("golden/tiny-gpt2"), "--max-batch", "1",
                 "--threads", "1", "--max-waiting", "1"});
  int created = 0, refused = 0;
  for (int i = 0; i < 4; i++) {
    client::Response r = srv.Call("POST", "/v1/streams", R"({"prompt":"x","max_new_tokens":100})");
    if (r.head.status == 201) created++;
    if (r.head.status == 503) refused++;
  }
  ASSERT_GE(refused, 1) << "nothing was refused: the test needs the waiting list full";
  ASSERT_TRUE(srv.WaitIdle(30000));
  std::string m = srv.Call("GET", "/metrics").body;
  EXPECT_EQ(MetricSum(m, "tokenwire_streams_created_total "), created) << m;
  EXPECT_EQ(MetricSum(m, "tokenwire_streams_finished_total{"), created) << m;
}

}  // namespace
}  // namespace tw::testing

// The scheduler's flags (issue 33) from the command line to the engine:
// --admission, --kv-watermark, --scheduling-policy, --priority-aging-ms and
// --max-num-batched-tokens parse into the config with their documented
// defaults, every value outside its bound is refused naming the flag, and
// the engine built from the config keeps them (a priority is served only
// under --scheduling-policy priority; a budget below --max-batch is refused
// at start-up naming both flags).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "app/backends.h"
#include "app/cli_args.h"
#include "app/config.h"
#include "stream/stream.h"
#include "tokenizer/tokenizer.h"

namespace tw::app {
namespace {

Status Parse(std::vector<std::string> flags, Config* cfg) {
  Args a(std::move(flags));
  return ParseServeFlags(a.argc(), a.argv.data(), 2, cfg);
}

TEST(SchedulerFlags, DefaultsAndValuesReachTheConfig) {
  const Config d;
  EXPECT_EQ(d.admission, "optimistic");
  EXPECT_EQ(d.kv_watermark, 0.01);
  EXPECT_EQ(d.scheduling_policy, "fcfs");
  EXPECT_EQ(d.priority_aging_ms, 1000);
  EXPECT_EQ(d.max_num_batched_tokens, 0);  // the backend's default (below)
  Config c;
  ASSERT_TRUE(Parse({"--admission", "reserve", "--kv-watermark", "0.25", "--scheduling-policy", "priority",
                     "--priority-aging-ms", "0", "--max-num-batched-tokens", "64"},
                    &c)
                  .ok());
  EXPECT_EQ(c.admission, "reserve");
  EXPECT_EQ(c.kv_watermark, 0.25);
  EXPECT_EQ(c.scheduling_policy, "priority");
  EXPECT_EQ(c.priority_aging_ms, 0);
  EXPECT_EQ(c.max_num_batched_tokens, 64);
}

TEST(SchedulerFlags, EveryBoundIsRefusedNamingTheFlag) {
  const std::vector<std::vector<std::string>> bad = {
      {"--admission", "lazy"},          {"--kv-watermark", "1"},          {"--kv-watermark", "-0.01"},
      {"--kv-watermark", "0.5x"},       {"--kv-watermark", ""},           {"--scheduling-policy", "lifo"},
      {"--priority-aging-ms", "-1"},    {"--priority-aging-ms", "3600001"}, {"--max-num-batched-tokens", "-1"},
      {"--max-num-batched-tokens", "65537"},
  };
  for (const auto& flags : bad) {
    Config c;
    Status s = Parse(flags, &c);
    EXPECT_FALSE(s.ok()) << flags[0] << " " << flags[1];
    EXPECT_NE(s.message().find(flags[0]), std::string::npos) << s.message();
  }
  Config c;
  EXPECT_TRUE(Parse({"--kv-watermark", "0"}, &c).ok());
  EXPECT_TRUE(Parse({"--kv-watermark", "0.999"}, &c).ok());
}

TEST(SchedulerFlags, TheEngineBuiltFromTheConfigKeepsThem) {
  tokenizer::Tokenizer tok;
  ASSERT_TRUE(tokenizer::Tokenizer::LoadEmbedded(&tok).ok());
  for (const char* policy : {"fcfs", "priority"}) {
    Config c;
    ASSERT_TRUE(Parse({"--backend", "cpu", "--threads", "1", "--max-batch", "4", "--max-num-batched-tokens", "40",
                       "--scheduling-policy", policy},
                      &c)
                    .ok());
    std::unique_ptr<backend::Backend> b;
    BackendInfo info;
    Status s = MakeBackend(c, &tok, nullptr, nullptr, &b, &info);
    ASSERT_TRUE(s.ok()) << s.message();
    std::vector<backend::StatField> stats;
    b->Stats(&stats);
    bool budget = false;
    for (const auto& f : stats) budget |= std::string(f.name) == "max_num_batched_tokens" && f.value == 40;
    EXPECT_TRUE(budget);
    backend::GenerationRequest r;
    r.prompt_tokens = {1, 2, 3};
    r.max_new_tokens = 2;
    r.priority = 3;
    auto st = std::make_shared<stream::Stream>("p", stream::StreamLimits{}, nullptr);
    ApiError err;
    EXPECT_EQ(b->Submit(st, r, &err), std::string(policy) == "priority") << policy << ": " << err.message;
    b->Shutdown();
  }
  // The budget the engine built from these flags reports in its stats, the
  // runner's step rows and the model's context.
  int64_t rows = 0, n_ctx = 0;
  auto budget_of = [&](std::vector<std::string> flags) {
    flags.insert(flags.begin(), {"--backend", "cpu", "--threads", "1"});
    Config d;
    EXPECT_TRUE(Parse(flags, &d).ok());
    std::unique_ptr<backend::Backend> b;
    BackendInfo info;
    EXPECT_TRUE(MakeBackend(d, &tok, nullptr, nullptr, &b, &info).ok());
    if (!b) return int64_t{-1};
    std::vector<backend::StatField> stats;
    b->Stats(&stats);
    int64_t budget = -1;
    for (const auto& f : stats) budget = std::string(f.name) == "max_num_batched_tokens" ? f.value : budget;
    rows = info.limits.max_step_tokens;
    n_ctx = info.n_ctx;
    b->Shutdown();
    return budget;
  };
  // Unset (0): the backend's default, 64 on the cpu backend, or twice
  // --max-batch if more (every decode row and as many prompt tokens).
  EXPECT_EQ(budget_of({"--max-batch", "4"}), 64);
  EXPECT_EQ(rows, 64);
  EXPECT_EQ(budget_of({"--max-batch", "48"}), 96);
  // A budget above max_batch whole contexts is cut to them: a step can
  // hold no more.
  EXPECT_EQ(budget_of({"--max-batch", "2", "--max-num-batched-tokens", "65536"}), 2 * n_ctx);
  ASSERT_GT(n_ctx, 0);
  EXPECT_LT(2 * n_ctx, 65536) << "the test needs a budget above two contexts";
  EXPECT_EQ(rows, 2 * n_ctx);
  EXPECT_EQ(DefaultStepTokens(*FindBackend("cuda"), 32), 2048);
  EXPECT_EQ(DefaultStepTokens(*FindBackend("cpu"), 32), 64);
  Config c;
  ASSERT_TRUE(Parse({"--backend", "cpu", "--threads", "1", "--max-batch", "8", "--max-num-batched-tokens", "7"}, &c)
                  .ok());
  std::unique_ptr<backend::Backend> b;
  BackendInfo info;
  Status s = MakeBackend(c, &tok, nullptr, nullptr, &b, &info);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--max-num-batched-tokens"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("--max-batch"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tw::app

// --weights f32|bf16|q8 (the cpu backend's weight format) on both commands:
// parsed into the config, a bad value refused with a message naming the
// flag and the choices, refused for a backend other than cpu, and the
// factory builds a cpu runner with the matrices packed in that format.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "app/backends.h"
#include "app/cli_args.h"
#include "app/config.h"
#include "app/generate_cli.h"
#include "engine/engine.h"
#include "model/cpu_runner.h"
#include "model/gpt2.h"
#include "support/chunking.h"

namespace tw::app {
namespace {

TEST(WeightsFlag, ServeParsesEachFormatAndDefaultsToF32) {
  Config d;
  EXPECT_EQ(d.weights, "f32");
  for (const char* f : {"f32", "bf16", "q8"}) {
    Args a({"--weights", f});
    Config cfg;
    Status s = ParseServeFlags(a.argc(), a.argv.data(), 2, &cfg);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(cfg.weights, f);
  }
  Args eq({"--weights=q8"});
  Config cfg;
  ASSERT_TRUE(ParseServeFlags(eq.argc(), eq.argv.data(), 2, &cfg).ok());
  EXPECT_EQ(cfg.weights, "q8");
}

TEST(WeightsFlag, ServeRefusesABadValueNamingTheFlagAndTheChoices) {
  for (const char* bad : {"fp16", "Q8", "", "int8"}) {
    Args a({"--weights", bad});
    Config cfg;
    Status s = ParseServeFlags(a.argc(), a.argv.data(), 2, &cfg);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.message().rfind("--weights: ", 0), 0u) << s.message();
    EXPECT_NE(s.message().find("f32, bf16 or q8"), std::string::npos) << s.message();
  }
  Args missing({"--weights"});
  Config cfg;
  EXPECT_FALSE(ParseServeFlags(missing.argc(), missing.argv.data(), 2, &cfg).ok());
}

TEST(WeightsFlag, OnlyTheCpuBackendTakesAFormatOtherThanF32) {
  for (const char* backend : {"mock", "cuda"}) {
    Args a({"--backend", backend, "--weights", "bf16"});
    Config cfg;
    Status s = ParseServeFlags(a.argc(), a.argv.data(), 2, &cfg);
    ASSERT_FALSE(s.ok()) << backend;
    EXPECT_NE(s.message().find("--weights bf16"), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("--backend cpu"), std::string::npos) << s.message();
    Args f32({"--backend", backend, "--weights", "f32"});
    EXPECT_TRUE(ParseServeFlags(f32.argc(), f32.argv.data(), 2, &cfg).ok()) << backend;
  }
}

TEST(WeightsFlag, GenerateParsesAndRefusesLikeServe) {
  Args ok({"--weights", "q8", "a prompt"});
  GenerateFlags f;
  EXPECT_EQ(f.weights, cpu::WeightFormat::kF32);
  ASSERT_TRUE(ParseGenerateFlags(ok.argc(), ok.argv.data(), 2, &f).ok());
  EXPECT_EQ(f.weights, cpu::WeightFormat::kQ8);
  Args bad({"--weights", "bf8", "a prompt"});
  GenerateFlags g;
  Status s = ParseGenerateFlags(bad.argc(), bad.argv.data(), 2, &g);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--weights"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("'bf8'"), std::string::npos) << s.message();
}

TEST(WeightsFlag, TheFactoryPacksTheCpuRunnersMatricesInTheFormat) {
  std::unique_ptr<model::Gpt2Model> g;
  Status s = model::LoadGpt2(testing::DataPath("golden/tiny-gpt2"), &g);
  ASSERT_TRUE(s.ok()) << s.message();
  std::shared_ptr<const model::Gpt2Model> m(std::move(g));
  engine::EngineOptions o;
  o.max_batch = 2;
  o.threads = 1;
  const engine::RunnerLimits limits = engine::RunnerLimitsFor(o, m->config().n_ctx);
  size_t f32_bytes = 0;
  for (const char* f : {"f32", "bf16", "q8"}) {
    std::unique_ptr<engine::ModelRunner> r;
    RunnerOptions ro;
    ro.weights = f;
    s = MakeRunner("cpu", m, limits, ro, &r);
    ASSERT_TRUE(s.ok()) << s.message();
    auto* cpu = dynamic_cast<model::CpuRunner*>(r.get());
    ASSERT_NE(cpu, nullptr);
    EXPECT_STREQ(cpu::WeightFormatName(cpu->weight_format()), f);
    if (f32_bytes == 0) f32_bytes = cpu->packed_weight_bytes();
    const double ratio = static_cast<double>(cpu->packed_weight_bytes()) / static_cast<double>(f32_bytes);
    EXPECT_NEAR(ratio, f[0] == 'f' ? 1.0 : f[0] == 'b' ? 0.5 : 1.125 / 4, 0.01) << f;
  }
  std::unique_ptr<engine::ModelRunner> r;
  RunnerOptions q4;
  q4.weights = "q4";
  s = MakeRunner("cpu", m, limits, q4, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--weights"), std::string::npos) << s.message();
  RunnerOptions q8;
  q8.weights = "q8";
  s = MakeRunner("cuda", m, limits, q8, &r);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--weights q8"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tw::app

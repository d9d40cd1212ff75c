// Generation under real-world schemas (tests/data/grammar/schemas, 50 of
// JSONSchemaBench's): the tiny random GPT-2 on the engine, every schema
// compiled by the server's compiler, 20 seeds each. Every output that ends
// (finish "eos" or "stop") parses and validates under its schema by the
// independent validator (tests/grammar/json_validator.h); one that
// max_new_tokens cuts short is a prefix the grammar's matcher took token by
// token (the engine checks each token against it).
//
// The model: random weights of the tiny shape (2 layers, 64 wide) with a
// context of 512 positions (the golden tiny model has 128), written to a
// temporary folder by the project's own random-checkpoint writer. A random
// model's distribution is nearly flat: inside a string it would pick a
// closing quote about once in a hundred tokens. So every request carries a
// logit_bias toward JSON's structural tokens (quote, brackets, comma, a
// digit, true): the mask still decides what may be drawn, the bias only
// makes documents end sooner. The claim tested is the grammar's, whatever
// the model prefers.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/engine_test_util.h"
#include "grammar/compiler.h"
#include "grammar/json_validator.h"
#include "json/json.h"
#include "model/gpt2.h"
#include "model/random_weights.h"
#include "support/grammars.h"

namespace tw::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A random GPT-2 of the tiny shape with a 512-position context, loaded.
std::shared_ptr<const model::Gpt2Model> LongContextTinyModel() {
  char dir[] = "/tmp/tw-gen-model.XXXXXX";
  EXPECT_NE(::mkdtemp(dir), nullptr);
  model::RandomGpt2Options o;
  o.config.n_layer = 2;
  o.config.n_head = 4;
  o.config.n_embd = 64;
  o.config.n_ctx = 512;
  o.seed = 5;
  EXPECT_TRUE(model::WriteRandomGpt2(dir, o).ok());
  std::unique_ptr<model::Gpt2Model> m;
  Status st = model::LoadGpt2(dir, &m);
  EXPECT_TRUE(st.ok()) << st.message();
  std::filesystem::remove_all(dir);
  return std::shared_ptr<const model::Gpt2Model>(std::move(m));
}

// 20 seeds a schema; under AddressSanitizer 4 (the model's arithmetic is
// what costs there, 15x slower, not the grammar code it checks).
#if defined(__SANITIZE_ADDRESS__)
constexpr int kSeeds = 4;
#else
constexpr int kSeeds = 20;
#endif

TEST(Generation, RealWorldSchemasGiveValidJsonOverTwentySeedsEach) {
  const TinyModel& m = TinyModel::Get();  // (its tokenizer: GPT-2's)
  const std::shared_ptr<const model::Gpt2Model> model = LongContextTinyModel();
  ASSERT_TRUE(model);
  const int vocab = model->config().vocab_size;
  grammar::CompilerOptions co;
  co.json.max_whitespace = 2;
  grammar::Compiler compiler(grammar::testing::VocabularyOf(m.tokenizer, vocab), co);
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(DataPath("grammar/schemas"))) {
    if (e.path().extension() == ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 50u);

  std::vector<std::pair<int32_t, float>> bias;
  for (const char* t : {"\"", "\",", "\"}", "}", "]", "},", "\":", ",", "1", "0", "true"}) {
    const std::vector<int32_t> ids = m.tokenizer.Encode(t);
    ASSERT_EQ(ids.size(), 1u) << t;
    bias.push_back({ids[0], 10.0f});
  }
  engine::EngineOptions o;
  o.max_batch = 32;
  o.threads = 2;
  o.max_waiting = 1000;  // all of them queued at once
  std::unique_ptr<engine::ModelRunner> runner;
  ASSERT_TRUE(app::MakeRunner("cpu", model, engine::RunnerLimitsFor(o, model->config().n_ctx), app::RunnerOptions(),
                              &runner)
                  .ok());
  std::unique_ptr<engine::Engine> e;
  ASSERT_TRUE(engine::Engine::Create(std::move(runner), &m.tokenizer, o, &e).ok());
  struct Run {
    size_t schema;
    std::shared_ptr<stream::Stream> stream;
  };
  std::vector<json::Value> schemas(files.size());
  std::vector<Run> runs;
  for (size_t i = 0; i < files.size(); i++) {
    const std::string text = Slurp(files[i]);
    ASSERT_TRUE(json::Parse(text, &schemas[i]).ok()) << files[i];
    grammar::GrammarSpec spec;
    spec.kind = grammar::GrammarKind::kJsonSchema;
    spec.source = text;
    std::shared_ptr<grammar::TokenGrammar> g;
    Status st = compiler.Compile(spec, &g);
    ASSERT_TRUE(st.ok()) << files[i] << ": " << st.message();
    for (int seed = 0; seed < kSeeds; seed++) {
      backend::GenerationRequest r;
      r.prompt_tokens = m.tokenizer.Encode("JSON:");
      r.max_new_tokens = 500;
      r.temperature = 1.0f;
      r.seed = 1000 * i + seed;
      r.has_seed = true;
      r.logit_bias = bias;
      r.grammar = g;
      runs.push_back({i, NewStream("s" + std::to_string(i) + "-" + std::to_string(seed))});
      ASSERT_TRUE(e->Submit(runs.back().stream, r, nullptr));
    }
  }
  int complete = 0, cut = 0;
  std::vector<int> complete_per_schema(files.size(), 0);
  for (const Run& run : runs) {
    const Outcome out = WaitAndRead(*run.stream);
    if (!out.error_type.empty()) {
      std::vector<stream::EventPtr> evs;
      run.stream->ReadFrom(1, 1 << 20, &evs);
      ASSERT_TRUE(false) << files[run.schema] << ": " << out.error_type << ": "
                         << (evs.back()->error ? evs.back()->error->message : std::string()) << "\n" << out.text;
    }
    if (out.finish_reason == "length") {
      cut++;
      continue;
    }
    ASSERT_TRUE(out.finish_reason == "eos" || out.finish_reason == "stop") << out.finish_reason;
    json::Value v;
    ASSERT_TRUE(json::Parse(out.text, &v).ok()) << files[run.schema] << ": " << out.text;
    std::string why;
    EXPECT_TRUE(grammar::testing::Validate(schemas[run.schema], v, &why))
        << files[run.schema] << ": " << why << "\n" << out.text;
    complete++;
    complete_per_schema[run.schema]++;
  }
  std::printf("50 schemas x %d seeds: %d complete and valid, %d cut by max_new_tokens\n", kSeeds, complete, cut);
  EXPECT_EQ(cut, 0) << "every output ends within 500 tokens";
  ExpectClean(*e);
  e->Shutdown();
}

}  // namespace
}  // namespace tw::testing

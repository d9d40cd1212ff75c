#include "app/backends.h"

#include "backend/mock_backend.h"
#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "cuda/cuda_runner.h"
#include "engine/engine.h"
#include "model/cpu_runner.h"
#include "model/serving_model.h"

namespace tw::app {

Status MakeRunner(std::string_view kind, std::shared_ptr<const model::Gpt2Model> model,
                  const engine::RunnerLimits& limits, std::unique_ptr<engine::ModelRunner>* out,
                  std::string_view cuda_matmul, std::string_view weights) {
  cpu::WeightFormat format;
  if (Status s = cpu::ParseWeightFormat(std::string(weights).c_str(), &format); !s.ok()) {
    return Status::Error("--weights: " + s.message());
  }
  if (kind == "cpu") {
    std::unique_ptr<model::CpuRunner> r;
    if (Status s = model::CpuRunner::Create(std::move(model), limits, &r, format); !s.ok()) return s;
    *out = std::move(r);
    return Status::Ok();
  }
  if (kind == "cuda") {
    if (format != cpu::WeightFormat::kF32) {
      return Status::Error("--weights " + std::string(weights) + ": the cuda runner has float32 weights only");
    }
    cuda::CudaRunnerOptions co;
    co.tf32x3 = cuda_matmul == "3xtf32";
    return cuda::MakeCudaRunner(std::move(model), limits, co, out);
  }
  return Status::Error("no runner '" + std::string(kind) + "' (cpu or cuda)");
}

Status MakeBackend(const Config& config, const tokenizer::Tokenizer* tokenizer, Metrics* metrics,
                   Logger* log, std::unique_ptr<backend::Backend>* out, BackendInfo* info) {
  info->kind = config.backend;
  if (config.backend == "mock") {
    backend::MockOptions mo;
    mo.ttft_ms = static_cast<int>(config.mock_ttft_ms);
    mo.tokens_per_s = config.mock_tokens_per_s;
    mo.step_clock = config.mock_clock == "step";
    // The mock has no attention window: any prompt + max_new_tokens the
    // request bounds allow is fine.
    mo.context_length = 1 << 30;
    if (!config.served_model_name.empty()) mo.model_name = config.served_model_name;
    auto m = std::make_unique<backend::MockBackend>(mo, tokenizer);
    info->model_name = m->model_name();
    info->model_source = "synthetic tokens";
    *out = std::move(m);
    return Status::Ok();
  }
  if (config.backend != "cpu" && config.backend != "cuda") {
    return Status::Error("--backend " + config.backend + ": unknown (cpu, cuda or mock)");
  }
  // GPT-2 on the step-driven engine: --model DIR, or random tiny weights.
  std::shared_ptr<const model::Gpt2Model> model;
  std::string name;
  if (Status s = model::LoadModelForServing(config.model_dir, &model, &name); !s.ok()) {
    return Status::Error("--model: " + s.message());
  }
  if (!config.served_model_name.empty()) name = config.served_model_name;
  const model::Gpt2Config& c = model->config();
  engine::EngineOptions eo;
  eo.model_name = name;
  eo.max_batch = static_cast<int>(config.max_batch);
  eo.prefill_batch_tokens = static_cast<int>(config.prefill_batch_tokens);
  eo.num_kv_blocks = static_cast<int>(config.kv_blocks);
  eo.prefix_cache = config.prefix_cache;
  eo.block_size_tokens = static_cast<int>(config.block_size);
  eo.max_waiting = static_cast<int>(config.max_waiting);
  eo.threads = config.threads > 0 ? config.threads : cpu::ThreadPool::HardwareThreads();
  eo.metrics = metrics;
  eo.log = log;
  const engine::RunnerLimits limits = engine::RunnerLimitsFor(eo, c.n_ctx);
  std::unique_ptr<engine::ModelRunner> runner;
  if (Status s = MakeRunner(config.backend, model, limits, &runner, config.cuda_matmul, config.weights); !s.ok()) return s;
  info->model_name = name;
  info->model_source = config.model_dir.empty() ? "random weights (tiny shape, seed 0)" : config.model_dir;
  info->n_layer = c.n_layer;
  info->n_head = c.n_head;
  info->n_embd = c.n_embd;
  info->n_ctx = c.n_ctx;
  info->vocab_size = c.vocab_size;
  info->limits = runner->limits();
  std::unique_ptr<engine::Engine> e;
  if (Status s = engine::Engine::Create(std::move(runner), tokenizer, eo, &e); !s.ok()) return s;
  *out = std::move(e);
  return Status::Ok();
}

}  // namespace tw::app

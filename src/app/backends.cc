#include "app/backends.h"

#include <algorithm>
#include <iterator>

#include "backend/mock_backend.h"
#include "cpu/kernels.h"
#include "cpu/thread_pool.h"
#include "cuda/cuda_runner.h"
#include "engine/engine.h"
#include "model/cpu_runner.h"
#include "model/serving_model.h"

namespace tw::app {

namespace {

Status MakeCpuRunner(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
                     const RunnerOptions& options, std::unique_ptr<engine::ModelRunner>* out) {
  cpu::WeightFormat format;
  if (Status s = cpu::ParseWeightFormat(options.weights.c_str(), &format); !s.ok()) {
    return Status::Error("--weights: " + s.message());
  }
  std::unique_ptr<model::CpuRunner> r;
  if (Status s = model::CpuRunner::Create(std::move(model), limits, &r, format); !s.ok()) return s;
  *out = std::move(r);
  return Status::Ok();
}

Status MakeCudaRunner(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
                      const RunnerOptions& options, std::unique_ptr<engine::ModelRunner>* out) {
  cpu::WeightFormat format;
  if (Status s = cpu::ParseWeightFormat(options.weights.c_str(), &format); !s.ok()) {
    return Status::Error("--weights: " + s.message());
  }
  if (format != cpu::WeightFormat::kF32) {
    return Status::Error("--weights " + options.weights + ": the cuda runner has float32 weights only");
  }
  if (options.cuda_matmul != "fp32" && options.cuda_matmul != "3xtf32") {
    return Status::Error("--cuda-matmul: fp32 or 3xtf32, got '" + options.cuda_matmul + "'");
  }
  cuda::CudaRunnerOptions co;
  co.tf32x3 = options.cuda_matmul == "3xtf32";
  return cuda::MakeCudaRunner(std::move(model), limits, co, out);
}

const BackendSpec kBackends[] = {
    // name    runner          weight_formats cpu_kernels lab_naive default_step_tokens
    {"cpu", MakeCpuRunner, true, true, true, 64},
    {"cuda", MakeCudaRunner, false, false, false, 2048},
    {"mock", nullptr, false, false, false, 0},
};

}  // namespace

const BackendSpec* FindBackend(std::string_view name) {
  for (const BackendSpec& b : kBackends) {
    if (name == b.name) return &b;
  }
  return nullptr;
}

int DefaultStepTokens(const BackendSpec& spec, int max_batch) {
  return std::max(spec.default_step_tokens, 2 * max_batch);
}

std::string BackendNames() {
  std::string out;
  const size_t n = std::size(kBackends);
  for (size_t i = 0; i < n; i++) {
    if (i > 0) out += i + 1 == n ? " or " : ", ";
    out += kBackends[i].name;
  }
  return out;
}

Status MakeRunner(std::string_view kind, std::shared_ptr<const model::Gpt2Model> model,
                  const engine::RunnerLimits& limits, const RunnerOptions& options,
                  std::unique_ptr<engine::ModelRunner>* out) {
  const BackendSpec* b = FindBackend(kind);
  if (b == nullptr || b->make_runner == nullptr) {
    return Status::Error("no runner '" + std::string(kind) + "' (cpu or cuda)");
  }
  return b->make_runner(std::move(model), limits, options, out);
}

Status MakeBackend(const Config& config, const tokenizer::Tokenizer* tokenizer, Metrics* metrics,
                   Logger* log, std::unique_ptr<backend::Backend>* out, BackendInfo* info) {
  const BackendSpec* spec = FindBackend(config.backend);
  if (spec == nullptr) return Status::Error("--backend " + config.backend + ": unknown (" + BackendNames() + ")");
  info->spec = spec;
  if (spec->make_runner == nullptr) {
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
  // GPT-2 on the step-driven engine: --model DIR, the default model, or
  // random tiny weights (model/serving_model.h).
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
  eo.max_num_batched_tokens = static_cast<int>(config.max_num_batched_tokens);
  if (eo.max_num_batched_tokens == 0) eo.max_num_batched_tokens = DefaultStepTokens(*spec, eo.max_batch);
  eo.num_kv_blocks = static_cast<int>(config.kv_blocks);
  eo.prefix_cache = config.prefix_cache;
  eo.admission = config.admission == "reserve" ? engine::AdmissionMode::kReserve : engine::AdmissionMode::kOptimistic;
  eo.kv_watermark = config.kv_watermark;
  eo.scheduling = config.scheduling_policy == "priority" ? engine::SchedulingPolicy::kPriority
                                                         : engine::SchedulingPolicy::kFcfs;
  eo.priority_aging_ms = config.priority_aging_ms;
  eo.block_size_tokens = static_cast<int>(config.block_size);
  eo.max_waiting = static_cast<int>(config.max_waiting);
  eo.threads = config.threads > 0 ? config.threads : cpu::ThreadPool::HardwareThreads();
  eo.metrics = metrics;
  eo.log = log;
  const engine::RunnerLimits limits = engine::RunnerLimitsFor(eo, c.n_ctx);
  std::unique_ptr<engine::ModelRunner> runner;
  RunnerOptions ro;
  ro.weights = config.weights;
  ro.cuda_matmul = config.cuda_matmul;
  if (Status s = spec->make_runner(model, limits, ro, &runner); !s.ok()) return s;
  info->model_name = name;
  info->model_source = config.model_dir.empty()                     ? "the default model (built in: make model)"
                       : config.model_dir == model::kRandomTinyModel ? "random weights (tiny shape, seed 0)"
                                                                     : config.model_dir;
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

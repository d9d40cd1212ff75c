// The CUDA runner (cuda/cuda_runner.h), built in CUDA builds only. Plain
// C++: every device operation goes through the kernels' launchers
// (kernels/*.h) and the runtime wrapper (kernels/device.h), so no CUDA
// header is included here.
//
// One forward pass over `rows` packed rows (the step buffer's tokens and
// positions), GPT-2's order of operations (model/forward.cc is the CPU's):
//
//   x = wte[token] + wpe[pos]
//   per layer:  ln = LN1(x); qkv = ln @ Wqkv + b; append K/V; att = attention;
//               x += att @ Wo + b; ln = LN2(x); fc = gelu(ln @ Wfc + b);
//               x += fc @ Wproj + b
//   ln = LN_f(x of the rows to sample); logits = ln @ wte^T; ids = sample
//
// A step (ModelRunner::Step) of decode rows only: every row samples,
// attention is DecodeAttention over each row's table; the launches of each
// bucket are captured into a graph when the runner is made, and the step
// replays its bucket's graph. Any other step is one pass: the rows of all
// its sequences (decode rows and prompt chunks alike) packed together,
// PrefillAttention, then only each sampling sequence's last row is copied
// into a compact buffer, normalised, multiplied by the LM head and sampled
// (a chunk that does not end its prompt gets no logits). A lone sequence
// longer than the step buffer is prefilled in chunks (each chunk's
// attention reads the earlier chunks' keys from the pool); the host waits
// for a chunk's copy of the step buffer before packing the next into it. A
// row whose prompt log-probabilities are asked for also runs the head over
// its rows, max_batch at a time, and computes them on the host.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_runner.h"
#include "cuda/step_plan.h"
#include "kernels/attention.h"
#include "kernels/device.h"
#include "kernels/gemm.h"
#include "kernels/gemm_layout.h"
#include "kernels/rownorm.h"
#include "kernels/sampling.h"
#include "model/sampling.h"

namespace tw::cuda {

namespace {

using kernels::GemmEpilogue;
using kernels::GemmPlan;
using kernels::PackedMatrixView;

#define TW_TRY(expr)                   \
  do {                                 \
    ::tw::Status tw_s_ = (expr);       \
    if (!tw_s_.ok()) return tw_s_;     \
  } while (0)

// Host-side assembly of the weight slab: each part at a 64-float (256-byte)
// aligned offset.
class SlabBuilder {
 public:
  size_t Reserve(size_t floats) {
    size_t at = size_;
    size_ += (floats + 63) / 64 * 64;
    return at;
  }
  size_t size() const { return size_; }

 private:
  size_t size_ = 0;
};

struct LayerParts {
  size_t ln1_w, ln1_b, attn, attn_b, attn_proj, attn_proj_b, ln2_w, ln2_b, fc, fc_b, proj, proj_b;
};

struct LayerView {
  const float* ln1_w;   // (C)
  const float* ln1_b;   // (C)
  PackedMatrixView attn;       // (C, 3C)
  const float* attn_b;  // (3C)
  PackedMatrixView attn_proj;  // (C, C)
  const float* attn_proj_b;
  const float* ln2_w;
  const float* ln2_b;
  PackedMatrixView fc;         // (C, 4C)
  const float* fc_b;    // (4C)
  PackedMatrixView proj;       // (4C, C)
  const float* proj_b;
};

class CudaRunner : public engine::ModelRunner {
 public:
  CudaRunner(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
             const CudaRunnerOptions& options)
      : model_(std::move(model)), limits_(limits), options_(options) {}
  ~CudaRunner() override;

  Status Init();

  const char* kind() const override { return "cuda"; }
  engine::ModelShape shape() const override {
    const model::Gpt2Config& c = model_->config();
    return engine::ModelShape{c.n_ctx, c.vocab_size, c.eos_token_id};
  }
  engine::RunnerLimits limits() const override { return limits_; }
  Status Step(const engine::SeqView* seqs, int count, engine::SampledToken* out) override;

  Status LastLogits(int rows, std::vector<float>* out);
  CudaRunnerStats Stats() const { return CudaRunnerStats{static_cast<int>(graphs_.size()), replays_}; }

 private:
  Status UploadWeights();
  // The layers over `rows` packed rows; prefill selects the attention kernel
  // and the row-to-table map; tables: the BlockTables of the step.
  Status Layers(int rows, bool prefill, const kernels::BlockTables& tables);
  // LN_f, the LM head and sampling for `rows` rows of `x` (compact).
  Status Head(const float* x, int rows);
  // The packed step buffer to the device: up to the edits packed, then the
  // grammar masks packed (a second copy, only when there are any).
  Status CopyStep(int edits, int masks);
  // A step of decode rows only: its bucket's graph replayed.
  Status DecodeStep(const engine::SeqView* seqs, int count, engine::SampledToken* out);
  // Any other step: one pass over every row (a lone long row in chunks).
  Status PassStep(const engine::SeqView* seqs, int count, engine::SampledToken* out);
  // A row's prompt log-probabilities for the pass just run (x_'s rows
  // [row, row + take) are seq's tokens [first, first + take)): LN_f and the
  // LM head over up to max_batch of its rows at a time, their logits to the
  // host, and model::ComputeLogprobs there (the CPU runner's code).
  Status PromptLogprobs(const engine::SeqView& seq, int first, int take, int row);
  // The whole decode forward of a bucket (what a graph holds).
  Status DecodeForward(int bucket);
  // Captures DecodeForward(bucket) into graphs_[bucket] (at start-up: a
  // capture while serving would stall the engine's step).
  Status CaptureDecode(int bucket);
  // After a step's ids are on the host (ids_host_, one per sampling row,
  // compact): out[i].id of each sampling row i, and for one that asks for
  // log-probabilities, its logits copied to the host (row_host_) and
  // model::ComputeLogprobs on them, the CPU runner's code.
  Status Collect(const engine::SeqView* seqs, int count, engine::SampledToken* out);
  void* At(size_t offset) const { return static_cast<char*>(step_dev_) + offset; }

  const std::shared_ptr<const model::Gpt2Model> model_;
  const engine::RunnerLimits limits_;
  const CudaRunnerOptions options_;
  int C_ = 0, H_ = 0, hd_ = 0, V_ = 0, L_ = 0, n_ctx_ = 0;
  float eps_ = 1e-5f;
  int rows_ = 0;  // activation rows: max(max_batch, max_step_tokens)

  void* stream_ = nullptr;
  kernels::DeviceBuffer weights_, pool_, acts_, logits_, gemm_ws_, attn_ws_buf_, step_buf_, ids_;
  void* step_host_ = nullptr;   // pinned, layout_.bytes
  int32_t* ids_host_ = nullptr; // pinned, max_batch ids
  void* step_dev_ = nullptr;
  size_t gemm_ws_bytes_ = 0;

  std::vector<LayerView> layers_;
  const float* wte_ = nullptr;  // (V, C) for the embedding
  const float* wpe_ = nullptr;  // (n_ctx, C)
  const float* lnf_w_ = nullptr;
  const float* lnf_b_ = nullptr;
  PackedMatrixView lm_head_;    // (C, V) = wte^T
  GemmPlan plan_attn_, plan_attn_proj_, plan_fc_, plan_proj_, plan_lm_;

  float* x_ = nullptr;      // (rows_, C) residual stream
  float* ln_ = nullptr;     // (rows_, C)
  float* qkv_ = nullptr;    // (rows_, 3C)
  float* att_ = nullptr;    // (rows_, C)
  float* fc_ = nullptr;     // (rows_, 4C)
  float* xlast_ = nullptr;  // (max_batch, C) a pass: each sampling sequence's last row
  float* logits_ptr_ = nullptr;  // (max_batch, V)
  int32_t* ids_dev_ = nullptr;   // (max_batch)
  std::vector<float> row_host_;  // (max_batch, V) rows' logits, for rows that ask for logprobs
  // PassStep's per-sequence slices (max_batch each): first token, tokens
  // taken, last row of each sequence in the pass.
  std::vector<int> pass_first_, pass_take_, pass_last_;

  kernels::KvShape kv_;
  kernels::AttentionPlan attn_plan_;
  kernels::AttentionWorkspace attn_ws_;
  StepLayout layout_;
  ModelBounds bounds_;
  std::vector<int> buckets_;
  std::map<int, void*> graphs_;  // bucket -> executable graph (all captured in Init)
  long long replays_ = 0;        // graph launches
  int last_rows_ = 0;            // rows the last step sampled
};

CudaRunner::~CudaRunner() {
  for (auto& [bucket, g] : graphs_) kernels::GraphDestroy(g);
  if (step_host_ != nullptr) kernels::FreeHost(step_host_);
  if (ids_host_ != nullptr) kernels::FreeHost(ids_host_);
  if (stream_ != nullptr) kernels::StreamDestroy(stream_);
}

Status CudaRunner::Init() {
  std::string why;
  if (kernels::DeviceCount(&why) == 0) return Status::Error("--backend cuda: no usable GPU: " + why);
  const model::Gpt2Config& c = model_->config();
  C_ = c.n_embd;
  H_ = c.n_head;
  hd_ = C_ / H_;
  V_ = c.vocab_size;
  L_ = c.n_layer;
  n_ctx_ = c.n_ctx;
  eps_ = c.layer_norm_epsilon;
  if (C_ % 4 != 0 || C_ > kernels::kRowMaxC) {
    return Status::Error("--backend cuda: n_embd " + std::to_string(C_) + " must be a multiple of 4 up to " +
                         std::to_string(kernels::kRowMaxC));
  }
  if (V_ > kernels::kSampleMaxVocab) {
    return Status::Error("--backend cuda: vocab_size " + std::to_string(V_) + " over the sampler's " +
                         std::to_string(kernels::kSampleMaxVocab));
  }
  rows_ = std::max(limits_.max_batch, limits_.max_step_tokens);
  TW_TRY(kernels::StreamCreate(&stream_));
  TW_TRY(kernels::GemmInit());

  // KV pool: the engine's blocks and the padding rows' scratch blocks.
  const int pad_blocks = PadBlocks(limits_.max_batch, n_ctx_, limits_.block_size_tokens);
  kv_.n_layer = L_;
  kv_.n_head = H_;
  kv_.head_dim = hd_;
  kv_.block_size = limits_.block_size_tokens;
  kv_.num_blocks = limits_.num_kv_blocks + pad_blocks;
  TW_TRY(kernels::CheckKvShape(kv_));
  const size_t pool_bytes = static_cast<size_t>(kv_.TotalFloats()) * sizeof(float);
  TW_TRY(pool_.Allocate(pool_bytes));
  TW_TRY(kernels::Memset(pool_.get(), 0, pool_bytes, stream_));
  bounds_ = ModelBounds{n_ctx_, V_, limits_.block_size_tokens, limits_.num_kv_blocks, pad_blocks};

  TW_TRY(UploadWeights());

  // Activations.
  const size_t R = static_cast<size_t>(rows_), B = static_cast<size_t>(limits_.max_batch);
  const size_t act_floats = R * C_ * 3 + R * 3 * C_ + R * 4 * C_ + B * C_;
  TW_TRY(acts_.Allocate(act_floats * sizeof(float)));
  float* a = acts_.as<float>();
  x_ = a;
  ln_ = x_ + R * C_;
  att_ = ln_ + R * C_;
  qkv_ = att_ + R * C_;
  fc_ = qkv_ + R * 3 * C_;
  xlast_ = fc_ + R * 4 * C_;
  TW_TRY(logits_.Allocate(B * V_ * sizeof(float)));
  logits_ptr_ = logits_.as<float>();
  TW_TRY(ids_.Allocate(B * sizeof(int32_t)));
  ids_dev_ = ids_.as<int32_t>();
  row_host_.assign(B * static_cast<size_t>(V_), 0.0f);
  pass_first_.assign(B, 0);
  pass_take_.assign(B, 0);
  pass_last_.assign(B, 0);

  // Workspaces: the matmuls' (the largest any plan needs, for the rows it
  // gets) and the attention's; both zeroed once.
  gemm_ws_bytes_ = 0;
  for (const GemmPlan* p : {&plan_attn_, &plan_attn_proj_, &plan_fc_, &plan_proj_}) {
    gemm_ws_bytes_ = std::max(gemm_ws_bytes_, kernels::GemmWorkspaceBytes(*p, rows_));
  }
  gemm_ws_bytes_ = std::max(gemm_ws_bytes_, kernels::GemmWorkspaceBytes(plan_lm_, limits_.max_batch));
  TW_TRY(gemm_ws_.Allocate(gemm_ws_bytes_));
  TW_TRY(kernels::Memset(gemm_ws_.get(), 0, gemm_ws_bytes_, stream_));
  TW_TRY(kernels::MakeAttentionPlan(rows_, n_ctx_, H_, hd_, &attn_plan_));
  TW_TRY(attn_ws_buf_.Allocate(attn_plan_.workspace_bytes));
  TW_TRY(kernels::Memset(attn_ws_buf_.get(), 0, attn_plan_.workspace_bytes, stream_));
  attn_ws_ = kernels::CarveAttentionWorkspace(attn_ws_buf_.get(), attn_plan_);

  // The step buffer, pinned on the host and mirrored on the device.
  // A row's logit edits: the engine's bound, or (a runner built without
  // RunnerLimitsFor) the context's ids plus the named ones.
  const int edits_per_row =
      limits_.max_edits_per_row > 0 ? limits_.max_edits_per_row : n_ctx_ + engine::kMaxNamedIds;
  layout_ = MakeStepLayout(limits_.max_batch, limits_.max_step_tokens, n_ctx_, limits_.block_size_tokens,
                           edits_per_row, V_);
  TW_TRY(kernels::MallocHost(&step_host_, layout_.bytes));
  std::memset(step_host_, 0, layout_.bytes);
  TW_TRY(step_buf_.Allocate(layout_.bytes));
  step_dev_ = step_buf_.get();
  void* ids_host = nullptr;
  TW_TRY(kernels::MallocHost(&ids_host, B * sizeof(int32_t)));
  ids_host_ = static_cast<int32_t*>(ids_host);
  buckets_ = DecodeBuckets(limits_.max_batch);
  TW_TRY(kernels::StreamSync(stream_));
  if (options_.use_graphs) {
    for (int bucket : buckets_) TW_TRY(CaptureDecode(bucket));
  }
  return Status::Ok();
}

Status CudaRunner::UploadWeights() {
  const model::Gpt2Weights& w = model_->weights();
  const int sms = kernels::MultiprocessorCount();
  const kernels::GemmPrecision prec = options_.tf32x3 ? kernels::GemmPrecision::k3xTf32 : kernels::GemmPrecision::kFp32;
  plan_attn_ = kernels::MakeGemmPlan(C_, 3 * C_, sms, prec);
  plan_attn_proj_ = kernels::MakeGemmPlan(C_, C_, sms, prec);
  plan_fc_ = kernels::MakeGemmPlan(C_, 4 * C_, sms, prec);
  plan_proj_ = kernels::MakeGemmPlan(4 * C_, C_, sms, prec);
  plan_lm_ = kernels::MakeGemmPlan(C_, V_, sms, prec);
  for (const GemmPlan* p : {&plan_attn_, &plan_attn_proj_, &plan_fc_, &plan_proj_, &plan_lm_}) {
    TW_TRY(kernels::CheckGemmPlan(*p));
  }
  SlabBuilder slab;
  std::vector<LayerParts> parts(static_cast<size_t>(L_));
  for (LayerParts& p : parts) {
    p.ln1_w = slab.Reserve(C_);
    p.ln1_b = slab.Reserve(C_);
    p.attn = slab.Reserve(kernels::PackedGemmFloats(C_, 3 * C_));
    p.attn_b = slab.Reserve(3 * C_);
    p.attn_proj = slab.Reserve(kernels::PackedGemmFloats(C_, C_));
    p.attn_proj_b = slab.Reserve(C_);
    p.ln2_w = slab.Reserve(C_);
    p.ln2_b = slab.Reserve(C_);
    p.fc = slab.Reserve(kernels::PackedGemmFloats(C_, 4 * C_));
    p.fc_b = slab.Reserve(4 * C_);
    p.proj = slab.Reserve(kernels::PackedGemmFloats(4 * C_, C_));
    p.proj_b = slab.Reserve(C_);
  }
  const size_t wte = slab.Reserve(static_cast<size_t>(V_) * C_);
  const size_t wpe = slab.Reserve(static_cast<size_t>(n_ctx_) * C_);
  const size_t lnf_w = slab.Reserve(C_), lnf_b = slab.Reserve(C_);
  const size_t lm = slab.Reserve(kernels::PackedGemmFloats(C_, V_));
  std::vector<float> host(slab.size(), 0.0f);
  auto put = [&](size_t at, const float* src, size_t n) { std::memcpy(host.data() + at, src, n * sizeof(float)); };
  for (int l = 0; l < L_; l++) {
    const model::Gpt2Layer& g = w.layers[static_cast<size_t>(l)];
    const LayerParts& p = parts[static_cast<size_t>(l)];
    put(p.ln1_w, g.ln_1_w, C_);
    put(p.ln1_b, g.ln_1_b, C_);
    kernels::PackMatrix(g.attn_w, C_, 3 * C_, host.data() + p.attn);
    put(p.attn_b, g.attn_b, 3 * C_);
    kernels::PackMatrix(g.attn_proj_w, C_, C_, host.data() + p.attn_proj);
    put(p.attn_proj_b, g.attn_proj_b, C_);
    put(p.ln2_w, g.ln_2_w, C_);
    put(p.ln2_b, g.ln_2_b, C_);
    kernels::PackMatrix(g.fc_w, C_, 4 * C_, host.data() + p.fc);
    put(p.fc_b, g.fc_b, 4 * C_);
    kernels::PackMatrix(g.proj_w, 4 * C_, C_, host.data() + p.proj);
    put(p.proj_b, g.proj_b, C_);
  }
  put(wte, w.wte, static_cast<size_t>(V_) * C_);
  put(wpe, w.wpe, static_cast<size_t>(n_ctx_) * C_);
  put(lnf_w, w.ln_f_w, C_);
  put(lnf_b, w.ln_f_b, C_);
  kernels::PackMatrixTransposed(w.wte, V_, C_, host.data() + lm);
  TW_TRY(weights_.Allocate(host.size() * sizeof(float)));
  TW_TRY(kernels::CopyToDevice(weights_.get(), host.data(), host.size() * sizeof(float), stream_));
  TW_TRY(kernels::StreamSync(stream_));  // `host` goes away here
  const float* base = weights_.as<const float>();
  auto mat = [&](size_t at, int K, int N) { return PackedMatrixView{base + at, K, N}; };
  for (int l = 0; l < L_; l++) {
    const LayerParts& p = parts[static_cast<size_t>(l)];
    layers_.push_back(LayerView{base + p.ln1_w, base + p.ln1_b, mat(p.attn, C_, 3 * C_), base + p.attn_b,
                                mat(p.attn_proj, C_, C_), base + p.attn_proj_b, base + p.ln2_w, base + p.ln2_b,
                                mat(p.fc, C_, 4 * C_), base + p.fc_b, mat(p.proj, 4 * C_, C_), base + p.proj_b});
  }
  wte_ = base + wte;
  wpe_ = base + wpe;
  lnf_w_ = base + lnf_w;
  lnf_b_ = base + lnf_b;
  lm_head_ = mat(lm, C_, V_);
  return Status::Ok();
}

Status CudaRunner::Layers(int rows, bool prefill, const kernels::BlockTables& tables) {
  const int32_t* tokens = static_cast<const int32_t*>(At(layout_.tokens));
  const int32_t* pos = static_cast<const int32_t*>(At(layout_.positions));
  const int32_t* row_table = prefill ? static_cast<const int32_t*>(At(layout_.row_table)) : nullptr;
  const int32_t* lens = static_cast<const int32_t*>(At(layout_.lens));
  float* pool = pool_.as<float>();
  void* ws = gemm_ws_.get();
  const size_t wsb = gemm_ws_bytes_;
  TW_TRY(kernels::Embed(tokens, pos, rows, wte_, V_, wpe_, n_ctx_, C_, x_, stream_));
  for (int l = 0; l < L_; l++) {
    const LayerView& g = layers_[static_cast<size_t>(l)];
    TW_TRY(kernels::LayerNorm(x_, rows, C_, g.ln1_w, g.ln1_b, eps_, ln_, stream_));
    TW_TRY(kernels::Gemm(plan_attn_, g.attn, ln_, rows, g.attn_b, qkv_, GemmEpilogue::kStore, ws, wsb, stream_));
    TW_TRY(kernels::AppendKv(qkv_, rows, row_table, pos, tables, kv_, l, pool, stream_));
    if (prefill) {
      TW_TRY(kernels::PrefillAttention(qkv_, rows, row_table, pos, tables, kv_, l, pool, attn_ws_, att_, stream_));
    } else {
      TW_TRY(kernels::DecodeAttention(qkv_, rows, lens, tables, kv_, l, pool, attn_ws_, att_, stream_));
    }
    TW_TRY(kernels::Gemm(plan_attn_proj_, g.attn_proj, att_, rows, g.attn_proj_b, x_, GemmEpilogue::kAccumulate,
                         ws, wsb, stream_));
    TW_TRY(kernels::LayerNorm(x_, rows, C_, g.ln2_w, g.ln2_b, eps_, ln_, stream_));
    TW_TRY(kernels::Gemm(plan_fc_, g.fc, ln_, rows, g.fc_b, fc_, GemmEpilogue::kGelu, ws, wsb, stream_));
    TW_TRY(kernels::Gemm(plan_proj_, g.proj, fc_, rows, g.proj_b, x_, GemmEpilogue::kAccumulate, ws, wsb, stream_));
  }
  return Status::Ok();
}

Status CudaRunner::Head(const float* x, int rows) {
  TW_TRY(kernels::LayerNorm(x, rows, C_, lnf_w_, lnf_b_, eps_, ln_, stream_));
  TW_TRY(kernels::Gemm(plan_lm_, lm_head_, ln_, rows, nullptr, logits_ptr_, GemmEpilogue::kStore, gemm_ws_.get(),
                       gemm_ws_bytes_, stream_));
  // The rows' grammar masks, then their logit edits: sampling and
  // log-probabilities see the masked, edited logits.
  TW_TRY(kernels::ApplyTokenMasks(logits_ptr_, rows, V_, static_cast<size_t>(V_),
                                  static_cast<const int32_t*>(At(layout_.mask_rows)),
                                  static_cast<const uint64_t*>(At(layout_.masks)), layout_.mask_words, stream_));
  TW_TRY(kernels::ApplyLogitEdits(logits_ptr_, rows, V_, static_cast<size_t>(V_),
                                  static_cast<const int32_t*>(At(layout_.edit_rows)),
                                  static_cast<const LogitEdit*>(At(layout_.edits)), stream_));
  const auto* params = static_cast<const kernels::SampleParams*>(At(layout_.params));
  return kernels::SampleTokens(logits_ptr_, rows, V_, static_cast<size_t>(V_), params, ids_dev_, stream_);
}

Status CudaRunner::PromptLogprobs(const engine::SeqView& seq, int first, int take, int row) {
  const int entries = seq.sample ? seq.n - 1 : seq.n;  // a sampling row's last position draws
  const int end = std::min(first + take, entries);
  for (int j = first; j < end; j += limits_.max_batch) {
    const int count = std::min(limits_.max_batch, end - j);
    TW_TRY(kernels::LayerNorm(x_ + static_cast<size_t>(row + j - first) * C_, count, C_, lnf_w_, lnf_b_, eps_, ln_,
                              stream_));
    TW_TRY(kernels::Gemm(plan_lm_, lm_head_, ln_, count, nullptr, logits_ptr_, GemmEpilogue::kStore, gemm_ws_.get(),
                         gemm_ws_bytes_, stream_));
    TW_TRY(kernels::CopyToHost(row_host_.data(), logits_ptr_, static_cast<size_t>(count) * V_ * sizeof(float),
                               stream_));
    TW_TRY(kernels::StreamSync(stream_));
    for (int i = 0; i < count; i++) {
      engine::SampledToken& o = seq.prompt_out[j + i];
      o = engine::SampledToken();
      o.id = j + i + 1 < seq.n ? seq.tokens[j + i + 1] : seq.next_token;
      model::ComputeLogprobs(row_host_.data() + static_cast<size_t>(i) * V_, V_, 1.0f, seq.prompt_logprobs, &o);
    }
  }
  return Status::Ok();
}

Status CudaRunner::DecodeForward(int bucket) {
  kernels::BlockTables tables{static_cast<const int32_t*>(At(layout_.tables)), bucket, layout_.table_stride};
  TW_TRY(Layers(bucket, /*prefill=*/false, tables));
  return Head(x_, bucket);
}

Status CudaRunner::CaptureDecode(int bucket) {
  // The launches read the step buffer's device copy, which each step
  // refills before it replays the graph.
  TW_TRY(kernels::GraphBegin(stream_));
  Status captured = DecodeForward(bucket);
  void* exec = nullptr;
  Status ended = kernels::GraphEnd(stream_, &exec);
  if (!captured.ok()) {
    if (exec != nullptr) kernels::GraphDestroy(exec);
    return captured;
  }
  TW_TRY(ended);
  graphs_.emplace(bucket, exec);
  return Status::Ok();
}

Status CudaRunner::CopyStep(int edits, int masks) {
  TW_TRY(kernels::CopyToDevice(step_dev_, step_host_, layout_.UsedBytes(edits), stream_));
  if (masks == 0) return Status::Ok();  // mask_rows are all -1: the masks are not read
  return kernels::CopyToDevice(static_cast<char*>(step_dev_) + layout_.masks,
                               static_cast<const char*>(step_host_) + layout_.masks, layout_.MaskBytes(masks),
                               stream_);
}

Status CudaRunner::Step(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  TW_TRY(engine::CheckStepRows(seqs, count, limits_, "cuda runner"));
  bool decode = true;  // one token per row, every row sampling, no prompt log-probabilities
  for (int i = 0; i < count && decode; i++) decode = seqs[i].n == 1 && seqs[i].sample && seqs[i].prompt_logprobs < 0;
  return decode ? DecodeStep(seqs, count, out) : PassStep(seqs, count, out);
}

Status CudaRunner::DecodeStep(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  const int bucket = BucketFor(buckets_, count);
  int edits = 0, masks = 0;
  TW_TRY(PackDecode(seqs, count, bucket, layout_, bounds_, step_host_, &edits, &masks));
  TW_TRY(CopyStep(edits, masks));
  if (options_.use_graphs) {
    auto it = graphs_.find(bucket);
    if (it == graphs_.end()) return Status::Error("cuda runner: no graph for bucket " + std::to_string(bucket));
    TW_TRY(kernels::GraphLaunch(it->second, stream_));
    ++replays_;
  } else {
    TW_TRY(DecodeForward(bucket));
  }
  TW_TRY(kernels::CopyToHost(ids_host_, ids_dev_, static_cast<size_t>(count) * sizeof(int32_t), stream_));
  TW_TRY(kernels::StreamSync(stream_));
  return Collect(seqs, count, out);
}

Status CudaRunner::PassStep(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  std::vector<int>& first = pass_first_;
  std::vector<int>& take = pass_take_;
  std::vector<int>& last = pass_last_;
  std::fill(first.begin(), first.begin() + count, 0);
  // One pass, or (a lone long row) chunks of layout_.rows tokens; the last
  // chunk's last row is sampled (when the row samples).
  engine::SeqView one = seqs[0];
  const engine::SeqView* views = seqs;
  int sampled = 0;
  for (int done = 0;;) {
    int rows = 0;
    // The previous chunk's copy of step_host_ runs on the stream, reading
    // the pinned buffer when the device gets to it: wait for it before the
    // buffer is packed again.
    if (done > 0) TW_TRY(kernels::StreamSync(stream_));
    if (count == 1) {
      take[0] = std::min(layout_.rows, one.n - done);
      first[0] = done;
      // Only the last chunk samples.
      one.sample = seqs[0].sample && done + take[0] >= one.n;
      views = &one;
    } else {
      for (int i = 0; i < count; i++) take[static_cast<size_t>(i)] = seqs[i].n;
    }
    int edits = 0, masks = 0;
    TW_TRY(PackPass(views, count, first.data(), take.data(), layout_, bounds_, step_host_, &rows, last.data(),
                    &sampled, &edits, &masks));
    TW_TRY(CopyStep(edits, masks));
    kernels::BlockTables tables{static_cast<const int32_t*>(At(layout_.tables)), count, layout_.table_stride};
    TW_TRY(Layers(rows, /*prefill=*/true, tables));
    for (int i = 0; i < count; i++) {
      if (seqs[i].prompt_logprobs < 0) continue;
      TW_TRY(PromptLogprobs(seqs[i], first[i], take[i], last[i] - take[i] + 1));
    }
    done += take[0];
    if (count > 1 || done >= one.n) break;
  }
  if (sampled == 0) {
    last_rows_ = 0;
    return kernels::StreamSync(stream_);
  }
  // Each sampling sequence's last row, compact, then the head.
  for (int i = 0, k = 0; i < count; i++) {
    if (!seqs[i].sample) continue;
    TW_TRY(kernels::CopyOnDevice(xlast_ + static_cast<size_t>(k) * C_, x_ + static_cast<size_t>(last[i]) * C_,
                                 static_cast<size_t>(C_) * sizeof(float), stream_));
    k++;
  }
  TW_TRY(Head(xlast_, sampled));
  TW_TRY(kernels::CopyToHost(ids_host_, ids_dev_, static_cast<size_t>(sampled) * sizeof(int32_t), stream_));
  TW_TRY(kernels::StreamSync(stream_));
  return Collect(seqs, count, out);
}

Status CudaRunner::Collect(const engine::SeqView* seqs, int count, engine::SampledToken* out) {
  int k = 0;  // the sampled row of seqs[i]
  for (int i = 0; i < count; i++) {
    if (!seqs[i].sample) continue;
    const int row = k++;
    if (ids_host_[row] < 0 || ids_host_[row] >= V_) {
      return Status::Error("cuda runner: the sampler returned " + std::to_string(ids_host_[row]) + " for row " +
                           std::to_string(i));
    }
    engine::SampledToken& o = out[i];
    o.id = ids_host_[row];
    o.has_logprobs = false;
    o.top_count = 0;
    const engine::SamplingRow& r = seqs[i].sampling;
    if (r.logprobs < 0) continue;
    // The row's logits (compact: row `row` of this step's head) to the host.
    TW_TRY(kernels::CopyToHost(row_host_.data(), logits_ptr_ + static_cast<size_t>(row) * V_,
                               static_cast<size_t>(V_) * sizeof(float), stream_));
    TW_TRY(kernels::StreamSync(stream_));
    model::ComputeLogprobs(row_host_.data(), V_, r.temperature, r.logprobs, &o);
  }
  last_rows_ = k;
  return Status::Ok();
}

Status CudaRunner::LastLogits(int rows, std::vector<float>* out) {
  if (rows < 1 || rows > last_rows_) {
    return Status::Error("cuda runner: the last step sampled " + std::to_string(last_rows_) + " rows, not " +
                         std::to_string(rows));
  }
  out->assign(static_cast<size_t>(rows) * V_, 0.0f);
  TW_TRY(kernels::CopyToHost(out->data(), logits_ptr_, out->size() * sizeof(float), stream_));
  return kernels::StreamSync(stream_);
}

}  // namespace

Status MakeCudaRunner(std::shared_ptr<const model::Gpt2Model> model, const engine::RunnerLimits& limits,
                      const CudaRunnerOptions& options, std::unique_ptr<engine::ModelRunner>* out) {
  if (!model) return Status::Error("cuda runner: no model");
  if (limits.max_batch < 1 || limits.num_kv_blocks < 1 || limits.block_size_tokens < 1 ||
      limits.max_step_tokens < 1) {
    return Status::Error("cuda runner: max_batch, num_kv_blocks, block_size_tokens and max_step_tokens must be >= 1");
  }
  auto r = std::make_unique<CudaRunner>(std::move(model), limits, options);
  if (Status s = r->Init(); !s.ok()) return s;
  *out = std::move(r);
  return Status::Ok();
}

Status CudaLastLogits(engine::ModelRunner* runner, int rows, std::vector<float>* out) {
  auto* r = dynamic_cast<CudaRunner*>(runner);
  if (r == nullptr) return Status::Error("not the CUDA runner");
  return r->LastLogits(rows, out);
}

Status CudaStats(const engine::ModelRunner* runner, CudaRunnerStats* out) {
  auto* r = dynamic_cast<const CudaRunner*>(runner);
  if (r == nullptr) return Status::Error("not the CUDA runner");
  *out = r->Stats();
  return Status::Ok();
}

}  // namespace tw::cuda

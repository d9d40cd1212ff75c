#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

namespace tw::model {

namespace {

std::string Str(long long v) { return std::to_string(v); }

// Attention passes reading fewer K/V floats than this run on the calling
// thread (waking the pool would cost more than it saves).
constexpr size_t kMinParallelAttentionFloats = 64 * 1024;
// Attention tasks per pool thread to aim for: enough for balance (rows have
// different lengths), few enough that claiming them costs little.
constexpr int kAttentionTasksPerThread = 8;
// Consecutive rows of one sequence (a prompt's rows in a prefill pass) attend
// in groups of up to this many: each group walks its K/V blocks once
// (cpu::AttendRows), instead of once per row.
constexpr int kAttendRowsPerGroup = 4;

}  // namespace

Gpt2Forward::Gpt2Forward(const Gpt2Model& model, KvPool* kv, cpu::ThreadPool* pool,
                         const ForwardLimits& limits)
    : model_(model), cfg_(model.config()), kv_(kv), pool_(pool), limits_(limits) {}

Status Gpt2Forward::Create(const Gpt2Model& model, KvPool* kv, cpu::ThreadPool* pool,
                           const ForwardLimits& limits, std::unique_ptr<Gpt2Forward>* out) {
  const Gpt2Config& c = model.config();
  const Gpt2Weights& w = model.weights();
  if (c.n_layer <= 0 || c.n_head <= 0 || c.n_embd <= 0 || c.n_embd % c.n_head != 0 ||
      c.vocab_size <= 0 || c.n_ctx <= 0) {
    return Status::Error("Gpt2Forward: bad config n_layer=" + Str(c.n_layer) + " n_head=" +
                         Str(c.n_head) + " n_embd=" + Str(c.n_embd) + " vocab_size=" +
                         Str(c.vocab_size) + " n_ctx=" + Str(c.n_ctx));
  }
  if (static_cast<int>(w.layers.size()) != c.n_layer || !w.wte || !w.wpe || !w.ln_f_w || !w.ln_f_b) {
    return Status::Error("Gpt2Forward: weights incomplete (" + Str(static_cast<long long>(w.layers.size())) +
                         " layers for n_layer=" + Str(c.n_layer) + ")");
  }
  if (!kv || kv->n_layer() != c.n_layer || kv->n_head() != c.n_head ||
      kv->head_dim() != c.n_embd / c.n_head) {
    return Status::Error("Gpt2Forward: KV pool shape does not match the model");
  }
  if (limits.max_batch < 1 || limits.max_pass_tokens < 1) {
    return Status::Error("Gpt2Forward: max_batch and max_pass_tokens must be >= 1, got " + Str(limits.max_batch) +
                         " and " + Str(limits.max_pass_tokens));
  }
  std::unique_ptr<Gpt2Forward> f(new Gpt2Forward(model, kv, pool, limits));
  const int C = c.n_embd, V = c.vocab_size;
  f->max_rows_ = std::max(limits.max_batch, limits.max_pass_tokens);

  // One slab for all packed matrices, in the chosen format.
  const cpu::WeightFormat fmt = limits.weights;
  const size_t per_layer = cpu::PackedWeightBytes(fmt, C, 3 * C) + cpu::PackedWeightBytes(fmt, C, C) +
                           cpu::PackedWeightBytes(fmt, C, 4 * C) + cpu::PackedWeightBytes(fmt, 4 * C, C);
  f->packed_bytes_ = per_layer * c.n_layer + cpu::PackedWeightBytes(fmt, C, V);
  f->packed_ = cpu::AllocAligned(f->packed_bytes_ / sizeof(float));  // every part is a multiple of 64 bytes
  if (!f->packed_) {
    return Status::Error("Gpt2Forward: cannot allocate " + Str(f->packed_bytes_) + " bytes for packed weights");
  }
  char* dst = reinterpret_cast<char*>(f->packed_.get());
  auto pack = [&](const float* src, int in, int outn, bool transposed) {
    cpu::PackedWeight pw = cpu::PackWeightAs(fmt, src, in, outn, transposed, dst);
    dst += cpu::PackedWeightBytes(fmt, in, outn);
    return pw;
  };
  for (const Gpt2Layer& l : w.layers) {
    PackedLayer pl;
    pl.attn = pack(l.attn_w, C, 3 * C, false);
    pl.attn_proj = pack(l.attn_proj_w, C, C, false);
    pl.fc = pack(l.fc_w, C, 4 * C, false);
    pl.proj = pack(l.proj_w, 4 * C, C, false);
    f->layers_.push_back(pl);
  }
  f->lm_head_ = pack(w.wte, C, V, true);

  const size_t R = static_cast<size_t>(f->max_rows_);
  const int threads = pool ? pool->threads() : 1;
  f->x_ = cpu::AllocAligned(R * C);
  f->ln_ = cpu::AllocAligned(R * C);
  f->qkv_ = cpu::AllocAligned(R * 3 * C);
  f->att_ = cpu::AllocAligned(R * C);
  f->fc_ = cpu::AllocAligned(R * 4 * C);
  f->scores_rows_ = std::max(kAttendRowsPerGroup, c.n_head);
  f->scores_ = cpu::AllocAligned(static_cast<size_t>(threads) * f->scores_rows_ * c.n_ctx);
  if (fmt != cpu::WeightFormat::kF32) {
    f->matmul_scratch_ = cpu::AllocAligned(static_cast<size_t>(threads) * cpu::kMatmulScratchFloats);
    if (!f->matmul_scratch_) return Status::Error("Gpt2Forward: cannot allocate matmul scratch");
  }
  if (!f->x_ || !f->ln_ || !f->qkv_ || !f->att_ || !f->fc_ || !f->scores_) {
    return Status::Error("Gpt2Forward: cannot allocate scratch for " + Str(f->max_rows_) + " rows");
  }
  f->row_seq_.assign(R, nullptr);
  f->row_prior_.assign(R, 0);
  f->row_pos_.assign(R, 0);
  f->group_begin_.assign(R + 1, 0);
  f->pass_tokens_.assign(R, 0);
  *out = std::move(f);
  return Status::Ok();
}

Status Gpt2Forward::CheckSeq(const engine::SeqView& seq, const char* what) const {
  if (seq.tokens == nullptr || seq.n < 1) {
    return Status::Error(std::string(what) + ": need n >= 1 tokens, got n=" + Str(seq.n));
  }
  const long long end = static_cast<long long>(seq.cached) + seq.n;
  if (seq.cached < 0 || end > cfg_.n_ctx) {
    return Status::Error(std::string(what) + ": sequence length " + Str(seq.cached) + " + " + Str(seq.n) +
                         " tokens exceeds the context window n_ctx=" + Str(cfg_.n_ctx));
  }
  const int need = BlocksFor(static_cast<int>(end), kv_->block_size());
  if (seq.num_blocks < need || seq.block_table == nullptr) {
    return Status::Error(std::string(what) + ": block table has " + Str(seq.num_blocks) + " blocks, " + Str(need) +
                         " needed for " + Str(end) + " tokens at block size " + Str(kv_->block_size()));
  }
  for (int i = 0; i < need; ++i) {
    if (seq.block_table[i] < 0 || seq.block_table[i] >= kv_->num_blocks()) {
      return Status::Error(std::string(what) + ": block table entry " + Str(i) + " = " +
                           Str(seq.block_table[i]) + " is outside [0, " + Str(kv_->num_blocks()) + ")");
    }
  }
  return CheckTokens(seq.tokens, seq.n, what);
}

Status Gpt2Forward::CheckTokens(const int32_t* tokens, int n, const char* what) const {
  for (int i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= cfg_.vocab_size) {
      return Status::Error(std::string(what) + ": token " + Str(i) + " = " + Str(tokens[i]) + " is outside [0, " +
                           Str(cfg_.vocab_size) + ")");
    }
  }
  return Status::Ok();
}

Status Gpt2Forward::Prefill(const engine::SeqView& seq, float* last_logits, float* all_logits,
                            PassObserver* observer) {
  if (Status s = CheckSeq(seq, "Prefill"); !s.ok()) return s;
  const int V = cfg_.vocab_size, n = seq.n;
  const int chunk = std::min(max_rows_, limits_.max_pass_tokens);
  for (int start = 0; start < n; start += chunk) {
    const int rows = std::min(chunk, n - start);
    for (int r = 0; r < rows; ++r) {
      row_seq_[r] = &seq;
      row_pos_[r] = seq.cached + start + r;
      row_prior_[r] = seq.cached + start;
    }
    RunRows(rows, seq.tokens + start);
    if (observer) observer->OnRows(*this, 0, start, 0, rows);
    if (all_logits) Logits(0, rows, all_logits + static_cast<size_t>(start) * V);
    if (last_logits && start + rows == n) {
      if (all_logits) {
        std::memcpy(last_logits, all_logits + static_cast<size_t>(n - 1) * V, sizeof(float) * V);
      } else {
        Logits(rows - 1, 1, last_logits);
      }
    }
  }
  return Status::Ok();
}

Status Gpt2Forward::Batch(const engine::SeqView* seqs, int B, float* logits, PassObserver* observer) {
  if (!seqs || B < 1) return Status::Error("Batch: need B >= 1 sequences, got B=" + Str(B) + " (or null arguments)");
  const int budget = std::min(max_rows_, limits_.max_pass_tokens);
  long long total = 0;
  int sampled = 0;
  for (int b = 0; b < B; ++b) {
    if (Status s = CheckSeq(seqs[b], "Batch"); !s.ok()) {
      return Status::Error(s.message() + " (sequence " + Str(b) + ")");
    }
    for (int a = 0; a < b; ++a) {
      if (seqs[a].block_table == seqs[b].block_table) {
        return Status::Error("Batch: sequences " + Str(a) + " and " + Str(b) + " are the same");
      }
    }
    total += seqs[b].n;
    sampled += seqs[b].sample ? 1 : 0;
  }
  if (total > budget) {
    return Status::Error("Batch: " + Str(total) + " tokens exceed the pass limit of " + Str(budget) +
                         " (max_pass_tokens)");
  }
  if (sampled > 0 && logits == nullptr) return Status::Error("Batch: rows sample, and no logits buffer");
  const int rows = static_cast<int>(total);
  int r = 0;
  for (int b = 0; b < B; ++b) {
    for (int i = 0; i < seqs[b].n; ++i, ++r) {
      row_seq_[r] = &seqs[b];
      row_pos_[r] = seqs[b].cached + i;
      row_prior_[r] = seqs[b].cached;
      pass_tokens_[r] = seqs[b].tokens[i];
    }
  }
  RunRows(rows, pass_tokens_.data());
  if (observer) {
    for (int b = 0, first = 0; b < B; first += seqs[b].n, ++b) observer->OnRows(*this, b, 0, first, seqs[b].n);
  }
  // Gather each sampling sequence's last row to the front of x_ (the k-th
  // goes to row k <= its last row, so moving in order never overwrites a
  // row still to be read).
  const int C = cfg_.n_embd;
  r = 0;
  int k = 0;
  for (int b = 0; b < B; ++b) {
    r += seqs[b].n;
    if (!seqs[b].sample) continue;
    if (r - 1 != k) {
      std::memmove(x_.get() + static_cast<size_t>(k) * C, x_.get() + static_cast<size_t>(r - 1) * C,
                   sizeof(float) * C);
    }
    k++;
  }
  if (k > 0) Logits(0, k, logits);
  return Status::Ok();
}

Status Gpt2Forward::DecodeBatch(const engine::SeqView* seqs, int B, float* logits) {
  if (!seqs || !logits || B < 1 || B > limits_.max_batch) {
    return Status::Error("DecodeBatch: batch of " + Str(B) + " outside [1, max_batch=" +
                         Str(limits_.max_batch) + "] (or null arguments)");
  }
  for (int b = 0; b < B; ++b) {
    if (seqs[b].n != 1) {
      return Status::Error("DecodeBatch: row " + Str(b) + " has " + Str(seqs[b].n) + " tokens, not 1");
    }
    if (Status s = CheckSeq(seqs[b], "DecodeBatch"); !s.ok()) {
      return Status::Error(s.message() + " (batch row " + Str(b) + ")");
    }
    for (int a = 0; a < b; ++a) {
      if (seqs[a].block_table == seqs[b].block_table) {
        return Status::Error("DecodeBatch: rows " + Str(a) + " and " + Str(b) + " are the same sequence");
      }
    }
  }
  for (int b = 0; b < B; ++b) {
    row_seq_[b] = &seqs[b];
    row_pos_[b] = seqs[b].cached;
    row_prior_[b] = seqs[b].cached;
    pass_tokens_[b] = seqs[b].tokens[0];
  }
  RunRows(B, pass_tokens_.data());
  Logits(0, B, logits);
  return Status::Ok();
}

// Layer l's attention for the pass's rows: each row's K and V (in qkv)
// appended to its sequence's cache slot, then each row attends to its
// sequence's positions [0, pos] (att: (rows, C)).
void Gpt2Forward::AttendLayer(int l, int rows, const float* qkv, float* att) {
  const int C = cfg_.n_embd, H = cfg_.n_head, hd = C / H;
  const int bs = kv_->block_size();
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));

  // Append row r's K and V of heads [h0, h1) to its sequence's cache slot.
  auto append = [&](int r, int h0, int h1) {
    const int pos = row_pos_[r];
    float* block = kv_->block(row_seq_[r]->block_table[pos / bs]);
    const size_t slot = static_cast<size_t>(pos % bs) * hd;
    const float* k = qkv + static_cast<size_t>(r) * 3 * C + C;  // (C)
    const float* v = k + C;                                     // (C)
    for (int h = h0; h < h1; ++h) {
      std::memcpy(block + kv_->Offset(l, 0, h) + slot, k + h * hd, sizeof(float) * hd);
      std::memcpy(block + kv_->Offset(l, 1, h) + slot, v + h * hd, sizeof(float) * hd);
    }
  };

  // Attention: (group, head) pairs, group-major, `per_task` heads of one
  // group per pool task (whole groups when there are enough of them: fewer
  // claims, and a row's heads sit side by side in each of its blocks). A
  // group is one row, or up to kAttendRowsPerGroup consecutive rows of one
  // sequence; row r sees positions [0, pos_r].
  int groups = 0;
  for (int r = 0; r < rows; ++groups) {
    group_begin_[groups] = r;
    const int first = r;
    while (++r < rows && r - first < kAttendRowsPerGroup && row_seq_[r] == row_seq_[first]) {}
  }
  group_begin_[groups] = rows;
  // One row per group means one row per sequence (a sequence's rows are
  // consecutive): a decode step. Then each attention task appends its own
  // row's K/V for its heads first, in parallel, and reads the new slot
  // back from cache; the append is a write to a cold line per head, ~0.4
  // ms a batch-32 step when the caller did it alone. Otherwise a row
  // attends to the other rows of its prompt, so every row is appended
  // before any attends.
  const bool append_in_task = groups == rows;
  if (!append_in_task) {
    for (int r = 0; r < rows; ++r) append(r, 0, H);
  }
  const int threads = pool_ ? pool_->threads() : 1;
  const int per_task = std::max(1, std::min(H, groups * H / (threads * kAttentionTasksPerThread)));
  const int tasks_per_group = (H + per_task - 1) / per_task;
  // Where head h of row r's sequence lives in the cache (layer l).
  auto kv_head = [&](int r, int h) {
    cpu::PagedKvHead kvh;
    kvh.pool = kv_->data();
    kvh.block_table = row_seq_[r]->block_table;
    kvh.block_size = bs;
    kvh.block_stride = kv_->FloatsPerBlock();
    kvh.k_offset = kv_->Offset(l, 0, h);
    kvh.v_offset = kv_->Offset(l, 1, h);
    kvh.head_dim = hd;
    // Prefetch only where some keys come from earlier passes: a prompt's
    // first pass reads only what this pass's append just wrote, still in
    // cache.
    kvh.prefetch = row_prior_[r] > 0;
    return kvh;
  };
  // Per worker: (scores_rows_, n_ctx).
  auto worker_scores = [&](int worker) {
    return scores_.get() + static_cast<size_t>(worker) * scores_rows_ * cfg_.n_ctx;
  };
  // Group g's rows, head h.
  auto attend_one = [&](int g, int h, int worker) {
    const int r = group_begin_[g], m = group_begin_[g + 1] - r;
    const float* q = qkv + static_cast<size_t>(r) * 3 * C + h * hd;  // (m, hd), rows 3C apart
    float* out = att + static_cast<size_t>(r) * C + h * hd;          // (m, hd), rows C apart
    cpu::AttendRows(q, 3 * static_cast<size_t>(C), m, kv_head(r, h), row_pos_[r] + 1, scale, worker_scores(worker),
                    out, C);
  };
  // A lone row (a decode step's) attends with all of the task's heads at
  // once (cpu::AttendHeads): its heads' K (and V) of a block are one
  // contiguous run.
  auto attend_heads = [&](int g, int h0, int h1, int worker) {
    const int r = group_begin_[g];
    const float* q = qkv + static_cast<size_t>(r) * 3 * C + h0 * hd;  // (h1 - h0, hd)
    float* out = att + static_cast<size_t>(r) * C + h0 * hd;          // (h1 - h0, hd)
    cpu::AttendHeads(q, h1 - h0, kv_head(r, h0), kv_->HeadStride(), row_pos_[r] + 1, scale, worker_scores(worker),
                     out);
  };
  auto attend = [&](int task, int worker) {
    const int g = task / tasks_per_group, h0 = task % tasks_per_group * per_task;
    const int h1 = std::min(H, h0 + per_task);
    if (append_in_task) append(group_begin_[g], h0, h1);
    if (group_begin_[g + 1] - group_begin_[g] == 1) attend_heads(g, h0, h1, worker);
    else for (int h = h0; h < h1; ++h) attend_one(g, h, worker);
  };
  const int tasks = groups * tasks_per_group;
  size_t work = 0;  // floats of K and V this pass reads
  for (int r = 0; r < rows; ++r) work += static_cast<size_t>(row_pos_[r] + 1) * 2 * C;
  if (pool_ && work >= kMinParallelAttentionFloats) pool_->ParallelFor(tasks, attend);
  else for (int t = 0; t < tasks; ++t) attend(t, 0);
}

// The layer loop, as llm.c's gpt2_forward reads: embed; per layer, ln_1,
// qkv, attention, proj (+ residual), ln_2, fc, GELU, proj (+ residual). The
// final layer norm and the logits are Logits'.
void Gpt2Forward::RunRows(int rows, const int32_t* tokens) {
  const Gpt2Weights& w = model_.weights();
  const int C = cfg_.n_embd;
  float* x = x_.get();      // (rows, C)
  float* ln = ln_.get();    // (rows, C)
  float* qkv = qkv_.get();  // (rows, 3C): q | k | v, heads side by side in each
  float* att = att_.get();  // (rows, C)
  float* fc = fc_.get();    // (rows, 4C)

  // x = wte[token] + wpe[pos]
  for (int r = 0; r < rows; ++r) {
    cpu::Add(w.wte + static_cast<size_t>(tokens[r]) * C, w.wpe + static_cast<size_t>(row_pos_[r]) * C,
             x + static_cast<size_t>(r) * C, C);
  }

  for (int l = 0; l < cfg_.n_layer; ++l) {
    const Gpt2Layer& lw = w.layers[l];
    const PackedLayer& pl = layers_[l];

    cpu::LayerNorm(pool_, x, rows, C, lw.ln_1_w, lw.ln_1_b, cfg_.layer_norm_epsilon, ln);
    cpu::Matmul(pool_, ln, rows, pl.attn, lw.attn_b, qkv, /*accumulate=*/false, matmul_scratch_.get());

    AttendLayer(l, rows, qkv, att);

    cpu::Matmul(pool_, att, rows, pl.attn_proj, lw.attn_proj_b, x, /*accumulate=*/true, matmul_scratch_.get());

    cpu::LayerNorm(pool_, x, rows, C, lw.ln_2_w, lw.ln_2_b, cfg_.layer_norm_epsilon, ln);
    cpu::Matmul(pool_, ln, rows, pl.fc, lw.fc_b, fc, /*accumulate=*/false, matmul_scratch_.get());
    cpu::GeluTanh(pool_, fc, static_cast<size_t>(rows) * 4 * C);
    cpu::Matmul(pool_, fc, rows, pl.proj, lw.proj_b, x, /*accumulate=*/true, matmul_scratch_.get());
  }
}

void Gpt2Forward::Logits(int first, int count, float* logits) {
  const Gpt2Weights& w = model_.weights();
  const int C = cfg_.n_embd;
  const float* x = x_.get() + static_cast<size_t>(first) * C;  // (count, C)
  float* ln = ln_.get();                                        // (count, C)
  cpu::LayerNorm(pool_, x, count, C, w.ln_f_w, w.ln_f_b, cfg_.layer_norm_epsilon, ln);
  cpu::Matmul(pool_, ln, count, lm_head_, nullptr, logits, /*accumulate=*/false, matmul_scratch_.get());
}

}  // namespace tw::model

#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include <type_traits>

#include "train/layers.h"

namespace tw::train {

template <typename T>
class TrainBuffer {
 public:
  explicit TrainBuffer(size_t n) {
    if constexpr (std::is_same_v<T, float>) {
      f_ = cpu::AllocAligned(n);
      data_ = f_.get();
    } else {
      d_.reset(new (std::nothrow) T[n]);
      data_ = d_.get();
    }
  }
  T* data() const { return data_; }

 private:
  cpu::AlignedFloats f_;
  std::unique_ptr<T[]> d_;
  T* data_ = nullptr;
};

namespace {

std::string Str(long long v) { return std::to_string(v); }

// Work per pool task: rows of a row-wise pass, columns of a column-wise
// sum, panels of a pack. Enough per task that claiming it costs little.
constexpr int kRowsPerTask = 16;
constexpr int kColumnsPerTask = 16;
constexpr int kPanelsPerTask = 64;
constexpr int kTransposeTile = 32;  // a transpose works in square tiles of this side

// dst (cols, rows) = src (rows, cols)^T, rows [r0, r1) of src only.
void TransposeRows(const float* src, int rows, int cols, int r0, int r1, float* dst) {
  for (int i0 = r0; i0 < r1; i0 += kTransposeTile) {
    const int i1 = std::min(r1, i0 + kTransposeTile);
    for (int j0 = 0; j0 < cols; j0 += kTransposeTile) {
      const int j1 = std::min(cols, j0 + kTransposeTile);
      for (int i = i0; i < i1; ++i)
        for (int j = j0; j < j1; ++j) dst[static_cast<size_t>(j) * rows + i] = src[static_cast<size_t>(i) * cols + j];
    }
  }
}

int Panels(int out) { return (out + cpu::kPanelWidth - 1) / cpu::kPanelWidth; }

// rows x n floats from src (rows src_stride apart) to dst (dst_stride apart):
// one head's columns out of, or back into, rows that hold every head.
void CopyRows(const float* src, size_t src_stride, float* dst, size_t dst_stride, int rows, int n) {
  for (int t = 0; t < rows; ++t) std::memcpy(dst + t * dst_stride, src + t * src_stride, sizeof(float) * n);
}

// One worker's scratch for the float attention of one (sequence, head),
// S = seq, hd = head_dim: the head's q, k, v and output gradient copied out
// of the rows (matmul inputs must be contiguous), a result, two (S, S)
// arrays and room for one packed (S, hd) or (hd, S) matrix.
struct AttentionScratch {
  int S, hd;
  float* q;       // (S, hd)
  float* k;       // (S, hd)
  float* v;       // (S, hd)
  float* d;       // (S, hd) the output's gradient
  float* o;       // (S, hd) a matmul's result
  float* ds;      // (S, S) dP, then dS
  float* tr;      // (S, S) a transpose
  float* packed;  // a packed k^T, v, v^T, dout, k or q
  static size_t Pack(int S, int hd) {
    return std::max(cpu::PackedWeightFloats(S, hd), cpu::PackedWeightFloats(hd, S));
  }
  static size_t Floats(int S, int hd) {
    return 5 * static_cast<size_t>(S) * hd + 2 * static_cast<size_t>(S) * S + Pack(S, hd);
  }
  // q, k and v of head h out of the sequence's rows (S, 3C).
  void Gather(const float* rows, int C, int h) {
    const size_t stride = 3 * static_cast<size_t>(C);
    CopyRows(rows + h * hd, stride, q, hd, S, hd);
    CopyRows(rows + C + h * hd, stride, k, hd, S, hd);
    CopyRows(rows + 2 * C + h * hd, stride, v, hd, S, hd);
  }
  AttentionScratch(float* base, int S_, int hd_) : S(S_), hd(hd_) {
    const size_t shd = static_cast<size_t>(S) * hd, ss = static_cast<size_t>(S) * S;
    q = base;
    k = q + shd;
    v = k + shd;
    d = v + shd;
    o = d + shd;
    ds = o + shd;
    tr = ds + ss;
    packed = tr + ss;
  }
};

// Row k of a (rows, n) matrix into its place in the matrix's panel-major
// pack (cpu::PackWeight's layout: panel p's 16 columns of row k at (p *
// rows + k) * 16, the last panel zero-padded).
void PackRow(const float* row, int n, int k, int rows, float* dst) {
  const int full = n / cpu::kPanelWidth;
  for (int p = 0; p < full; ++p) {
    std::memcpy(dst + (static_cast<size_t>(p) * rows + k) * cpu::kPanelWidth, row + p * cpu::kPanelWidth,
                sizeof(float) * cpu::kPanelWidth);
  }
  if (full * cpu::kPanelWidth < n) {
    float* d = dst + (static_cast<size_t>(full) * rows + k) * cpu::kPanelWidth;
    for (int j = 0; j < cpu::kPanelWidth; ++j) d[j] = full * cpu::kPanelWidth + j < n ? row[full * cpu::kPanelWidth + j] : 0.0f;
  }
}

cpu::PackedWeight View(const float* data, int in, int out) {
  cpu::PackedWeight w;
  w.data = data;
  w.in = in;
  w.out = out;
  return w;
}

}  // namespace

template <typename T>
struct Gpt2Trainer<T>::LayerActs {
  T* ln1;       // (N, C)
  T* ln1_mean;  // (N)
  T* ln1_rstd;  // (N)
  T* qkv;       // (N, 3C)
  T* att;       // (B, H, T, T) softmax probabilities, 0 past the diagonal
  T* atty;      // (N, C) attention output, heads side by side
  T* res2;      // (N, C) residual after attention
  T* ln2;       // (N, C)
  T* ln2_mean;  // (N)
  T* ln2_rstd;  // (N)
  T* fch;       // (N, 4C) MLP hidden before GELU
  T* fch_gelu;  // (N, 4C)
  T* res3;      // (N, C) residual after the MLP: the layer's output
};

// The float path's packed weights (repacked each step) and matmul scratch.
template <typename T>
struct Gpt2Trainer<T>::Packs {
  struct Layer {
    cpu::PackedWeight attn, attn_proj, fc, proj;
  };
  // One matrix to pack: src (row-major), the packed (in, out) it becomes.
  struct Job {
    const float* src;
    int in, out;
    bool transposed;
    float* dst;
  };
  struct Task {
    int job, p0, p1;
  };
  std::vector<Layer> fwd;       // W (in, out): y = x @ W
  std::vector<Layer> bwd;       // W^T (out, in): dX = dY @ W^T
  cpu::PackedWeight head;       // (C, V) = wte^T: logits = lnf @ wte^T
  cpu::PackedWeight head_bwd;   // (V, C) = wte: dlnf = dlogits @ wte
  std::vector<Job> jobs;        // forward's first, then backward's
  size_t fwd_jobs = 0;
  std::vector<Task> fwd_tasks, all_tasks;
  cpu::AlignedFloats slab;      // every packed matrix above
  float* xt = nullptr;          // (max(4C * N, C * head_rows)) a transposed activation
  float* dy_packed = nullptr;   // a gradient packed as a matmul weight: dW = X^T @ dY
  float* dwte_t = nullptr;      // (C, V) wte's gradient from the head, transposed
  size_t attn_floats = 0;       // attention scratch per worker
  float* attn = nullptr;        // (threads, attn_floats)
};

template <typename T>
Gpt2Trainer<T>::Gpt2Trainer(const model::Gpt2Config& config, const TrainerShape& shape, cpu::ThreadPool* pool)
    : config_(config), shape_(shape), pool_(pool), layout_(ParamLayout(config)) {}

template <typename T>
Gpt2Trainer<T>::~Gpt2Trainer() = default;

template <typename T>
T* Gpt2Trainer<T>::Alloc(size_t n) {
  buffers_.push_back(std::make_unique<TrainBuffer<T>>(n));
  return buffers_.back()->data();
}

template <typename T>
Status Gpt2Trainer<T>::Create(const model::Gpt2Config& c, const TrainerShape& shape, cpu::ThreadPool* pool,
                              std::unique_ptr<Gpt2Trainer>* out) {
  if (c.n_layer < 1 || c.n_head < 1 || c.n_embd < 1 || c.n_embd % c.n_head != 0 || c.vocab_size < 1 ||
      c.n_ctx < 1) {
    return Status::Error("Gpt2Trainer: bad config n_layer=" + Str(c.n_layer) + " n_head=" + Str(c.n_head) +
                         " n_embd=" + Str(c.n_embd) + " (a multiple of n_head) vocab_size=" + Str(c.vocab_size) +
                         " n_ctx=" + Str(c.n_ctx));
  }
  if (shape.seq < 1 || shape.seq > c.n_ctx || shape.max_batch < 1 || shape.head_rows < 1) {
    return Status::Error("Gpt2Trainer: bad shape: seq " + Str(shape.seq) + " must be in [1, n_ctx=" + Str(c.n_ctx) +
                         "], max_batch " + Str(shape.max_batch) + " and head_rows " + Str(shape.head_rows) +
                         " >= 1");
  }
  const long long rows_ll = static_cast<long long>(shape.max_batch) * shape.seq;
  if (rows_ll > (1 << 24) || static_cast<long long>(c.n_embd) * 4 * rows_ll > (1ll << 40)) {
    return Status::Error("Gpt2Trainer: " + Str(rows_ll) + " rows per batch is too many");
  }
  std::unique_ptr<Gpt2Trainer> t(new Gpt2Trainer(c, shape, pool));
  const size_t C = c.n_embd, V = c.vocab_size, H = c.n_head, S = shape.seq;
  const size_t N = static_cast<size_t>(rows_ll), B = shape.max_batch, R = std::min<size_t>(shape.head_rows, N);
  t->num_params_ = ParamCount(t->layout_);
  t->params_ = t->Alloc(t->num_params_);
  t->grads_ = t->Alloc(t->num_params_);
  size_t act = 0;  // elements of activations and scratch
  auto alloc = [&](size_t n) {
    act += n;
    return t->Alloc(n);
  };
  t->encoded_ = alloc(N * C);
  for (int l = 0; l < c.n_layer; ++l) {
    LayerActs a;
    a.ln1 = alloc(N * C);
    a.ln1_mean = alloc(N);
    a.ln1_rstd = alloc(N);
    a.qkv = alloc(N * 3 * C);
    a.att = alloc(B * H * S * S);
    a.atty = alloc(N * C);
    a.res2 = alloc(N * C);
    a.ln2 = alloc(N * C);
    a.ln2_mean = alloc(N);
    a.ln2_rstd = alloc(N);
    a.fch = alloc(N * 4 * C);
    a.fch_gelu = alloc(N * 4 * C);
    a.res3 = alloc(N * C);
    t->acts_.push_back(a);
  }
  t->lnf_ = alloc(N * C);
  t->lnf_mean_ = alloc(N);
  t->lnf_rstd_ = alloc(N);
  t->losses_ = alloc(N);
  t->logits_ = alloc(R * V);
  t->dres_ = alloc(N * C);
  t->dln_ = alloc(N * C);
  t->dfch_ = alloc(N * 4 * C);
  t->dqkv_ = alloc(N * 3 * C);
  t->datty_ = alloc(N * C);
  const int threads = pool ? pool->threads() : 1;
  if constexpr (std::is_same_v<T, float>) {
    auto packs = std::make_unique<Packs>();
    // The matrices to pack each step: forward's (W as (in, out), and the
    // head wte^T), then backward's (W^T as (out, in) by a transposed pack
    // of W, and wte as (V, C)). The views read params_ at pack time.
    const Gpt2Params<float> pv = ParamViews(c, t->params_);
    const int Ci = static_cast<int>(C), Vi = static_cast<int>(V);
    auto add = [&](const float* src, int in, int out, bool transposed) {
      packs->jobs.push_back(typename Packs::Job{src, in, out, transposed, nullptr});
    };
    for (const LayerParams<float>& w : pv.layers) {
      add(w.attn_w, Ci, 3 * Ci, false);
      add(w.attn_proj_w, Ci, Ci, false);
      add(w.fc_w, Ci, 4 * Ci, false);
      add(w.proj_w, 4 * Ci, Ci, false);
    }
    add(pv.wte, Ci, Vi, true);
    packs->fwd_jobs = packs->jobs.size();
    for (const LayerParams<float>& w : pv.layers) {
      add(w.attn_w, 3 * Ci, Ci, true);
      add(w.attn_proj_w, Ci, Ci, true);
      add(w.fc_w, 4 * Ci, Ci, true);
      add(w.proj_w, Ci, 4 * Ci, true);
    }
    add(pv.wte, Vi, Ci, false);
    size_t packed = 0;
    for (const auto& j : packs->jobs) packed += cpu::PackedWeightFloats(j.in, j.out);
    const size_t xt = std::max(4 * C * N, C * R);
    const size_t dy = std::max(cpu::PackedWeightFloats(static_cast<int>(N), 4 * Ci),
                               cpu::PackedWeightFloats(static_cast<int>(R), Vi));
    packs->attn_floats = AttentionScratch::Floats(static_cast<int>(S), static_cast<int>(C / H));
    const size_t total = packed + xt + dy + C * V + threads * packs->attn_floats;
    packs->slab = cpu::AllocAligned(total);
    if (!packs->slab) {
      return Status::Error("Gpt2Trainer: cannot allocate " + Str(static_cast<long long>(total * sizeof(float))) +
                           " bytes of packed weights and matmul scratch");
    }
    act += total;
    float* dst = packs->slab.get();
    for (auto& j : packs->jobs) {
      j.dst = dst;
      dst += cpu::PackedWeightFloats(j.in, j.out);
    }
    auto view = [&](size_t i) {
      const auto& j = packs->jobs[i];
      return View(j.dst, j.in, j.out);
    };
    const size_t L = c.n_layer;
    for (size_t l = 0; l < L; ++l) {
      packs->fwd.push_back({view(4 * l), view(4 * l + 1), view(4 * l + 2), view(4 * l + 3)});
      const size_t b = 4 * L + 1 + 4 * l;
      packs->bwd.push_back({view(b), view(b + 1), view(b + 2), view(b + 3)});
    }
    packs->head = view(4 * L);
    packs->head_bwd = view(8 * L + 1);
    for (size_t j = 0; j < packs->jobs.size(); ++j) {
      const int panels = Panels(packs->jobs[j].out);
      for (int p0 = 0; p0 < panels; p0 += kPanelsPerTask) {
        const typename Packs::Task task{static_cast<int>(j), p0, std::min(panels, p0 + kPanelsPerTask)};
        if (j < packs->fwd_jobs) packs->fwd_tasks.push_back(task);
        packs->all_tasks.push_back(task);
      }
    }
    packs->xt = dst;
    dst += xt;
    packs->dy_packed = dst;
    dst += dy;
    packs->dwte_t = dst;
    dst += C * V;
    packs->attn = dst;
    t->packs_ = std::move(packs);
  } else {
    t->datt_ = alloc(static_cast<size_t>(threads) * S);
  }
  for (const auto& b : t->buffers_) {
    if (b->data() == nullptr) {
      return Status::Error("Gpt2Trainer: cannot allocate " +
                           Str(static_cast<long long>((t->num_params_ * 2 + act) * sizeof(T))) +
                           " bytes of parameters, gradients and activations");
    }
  }
  t->activation_bytes_ = act * sizeof(T);
  std::fill(t->params_, t->params_ + t->num_params_, T(0));
  std::fill(t->grads_, t->grads_ + t->num_params_, T(0));
  t->p_ = ParamViews(c, t->params_);
  t->g_ = ParamViews(c, t->grads_);
  *out = std::move(t);
  return Status::Ok();
}

template <typename T>
template <typename Fn>
void Gpt2Trainer<T>::ForRows(int rows, int rows_per_task, const Fn& fn) {
  const int tasks = (rows + rows_per_task - 1) / rows_per_task;
  auto task = [&](int i, int worker) {
    const int r0 = i * rows_per_task;
    fn(r0, std::min(rows, r0 + rows_per_task), worker);
  };
  if (pool_ && tasks > 1) pool_->ParallelFor(tasks, task);
  else for (int i = 0; i < tasks; ++i) task(i, 0);
}

template <typename T>
template <typename Fn>
void Gpt2Trainer<T>::ForHeads(int batch, const Fn& fn) {
  const int H = config_.n_head;
  auto task = [&](int i, int worker) { fn(i / H, i % H, worker); };
  if (pool_) pool_->ParallelFor(batch * H, task);
  else for (int i = 0; i < batch * H; ++i) task(i, 0);
}

template <typename T>
void Gpt2Trainer<T>::PackWeights(bool backward) {
  if constexpr (std::is_same_v<T, float>) {
    const Packs& pk = *packs_;
    const auto& tasks = backward ? pk.all_tasks : pk.fwd_tasks;
    auto run = [&](int i, int) {
      const typename Packs::Task& task = tasks[i];
      const typename Packs::Job& j = pk.jobs[task.job];
      cpu::PackWeightPanels(j.src, j.in, j.out, j.transposed, task.p0, task.p1, j.dst);
    };
    if (pool_) pool_->ParallelFor(static_cast<int>(tasks.size()), run);
    else for (size_t i = 0; i < tasks.size(); ++i) run(static_cast<int>(i), 0);
  } else {
    (void)backward;
  }
}

template <typename T>
void Gpt2Trainer<T>::PlainMatmul(const T* a, size_t a_row, size_t a_col, const T* b, size_t b_row, size_t b_col,
                                 int m, int k, int n, const T* bias, bool accumulate, T* d) {
  ForRows(m, 1, [&](int i0, int i1, int) {
    for (int i = i0; i < i1; ++i) {
      for (int j = 0; j < n; ++j) {
        T acc = (accumulate ? d[static_cast<size_t>(i) * n + j] : T(0)) + (bias ? bias[j] : T(0));
        for (int q = 0; q < k; ++q) acc += a[i * a_row + q * a_col] * b[q * b_row + j * b_col];
        d[static_cast<size_t>(i) * n + j] = acc;
      }
    }
  });
}

template <typename T>
void Gpt2Trainer<T>::LinearForward(const T* x, int rows, int in, int out, const T* w, const cpu::PackedWeight* wp,
                                   const T* b, T* y, bool accumulate) {
  if constexpr (std::is_same_v<T, float>) {
    (void)w;
    cpu::Matmul(pool_, x, rows, *wp, b, y, accumulate);
  } else {
    (void)wp;
    PlainMatmul(x, in, 1, w, out, 1, rows, in, out, b, accumulate, y);
  }
}

template <typename T>
void Gpt2Trainer<T>::LinearBackward(const T* x, const T* dy, int rows, int in, int out, const T* w,
                                    const cpu::PackedWeight* wtp, T* dx, T* dw, T* db) {
  if constexpr (std::is_same_v<T, float>) {
    (void)w;
    Packs& pk = *packs_;
    if (dx) cpu::Matmul(pool_, dy, rows, *wtp, nullptr, dx, /*accumulate=*/false);
    // dW (in, out) = X^T (in, rows) @ dY (rows, out): X transposed, dY packed.
    ForRows(rows, kTransposeTile * 4, [&](int r0, int r1, int) { TransposeRows(x, rows, in, r0, r1, pk.xt); });
    const int panels = Panels(out);
    auto pack = [&](int i, int) {
      const int p0 = i * kPanelsPerTask;
      cpu::PackWeightPanels(dy, rows, out, false, p0, std::min(panels, p0 + kPanelsPerTask), pk.dy_packed);
    };
    const int pack_tasks = (panels + kPanelsPerTask - 1) / kPanelsPerTask;
    if (pool_) pool_->ParallelFor(pack_tasks, pack);
    else for (int i = 0; i < pack_tasks; ++i) pack(i, 0);
    cpu::Matmul(pool_, pk.xt, in, View(pk.dy_packed, rows, out), nullptr, dw, /*accumulate=*/false);
  } else {
    (void)wtp;
    // dx(r, i) = sum_o dy(r, o) W(i, o); dW(i, o) = sum_r x(r, i) dy(r, o).
    if (dx) PlainMatmul(dy, out, 1, w, 1, out, rows, out, in, nullptr, false, dx);
    PlainMatmul(x, 1, in, dy, out, 1, in, rows, out, nullptr, false, dw);
  }
  ForRows(out, kColumnsPerTask, [&](int c0, int c1, int) { layers::ColumnSums(dy, rows, out, c0, c1, db); });
}

template <typename T>
void Gpt2Trainer<T>::LayerNormForward(const T* x, int rows, const T* w, const T* b, T* out, T* mean, T* rstd) {
  const int C = config_.n_embd;
  const T eps = static_cast<T>(config_.layer_norm_epsilon);
  ForRows(rows, kRowsPerTask, [&](int r0, int r1, int) {
    for (int r = r0; r < r1; ++r) {
      const size_t o = static_cast<size_t>(r) * C;
      layers::LayerNormRow(x + o, C, w, b, eps, out + o, mean + r, rstd + r);
    }
  });
}

template <typename T>
void Gpt2Trainer<T>::LayerNormBackward(const T* dout, const T* x, const T* mean, const T* rstd, int rows,
                                       const T* w, T* dx, T* dw, T* db) {
  const int C = config_.n_embd;
  ForRows(rows, kRowsPerTask, [&](int r0, int r1, int) {
    for (int r = r0; r < r1; ++r) {
      const size_t o = static_cast<size_t>(r) * C;
      layers::LayerNormBackwardRow(dout + o, x + o, mean[r], rstd[r], w, C, dx + o);
    }
  });
  ForRows(C, kColumnsPerTask, [&](int c0, int c1, int) {
    layers::LayerNormParamGrads(dout, x, mean, rstd, rows, C, c0, c1, dw, db);
  });
}

template <typename T>
void Gpt2Trainer<T>::AttentionForward(int batch, const T* qkv, T* att, T* atty) {
  const int C = config_.n_embd, H = config_.n_head, hd = C / H, S = shape_.seq;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  ForHeads(batch, [&](int b, int h, int worker) {
    const T* rows = qkv + static_cast<size_t>(b) * S * 3 * C;          // (S, 3C)
    T* a = att + (static_cast<size_t>(b) * H + h) * S * S;             // (S, S)
    T* out = atty + static_cast<size_t>(b) * S * C;                    // (S, C)
    if constexpr (std::is_same_v<T, float>) {
      // scores (S, S) = q @ k^T; softmax by row; out (S, hd) = P @ v.
      AttentionScratch w(packs_->attn + static_cast<size_t>(worker) * packs_->attn_floats, S, hd);
      float *q = w.q, *k = w.k, *v = w.v, *o = w.o, *packed = w.packed;
      w.Gather(rows, C, h);
      cpu::PackWeightPanels(k, hd, S, true, 0, Panels(S), packed);  // k^T: (hd, S)
      cpu::Matmul(nullptr, q, S, View(packed, hd, S), nullptr, a, false);
      for (int t = 0; t < S; ++t) layers::CausalSoftmaxRow(a + static_cast<size_t>(t) * S, t, S, scale);
      cpu::PackWeightPanels(v, S, hd, false, 0, Panels(hd), packed);  // (S, hd)
      cpu::Matmul(nullptr, a, S, View(packed, S, hd), nullptr, o, false);
      CopyRows(o, hd, out + h * hd, C, S, hd);
    } else {
      (void)worker;
      layers::AttentionForwardHead(rows, S, C, hd, h, scale, a, out);
    }
  });
}

template <typename T>
void Gpt2Trainer<T>::AttentionBackward(int batch, const T* qkv, const T* att, const T* datty, T* dqkv) {
  const int C = config_.n_embd, H = config_.n_head, hd = C / H, S = shape_.seq;
  const T scale = T(1) / std::sqrt(static_cast<T>(hd));
  ForHeads(batch, [&](int b, int h, int worker) {
    const T* rows = qkv + static_cast<size_t>(b) * S * 3 * C;  // (S, 3C)
    const T* a = att + (static_cast<size_t>(b) * H + h) * S * S;  // (S, S)
    const T* dout = datty + static_cast<size_t>(b) * S * C;    // (S, C)
    T* drows = dqkv + static_cast<size_t>(b) * S * 3 * C;      // (S, 3C)
    if constexpr (std::is_same_v<T, float>) {
      AttentionScratch w(packs_->attn + static_cast<size_t>(worker) * packs_->attn_floats, S, hd);
      float *q = w.q, *k = w.k, *v = w.v, *d = w.d, *o = w.o, *ds = w.ds, *tr = w.tr, *packed = w.packed;
      w.Gather(rows, C, h);
      CopyRows(dout + h * hd, C, d, hd, S, hd);
      // Writes o (S, hd) into column block `part` (0 q, 1 k, 2 v) of drows.
      auto scatter = [&](int part) { CopyRows(o, hd, drows + part * C + h * hd, 3 * static_cast<size_t>(C), S, hd); };
      // dP (S, S) = dout @ v^T, then dS = softmax'(dP) in place.
      cpu::PackWeightPanels(v, hd, S, true, 0, Panels(S), packed);
      cpu::Matmul(nullptr, d, S, View(packed, hd, S), nullptr, ds, false);
      for (int t = 0; t < S; ++t) {
        layers::CausalSoftmaxBackwardRow(a + static_cast<size_t>(t) * S, ds + static_cast<size_t>(t) * S, t, S, scale);
      }
      // dv = P^T @ dout
      TransposeRows(a, S, S, 0, S, tr);
      cpu::PackWeightPanels(d, S, hd, false, 0, Panels(hd), packed);
      cpu::Matmul(nullptr, tr, S, View(packed, S, hd), nullptr, o, false);
      scatter(2);
      // dq = dS @ k
      cpu::PackWeightPanels(k, S, hd, false, 0, Panels(hd), packed);
      cpu::Matmul(nullptr, ds, S, View(packed, S, hd), nullptr, o, false);
      scatter(0);
      // dk = dS^T @ q
      TransposeRows(ds, S, S, 0, S, tr);
      cpu::PackWeightPanels(q, S, hd, false, 0, Panels(hd), packed);
      cpu::Matmul(nullptr, tr, S, View(packed, S, hd), nullptr, o, false);
      scatter(1);
    } else {
      for (int t = 0; t < S; ++t) {
        T* r = drows + static_cast<size_t>(t) * 3 * C + h * hd;
        for (int part = 0; part < 3; ++part)
          for (int j = 0; j < hd; ++j) r[part * C + j] = T(0);
      }
      T* datt = datt_ + static_cast<size_t>(worker) * S;  // (S)
      layers::AttentionBackwardHead(rows, a, dout, S, C, hd, h, scale, datt, drows);
    }
  });
}

template <typename T>
void Gpt2Trainer<T>::Forward(const int32_t* tokens, int rows) {
  const int C = config_.n_embd, S = shape_.seq, batch = rows / S;
  ForRows(rows, kRowsPerTask, [&](int r0, int r1, int) {
    for (int r = r0; r < r1; ++r) {
      const T* te = p_.wte + static_cast<size_t>(tokens[r]) * C;
      const T* pe = p_.wpe + static_cast<size_t>(r % S) * C;
      T* x = encoded_ + static_cast<size_t>(r) * C;
      for (int i = 0; i < C; ++i) x[i] = te[i] + pe[i];
    }
  });
  const size_t NC = static_cast<size_t>(rows) * C;
  const T* in = encoded_;
  for (int l = 0; l < config_.n_layer; ++l) {
    const LayerParams<T>& w = p_.layers[l];
    const LayerActs& a = acts_[l];
    const typename Packs::Layer* pl = packs_ ? &packs_->fwd[l] : nullptr;
    LayerNormForward(in, rows, w.ln_1_w, w.ln_1_b, a.ln1, a.ln1_mean, a.ln1_rstd);
    LinearForward(a.ln1, rows, C, 3 * C, w.attn_w, pl ? &pl->attn : nullptr, w.attn_b, a.qkv, false);
    AttentionForward(batch, a.qkv, a.att, a.atty);
    std::memcpy(a.res2, in, sizeof(T) * NC);
    LinearForward(a.atty, rows, C, C, w.attn_proj_w, pl ? &pl->attn_proj : nullptr, w.attn_proj_b, a.res2, true);
    LayerNormForward(a.res2, rows, w.ln_2_w, w.ln_2_b, a.ln2, a.ln2_mean, a.ln2_rstd);
    LinearForward(a.ln2, rows, C, 4 * C, w.fc_w, pl ? &pl->fc : nullptr, w.fc_b, a.fch, false);
    ForRows(rows, kRowsPerTask, [&](int r0, int r1, int) {
      for (size_t i = static_cast<size_t>(r0) * 4 * C; i < static_cast<size_t>(r1) * 4 * C; ++i) {
        a.fch_gelu[i] = layers::Gelu(a.fch[i]);
      }
    });
    std::memcpy(a.res3, a.res2, sizeof(T) * NC);
    LinearForward(a.fch_gelu, rows, 4 * C, C, w.proj_w, pl ? &pl->proj : nullptr, w.proj_b, a.res3, true);
    in = a.res3;
  }
  LayerNormForward(in, rows, p_.ln_f_w, p_.ln_f_b, lnf_, lnf_mean_, lnf_rstd_);
}

// The tied LM head and the cross-entropy, head_rows rows at a time; with
// `grad`, also dlnf (into dln_) and wte's gradient from the head.
template <typename T>
double Gpt2Trainer<T>::Head(const int32_t* targets, int rows, bool grad) {
  const int C = config_.n_embd, V = config_.vocab_size;
  const int chunk = std::min(shape_.head_rows, rows);
  const T dscale = T(1) / static_cast<T>(rows);
  for (int r0 = 0; r0 < rows; r0 += chunk) {
    const int rc = std::min(chunk, rows - r0);
    const T* x = lnf_ + static_cast<size_t>(r0) * C;  // (rc, C)
    if constexpr (std::is_same_v<T, float>) {
      cpu::Matmul(pool_, x, rc, packs_->head, nullptr, logits_, false);
    } else {
      // logits(i, v) = sum_c x(i, c) wte(v, c)
      PlainMatmul(x, C, 1, p_.wte, 1, C, rc, C, V, nullptr, false, logits_);
    }
    ForRows(rc, 1, [&](int i0, int i1, int) {
      for (int i = i0; i < i1; ++i) {
        T* row = logits_ + static_cast<size_t>(i) * V;
        losses_[r0 + i] = layers::CrossEntropyRow(row, V, targets[r0 + i], dscale, grad);
        if constexpr (std::is_same_v<T, float>) {
          // The row's gradient also goes, while it is in cache, into row i
          // of dlogits packed as a (rc, V) matmul weight (wte's gradient
          // below): panel p's 16 columns at (p * rc + i) * 16.
          if (grad) PackRow(row, V, i, rc, packs_->dy_packed);
        }
      }
    });
    if (!grad) continue;
    T* dx = dln_ + static_cast<size_t>(r0) * C;  // (rc, C)
    if constexpr (std::is_same_v<T, float>) {
      Packs& pk = *packs_;
      cpu::Matmul(pool_, logits_, rc, pk.head_bwd, nullptr, dx, false);
      // wte^T's gradient (C, V) += lnf^T (C, rc) @ dlogits (rc, V).
      TransposeRows(x, rc, C, 0, rc, pk.xt);
      cpu::Matmul(pool_, pk.xt, C, View(pk.dy_packed, rc, V), nullptr, pk.dwte_t, /*accumulate=*/r0 > 0);
    } else {
      // dx(i, c) = sum_v dlogits(i, v) wte(v, c); wte's gradient(v, c) +=
      // sum_i dlogits(i, v) x(i, c).
      PlainMatmul(logits_, V, 1, p_.wte, C, 1, rc, V, C, nullptr, false, dx);
      PlainMatmul(logits_, 1, V, x, C, 1, V, rc, C, nullptr, true, g_.wte);
    }
  }
  if constexpr (std::is_same_v<T, float>) {
    if (grad) {
      // wte's gradient (V, C) = the head's, transposed (the embedding's
      // rows are added by Backward).
      ForRows(C, kTransposeTile, [&](int c0, int c1, int) { TransposeRows(packs_->dwte_t, C, V, c0, c1, g_.wte); });
    }
  }
  double total = 0;
  for (int r = 0; r < rows; ++r) total += static_cast<double>(losses_[r]);
  return total / rows;
}

template <typename T>
void Gpt2Trainer<T>::Backward(const int32_t* tokens, int rows) {
  const int C = config_.n_embd, S = shape_.seq, batch = rows / S;
  const size_t NC = static_cast<size_t>(rows) * C;
  const T* last = config_.n_layer > 0 ? acts_.back().res3 : encoded_;
  std::fill(dres_, dres_ + NC, T(0));
  LayerNormBackward(dln_, last, lnf_mean_, lnf_rstd_, rows, p_.ln_f_w, dres_, g_.ln_f_w, g_.ln_f_b);
  for (int l = config_.n_layer - 1; l >= 0; --l) {
    const LayerParams<T>& w = p_.layers[l];
    const LayerParams<T>& g = g_.layers[l];
    const LayerActs& a = acts_[l];
    const T* in = l == 0 ? encoded_ : acts_[l - 1].res3;
    const typename Packs::Layer* pl = packs_ ? &packs_->bwd[l] : nullptr;
    // MLP: res3 = res2 + proj(gelu(fc(ln2(res2)))).
    LinearBackward(a.fch_gelu, dres_, rows, 4 * C, C, w.proj_w, pl ? &pl->proj : nullptr, dfch_, g.proj_w, g.proj_b);
    ForRows(rows, kRowsPerTask, [&](int r0, int r1, int) {
      for (size_t i = static_cast<size_t>(r0) * 4 * C; i < static_cast<size_t>(r1) * 4 * C; ++i) {
        dfch_[i] *= layers::GeluGrad(a.fch[i]);
      }
    });
    LinearBackward(a.ln2, dfch_, rows, C, 4 * C, w.fc_w, pl ? &pl->fc : nullptr, dln_, g.fc_w, g.fc_b);
    LayerNormBackward(dln_, a.res2, a.ln2_mean, a.ln2_rstd, rows, w.ln_2_w, dres_, g.ln_2_w, g.ln_2_b);
    // Attention: res2 = in + attn_proj(attention(qkv(ln1(in)))).
    LinearBackward(a.atty, dres_, rows, C, C, w.attn_proj_w, pl ? &pl->attn_proj : nullptr, datty_, g.attn_proj_w,
                   g.attn_proj_b);
    AttentionBackward(batch, a.qkv, a.att, datty_, dqkv_);
    LinearBackward(a.ln1, dqkv_, rows, C, 3 * C, w.attn_w, pl ? &pl->attn : nullptr, dln_, g.attn_w, g.attn_b);
    LayerNormBackward(dln_, in, a.ln1_mean, a.ln1_rstd, rows, w.ln_1_w, dres_, g.ln_1_w, g.ln_1_b);
  }
  // Embeddings: each row's gradient added to its token's and position's
  // rows, in row order (per column range, so in parallel).
  ForRows(C, kColumnsPerTask, [&](int c0, int c1, int) {
    for (int r = 0; r < rows; ++r) {
      const T* d = dres_ + static_cast<size_t>(r) * C;
      T* te = g_.wte + static_cast<size_t>(tokens[r]) * C;
      T* pe = g_.wpe + static_cast<size_t>(r % S) * C;
      for (int c = c0; c < c1; ++c) {
        te[c] += d[c];
        pe[c] += d[c];
      }
    }
  });
}

template <typename T>
Status Gpt2Trainer<T>::Run(const int32_t* tokens, const int32_t* targets, int batch, bool grad, double* loss) {
  if (tokens == nullptr || targets == nullptr || batch < 1 || batch > shape_.max_batch) {
    return Status::Error("Gpt2Trainer: batch of " + Str(batch) + " windows outside [1, max_batch=" +
                         Str(shape_.max_batch) + "] (or null arguments)");
  }
  const int rows = batch * shape_.seq;
  for (int r = 0; r < rows; ++r) {
    if (tokens[r] < 0 || tokens[r] >= config_.vocab_size || targets[r] < 0 || targets[r] >= config_.vocab_size) {
      return Status::Error("Gpt2Trainer: position " + Str(r) + " has token " + Str(tokens[r]) + " and target " +
                           Str(targets[r]) + ", outside [0, " + Str(config_.vocab_size) + ")");
    }
  }
  if (grad) std::fill(grads_, grads_ + num_params_, T(0));
  PackWeights(/*backward=*/grad);
  Forward(tokens, rows);
  *loss = Head(targets, rows, grad);
  if (grad) Backward(tokens, rows);
  return Status::Ok();
}

template <typename T>
Status Gpt2Trainer<T>::Loss(const int32_t* tokens, const int32_t* targets, int batch, double* loss) {
  return Run(tokens, targets, batch, false, loss);
}

template <typename T>
Status Gpt2Trainer<T>::LossAndGradients(const int32_t* tokens, const int32_t* targets, int batch, double* loss) {
  return Run(tokens, targets, batch, true, loss);
}

template class Gpt2Trainer<float>;
template class Gpt2Trainer<double>;

}  // namespace tw::train

// The paged attention kernels (kernels/attention.h) on the GPU: AppendKv,
// DecodeAttention and PrefillAttention against a double-precision CPU
// reference and, bit for bit, against the CPU emulation of their arithmetic
// (kernels::EmulateAttentionRow); bitwise batch invariance; prefill equal to
// token-by-token decode; several prompts in one pass equal to each alone.
//
// Every pool starts full of stale garbage (NaN, +-1e30 and -3e38, large
// random values) in the unused blocks, in the slots past each sequence's
// length and in the other sequences' blocks; block ids are shuffled (never
// contiguous) and block-table entries past a sequence's blocks are invalid
// or foreign ids. Outputs are poisoned (NaN) before each launch. Pools have
// two layers and the tests use layer 1 (so the layer offset is exercised).
//
// Tolerances (GPU vs double): the kernels' arithmetic is the emulation's
// (checked bitwise here), which tests/cuda/attention_plan_test.cc holds
// within 2e-7 + 1e-6 relative of double for |q| <= 1 and 2e-6 + 1e-5 for
// |q| <= 40 (measured <= 2e-8 and <= 6e-7). Here 5x those, so only real
// errors fail: one key lost or added moves an output by ~1e-4 even at
// 1024 keys.
#include "kernels/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention_plan.h"
#include "kernels/device.h"
#include "gpu/gpu_test_util.h"
#include "kernels/dev/cpu_reference.h"

namespace tw::kernels {
namespace {

using kernels::KvShape;
using ::tw::testing::AllClose;
using ::tw::testing::DeviceVector;

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int kChunk = kernels::kAttnChunkTokens;
constexpr int kLayer = 1;
constexpr float kAtol = 1e-6f, kRtol = 5e-6f;          // |q| <= 1
constexpr float kAtolWide = 1e-5f, kRtolWide = 5e-5f;  // |q| <= 40

float NonZero(std::mt19937* gen, float lo, float hi) {
  std::uniform_real_distribution<float> d(lo, hi);
  float x;
  do x = d(*gen);
  while (x == 0.0f);
  return x;
}

// A host mirror of a device pool: garbage everywhere, sequences in shuffled
// blocks, and the K/V each sequence should hold.
class PagedCache {
 public:
  PagedCache(const KvShape& kv, uint64_t seed) : kv_(kv), gen_(static_cast<uint32_t>(seed)) {
    host_.resize(static_cast<size_t>(kv.TotalFloats()));
    std::uniform_real_distribution<float> u(-100.0f, 100.0f);
    for (size_t i = 0; i < host_.size(); ++i) {
      switch (i % 4) {
        case 0: host_[i] = kNaN; break;
        case 1: host_[i] = (i & 8) ? 1e30f : -3e38f; break;
        default: host_[i] = u(gen_); break;
      }
    }
    ids_.resize(kv.num_blocks);
    std::iota(ids_.begin(), ids_.end(), 0);
    std::shuffle(ids_.begin(), ids_.end(), gen_);
  }

  const KvShape& kv() const { return kv_; }
  const std::vector<float>& host() const { return host_; }
  std::mt19937* gen() { return &gen_; }

  // A new sequence with room for `capacity` tokens; returns its index.
  int AddSequence(int capacity) {
    const int nb = (capacity + kv_.block_size - 1) / kv_.block_size;
    EXPECT_LE(next_ + nb, static_cast<int>(ids_.size())) << "test pool too small";
    seqs_.emplace_back(ids_.begin() + next_, ids_.begin() + std::min<size_t>(ids_.size(), next_ + nb));
    next_ += nb;
    return static_cast<int>(seqs_.size()) - 1;
  }
  const std::vector<int32_t>& blocks(int seq) const { return seqs_[seq]; }

  // (head_dim) floats of token t of seq: layer, K (0) or V (1), head.
  size_t Index(int seq, int t, int layer, int which, int head) const {
    const int blk = seqs_[seq][t / kv_.block_size];
    return static_cast<size_t>(kv_.Offset(blk, layer, which, head, t % kv_.block_size, 0));
  }
  float* At(int seq, int t, int layer, int which, int head) { return &host_[Index(seq, t, layer, which, head)]; }
  const float* At(int seq, int t, int layer, int which, int head) const {
    return &host_[Index(seq, t, layer, which, head)];
  }

  // Random K/V in [-1, 1) for tokens [from, to) of seq, every layer and head.
  void WriteTokens(int seq, int from, int to) {
    for (int t = from; t < to; ++t)
      for (int l = 0; l < kv_.n_layer; ++l)
        for (int w = 0; w < 2; ++w)
          for (int h = 0; h < kv_.n_head; ++h) {
            float* p = At(seq, t, l, w, h);
            for (int d = 0; d < kv_.head_dim; ++d) p[d] = NonZero(&gen_, -1.0f, 1.0f);
          }
  }

  // What AppendKv must do for one row of qkv (3C) at (seq, pos) of `layer`.
  void Append(const float* qkv_row, int seq, int pos, int layer) {
    const int hd = kv_.head_dim, C = kv_.n_head * hd;
    for (int w = 0; w < 2; ++w)
      for (int h = 0; h < kv_.n_head; ++h) std::memcpy(At(seq, pos, layer, w, h), qkv_row + C + w * C + h * hd, sizeof(float) * hd);
  }

  // (len, head_dim): K (which 0) or V (1) of tokens [0, len) of seq.
  std::vector<float> Gather(int seq, int layer, int which, int head, int len) const {
    const int hd = kv_.head_dim;
    std::vector<float> out(static_cast<size_t>(len) * hd);
    for (int t = 0; t < len; ++t) std::memcpy(&out[static_cast<size_t>(t) * hd], At(seq, t, layer, which, head), sizeof(float) * hd);
    return out;
  }

  // Block tables (seqs.size(), stride) for the given sequences, in order;
  // the entries past each sequence's blocks are an invalid id (-1 or
  // >= num_blocks) or another block's id (never to be read).
  std::vector<int32_t> Tables(const std::vector<int>& seqs, int stride) const {
    std::vector<int32_t> t(seqs.size() * static_cast<size_t>(stride));
    for (size_t i = 0; i < seqs.size(); ++i) {
      const std::vector<int32_t>& b = seqs_[seqs[i]];
      EXPECT_LE(static_cast<int>(b.size()), stride);
      for (int j = 0; j < stride; ++j) {
        int32_t v;
        if (j < static_cast<int>(b.size())) v = b[j];
        else if (j % 3 == 0) v = -1;
        else if (j % 3 == 1) v = kv_.num_blocks + 12345;
        else v = ids_[(j * 7919) % ids_.size()];
        t[i * stride + j] = v;
      }
    }
    return t;
  }
  int MaxBlocks() const {
    size_t m = 1;
    for (const auto& s : seqs_) m = std::max(m, s.size());
    return static_cast<int>(m);
  }

 private:
  KvShape kv_;
  std::mt19937 gen_;
  std::vector<float> host_;
  std::vector<int32_t> ids_;  // shuffled block ids, handed out in order
  int next_ = 0;
  std::vector<std::vector<int32_t>> seqs_;
};

// softmax(q . K^T / sqrt(hd)) V in double, rounded to float: (hd).
std::vector<float> Reference(const float* q, const std::vector<float>& k, const std::vector<float>& v, int len, int hd) {
  std::vector<float> out(hd);
  dev::AttentionRowRef(
      q, len, hd, [&](int t, int d) { return k[static_cast<size_t>(t) * hd + d]; },
      [&](int t, int d) { return v[static_cast<size_t>(t) * hd + d]; }, out.data());
  return out;
}

::testing::AssertionResult SameBits(const float* got, const float* want, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu of %zu: got %.9g, want %.9g", i, n, got[i], want[i]);
      return ::testing::AssertionFailure() << buf;
    }
  }
  return ::testing::AssertionSuccess();
}

// A planned workspace: partials poisoned (NaN), tickets zeroed.
struct Workspace {
  kernels::AttentionPlan plan;
  kernels::DeviceBuffer buf;
  AttentionWorkspace ws;
};
void MakeWorkspace(int max_rows, int max_context, int n_head, int hd, Workspace* w) {
  TW_ASSERT_OK(kernels::MakeAttentionPlan(max_rows, max_context, n_head, hd, &w->plan));
  TW_ASSERT_OK(w->buf.Allocate(w->plan.workspace_bytes));
  TW_ASSERT_OK(kernels::Memset(w->buf.get(), 0xFF, w->plan.workspace_bytes));
  TW_ASSERT_OK(kernels::Memset(static_cast<char*>(w->buf.get()) + w->plan.tickets_offset, 0, w->plan.tickets * 4));
  w->ws = CarveAttentionWorkspace(w->buf.get(), w->plan);
}

std::vector<float> RandomQkv(int rows, int C, float q_range, std::mt19937* gen) {
  std::vector<float> qkv(static_cast<size_t>(rows) * 3 * C);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < 3 * C; ++i) {
      const float range = i < C ? q_range : 1.0f;
      qkv[static_cast<size_t>(r) * 3 * C + i] = NonZero(gen, -range, range);
    }
  return qkv;
}

// Checks att (rows, C) against the reference (tolerance) and the emulation
// (bits): row r is table seqs[r] at length lens[r].
void CheckRows(const PagedCache& cache, const std::vector<float>& qkv, const std::vector<int>& seqs,
               const std::vector<int>& lens, const std::vector<float>& att, int max_chunks, float atol, float rtol,
               const std::string& what) {
  const KvShape& kv = cache.kv();
  const int hd = kv.head_dim, C = kv.n_head * hd;
  for (size_t r = 0; r < seqs.size(); ++r) {
    for (int h = 0; h < kv.n_head; ++h) {
      const float* q = &qkv[r * 3 * C + h * hd];
      const std::vector<float> k = cache.Gather(seqs[r], kLayer, 0, h, lens[r]);
      const std::vector<float> v = cache.Gather(seqs[r], kLayer, 1, h, lens[r]);
      const std::vector<float> want = Reference(q, k, v, lens[r], hd);
      std::vector<float> emul(hd);
      TW_ASSERT_OK(kernels::EmulateAttentionRow(q, k.data(), v.data(), lens[r], hd, kernels::AttnScale(hd), max_chunks,
                                             emul.data()));
      const std::vector<float> got(att.begin() + r * C + h * hd, att.begin() + r * C + (h + 1) * hd);
      ASSERT_TRUE(AllClose(got, want, atol, rtol)) << what << ": row " << r << " (len " << lens[r] << ") head " << h;
      ASSERT_TRUE(SameBits(got.data(), emul.data(), hd))
          << what << ": row " << r << " (len " << lens[r] << ") head " << h << " differs from the CPU emulation";
    }
  }
}

// One batch of decode rows, each sequence at its length: appends row r's
// own K/V at lens[r] - 1 (AppendKv, mirrored in `cache`), runs
// DecodeAttention and checks every (row, head).
void CheckDecodeBatch(int n_head, int hd, int bs, const std::vector<int>& lens, int max_context, float q_range,
                      uint64_t seed) {
  const int rows = static_cast<int>(lens.size());
  int blocks = 0;
  for (int len : lens) blocks += (len + bs - 1) / bs;
  const KvShape kv{2, n_head, hd, bs, blocks + 2 * rows + 8};  // spare blocks stay garbage
  const int C = n_head * hd;
  PagedCache cache(kv, seed);
  std::vector<int> seqs;
  for (int len : lens) {
    const int s = cache.AddSequence(len);
    cache.WriteTokens(s, 0, len - 1);
    seqs.push_back(s);
  }
  const std::vector<float> qkv = RandomQkv(rows, C, q_range, cache.gen());
  const int stride = cache.MaxBlocks() + 2;
  const std::vector<int32_t> tables = cache.Tables(seqs, stride);
  std::vector<int32_t> pos(rows), len32(rows);
  for (int r = 0; r < rows; ++r) {
    pos[r] = lens[r] - 1;
    len32[r] = lens[r];
  }
  DeviceVector<float> pool(cache.host()), qkv_d(qkv), att(static_cast<size_t>(rows) * C);
  DeviceVector<int32_t> tables_d(tables), pos_d(pos), lens_d(len32);
  const BlockTables bt{tables_d.get(), rows, stride};
  for (int r = 0; r < rows; ++r) cache.Append(&qkv[static_cast<size_t>(r) * 3 * C], seqs[r], pos[r], kLayer);
  Workspace w;
  ASSERT_NO_FATAL_FAILURE(MakeWorkspace(rows, max_context, n_head, hd, &w));
  TW_ASSERT_OK(AppendKv(qkv_d.get(), rows, nullptr, pos_d.get(), bt, kv, kLayer, pool.get(), nullptr));
  TW_ASSERT_OK(DecodeAttention(qkv_d.get(), rows, lens_d.get(), bt, kv, kLayer, pool.get(), w.ws, att.get(), nullptr));
  const std::string what = "hd " + std::to_string(hd) + " heads " + std::to_string(n_head) + " block_size " +
                           std::to_string(bs) + " |q| <= " + std::to_string(q_range);
  const bool wide = q_range > 1.0f;
  CheckRows(cache, qkv, seqs, lens, att.ToHost(), w.plan.max_chunks, wide ? kAtolWide : kAtol,
            wide ? kRtolWide : kRtol, what);
  // The pool now holds exactly the mirror (the appends went where they should).
  const std::vector<float> pool_after = pool.ToHost();
  EXPECT_TRUE(SameBits(pool_after.data(), cache.host().data(), pool_after.size())) << what << ": pool after AppendKv";
}

TEST(AttentionTest, AppendKvWritesEachRowsKeysAndValuesToItsSlotAndNothingElse) {
  TW_REQUIRE_GPU();
  for (int hd : {64, 16}) {
    for (int bs : {1, 16, 32}) {
      const int n_head = hd == 64 ? 12 : 4, C = n_head * hd;
      const KvShape kv{2, n_head, hd, bs, 64 / bs + 40};
      PagedCache cache(kv, 11 + bs);
      const int a = cache.AddSequence(40), b = cache.AddSequence(3);
      // Rows: a prefill of a's tokens 30..39 beside b's tokens 0..2, interleaved.
      std::vector<int32_t> row_table, pos;
      for (int i = 0; i < 10; ++i) {
        row_table.push_back(0);
        pos.push_back(30 + i);
        if (i < 3) {
          row_table.push_back(1);
          pos.push_back(i);
        }
      }
      const int rows = static_cast<int>(pos.size());
      const std::vector<float> qkv = RandomQkv(rows, C, 1.0f, cache.gen());
      const int stride = cache.MaxBlocks() + 1;
      DeviceVector<float> pool(cache.host()), qkv_d(qkv);
      DeviceVector<int32_t> tables_d(cache.Tables({a, b}, stride)), rt_d(row_table), pos_d(pos);
      for (int layer : {0, 1}) {
        for (int r = 0; r < rows; ++r) cache.Append(&qkv[static_cast<size_t>(r) * 3 * C], row_table[r] == 0 ? a : b, pos[r], layer);
        TW_ASSERT_OK(AppendKv(qkv_d.get(), rows, rt_d.get(), pos_d.get(), BlockTables{tables_d.get(), 2, stride}, kv,
                              layer, pool.get(), nullptr));
        const std::vector<float> got = pool.ToHost();
        ASSERT_TRUE(SameBits(got.data(), cache.host().data(), got.size()))
            << "hd " << hd << " block_size " << bs << " layer " << layer;
      }
    }
  }
}

TEST(AttentionTest, DecodeAttentionMatchesCpuReferenceAtEveryContextLength) {
  TW_REQUIRE_GPU();
  const std::vector<int> lens = {1, 15, 16, 17, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk, 1000, 1024};
  for (int bs : {1, 16, 32}) {
    SCOPED_TRACE("GPT-2 heads, block_size " + std::to_string(bs));
    ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(12, 64, bs, lens, 1024, 1.0f, 100 + bs));
  }
  for (int bs : {1, 16, 32}) {
    SCOPED_TRACE("head_dim 16, block_size " + std::to_string(bs));
    ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(4, 16, bs, lens, 1024, 1.0f, 200 + bs));
  }
  // The tiny golden model: n_ctx 128, one chunk.
  ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(4, 16, 16, {1, 15, 16, 17, 127, 128}, 128, 1.0f, 300));
  // Larger blocks the engine allows.
  ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(12, 64, 64, {1, 63, 64, 65, 129, 700}, 1024, 1.0f, 400));
  ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(12, 64, 256, {1, 255, 256, 257, 1024}, 1024, 1.0f, 500));
  ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(12, 64, 8, {1, 7, 8, 9, 300}, 1024, 1.0f, 600));
}

// Scores up to ~150: exp overflows unless each chunk subtracts its max, and
// chunks' maxima differ by tens (the merge's weights span many decades).
TEST(AttentionTest, DecodeAttentionIsStableWithLargeScores) {
  TW_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(12, 64, 16, {1, kChunk, kChunk + 1, 1000, 1024}, 1024, 40.0f, 700));
  ASSERT_NO_FATAL_FAILURE(CheckDecodeBatch(4, 16, 16, {1, 17, 128}, 128, 40.0f, 701));
}

// Runs DecodeAttention for rows that read tables rows 0..n-1 = the given
// sequences at their full lengths (no append); returns att (n, C).
std::vector<float> DecodeRows(PagedCache* cache, const DeviceVector<float>& pool, const std::vector<float>& qkv_of_seq,
                              const std::vector<int>& seqs, const std::vector<int>& len_of_seq, int stride,
                              const Workspace& w) {
  const KvShape& kv = cache->kv();
  const int C = kv.n_head * kv.head_dim, n = static_cast<int>(seqs.size());
  std::vector<float> qkv(static_cast<size_t>(n) * 3 * C);
  std::vector<int32_t> lens(n);
  for (int i = 0; i < n; ++i) {
    std::copy_n(&qkv_of_seq[static_cast<size_t>(seqs[i]) * 3 * C], 3 * C, &qkv[static_cast<size_t>(i) * 3 * C]);
    lens[i] = len_of_seq[seqs[i]];
  }
  DeviceVector<float> qkv_d(qkv), att(static_cast<size_t>(n) * C);
  DeviceVector<int32_t> tables_d(cache->Tables(seqs, stride)), lens_d(lens);
  Status s = DecodeAttention(qkv_d.get(), n, lens_d.get(), BlockTables{tables_d.get(), n, stride}, kv, kLayer,
                             pool.get(), w.ws, att.get(), nullptr);
  EXPECT_TRUE(s.ok()) << s.message();
  return att.ToHost();
}

TEST(AttentionTest, DecodeRowBitsDoNotDependOnTheBatch) {
  TW_REQUIRE_GPU();
  const std::vector<int> lens = {1,   2,   15,  16,  17,  100, 127, 128, 129, 200, 255, 256, 257, 300, 383, 384,
                                 385, 500, 511, 512, 513, 640, 700, 767, 768, 769, 895, 896, 900, 1000, 1023, 1024};
  const int n_seq = static_cast<int>(lens.size()), hd = 64, n_head = 12, C = n_head * hd, bs = 16;
  int blocks = 0;
  for (int len : lens) blocks += (len + bs - 1) / bs;
  const KvShape kv{2, n_head, hd, bs, blocks + 10};
  PagedCache cache(kv, 42);
  for (int len : lens) cache.WriteTokens(cache.AddSequence(len), 0, len);
  const std::vector<float> qkv = RandomQkv(n_seq, C, 1.0f, cache.gen());
  const int stride = cache.MaxBlocks();
  DeviceVector<float> pool(cache.host());
  Workspace w;
  ASSERT_NO_FATAL_FAILURE(MakeWorkspace(32, 1024, n_head, hd, &w));
  std::vector<std::vector<float>> alone(n_seq);
  for (int s = 0; s < n_seq; ++s) alone[s] = DecodeRows(&cache, pool, qkv, {s}, lens, stride, w);
  std::mt19937 gen(5);
  for (int batch : {2, 7, 32}) {
    for (int trial = 0; trial < 3; ++trial) {
      std::vector<int> order(n_seq);
      std::iota(order.begin(), order.end(), 0);
      std::shuffle(order.begin(), order.end(), gen);
      order.resize(batch);
      const std::vector<float> att = DecodeRows(&cache, pool, qkv, order, lens, stride, w);
      for (int i = 0; i < batch; ++i) {
        ASSERT_TRUE(SameBits(&att[static_cast<size_t>(i) * C], alone[order[i]].data(), C))
            << "sequence " << order[i] << " (len " << lens[order[i]] << ") at row " << i << " of a batch of " << batch;
      }
    }
  }
  // And every row is right.
  std::vector<int> all(n_seq);
  std::iota(all.begin(), all.end(), 0);
  const std::vector<float> att = DecodeRows(&cache, pool, qkv, all, lens, stride, w);
  CheckRows(cache, qkv, all, lens, att, w.plan.max_chunks, kAtol, kRtol, "batch of 32");
  // Run to run: the same bits again, and the merge tickets are back to 0.
  const std::vector<float> again = DecodeRows(&cache, pool, qkv, all, lens, stride, w);
  EXPECT_TRUE(SameBits(again.data(), att.data(), att.size())) << "second run";
  std::vector<int32_t> tickets(w.plan.tickets, -1);
  TW_ASSERT_OK(kernels::CopyToHost(tickets.data(), w.ws.tickets, tickets.size() * 4));
  for (size_t i = 0; i < tickets.size(); ++i) ASSERT_EQ(tickets[i], 0) << "ticket " << i;
}

// Prefill of one prompt (n rows, positions 0..n-1) on a fresh copy of the
// pool: appends every row, then one PrefillAttention per pass of `passes`
// rows each. Returns att (n, C).
std::vector<float> PrefillPasses(const PagedCache& cache, const std::vector<float>& qkv, int n,
                                 const std::vector<int>& passes, int seq, int stride, const Workspace& w,
                                 std::vector<float>* pool_out = nullptr) {
  const KvShape& kv = cache.kv();
  const int C = kv.n_head * kv.head_dim;
  DeviceVector<float> pool(cache.host()), qkv_d(qkv), att(static_cast<size_t>(n) * C);
  std::vector<int32_t> pos(n), zeros(n, 0);
  std::iota(pos.begin(), pos.end(), 0);
  DeviceVector<int32_t> tables_d(cache.Tables({seq}, stride)), pos_d(pos), rt_d(zeros);
  const BlockTables bt{tables_d.get(), 1, stride};
  int start = 0;
  for (int rows : passes) {
    const float* q = qkv_d.get() + static_cast<size_t>(start) * 3 * C;
    Status s = AppendKv(q, rows, rt_d.get(), pos_d.get() + start, bt, kv, kLayer, pool.get(), nullptr);
    EXPECT_TRUE(s.ok()) << s.message();
    s = PrefillAttention(q, rows, rt_d.get(), pos_d.get() + start, bt, kv, kLayer, pool.get(), w.ws,
                         att.get() + static_cast<size_t>(start) * C, nullptr);
    EXPECT_TRUE(s.ok()) << s.message();
    start += rows;
  }
  EXPECT_EQ(start, n);
  if (pool_out) *pool_out = pool.ToHost();
  return att.ToHost();
}

TEST(AttentionTest, PrefillOfAPromptEqualsTokenByTokenDecodeBitwise) {
  TW_REQUIRE_GPU();
  struct Case {
    int n_head, hd, bs, n, max_context;
    std::vector<int> chunked;  // the same prompt in several passes
  };
  const std::vector<Case> cases = {
      {12, 64, 16, 300, 1024, {100, 150, 50}},
      {12, 64, 1, 2 * kChunk + 1, 1024, {1, kChunk, kChunk}},
      {4, 16, 16, 128, 128, {17, 111}},
  };
  for (const Case& k : cases) {
    SCOPED_TRACE("hd " + std::to_string(k.hd) + " block_size " + std::to_string(k.bs) + " prompt " + std::to_string(k.n));
    const KvShape kv{2, k.n_head, k.hd, k.bs, (k.n + k.bs - 1) / k.bs + 6};
    const int C = k.n_head * k.hd;
    PagedCache cache(kv, 77 + k.bs);
    const int seq = cache.AddSequence(k.n);
    const std::vector<float> qkv = RandomQkv(k.n, C, 1.0f, cache.gen());
    const int stride = cache.MaxBlocks() + 1;
    Workspace w;
    ASSERT_NO_FATAL_FAILURE(MakeWorkspace(k.n, k.max_context, k.n_head, k.hd, &w));
    // A: one pass.
    std::vector<float> pool_a;
    const std::vector<float> att_a = PrefillPasses(cache, qkv, k.n, {k.n}, seq, stride, w, &pool_a);
    // B: token by token, each step appending its row then decoding; the
    // later positions still hold garbage while earlier ones attend.
    DeviceVector<float> pool(cache.host()), qkv_d(qkv), att_b(static_cast<size_t>(k.n) * C);
    std::vector<int32_t> pos(k.n), lens(k.n);
    std::iota(pos.begin(), pos.end(), 0);
    std::iota(lens.begin(), lens.end(), 1);
    DeviceVector<int32_t> tables_d(cache.Tables({seq}, stride)), pos_d(pos), lens_d(lens);
    const BlockTables bt{tables_d.get(), 1, stride};
    for (int p = 0; p < k.n; ++p) {
      const float* q = qkv_d.get() + static_cast<size_t>(p) * 3 * C;
      TW_ASSERT_OK(AppendKv(q, 1, nullptr, pos_d.get() + p, bt, kv, kLayer, pool.get(), nullptr));
      TW_ASSERT_OK(DecodeAttention(q, 1, lens_d.get() + p, bt, kv, kLayer, pool.get(), w.ws,
                                   att_b.get() + static_cast<size_t>(p) * C, nullptr));
    }
    const std::vector<float> got_b = att_b.ToHost();
    for (int p = 0; p < k.n; ++p) {
      ASSERT_TRUE(SameBits(&att_a[static_cast<size_t>(p) * C], &got_b[static_cast<size_t>(p) * C], C))
          << "position " << p << ": prefill vs decode";
    }
    // C: the prompt in several passes.
    const std::vector<float> att_c = PrefillPasses(cache, qkv, k.n, k.chunked, seq, stride, w);
    ASSERT_TRUE(SameBits(att_c.data(), att_a.data(), att_a.size())) << "chunked prefill vs one pass";
    // And right: every position against the reference and the emulation.
    for (int p = 0; p < k.n; ++p) cache.Append(&qkv[static_cast<size_t>(p) * 3 * C], seq, p, kLayer);
    EXPECT_TRUE(SameBits(pool_a.data(), cache.host().data(), pool_a.size())) << "pool after the prefill's appends";
    std::vector<int> seqs(k.n, seq), lens_i(k.n);
    std::iota(lens_i.begin(), lens_i.end(), 1);
    CheckRows(cache, qkv, seqs, lens_i, att_a, w.plan.max_chunks, kAtol, kRtol, "prefill");
  }
}

TEST(AttentionTest, PrefillOfSeveralPromptsInOnePassEqualsEachAlone) {
  TW_REQUIRE_GPU();
  const int hd = 64, n_head = 12, C = n_head * hd, bs = 16;
  // (tokens already cached from earlier passes, new rows in this pass)
  const std::vector<std::pair<int, int>> prompts = {{40, 30}, {0, 5}, {120, 20}, {0, 257}, {250, 7}};
  int blocks = 0;
  for (auto [cached, fresh] : prompts) blocks += (cached + fresh + bs - 1) / bs;
  const KvShape kv{2, n_head, hd, bs, blocks + 8};
  PagedCache cache(kv, 9);
  std::vector<int> seqs;
  int total = 0;
  for (auto [cached, fresh] : prompts) {
    const int s = cache.AddSequence(cached + fresh);
    cache.WriteTokens(s, 0, cached);
    seqs.push_back(s);
    total += fresh;
  }
  const std::vector<float> qkv_all = RandomQkv(total, C, 1.0f, cache.gen());
  const int stride = cache.MaxBlocks() + 1;
  Workspace w;
  ASSERT_NO_FATAL_FAILURE(MakeWorkspace(total, 1024, n_head, hd, &w));

  // Rows of prompt i in order; `rows` lists (prompt, index in prompt).
  auto run = [&](const std::vector<std::pair<int, int>>& rows, const std::vector<int>& prompts_in_tables,
                 std::vector<float>* pool_out) {
    const int n = static_cast<int>(rows.size());
    std::vector<float> qkv(static_cast<size_t>(n) * 3 * C);
    std::vector<int32_t> row_table(n), pos(n);
    for (int r = 0; r < n; ++r) {
      const auto [p, i] = rows[r];
      int first_row = 0;
      for (int j = 0; j < p; ++j) first_row += prompts[j].second;
      std::copy_n(&qkv_all[static_cast<size_t>(first_row + i) * 3 * C], 3 * C, &qkv[static_cast<size_t>(r) * 3 * C]);
      row_table[r] = static_cast<int32_t>(std::find(prompts_in_tables.begin(), prompts_in_tables.end(), p) -
                                          prompts_in_tables.begin());
      pos[r] = prompts[p].first + i;
    }
    std::vector<int> table_seqs;
    for (int p : prompts_in_tables) table_seqs.push_back(seqs[p]);
    DeviceVector<float> pool(cache.host()), qkv_d(qkv), att(static_cast<size_t>(n) * C);
    DeviceVector<int32_t> tables_d(cache.Tables(table_seqs, stride)), rt_d(row_table), pos_d(pos);
    const BlockTables bt{tables_d.get(), static_cast<int>(table_seqs.size()), stride};
    Status s = AppendKv(qkv_d.get(), n, rt_d.get(), pos_d.get(), bt, kv, kLayer, pool.get(), nullptr);
    EXPECT_TRUE(s.ok()) << s.message();
    s = PrefillAttention(qkv_d.get(), n, rt_d.get(), pos_d.get(), bt, kv, kLayer, pool.get(), w.ws, att.get(), nullptr);
    EXPECT_TRUE(s.ok()) << s.message();
    if (pool_out) *pool_out = pool.ToHost();
    return att.ToHost();
  };
  // Alone: each prompt in its own pass.
  std::vector<std::vector<float>> alone;
  for (size_t p = 0; p < prompts.size(); ++p) {
    std::vector<std::pair<int, int>> rows;
    for (int i = 0; i < prompts[p].second; ++i) rows.push_back({static_cast<int>(p), i});
    alone.push_back(run(rows, {static_cast<int>(p)}, nullptr));
  }
  // Packed (each prompt's rows together), and interleaved in a shuffled
  // order with the tables listed in another order.
  std::vector<std::pair<int, int>> packed;
  for (size_t p = 0; p < prompts.size(); ++p)
    for (int i = 0; i < prompts[p].second; ++i) packed.push_back({static_cast<int>(p), i});
  std::vector<std::pair<int, int>> shuffled = packed;
  std::mt19937 gen(3);
  std::shuffle(shuffled.begin(), shuffled.end(), gen);
  std::vector<float> pool_packed;
  const std::vector<float> att_packed = run(packed, {0, 1, 2, 3, 4}, &pool_packed);
  const std::vector<float> att_shuffled = run(shuffled, {3, 1, 4, 0, 2}, nullptr);
  for (size_t r = 0; r < packed.size(); ++r) {
    const auto [p, i] = packed[r];
    ASSERT_TRUE(SameBits(&att_packed[r * C], &alone[p][static_cast<size_t>(i) * C], C))
        << "prompt " << p << " row " << i << ": packed vs alone";
  }
  for (size_t r = 0; r < shuffled.size(); ++r) {
    const auto [p, i] = shuffled[r];
    ASSERT_TRUE(SameBits(&att_shuffled[r * C], &alone[p][static_cast<size_t>(i) * C], C))
        << "prompt " << p << " row " << i << ": shuffled vs alone";
  }
  // And right.
  for (size_t r = 0; r < packed.size(); ++r) {
    const auto [p, i] = packed[r];
    cache.Append(&qkv_all[r * 3 * C], seqs[p], prompts[p].first + i, kLayer);
  }
  EXPECT_TRUE(SameBits(pool_packed.data(), cache.host().data(), pool_packed.size())) << "pool after the appends";
  std::vector<int> row_seq, row_len;
  for (const auto& [p, i] : packed) {
    row_seq.push_back(seqs[p]);
    row_len.push_back(prompts[p].first + i + 1);
  }
  CheckRows(cache, qkv_all, row_seq, row_len, att_packed, w.plan.max_chunks, kAtol, kRtol, "packed prefill");
}

// GPT-2 small's blocks are 294,912 floats: block ids past 7,281 put offsets
// beyond int32. A pool of 7,400 blocks (8.7 GB) and a sequence in its last
// blocks, at layer 11 (the largest offsets).
TEST(AttentionTest, KvOffsetsBeyondInt32AreAddressedWith64Bits) {
  TW_REQUIRE_GPU();
  const KvShape kv{12, 12, 64, 16, 7400};
  const int C = 768, n = 150, layer = 11;
  kernels::DeviceBuffer pool;
  Status s = pool.Allocate(static_cast<size_t>(kv.TotalFloats()) * 4);
  if (!s.ok()) GTEST_SKIP() << "this test needs an 8.7 GB pool: " << s.message();
  std::vector<int32_t> table = {7399, 7290, 7398, 7300, 7350, 7282, 7391, 7310, 7333, 7395};
  for (int32_t b : table) {  // the sequence's blocks NaN: stale slots must never be read
    TW_ASSERT_OK(kernels::Memset(pool.as<float>() + kv.Offset(b, 0, 0, 0, 0, 0), 0xFF,
                                 static_cast<size_t>(kv.FloatsPerBlock()) * 4));
  }
  ASSERT_GT(kv.Offset(7282, 0, 0, 0, 0, 0), int64_t{INT32_MAX});
  std::mt19937 gen(8);
  const std::vector<float> qkv = RandomQkv(n, C, 1.0f, &gen);
  std::vector<int32_t> pos(n), zeros(n, 0), len_last = {n};
  std::iota(pos.begin(), pos.end(), 0);
  DeviceVector<float> qkv_d(qkv), att(static_cast<size_t>(n) * C), att_last(C);
  DeviceVector<int32_t> table_d(table), pos_d(pos), rt_d(zeros), len_d(len_last);
  const BlockTables bt{table_d.get(), 1, static_cast<int>(table.size())};
  Workspace w;
  ASSERT_NO_FATAL_FAILURE(MakeWorkspace(n, 1024, 12, 64, &w));
  float* p = pool.as<float>();
  TW_ASSERT_OK(AppendKv(qkv_d.get(), n, rt_d.get(), pos_d.get(), bt, kv, layer, p, nullptr));
  TW_ASSERT_OK(PrefillAttention(qkv_d.get(), n, rt_d.get(), pos_d.get(), bt, kv, layer, p, w.ws, att.get(), nullptr));
  TW_ASSERT_OK(DecodeAttention(qkv_d.get() + static_cast<size_t>(n - 1) * 3 * C, 1, len_d.get(), bt, kv, layer, p, w.ws,
                               att_last.get(), nullptr));
  const std::vector<float> got = att.ToHost(), got_last = att_last.ToHost();
  EXPECT_TRUE(SameBits(got_last.data(), &got[static_cast<size_t>(n - 1) * C], C)) << "decode vs prefill, last row";
  // One K row read back from the top of the pool, where AppendKv put it.
  std::vector<float> k_row(64);
  TW_ASSERT_OK(kernels::CopyToHost(k_row.data(), p + kv.Offset(7399, layer, 0, 5, 3, 0), 64 * 4));
  EXPECT_TRUE(SameBits(k_row.data(), &qkv[static_cast<size_t>(3) * 3 * C + C + 5 * 64], 64)) << "K of token 3, head 5";
  for (int r : {0, 15, 16, 127, 128, n - 1}) {
    for (int h : {0, 11}) {
      std::vector<float> k(static_cast<size_t>(r + 1) * 64), v(k.size());
      for (int t = 0; t <= r; ++t) {
        std::copy_n(&qkv[static_cast<size_t>(t) * 3 * C + C + h * 64], 64, &k[static_cast<size_t>(t) * 64]);
        std::copy_n(&qkv[static_cast<size_t>(t) * 3 * C + 2 * C + h * 64], 64, &v[static_cast<size_t>(t) * 64]);
      }
      const float* q = &qkv[static_cast<size_t>(r) * 3 * C + h * 64];
      const std::vector<float> want = Reference(q, k, v, r + 1, 64);
      std::vector<float> emul(64);
      TW_ASSERT_OK(kernels::EmulateAttentionRow(q, k.data(), v.data(), r + 1, 64, 0.125f, w.plan.max_chunks, emul.data()));
      const std::vector<float> row(got.begin() + static_cast<size_t>(r) * C + h * 64,
                                   got.begin() + static_cast<size_t>(r) * C + (h + 1) * 64);
      EXPECT_TRUE(AllClose(row, want, kAtol, kRtol)) << "row " << r << " head " << h;
      EXPECT_TRUE(SameBits(row.data(), emul.data(), 64)) << "row " << r << " head " << h << " vs emulation";
    }
  }
}

// Device data the host cannot check: a bad length, position, table row or
// block id turns that row into NaN (never an out-of-bounds access), and
// leaves the other rows' bits alone.
TEST(AttentionTest, BadLengthsAndBlockIdsGiveNaNRowsAndLeaveTheOthersAlone) {
  TW_REQUIRE_GPU();
  const int hd = 64, n_head = 12, C = n_head * hd, bs = 16;
  const KvShape kv{2, n_head, hd, bs, 200};
  PagedCache cache(kv, 21);
  const std::vector<int> lens = {50, 300, 10, 200, 90};
  std::vector<int> seqs;
  for (int len : lens) {
    seqs.push_back(cache.AddSequence(len));
    cache.WriteTokens(seqs.back(), 0, len);
  }
  const std::vector<float> qkv = RandomQkv(5, C, 1.0f, cache.gen());
  const int stride = 20;  // 320 tokens per table
  std::vector<int32_t> tables = cache.Tables(seqs, stride);
  tables[1 * stride + 9] = -1;     // row 1 (300 keys): a bad id inside its length
  tables[3 * stride + 2] = 200;    // row 3: an id == num_blocks
  DeviceVector<float> pool(cache.host());
  DeviceVector<int32_t> tables_d(tables);
  Workspace w;
  ASSERT_NO_FATAL_FAILURE(MakeWorkspace(8, 1024, n_head, hd, &w));
  const BlockTables bt{tables_d.get(), 5, stride};

  // Decode: rows 0 and 4 good; 1, 3 bad ids; 2 gets length 0; then lengths
  // beyond the workspace (1025) and beyond the table (321) on rows 0 and 4.
  for (const std::vector<int32_t>& l : {std::vector<int32_t>{50, 300, 0, 200, 90},
                                        std::vector<int32_t>{1025, 300, 10, 200, 321}}) {
    DeviceVector<float> qkv_d(qkv), att(5 * C);
    DeviceVector<int32_t> lens_d(l);
    TW_ASSERT_OK(DecodeAttention(qkv_d.get(), 5, lens_d.get(), bt, kv, kLayer, pool.get(), w.ws, att.get(), nullptr));
    const std::vector<float> got = att.ToHost();
    for (int r = 0; r < 5; ++r) {
      const bool bad = r == 1 || r == 3 || l[r] != lens[r];
      for (int i = 0; i < C; ++i) {
        ASSERT_EQ(std::isnan(got[static_cast<size_t>(r) * C + i]), bad) << "row " << r << " len " << l[r] << " element " << i;
      }
    }
    if (l[0] == 50) {
      std::vector<float> good;
      good.insert(good.end(), got.begin(), got.begin() + C);
      std::vector<float> q0(qkv.begin(), qkv.begin() + 3 * C);
      q0.insert(q0.end(), qkv.begin() + 4 * 3 * C, qkv.end());
      good.insert(good.end(), got.begin() + 4 * C, got.end());
      CheckRows(cache, q0, {seqs[0], seqs[4]}, {50, 90}, good, w.plan.max_chunks, kAtol, kRtol, "good rows");
    }
  }
  // Tickets are still all zero (no bad row took one and left it).
  std::vector<int32_t> tickets(w.plan.tickets, -1);
  TW_ASSERT_OK(kernels::CopyToHost(tickets.data(), w.ws.tickets, tickets.size() * 4));
  for (size_t i = 0; i < tickets.size(); ++i) ASSERT_EQ(tickets[i], 0) << "ticket " << i;

  // Prefill: a negative position, a table row out of range, a position past
  // the table; the good rows (0 and 4) are right.
  {
    const std::vector<int32_t> row_table = {0, 0, 7, 4, 4}, pos = {49, -1, 3, 320, 89};
    DeviceVector<float> qkv_d(qkv), att(5 * C);
    DeviceVector<int32_t> rt_d(row_table), pos_d(pos);
    TW_ASSERT_OK(PrefillAttention(qkv_d.get(), 5, rt_d.get(), pos_d.get(), bt, kv, kLayer, pool.get(), w.ws, att.get(),
                                  nullptr));
    const std::vector<float> got = att.ToHost();
    for (int r = 0; r < 5; ++r) {
      const bool bad = r == 1 || r == 2 || r == 3;
      for (int i = 0; i < C; ++i) ASSERT_EQ(std::isnan(got[static_cast<size_t>(r) * C + i]), bad) << "prefill row " << r;
    }
  }
  // Append: a negative position, a table row out of range, a position past
  // the table, and a block entry that is not a valid id (position 160 of
  // sequence 0: entry 10 is past its 4 blocks) write nothing.
  {
    const std::vector<int32_t> row_table = {1, 7, 3, 0}, pos = {-1, 3, 320, 160};
    const int32_t entry = tables[0 * stride + 160 / bs];
    ASSERT_TRUE(entry < 0 || entry >= kv.num_blocks) << "the test needs an invalid entry, got " << entry;
    const std::vector<float> q4(qkv.begin(), qkv.begin() + 4 * 3 * C);
    DeviceVector<float> qkv_d(q4);
    DeviceVector<int32_t> rt_d(row_table), pos_d(pos);
    TW_ASSERT_OK(AppendKv(qkv_d.get(), 4, rt_d.get(), pos_d.get(), bt, kv, kLayer, pool.get(), nullptr));
    const std::vector<float> got = pool.ToHost();
    EXPECT_TRUE(SameBits(got.data(), cache.host().data(), got.size())) << "pool after bad appends";
  }
}

TEST(AttentionTest, LaunchersRefuseWhatTheKernelsDoNotSupport) {
  TW_REQUIRE_GPU();
  const KvShape kv{2, 12, 64, 16, 10};
  DeviceVector<float> pool(static_cast<size_t>(kv.TotalFloats())), qkv(3 * 768 * 4), att(768 * 4);
  DeviceVector<int32_t> ints(64);
  Workspace w;
  ASSERT_NO_FATAL_FAILURE(MakeWorkspace(4, 1024, 12, 64, &w));
  const BlockTables bt{ints.get(), 4, 4};
  auto expect_error = [](const Status& s, const std::string& needle) {
    EXPECT_FALSE(s.ok()) << "expected an error naming " << needle;
    EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
  };
  // Sanity: the good call is accepted.
  TW_ASSERT_OK(DecodeAttention(qkv.get(), 4, ints.get(), bt, kv, 0, pool.get(), w.ws, att.get(), nullptr));
  TW_ASSERT_OK(kernels::DeviceSync());

  KvShape bad = kv;
  bad.head_dim = 32;
  expect_error(DecodeAttention(qkv.get(), 4, ints.get(), bt, bad, 0, pool.get(), w.ws, att.get(), nullptr), "head_dim = 32");
  bad = kv;
  bad.block_size = 0;
  expect_error(AppendKv(qkv.get(), 4, nullptr, ints.get(), bt, bad, 0, pool.get(), nullptr), "block_size = 0");
  bad.block_size = 257;
  expect_error(PrefillAttention(qkv.get(), 4, nullptr, ints.get(), bt, bad, 0, pool.get(), w.ws, att.get(), nullptr),
               "block_size = 257");
  expect_error(DecodeAttention(qkv.get(), 4, ints.get(), bt, kv, 2, pool.get(), w.ws, att.get(), nullptr), "layer = 2");
  expect_error(DecodeAttention(qkv.get(), 5, ints.get(), BlockTables{ints.get(), 8, 4}, kv, 0, pool.get(), w.ws,
                               att.get(), nullptr),
               "max_rows");
  expect_error(DecodeAttention(qkv.get(), 0, ints.get(), bt, kv, 0, pool.get(), w.ws, att.get(), nullptr), "rows = 0");
  expect_error(DecodeAttention(qkv.get(), 4, ints.get(), BlockTables{ints.get(), 3, 4}, kv, 0, pool.get(), w.ws,
                               att.get(), nullptr),
               "tables.count = 3");
  expect_error(DecodeAttention(qkv.get(), 4, nullptr, bt, kv, 0, pool.get(), w.ws, att.get(), nullptr), "lens");
  expect_error(DecodeAttention(nullptr, 4, ints.get(), bt, kv, 0, pool.get(), w.ws, att.get(), nullptr), "qkv");
  expect_error(DecodeAttention(qkv.get(), 4, ints.get(), bt, kv, 0, nullptr, w.ws, att.get(), nullptr), "pool");
  expect_error(DecodeAttention(qkv.get(), 4, ints.get(), bt, kv, 0, pool.get(), w.ws, nullptr, nullptr), "att");
  expect_error(DecodeAttention(qkv.get() + 1, 4, ints.get(), bt, kv, 0, pool.get(), w.ws, att.get(), nullptr),
               "qkv is not 16-byte aligned");
  expect_error(PrefillAttention(qkv.get(), 4, nullptr, ints.get(), bt, kv, 0, pool.get() + 2, w.ws, att.get(), nullptr),
               "pool is not 16-byte aligned");
  expect_error(AppendKv(qkv.get(), 4, nullptr, nullptr, bt, kv, 0, pool.get(), nullptr), "pos");
  expect_error(AppendKv(qkv.get(), 4, nullptr, ints.get(), BlockTables{nullptr, 4, 4}, kv, 0, pool.get(), nullptr),
               "tables.ids");
  AttentionWorkspace ws = w.ws;
  ws.tickets = nullptr;
  expect_error(DecodeAttention(qkv.get(), 4, ints.get(), bt, kv, 0, pool.get(), ws, att.get(), nullptr), "tickets");
  ws = w.ws;
  ws.n_head = 4;
  expect_error(PrefillAttention(qkv.get(), 4, nullptr, ints.get(), bt, kv, 0, pool.get(), ws, att.get(), nullptr),
               "n_head 4");
}

}  // namespace
}  // namespace tw::kernels

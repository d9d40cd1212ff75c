#include "cuda/step_plan.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace tw::cuda {

namespace {

size_t Align256(size_t b) { return (b + 255) / 256 * 256; }

int32_t* I32(void* buf, size_t offset) { return reinterpret_cast<int32_t*>(static_cast<char*>(buf) + offset); }

Status Bad(const char* what, int index, long long value, const std::string& want) {
  return Status::Error(std::string("cuda step: ") + what + " of sequence " + std::to_string(index) + " is " +
                       std::to_string(value) + ", want " + want);
}

// Copies sequence i's table into table row `row` after checking it covers
// `positions` tokens and names only the engine's blocks.
Status PackTable(const engine::SeqView& v, int i, int row, int positions, const StepLayout& layout,
                 const ModelBounds& bounds, void* buf) {
  const int need = engine::BlocksFor(positions, bounds.block_size);
  if (v.block_table == nullptr || v.num_blocks < need) {
    return Bad("block table length", i, v.num_blocks, ">= " + std::to_string(need) + " blocks");
  }
  if (need > layout.table_stride) {
    return Bad("block count", i, need, "<= " + std::to_string(layout.table_stride) + " (the context)");
  }
  int32_t* dst = I32(buf, layout.tables) + static_cast<size_t>(row) * layout.table_stride;
  for (int b = 0; b < need; b++) {
    const int32_t id = v.block_table[b];
    if (id < 0 || id >= bounds.num_blocks) {
      return Bad("block id", i, id, "in [0, " + std::to_string(bounds.num_blocks) + ")");
    }
    dst[b] = id;
  }
  // The rest of the row: the scratch block (never read: lengths bound it).
  for (int b = need; b < layout.table_stride; b++) dst[b] = bounds.num_blocks;
  return Status::Ok();
}

}  // namespace

int PadBlocks(int max_batch, int n_ctx, int block_size) {
  return engine::BlocksFor(std::max(1, std::min(max_batch, n_ctx)), std::max(block_size, 1));
}

std::vector<int> DecodeBuckets(int max_batch) {
  std::vector<int> b;
  for (int v : {1, 2, 4, 8, 16, 24, 32}) {
    if (v < max_batch) b.push_back(v);
  }
  for (int v = 48; v < max_batch; v += 16) b.push_back(v);
  b.push_back(std::max(max_batch, 1));
  return b;
}

int BucketFor(const std::vector<int>& buckets, int batch) {
  for (int v : buckets) {
    if (v >= batch) return v;
  }
  return buckets.empty() ? batch : buckets.back();
}

StepLayout MakeStepLayout(int max_batch, int max_step_tokens, int n_ctx, int block_size, int edits_per_row,
                          int vocab) {
  StepLayout l;
  l.rows = std::max(max_batch, max_step_tokens);
  l.table_stride = engine::BlocksFor(n_ctx, std::max(block_size, 1));
  const size_t ints = static_cast<size_t>(l.rows) * sizeof(int32_t);
  size_t at = 0;
  l.tokens = at;
  at += Align256(ints);
  l.positions = at;
  at += Align256(ints);
  l.row_table = at;
  at += Align256(ints);
  l.lens = at;
  at += Align256(ints);
  l.tables = at;
  at += Align256(static_cast<size_t>(l.rows) * l.table_stride * sizeof(int32_t));
  l.params = at;
  at += Align256(static_cast<size_t>(l.rows) * sizeof(kernels::SampleParams));
  l.mask_rows = at;
  at += Align256(ints);
  l.edit_rows = at;
  at += Align256(static_cast<size_t>(l.rows + 1) * sizeof(int32_t));
  l.edits = at;
  l.edit_capacity = std::max(max_batch, 0) * std::max(edits_per_row, 0);
  at += Align256(static_cast<size_t>(l.edit_capacity) * sizeof(LogitEdit));
  l.masks = at;
  l.mask_words = vocab > 0 ? (vocab + 63) / 64 : 0;
  l.mask_capacity = l.mask_words > 0 ? std::max(max_batch, 0) : 0;
  at += Align256(l.MaskBytes(l.mask_capacity));
  l.bytes = at;
  return l;
}

kernels::SampleParams ToSampleParams(const engine::SamplingRow& s) {
  kernels::SampleParams p{};
  p.temperature = s.temperature;
  p.top_k = s.top_k;
  p.top_p = s.top_p;
  p.min_p_log = MinPLog(s.min_p);
  p.seed = s.seed;
  p.counter = s.counter;
  return p;
}

namespace {

// Row `row`'s edits after the ones packed so far (*used), its end offset in
// edit_rows[row + 1]; the ids are checked against the vocabulary.
Status PackEdits(const engine::SeqView& v, int row, const StepLayout& layout, const ModelBounds& bounds, void* buf,
                 int* used) {
  int32_t* edit_rows = I32(buf, layout.edit_rows);
  auto* edits = reinterpret_cast<LogitEdit*>(static_cast<char*>(buf) + layout.edits);
  const int n = v.sampling.num_edits;
  if (n < 0 || n > layout.edit_capacity - *used || (n > 0 && v.sampling.edits == nullptr)) {
    return Bad("logit edit count", row, n, "<= " + std::to_string(layout.edit_capacity - *used) + " left of " +
                                              std::to_string(layout.edit_capacity) + " in the step");
  }
  for (int j = 0; j < n; j++) {
    const LogitEdit& e = v.sampling.edits[j];
    if (e.id < 0 || e.id >= bounds.vocab_size) {
      return Bad("logit edit id", row, e.id, "in [0, " + std::to_string(bounds.vocab_size) + ")");
    }
    edits[*used + j] = e;
  }
  *used += n;
  edit_rows[row + 1] = *used;
  return Status::Ok();
}

// Sampled row `row`'s grammar mask, if it has one, after the *used packed
// so far (mask_rows[row] = its index, else -1).
Status PackMask(const engine::SeqView& v, int row, const StepLayout& layout, void* buf, int* used) {
  int32_t* mask_rows = I32(buf, layout.mask_rows);
  if (v.sampling.mask == nullptr) {
    mask_rows[row] = -1;
    return Status::Ok();
  }
  if (*used >= layout.mask_capacity) {
    return Bad("grammar mask", row, *used + 1, "<= " + std::to_string(layout.mask_capacity) + " in the step");
  }
  auto* masks = reinterpret_cast<uint64_t*>(static_cast<char*>(buf) + layout.masks);
  std::memcpy(masks + static_cast<size_t>(*used) * static_cast<size_t>(layout.mask_words), v.sampling.mask,
              layout.MaskBytes(1));
  mask_rows[row] = (*used)++;
  return Status::Ok();
}

}  // namespace

Status PackDecode(const engine::SeqView* seqs, int count, int bucket, const StepLayout& layout,
                  const ModelBounds& bounds, void* buf, int* edits_used, int* masks_used) {
  if (count < 1 || count > bucket || bucket > layout.rows) {
    return Status::Error("cuda step: decode of " + std::to_string(count) + " sequences in a bucket of " +
                         std::to_string(bucket) + " (layout rows " + std::to_string(layout.rows) + ")");
  }
  int32_t* tokens = I32(buf, layout.tokens);
  int32_t* positions = I32(buf, layout.positions);
  int32_t* lens = I32(buf, layout.lens);
  int32_t* row_table = I32(buf, layout.row_table);
  auto* params = reinterpret_cast<kernels::SampleParams*>(static_cast<char*>(buf) + layout.params);
  int32_t* edit_rows = I32(buf, layout.edit_rows);
  int used = 0, masks = 0;
  edit_rows[0] = 0;
  for (int i = 0; i < count; i++) {
    const engine::SeqView& v = seqs[i];
    if (v.n != 1 || v.tokens == nullptr) return Bad("decode token count", i, v.n, "1");
    if (v.cached < 0 || v.cached + 1 > bounds.n_ctx) {
      return Bad("position", i, v.cached, "in [0, " + std::to_string(bounds.n_ctx) + ")");
    }
    if (v.tokens[0] < 0 || v.tokens[0] >= bounds.vocab_size) {
      return Bad("token", i, v.tokens[0], "in [0, " + std::to_string(bounds.vocab_size) + ")");
    }
    if (Status s = PackTable(v, i, i, v.cached + 1, layout, bounds, buf); !s.ok()) return s;
    tokens[i] = v.tokens[0];
    positions[i] = v.cached;
    lens[i] = v.cached + 1;
    row_table[i] = i;
    params[i] = ToSampleParams(v.sampling);
    if (Status s = PackEdits(v, i, layout, bounds, buf, &used); !s.ok()) return s;
    if (Status s = PackMask(v, i, layout, buf, &masks); !s.ok()) return s;
  }
  // Padding rows: row j = i - count holds token 0 at its own scratch slot
  // (position j, in the scratch blocks), greedy.
  const int capacity = std::min(bounds.pad_blocks * bounds.block_size, bounds.n_ctx);
  for (int i = count; i < bucket; i++) {
    const int pos = (i - count) % std::max(capacity, 1);
    tokens[i] = 0;
    positions[i] = pos;
    lens[i] = pos + 1;
    row_table[i] = i;
    int32_t* row = I32(buf, layout.tables) + static_cast<size_t>(i) * layout.table_stride;
    for (int b = 0; b < layout.table_stride; b++) row[b] = bounds.num_blocks + std::min(b, bounds.pad_blocks - 1);
    params[i] = kernels::SampleParams{};
    edit_rows[i + 1] = used;
    I32(buf, layout.mask_rows)[i] = -1;
  }
  if (edits_used != nullptr) *edits_used = used;
  if (masks_used != nullptr) *masks_used = masks;
  return Status::Ok();
}

Status PackPass(const engine::SeqView* seqs, int count, const int* first_token, const int* take,
                const StepLayout& layout, const ModelBounds& bounds, void* buf, int* rows_out, int* last_row,
                int* sampled_out, int* edits_used, int* masks_used) {
  if (count < 1 || count > layout.rows) {
    return Status::Error("cuda step: a pass of " + std::to_string(count) + " sequences (at most " +
                         std::to_string(layout.rows) + ")");
  }
  int32_t* tokens = I32(buf, layout.tokens);
  int32_t* positions = I32(buf, layout.positions);
  int32_t* row_table = I32(buf, layout.row_table);
  auto* params = reinterpret_cast<kernels::SampleParams*>(static_cast<char*>(buf) + layout.params);
  I32(buf, layout.edit_rows)[0] = 0;
  int used = 0, masks = 0;
  int row = 0;
  int sampled = 0;
  for (int i = 0; i < count; i++) {
    const engine::SeqView& v = seqs[i];
    const int first = first_token[i], n = take[i];
    if (n < 1 || first < 0 || first + n > v.n || v.tokens == nullptr) {
      return Bad("pass slice", i, n, "1..(tokens - first) from token " + std::to_string(first));
    }
    if (row + n > layout.rows) {
      return Status::Error("cuda step: a pass of more than " + std::to_string(layout.rows) + " rows");
    }
    const int end = v.cached + first + n;  // positions written through end - 1
    if (v.cached < 0 || end > bounds.n_ctx) {
      return Bad("last position", i, end - 1, "< " + std::to_string(bounds.n_ctx));
    }
    if (Status s = PackTable(v, i, i, end, layout, bounds, buf); !s.ok()) return s;
    for (int j = 0; j < n; j++) {
      const int32_t t = v.tokens[first + j];
      if (t < 0 || t >= bounds.vocab_size) {
        return Bad("token", i, t, "in [0, " + std::to_string(bounds.vocab_size) + ")");
      }
      tokens[row] = t;
      positions[row] = v.cached + first + j;
      row_table[row] = i;
      row++;
    }
    last_row[i] = row - 1;
    if (!v.sample) continue;
    params[sampled] = ToSampleParams(v.sampling);
    if (Status s = PackEdits(v, sampled, layout, bounds, buf, &used); !s.ok()) return s;
    if (Status s = PackMask(v, sampled, layout, buf, &masks); !s.ok()) return s;
    sampled++;
  }
  *rows_out = row;
  *sampled_out = sampled;
  if (edits_used != nullptr) *edits_used = used;
  if (masks_used != nullptr) *masks_used = masks;
  return Status::Ok();
}

}  // namespace tw::cuda

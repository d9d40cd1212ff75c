// The CUDA runner's host logic, in ordinary C++ (tested in `make test`, no
// GPU needed): which decode graph a batch uses, and how one step's inputs
// are packed into the one host buffer that is copied to the device per step.
//
// Decode graphs are captured per batch-size bucket (vLLM's pattern): a batch
// of B sequences runs the graph of the smallest bucket >= B, the rows beyond
// B padded. A padding row reads and writes only the runner's scratch blocks
// (the pool's last pad_blocks blocks, never handed to the engine): padding
// row j holds token 0 at position j (mod the scratch capacity), so no two
// rows write one slot; it attends j + 1 scratch keys and is greedy. Padding
// changes no real row: every kernel computes a row from that row alone (the
// kernels' batch-invariance).
//
// The step buffer (StepLayout) holds, at fixed offsets, for up to `rows`
// rows: token ids, positions, table rows (prefill: which sequence each row
// belongs to), lengths (decode: positions + 1), the block tables (one row of
// `table_stride` ids per sequence), the sampling parameters of each
// sequence (kernels::SampleParams), which grammar mask each sampled row
// has (mask_rows, -1 for none), its logit edits (edit_rows offsets into one
// array, kernels::ApplyLogitEdits' input) and, last, the grammar masks
// themselves (structured output: mask_words words a row, packed for the
// rows that have one). The same layout is mirrored on the device, so a
// step is one host-to-device copy of the buffer up to the edits it uses
// (UsedBytes), and a second of the masks it packed, if any (MaskBytes).
//
// Everything here checks what it packs (ids in range, tables long enough,
// positions inside the context) and refuses with a Status naming the
// sequence and the value: a bad step never reaches a kernel.
//
// Threads: pure functions and plain structs. Memory: the caller's buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/status.h"
#include "engine/runner.h"
#include "kernels/sampling.h"

namespace tw::cuda {

// The decode buckets for max_batch: 1, 2, 4, 8, 16, 24, 32, then every 16
// up to max_batch, which is always the last bucket.
std::vector<int> DecodeBuckets(int max_batch);
// The smallest bucket >= batch (batch in 1..max_batch).
int BucketFor(const std::vector<int>& buckets, int batch);

struct StepLayout {
  int rows = 0;          // rows the buffer holds (max of decode batch and a pass's rows)
  int table_stride = 0;  // block ids per table row: enough for n_ctx positions
  // Byte offsets in the buffer; each part 256-byte aligned.
  size_t tokens = 0;     // int32 (rows)
  size_t positions = 0;  // int32 (rows)
  size_t row_table = 0;  // int32 (rows): prefill, the sequence of each row
  size_t lens = 0;       // int32 (rows): decode, keys each row attends
  size_t tables = 0;     // int32 (rows, table_stride)
  size_t params = 0;     // kernels::SampleParams (rows)
  size_t mask_rows = 0;  // int32 (rows): the row's mask in `masks`, -1 for none
  size_t edit_rows = 0;  // int32 (rows + 1): row r's edits are [edit_rows[r], edit_rows[r + 1])
  size_t edits = 0;      // tw::LogitEdit (edit_capacity), last in the buffer
  int edit_capacity = 0; // edits one step may carry, all rows together
  size_t masks = 0;      // uint64 (mask_capacity, mask_words): the grammar masks, after the edits
  int mask_words = 0;    // words of one mask: (vocab + 63) / 64 (0: masks are refused)
  int mask_capacity = 0; // masks one step may carry (max_batch)
  size_t bytes = 0;      // the whole buffer

  // The bytes of `masks_used` packed masks (from `masks`).
  size_t MaskBytes(int masks_used) const {
    return static_cast<size_t>(masks_used) * static_cast<size_t>(mask_words) * sizeof(uint64_t);
  }

  // The bytes a step that packed `edits_used` edits must copy.
  size_t UsedBytes(int edits_used) const { return edits + static_cast<size_t>(edits_used) * sizeof(LogitEdit); }
};

// rows = max(max_batch, max_step_tokens); the table stride covers n_ctx
// positions of block_size tokens; edit_capacity = max_batch * edits_per_row;
// max_batch masks of (vocab + 63) / 64 words (vocab 0: no masks).
StepLayout MakeStepLayout(int max_batch, int max_step_tokens, int n_ctx, int block_size, int edits_per_row = 0,
                          int vocab = 0);

// What the packer checks against.
struct ModelBounds {
  int n_ctx = 0;
  int vocab_size = 0;
  int block_size = 0;
  int num_blocks = 0;  // the engine's blocks [0, num_blocks)
  int pad_blocks = 1;  // scratch blocks [num_blocks, num_blocks + pad_blocks)
};

// Scratch blocks for the padding rows of a max_batch bucket (one slot per
// row, up to the context).
int PadBlocks(int max_batch, int n_ctx, int block_size);

// A decode step: rows [0, count) are the sequences (each n == 1: token at
// position cached, attending cached + 1 keys), rows [count, bucket) padding
// (the scratch block). Fills `buf` (layout.bytes) at the layout's offsets,
// *edits_used (if given) with the edits packed (padding rows have none) and
// *masks_used (if given) with the grammar masks packed.
Status PackDecode(const engine::SeqView* seqs, int count, int bucket, const StepLayout& layout,
                  const ModelBounds& bounds, void* buf, int* edits_used = nullptr, int* masks_used = nullptr);

// One pass of `count` sequences (a mixed step: decode rows and prompt
// chunks alike), rows in order: sequence i's tokens [first_token[i],
// first_token[i] + take[i]) at positions cached + those indexes, table row
// i, row_table = i. take[i] >= 1 and the total <= layout.rows. Fills `buf`
// and *rows_out (the rows packed) and last_row[i] (the row holding sequence
// i's last packed token). The sampling parameters and logit edits go to
// the sampled rows only, compact: the k-th sequence whose SeqView::sample
// is set is sampled row k (*sampled_out of them), the others are not
// sampled at all. *edits_used and *masks_used (if given): the edits and
// grammar masks packed.
Status PackPass(const engine::SeqView* seqs, int count, const int* first_token, const int* take,
                const StepLayout& layout, const ModelBounds& bounds, void* buf, int* rows_out, int* last_row,
                int* sampled_out, int* edits_used = nullptr, int* masks_used = nullptr);

// The sampling parameters of one row (greedy for padding).
kernels::SampleParams ToSampleParams(const engine::SamplingRow& s);

}  // namespace tw::cuda

// Attention over the paged KV cache on the GPU: appending a pass's keys and
// values to the pool, decode attention (one row per sequence) and prefill
// attention (the rows of one or more prompts), all reading K/V in place
// through the block tables (no gather into a padded copy).
//
// Layout (the CPU's, so a device pool holds the same bytes; kernels::KvShape):
// the pool is num_blocks blocks of (n_layer, 2 {K,V}, n_head, block_size,
// head_dim) floats; token t of a sequence is in block table[t / block_size],
// slot t % block_size; offsets are 64-bit. qkv is the c_attn output
// (rows, 3C): q | k | v, heads side by side (head h at columns
// h*head_dim.. of each); att (rows, C) likewise.
//
// Arithmetic (src/cuda/attention_plan.h spells it out): a row's keys are cut
// into chunks of kernels::kAttnChunkTokens = 128 (fixed), each chunk reduced by
// one CTA in fixed trees to (max, sum, unnormalized output), and the chunks
// merged in chunk order. A row's result is therefore bitwise independent of
// the batch (its size, the other rows, their lengths), of which rows share a
// prefill pass, and of decode vs prefill: by construction a position gets
// the same bits from DecodeAttention as from PrefillAttention, and the same
// bits as kernels::EmulateAttentionRow on the CPU (tests/gpu/attention_test.cc
// checks all three; they passed on an H200, 2026-12-04). No float atomics; the decode
// merge is done by the last of a row's chunk CTAs, found with an integer
// ticket.
//
// Supported: head_dim 16 and 64 (GPT-2 family; the tiny golden model),
// block_size 1..256, any n_layer / n_head, contexts up to the workspace's
// max_chunks * 128 keys; anything else is refused with a Status. Pointers
// to floats (qkv, pool, att) must be 16-byte aligned (cudaMalloc's are).
//
// Device data the host cannot check (lengths, positions, block ids, table
// rows) is checked by the kernels: a row whose length is outside
// [1, max_chunks * 128] or beyond its table (stride * block_size), or whose
// keys sit in a block id outside [0, num_blocks), is written as NaN (never
// an out-of-bounds read); AppendKv skips such a row. Keys at or beyond a
// row's length are never read, so stale slots (even NaN) never matter.
//
// Threads: any host thread, one stream per call (the launches are
// asynchronous on `stream`; nullptr is the default stream); launches that
// share a workspace must be ordered (one stream). Memory: nothing is
// allocated; the workspace comes from the caller, sized by
// kernels::MakeAttentionPlan. No host synchronisation and no attribute calls,
// so every launcher can be captured in a CUDA graph. Never: float atomics,
// kernel or configuration choices by batch size.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/status.h"
#include "kernels/attention_plan.h"

namespace tw::kernels {

// The block tables of one step, on the device: row i of `ids` lists the
// blocks of table i (entries past a sequence's blocks are unspecified).
struct BlockTables {
  const int32_t* ids = nullptr;  // (count, stride) device, row-major
  int count = 0;                 // rows of ids
  int stride = 0;                // max blocks per sequence
};

// The chunk partials and merge tickets (device memory), carved from one
// allocation of plan.workspace_bytes by CarveAttentionWorkspace.
struct AttentionWorkspace {
  float* partial_o = nullptr;   // (max_rows, n_head, max_chunks, head_dim)
  float* partial_ml = nullptr;  // (max_rows, n_head, max_chunks, 2)
  int32_t* tickets = nullptr;   // (max_rows, n_head); all zero before the first DecodeAttention
  int max_rows = 0;
  int max_chunks = 0;
  int n_head = 0;
  int head_dim = 0;
};

// The workspace parts inside `base` (plan.workspace_bytes of device memory).
// Zero the tickets once (kernels::Memset of base + plan.tickets_offset,
// plan.tickets * 4 bytes) before the first DecodeAttention; every decode
// launch leaves them zero again.
inline AttentionWorkspace CarveAttentionWorkspace(void* base, const kernels::AttentionPlan& plan) {
  char* b = static_cast<char*>(base);
  AttentionWorkspace ws;
  ws.partial_o = reinterpret_cast<float*>(b + plan.partial_o_offset);
  ws.partial_ml = reinterpret_cast<float*>(b + plan.partial_ml_offset);
  ws.tickets = reinterpret_cast<int32_t*>(b + plan.tickets_offset);
  ws.max_rows = plan.max_rows;
  ws.max_chunks = plan.max_chunks;
  ws.n_head = plan.n_head;
  ws.head_dim = plan.head_dim;
  return ws;
}

// Writes row r's k and v (columns [C, 3C) of qkv) for layer `layer` into
// the pool at position pos[r] of table row_table[r] (row_table null: table
// r). One CTA per row; rows writing the same slot race (the caller never
// does that). Run it before the attention that reads those keys.
//   qkv (rows, 3C), row_table (rows) or null, pos (rows), pool
//   (num_blocks * FloatsPerBlock).
Status AppendKv(const float* qkv, int rows, const int32_t* row_table, const int32_t* pos,
                const BlockTables& tables, const kernels::KvShape& kv, int layer, float* pool, void* stream);

// Decode: row b (table b) attends its lens[b] keys (it sits at position
// lens[b] - 1, whose K/V AppendKv has written). Grid (max_chunks, n_head,
// rows) x 128 threads; chunk CTAs past a row's length exit; the last chunk
// CTA of each (row, head) merges. 1 <= rows <= ws.max_rows.
//   qkv (rows, 3C), lens (rows), att (rows, C) out.
Status DecodeAttention(const float* qkv, int rows, const int32_t* lens, const BlockTables& tables,
                       const kernels::KvShape& kv, int layer, const float* pool, const AttentionWorkspace& ws,
                       float* att, void* stream);

// Prefill: row r (table row_table[r], or r when null) at position pos[r]
// attends keys 0..pos[r] (earlier passes' and this pass's, all appended
// already). Rows are packed, any number of sequences; consecutive rows of
// one sequence share each chunk's K/V load (up to 16 rows per CTA), so
// pack a sequence's rows together. Two launches: chunks, grid (max_chunks,
// n_head, ceil(rows / 16)) x 128, then the merge. 1 <= rows <= ws.max_rows.
//   qkv (rows, 3C), row_table (rows) or null, pos (rows), att (rows, C) out.
Status PrefillAttention(const float* qkv, int rows, const int32_t* row_table, const int32_t* pos,
                        const BlockTables& tables, const kernels::KvShape& kv, int layer, const float* pool,
                        const AttentionWorkspace& ws, float* att, void* stream);

}  // namespace tw::kernels

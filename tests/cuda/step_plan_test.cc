// The CUDA runner's host logic (src/cuda/step_plan.h), without a GPU: decode
// buckets, the step buffer's layout, and packing decode and prefill steps
// (padding rows on the scratch block; every bad input refused by name).
#include "cuda/step_plan.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <vector>

namespace tw::cuda {
namespace {

const int32_t* I32(const std::vector<char>& buf, size_t off) {
  return reinterpret_cast<const int32_t*>(buf.data() + off);
}

TEST(StepPlan, BucketsCoverEveryBatchAndEndAtMaxBatch) {
  EXPECT_EQ(DecodeBuckets(32), (std::vector<int>{1, 2, 4, 8, 16, 24, 32}));
  EXPECT_EQ(DecodeBuckets(1), (std::vector<int>{1}));
  EXPECT_EQ(DecodeBuckets(20), (std::vector<int>{1, 2, 4, 8, 16, 20}));
  EXPECT_EQ(DecodeBuckets(100), (std::vector<int>{1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 100}));
  for (int max_batch : {1, 3, 20, 32, 100, 256}) {
    std::vector<int> b = DecodeBuckets(max_batch);
    EXPECT_EQ(b.back(), max_batch);
    for (int batch = 1; batch <= max_batch; batch++) {
      int k = BucketFor(b, batch);
      EXPECT_GE(k, batch);
      EXPECT_LE(k, max_batch);
      // The smallest that fits.
      for (int v : b) {
        if (v >= batch) {
          EXPECT_EQ(k, v);
          break;
        }
      }
    }
  }
}

TEST(StepPlan, LayoutHoldsEveryPartAlignedAndApart) {
  StepLayout l = MakeStepLayout(32, 256, 1024, 16);
  EXPECT_EQ(l.rows, 256);
  EXPECT_EQ(l.table_stride, 64);
  size_t parts[] = {l.tokens, l.positions, l.row_table, l.lens, l.tables, l.params};
  for (size_t i = 0; i < 6; i++) {
    EXPECT_EQ(parts[i] % 256, 0u);
    if (i > 0) {
      EXPECT_GT(parts[i], parts[i - 1]);
    }
  }
  EXPECT_GE(l.params - l.tables, 256u * 64 * 4);
  EXPECT_GE(l.bytes - l.params, 256u * sizeof(kernels::SampleParams));
  EXPECT_EQ(MakeStepLayout(4, 2, 128, 1).table_stride, 128);
}

struct Seq {
  std::vector<int32_t> table;
  std::vector<int32_t> tokens;
  engine::SeqView View(int cached) const {
    engine::SeqView v;
    v.block_table = table.data();
    v.num_blocks = static_cast<int>(table.size());
    v.cached = cached;
    v.tokens = tokens.data();
    v.n = static_cast<int>(tokens.size());
    v.sampling.temperature = 0.7f;
    v.sampling.top_k = 40;
    v.sampling.top_p = 0.9f;
    v.sampling.seed = 11;
    v.sampling.counter = static_cast<uint64_t>(cached);
    return v;
  }
};

TEST(StepPlan, DecodePacksRowsThenPaddingOnTheScratchBlock) {
  const ModelBounds bounds{128, 50257, 16, 40, PadBlocks(8, 128, 16)};
  EXPECT_EQ(bounds.pad_blocks, 1);
  StepLayout l = MakeStepLayout(8, 64, 128, 16);
  std::vector<char> buf(l.bytes, 0x5a);
  Seq a{{7, 3}, {15496}}, b{{9}, {995}};
  engine::SeqView v[2] = {a.View(20), b.View(0)};
  ASSERT_TRUE(PackDecode(v, 2, 4, l, bounds, buf.data()).ok());
  EXPECT_EQ(I32(buf, l.tokens)[0], 15496);
  EXPECT_EQ(I32(buf, l.positions)[0], 20);
  EXPECT_EQ(I32(buf, l.lens)[0], 21);
  EXPECT_EQ(I32(buf, l.tables)[0], 7);
  EXPECT_EQ(I32(buf, l.tables)[1], 3);
  EXPECT_EQ(I32(buf, l.tables)[2], 40) << "beyond a table: the scratch block";
  EXPECT_EQ(I32(buf, l.tokens)[1], 995);
  EXPECT_EQ(I32(buf, l.lens)[1], 1);
  EXPECT_EQ(I32(buf, l.tables)[l.table_stride], 9);
  const auto* p = reinterpret_cast<const kernels::SampleParams*>(buf.data() + l.params);
  EXPECT_FLOAT_EQ(p[0].temperature, 0.7f);
  EXPECT_EQ(p[0].top_k, 40);
  EXPECT_EQ(p[0].seed, 11u);
  EXPECT_EQ(p[0].counter, 20u);
  for (int r = 2; r < 4; r++) {
    EXPECT_EQ(I32(buf, l.tokens)[r], 0);
    EXPECT_EQ(I32(buf, l.positions)[r], r - 2) << "each padding row its own scratch slot";
    EXPECT_EQ(I32(buf, l.lens)[r], r - 1);
    for (int k = 0; k < l.table_stride; k++) EXPECT_EQ(I32(buf, l.tables)[r * l.table_stride + k], 40);
    EXPECT_LE(p[r].temperature, 0.0f) << "padding is greedy";
  }
  // Padding rows over several scratch blocks: each slot once.
  const ModelBounds wide{128, 50257, 4, 40, PadBlocks(32, 128, 4)};
  EXPECT_EQ(wide.pad_blocks, 8);
  StepLayout l32 = MakeStepLayout(32, 64, 128, 4);
  std::vector<char> b32(l32.bytes, 0);
  ASSERT_TRUE(PackDecode(&v[1], 1, 32, l32, wide, b32.data()).ok());  // b: one block, position 0
  std::set<std::pair<int, int>> slots;  // (block, slot) written by padding rows
  for (int r = 1; r < 32; r++) {
    const int pos = I32(b32, l32.positions)[r];
    const int block = I32(b32, l32.tables)[r * l32.table_stride + pos / 4];
    EXPECT_GE(block, 40);
    EXPECT_LT(block, 48);
    EXPECT_TRUE(slots.insert({block, pos % 4}).second) << "two padding rows write one slot";
  }
}

TEST(StepPlan, DecodeRefusesWhatAKernelMustNeverSee) {
  const ModelBounds bounds{128, 50257, 16, 40, 1};
  StepLayout l = MakeStepLayout(8, 64, 128, 16);
  std::vector<char> buf(l.bytes);
  Seq ok{{1, 2}, {5}};
  auto refused = [&](engine::SeqView v, const char* what) {
    Status s = PackDecode(&v, 1, 1, l, bounds, buf.data());
    EXPECT_FALSE(s.ok()) << what;
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  engine::SeqView v = ok.View(16);  // position 16 needs a second block: fine
  EXPECT_TRUE(PackDecode(&v, 1, 1, l, bounds, buf.data()).ok());
  v = ok.View(32);
  refused(v, "block table length");  // position 32 needs three blocks
  v = ok.View(127);
  refused(v, "block table length");
  v = ok.View(128);
  refused(v, "position");
  Seq bad_id{{1, 40}, {5}};
  refused(bad_id.View(17), "block id");
  Seq bad_token{{1}, {50257}};
  refused(bad_token.View(0), "token");
  v = ok.View(0);
  EXPECT_FALSE(PackDecode(&v, 2, 1, l, bounds, buf.data()).ok()) << "more sequences than the bucket";
}

TEST(StepPlan, APassPacksEachSequencesRowsTogether) {
  const ModelBounds bounds{128, 50257, 4, 100, 1};
  StepLayout l = MakeStepLayout(4, 16, 128, 4);
  std::vector<char> buf(l.bytes, 0);
  Seq a{{5, 6}, {10, 11, 12, 13, 14, 15}}, b{{8}, {20, 21}};
  engine::SeqView v[2] = {a.View(0), b.View(0)};
  // The whole of b; a's tokens 2..5 (a later chunk of a long prompt would
  // come with cached advanced instead; here the slice is what is packed).
  int first[2] = {2, 0}, take[2] = {4, 2}, rows = 0, last[2] = {-1, -1}, sampled = 0;
  ASSERT_TRUE(PackPass(v, 2, first, take, l, bounds, buf.data(), &rows, last, &sampled).ok());
  EXPECT_EQ(rows, 6);
  EXPECT_EQ(sampled, 2);
  EXPECT_EQ(last[0], 3);
  EXPECT_EQ(last[1], 5);
  const int32_t want_tokens[] = {12, 13, 14, 15, 20, 21}, want_pos[] = {2, 3, 4, 5, 0, 1},
                want_row[] = {0, 0, 0, 0, 1, 1};
  for (int r = 0; r < 6; r++) {
    EXPECT_EQ(I32(buf, l.tokens)[r], want_tokens[r]);
    EXPECT_EQ(I32(buf, l.positions)[r], want_pos[r]);
    EXPECT_EQ(I32(buf, l.row_table)[r], want_row[r]);
  }
  EXPECT_EQ(I32(buf, l.tables)[0], 5);
  EXPECT_EQ(I32(buf, l.tables)[1], 6);
  EXPECT_EQ(I32(buf, l.tables)[l.table_stride], 8);
  // A pass wider than the buffer, and a table too short, are refused.
  Seq wide{{1, 2, 3, 4, 5}, std::vector<int32_t>(17, 7)};
  engine::SeqView w = wide.View(0);
  int f = 0, t = 17;
  EXPECT_FALSE(PackPass(&w, 1, &f, &t, l, bounds, buf.data(), &rows, last, &sampled).ok());
  Seq short_table{{1}, {1, 2, 3, 4, 5}};
  engine::SeqView s = short_table.View(0);
  t = 5;
  Status st = PackPass(&s, 1, &f, &t, l, bounds, buf.data(), &rows, last, &sampled);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("block table length"), std::string::npos) << st.message();
}

TEST(StepPlan, LogitEditsArePackedPerRowLastInTheBufferAndChecked) {
  const ModelBounds bounds{128, 50257, 16, 40, PadBlocks(8, 128, 16)};
  StepLayout l = MakeStepLayout(8, 64, 128, 16, /*edits_per_row=*/4);
  EXPECT_EQ(l.edit_capacity, 32);
  EXPECT_EQ(l.edits % 256, 0u);
  EXPECT_GT(l.edits, l.edit_rows);
  EXPECT_GT(l.edit_rows, l.params);
  EXPECT_EQ(l.bytes, l.edits + 512u);  // 32 edits of 16 bytes, last
  EXPECT_EQ(l.UsedBytes(3), l.edits + 48u);
  std::vector<char> buf(l.bytes, 0);
  Seq a{{0, 1}, {7}}, b{{2}, {8}};
  const LogitEdit ea[] = {{5, 1.0f, 1.0f, 0.0f}, {9, -INFINITY, 1.0f, 0.0f}};
  const LogitEdit eb[] = {{50256, 0.0f, 1.2f, 0.5f}};
  engine::SeqView v[2] = {a.View(20), b.View(3)};
  v[0].sampling.edits = ea;
  v[0].sampling.num_edits = 2;
  v[0].sampling.min_p = 0.25f;
  v[1].sampling.edits = eb;
  v[1].sampling.num_edits = 1;
  int used = -1;
  ASSERT_TRUE(PackDecode(v, 2, 4, l, bounds, buf.data(), &used).ok());
  EXPECT_EQ(used, 3);
  const int32_t* rows = I32(buf, l.edit_rows);
  EXPECT_EQ(std::vector<int32_t>(rows, rows + 5), (std::vector<int32_t>{0, 2, 3, 3, 3}));  // padding: none
  const auto* e = reinterpret_cast<const LogitEdit*>(buf.data() + l.edits);
  EXPECT_EQ(e[0].id, 5);
  EXPECT_EQ(e[1].bias, -INFINITY);
  EXPECT_EQ(e[2].id, 50256);
  EXPECT_EQ(e[2].sub, 0.5f);
  const auto* params = reinterpret_cast<const kernels::SampleParams*>(buf.data() + l.params);
  EXPECT_EQ(params[0].min_p_log, std::log(0.25f));
  EXPECT_EQ(params[1].min_p_log, 0.0f);  // off
  // A pass: sequence i's edits are sampled row i's when every row samples;
  // a row that does not sample packs neither parameters nor edits, and the
  // next sampling row takes its place (compact).
  int rows_out = 0, last[2] = {0, 0}, first[2] = {0, 0}, take[2] = {1, 1}, sampled = 0;
  ASSERT_TRUE(PackPass(v, 2, first, take, l, bounds, buf.data(), &rows_out, last, &sampled, &used).ok());
  EXPECT_EQ(used, 3);
  EXPECT_EQ(sampled, 2);
  EXPECT_EQ(std::vector<int32_t>(rows, rows + 3), (std::vector<int32_t>{0, 2, 3}));
  v[0].sample = false;
  ASSERT_TRUE(PackPass(v, 2, first, take, l, bounds, buf.data(), &rows_out, last, &sampled, &used).ok());
  EXPECT_EQ(sampled, 1);
  EXPECT_EQ(used, 1);
  EXPECT_EQ(std::vector<int32_t>(rows, rows + 2), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(e[0].id, 50256) << "b's edit is sampled row 0's";
  EXPECT_EQ(params[0].min_p_log, 0.0f) << "b's parameters are sampled row 0's";
  EXPECT_EQ(last[0], 0);
  EXPECT_EQ(last[1], 1);
  v[0].sample = true;
  // An id outside the vocabulary, and more edits than the step holds: refused by name.
  const LogitEdit bad[] = {{50257, 1.0f, 1.0f, 0.0f}};
  v[1].sampling.edits = bad;
  Status s = PackDecode(v, 2, 4, l, bounds, buf.data(), &used);
  EXPECT_NE(s.message().find("logit edit id of sequence 1 is 50257"), std::string::npos) << s.message();
  std::vector<LogitEdit> many(33);
  for (int j = 0; j < 33; j++) many[static_cast<size_t>(j)].id = j;
  v[1].sampling.edits = many.data();
  v[1].sampling.num_edits = 33;
  s = PackDecode(v, 2, 4, l, bounds, buf.data(), &used);
  EXPECT_NE(s.message().find("logit edit count of sequence 1 is 33"), std::string::npos) << s.message();
}

// Structured output: a sampled row's grammar mask is packed after the
// edits (compact: only the rows that have one), mask_rows naming it; the
// other rows, padding and rows that do not sample say -1.
TEST(StepPlan, GrammarMasksArePackedForTheRowsThatHaveOne) {
  const ModelBounds bounds{128, 50257, 16, 40, PadBlocks(8, 128, 16)};
  StepLayout l = MakeStepLayout(8, 64, 128, 16, /*edits_per_row=*/4, /*vocab=*/50257);
  EXPECT_EQ(l.mask_words, 786);
  EXPECT_EQ(l.mask_capacity, 8);
  EXPECT_GT(l.masks, l.edits);
  EXPECT_EQ(l.masks % 256, 0u);
  EXPECT_GE(l.bytes, l.masks + 8u * 786 * 8);
  EXPECT_EQ(l.MaskBytes(2), 2u * 786 * 8);
  EXPECT_EQ(MakeStepLayout(8, 64, 128, 16, 4).mask_capacity, 0) << "no vocabulary: no masks";
  std::vector<char> buf(l.bytes, 0);
  Seq a{{0, 1}, {7}}, b{{2}, {8}}, c{{3}, {9}};
  std::vector<uint64_t> ma(786, 0), mc(786, ~uint64_t{0});
  ma[0] = 0x5;
  engine::SeqView v[3] = {a.View(20), b.View(3), c.View(4)};
  v[0].sampling.mask = ma.data();
  v[2].sampling.mask = mc.data();
  int edits = -1, masks = -1;
  ASSERT_TRUE(PackDecode(v, 3, 4, l, bounds, buf.data(), &edits, &masks).ok());
  EXPECT_EQ(masks, 2);
  const int32_t* mask_rows = I32(buf, l.mask_rows);
  EXPECT_EQ(std::vector<int32_t>(mask_rows, mask_rows + 4), (std::vector<int32_t>{0, -1, 1, -1}));  // padding: none
  const auto* packed = reinterpret_cast<const uint64_t*>(buf.data() + l.masks);
  EXPECT_EQ(packed[0], 0x5u);
  EXPECT_EQ(packed[786], ~uint64_t{0});
  // A pass where a's chunk does not sample: c's mask is sampled row 1's, packed first.
  v[0].sample = false;
  int first[3] = {0, 0, 0}, take[3] = {1, 1, 1}, last[3] = {0, 0, 0}, rows_out = 0, sampled = 0;
  ASSERT_TRUE(PackPass(v, 3, first, take, l, bounds, buf.data(), &rows_out, last, &sampled, &edits, &masks).ok());
  EXPECT_EQ(sampled, 2);
  EXPECT_EQ(masks, 1);
  EXPECT_EQ(std::vector<int32_t>(mask_rows, mask_rows + 2), (std::vector<int32_t>{-1, 0}));
  EXPECT_EQ(packed[0], ~uint64_t{0});
  // More masks than the step holds: refused.
  StepLayout small = MakeStepLayout(1, 64, 128, 16, 4, 50257);
  std::vector<char> sb(small.bytes, 0);
  v[0].sample = true;
  Status st = PackPass(v, 3, first, take, small, bounds, sb.data(), &rows_out, last, &sampled, &edits, &masks);
  EXPECT_FALSE(st.ok());
}

}  // namespace
}  // namespace tw::cuda

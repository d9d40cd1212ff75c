// Prefix caching (engine/block_pool.h, engine/engine.h): the pool's
// reference counts, its exact chain match, its eviction order; the forward
// pass's logits from shared blocks (bitwise those of a full prefill); and
// the engine with the cache on giving bitwise the tokens it gives with the
// cache off — greedy and seeded — for a prefix ending at a block boundary
// and inside a block, identical prompts admitted in one step, eviction under
// memory pressure while blocks are shared, the cancel of a sequence whose
// blocks others share, and several seeded samples of one prompt. Every
// engine test ends with the KV accounting clean: every block free or
// cached, one release per admission, no double release.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "app/app_fixture.h"
#include "app/config.h"
#include "cpu/thread_pool.h"
#include "engine/block_pool.h"
#include "engine/engine_test_util.h"
#include "model/forward.h"
#include "support/seq_state.h"
#include "model/kv_cache.h"

namespace tw::testing {
namespace {

using engine::BlockPool;
using engine::EngineOptions;
using engine::EngineStats;

std::vector<int32_t> Tokens(int n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (int32_t& x : t) x = static_cast<int32_t>(g() % 50000);
  return t;
}

std::vector<int32_t> Concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Caches the blocks `ids` as the chain holding `tokens` (whole blocks).
void CacheChain(BlockPool& p, const std::vector<int32_t>& ids, const std::vector<int32_t>& tokens) {
  uint64_t h = BlockPool::kRootHash;
  for (size_t k = 0; k < ids.size(); k++) {
    const int32_t* t = tokens.data() + k * p.block_size();
    h = p.ChainHash(h, t);
    EXPECT_EQ(p.Register(ids[k], k == 0 ? -1 : ids[k - 1], h, t, true), ids[k]);
  }
}

// ---- the pool ----------------------------------------------------------------

TEST(BlockPool, ReferencesAreCountedAndASecondReleaseIsRefused) {
  BlockPool p(4, 2, true);
  std::vector<int32_t> a;
  ASSERT_TRUE(p.Alloc(2, &a));
  EXPECT_EQ(p.available(), 2);
  const std::vector<int32_t> toks = {5, 6, 7, 8};
  CacheChain(p, a, toks);
  std::vector<int32_t> b;
  std::vector<uint64_t> hashes;
  EXPECT_EQ(p.AcquirePrefix(toks.data(), 2, &b, &hashes), 2);
  EXPECT_EQ(b, a);
  EXPECT_EQ(p.refcount(a[0]), 2);
  EXPECT_FALSE(p.Alloc(3, &b)) << "all or nothing";
  EXPECT_EQ(b.size(), 2u);
  ASSERT_TRUE(p.Release(a).ok());
  EXPECT_EQ(p.available(), 2) << "still referenced by b";
  ASSERT_TRUE(p.Release(b).ok());
  EXPECT_EQ(p.available(), 4);
  EXPECT_EQ(p.cached(), 2) << "released cached blocks stay cached";
  Status again = p.Release(b);
  EXPECT_FALSE(again.ok());
  EXPECT_NE(again.message().find("not referenced"), std::string::npos) << again.message();
  EXPECT_EQ(p.available(), 4) << "a refused release changes nothing";
  EXPECT_FALSE(p.Release({a[0], a[0]}).ok());
  EXPECT_FALSE(p.Release({7}).ok());
}

TEST(BlockPool, AHashCollisionIsAMissNeverAWrongMatch) {
  BlockPool p(4, 2, true);
  const std::vector<int32_t> a = {1, 2}, b = {3, 4};
  std::vector<int32_t> ids;
  ASSERT_TRUE(p.Alloc(1, &ids));
  // Block ids[0] holds b's tokens, but is cached under a's hash: what a
  // colliding hash would do.
  EXPECT_EQ(p.Register(ids[0], -1, p.ChainHash(BlockPool::kRootHash, a.data()), b.data(), true), ids[0]);
  EXPECT_EQ(p.PeekPrefix(a.data(), 1), 0) << "the tokens are compared";
  EXPECT_EQ(p.PeekPrefix(b.data(), 1), 0) << "and b's own hash is not cached";
}

TEST(BlockPool, AChainWhoseParentWasEvictedIsNotMatched) {
  BlockPool p(2, 2, true);
  const std::vector<int32_t> ab = {1, 2, 3, 4}, cb = {9, 9, 3, 4};
  std::vector<int32_t> ids;
  ASSERT_TRUE(p.Alloc(2, &ids));
  CacheChain(p, ids, ab);
  ASSERT_TRUE(p.Release(ids).ok());
  EXPECT_EQ(p.PeekPrefix(ab.data(), 2), 2);
  // The head was released last (most recent), so the tail goes first.
  std::vector<int32_t> x;
  ASSERT_TRUE(p.Alloc(1, &x));
  EXPECT_EQ(x[0], ids[1]);
  EXPECT_EQ(p.PeekPrefix(ab.data(), 2), 1);
  ASSERT_TRUE(p.Release(x).ok());
  // Now the head is evicted and its id holds other tokens: the old second
  // block (were it cached) must not follow the new head.
  std::vector<int32_t> y;
  ASSERT_TRUE(p.Alloc(2, &y));
  EXPECT_EQ(p.cached(), 0);
  CacheChain(p, {y[0]}, cb);
  EXPECT_EQ(p.PeekPrefix(ab.data(), 2), 0);
  EXPECT_EQ(p.PeekPrefix(cb.data(), 2), 1);
  ASSERT_TRUE(p.Release(y).ok());
}

TEST(BlockPool, EvictsTheLeastRecentlyReleasedAndNeverAReferencedBlock) {
  BlockPool p(4, 1, true);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(p.Alloc(1, &a));
  ASSERT_TRUE(p.Alloc(1, &b));
  CacheChain(p, a, {10});
  CacheChain(p, b, {20});
  ASSERT_TRUE(p.Release(a).ok());  // a: released first
  std::vector<int32_t> held, got;
  std::vector<uint64_t> h;
  ASSERT_EQ(p.AcquirePrefix(std::vector<int32_t>{20}.data(), 1, &held, &h), 1);  // b stays referenced
  ASSERT_TRUE(p.Release(b).ok());
  EXPECT_EQ(p.available(), 3);
  ASSERT_TRUE(p.Alloc(3, &got));  // two free, then a (evicted); b is referenced
  EXPECT_EQ(std::count(got.begin(), got.end(), a[0]), 1);
  EXPECT_EQ(std::count(got.begin(), got.end(), b[0]), 0);
  EXPECT_EQ(p.cached(), 1);
  EXPECT_FALSE(p.Alloc(1, &got));
  ASSERT_TRUE(p.Release(got).ok());
  ASSERT_TRUE(p.Release(held).ok());
  EXPECT_EQ(p.available(), 4);
}

TEST(BlockPool, PendingBlocksAreNotReadyAndAFailedOwnerUncachesThem) {
  BlockPool p(2, 1, true);
  std::vector<int32_t> own;
  ASSERT_TRUE(p.Alloc(1, &own));
  const int32_t t = 42;
  p.Register(own[0], -1, p.ChainHash(BlockPool::kRootHash, &t), &t, /*ready=*/false);
  std::vector<int32_t> sharer;
  std::vector<uint64_t> h;
  ASSERT_EQ(p.AcquirePrefix(&t, 1, &sharer, &h), 1);
  EXPECT_FALSE(p.IsReady(sharer[0]));
  p.Unregister(own[0]);  // the owner's prefill failed
  EXPECT_FALSE(p.IsReady(sharer[0]));
  EXPECT_EQ(p.cached(), 0);
  EXPECT_EQ(p.PeekPrefix(&t, 1), 0);
  ASSERT_TRUE(p.Release(own).ok());
  ASSERT_TRUE(p.Release(sharer).ok());
  EXPECT_EQ(p.available(), 2);
  EXPECT_EQ(p.cached(), 0) << "an uncached block goes back to the free list";
}

TEST(BlockPool, ATwinIsAdopted) {
  BlockPool p(3, 1, true);
  std::vector<int32_t> a, b;
  ASSERT_TRUE(p.Alloc(1, &a));
  ASSERT_TRUE(p.Alloc(1, &b));
  const int32_t t = 7;
  const uint64_t h = p.ChainHash(BlockPool::kRootHash, &t);
  EXPECT_EQ(p.Register(a[0], -1, h, &t, true), a[0]);
  EXPECT_EQ(p.Register(b[0], -1, h, &t, true), a[0]) << "the same tokens after the same parent";
  ASSERT_TRUE(p.Adopt(b[0], a[0]).ok());
  EXPECT_EQ(p.refcount(a[0]), 2);
  EXPECT_EQ(p.refcount(b[0]), 0);
  EXPECT_EQ(p.available(), 2);
  ASSERT_TRUE(p.Release({a[0], a[0]}).ok());
  EXPECT_EQ(p.available(), 3);
}

TEST(BlockPool, OffCachesNothing) {
  BlockPool p(2, 1, false);
  std::vector<int32_t> a;
  ASSERT_TRUE(p.Alloc(1, &a));
  const int32_t t = 7;
  EXPECT_EQ(p.Register(a[0], -1, p.ChainHash(BlockPool::kRootHash, &t), &t, true), a[0]);
  EXPECT_EQ(p.cached(), 0);
  EXPECT_EQ(p.PeekPrefix(&t, 1), 0);
  ASSERT_TRUE(p.Release(a).ok());
  EXPECT_EQ(p.available(), 2);
}

// ---- the forward pass over shared blocks -------------------------------------

// A prompt prefilled whole, and the same prompt prefilled after a prefix
// whose K/V another sequence wrote (its blocks shared): the last logits and
// eight decode steps' logits are bitwise equal.
TEST(PrefixCacheForward, LogitsFromSharedBlocksAreBitwiseThoseOfAFullPrefill) {
  const model::Gpt2Model& m = *TinyModel::Get().model;
  const int V = m.config().vocab_size, bs = 16;
  cpu::ThreadPool threads(2);
  std::unique_ptr<model::KvPool> kv;
  ASSERT_TRUE(model::KvPool::Create(m.config(), model::KvCacheConfig{32, bs}, &kv).ok());
  std::unique_ptr<model::Gpt2Forward> fwd;
  ASSERT_TRUE(model::Gpt2Forward::Create(m, kv.get(), &threads, model::ForwardLimits{4, 64}, &fwd).ok());
  for (int prefix_blocks : {1, 3}) {
    const std::vector<int32_t> prefix = Tokens(prefix_blocks * bs, 11);
    const std::vector<int32_t> prompt = Concat(prefix, Tokens(7, 12));
    const int len = static_cast<int>(prompt.size());
    // Full prefill in its own blocks [0, 5).
    model::SeqState full;
    for (int b = 0; b < 5; b++) full.block_table.push_back(b);
    std::vector<float> want(V), got(V);
    ASSERT_TRUE(model::Prefill(*fwd, &full, prompt.data(), len, want.data()).ok());
    // The owner of the prefix writes it in blocks [10, 10 + prefix_blocks) ...
    model::SeqState owner;
    for (int b = 0; b < 5; b++) owner.block_table.push_back(10 + b);
    ASSERT_TRUE(model::Prefill(*fwd, &owner, prefix.data(), static_cast<int>(prefix.size()), nullptr).ok());
    // ... and the sharer reads them, writing only its own blocks from 20.
    model::SeqState sharer;
    for (int b = 0; b < prefix_blocks; b++) sharer.block_table.push_back(10 + b);
    for (int b = prefix_blocks; b < 5; b++) sharer.block_table.push_back(20 + b);
    sharer.length = static_cast<int>(prefix.size());
    ASSERT_TRUE(model::Prefill(*fwd, &sharer, prompt.data() + prefix.size(), len - static_cast<int>(prefix.size()),
                             got.data())
                    .ok());
    EXPECT_EQ(0, std::memcmp(want.data(), got.data(), sizeof(float) * V)) << prefix_blocks << " shared blocks";
    for (int step = 0; step < 8; step++) {
      const int32_t tok = 100 + step;
      model::SeqState* both[2] = {&full, &sharer};
      const int32_t toks[2] = {tok, tok};
      std::vector<float> logits(2 * static_cast<size_t>(V));
      ASSERT_TRUE(model::DecodeBatch(*fwd, both, toks, 2, logits.data()).ok());
      EXPECT_EQ(0, std::memcmp(logits.data(), logits.data() + V, sizeof(float) * V)) << "decode step " << step;
    }
  }
}

// ---- the engine: cache on == cache off, bitwise ----------------------------------

EngineOptions Opts(bool cache) {
  EngineOptions o;
  o.prefix_cache = cache;
  o.max_batch = 8;
  o.threads = 2;
  return o;
}

backend::GenerationRequest Req(std::vector<int32_t> prompt, int max_new, bool seeded, uint64_t seed) {
  backend::GenerationRequest r;
  r.prompt_tokens = std::move(prompt);
  r.max_new_tokens = max_new;
  if (seeded) {
    r.temperature = 0.9f;
    r.top_k = 40;
    r.seed = seed;
    r.has_seed = true;
  }
  return r;
}

// Runs reqs[0] alone, then the rest together; returns every outcome.
std::vector<Outcome> WarmThenTogether(engine::Engine& e, const std::vector<backend::GenerationRequest>& reqs) {
  std::vector<Outcome> out;
  auto first = NewStream("warm");
  EXPECT_TRUE(e.Submit(first, reqs[0], nullptr));
  out.push_back(WaitAndRead(*first));
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 1; i < reqs.size(); i++) {
    streams.push_back(NewStream("r" + std::to_string(i)));
    EXPECT_TRUE(e.Submit(streams.back(), reqs[i], nullptr));
  }
  for (auto& s : streams) out.push_back(WaitAndRead(*s));
  return out;
}

class PrefixCacheEngine : public ::testing::TestWithParam<bool> {};

TEST_P(PrefixCacheEngine, ACachedPrefixGivesBitwiseTheSameTokens) {
  const bool seeded = GetParam();
  // 48 tokens: the prefix ends at a block boundary (3 blocks shared); 40:
  // inside the third block (2 shared, the rest prefilled again).
  for (int prefix_len : {48, 40}) {
    const std::vector<int32_t> prefix = Tokens(prefix_len, 5);
    std::vector<backend::GenerationRequest> reqs;
    for (int i = 0; i < 6; i++) reqs.push_back(Req(Concat(prefix, Tokens(3 + i, 100 + i)), 12, seeded, 900 + i));
    auto off = MakeEngine(Opts(false));
    auto on = MakeEngine(Opts(true));
    std::vector<Outcome> want = WarmThenTogether(*off, reqs);
    std::vector<Outcome> got = WarmThenTogether(*on, reqs);
    for (size_t i = 0; i < reqs.size(); i++) {
      EXPECT_EQ(got[i].tokens, want[i].tokens) << "prefix " << prefix_len << " request " << i;
      EXPECT_EQ(got[i].text, want[i].text);
      EXPECT_EQ(got[i].finish_reason, "length");
    }
    ExpectClean(*off);
    ExpectClean(*on);
    const int shared = prefix_len / 16 * 16;
    EXPECT_EQ(on->stats().prefix_cache_hits, static_cast<uint64_t>(5 * shared)) << "prefix " << prefix_len;
    EXPECT_EQ(off->stats().prefix_cache_hits, 0u);
    EXPECT_GT(on->stats().kv_blocks_cached, 0);
  }
}

// A prompt that is whole blocks and fully cached still prefills its last
// token (its logits), in a block of its own.
TEST_P(PrefixCacheEngine, AFullyCachedPromptRecomputesItsLastBlock) {
  const bool seeded = GetParam();
  const std::vector<int32_t> prompt = Tokens(32, 8);
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 3; i++) reqs.push_back(Req(prompt, 10, seeded, 40 + i));
  auto off = MakeEngine(Opts(false));
  auto on = MakeEngine(Opts(true));
  std::vector<Outcome> want = WarmThenTogether(*off, reqs);
  std::vector<Outcome> got = WarmThenTogether(*on, reqs);
  for (size_t i = 0; i < reqs.size(); i++) EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
  EXPECT_EQ(on->stats().prefix_cache_hits, 2u * 16) << "one block of two, for each later request";
  ExpectClean(*on);
}

// Several samples of one prompt (what `n` asks for), submitted together:
// they share its blocks and each draws what it draws alone.
TEST_P(PrefixCacheEngine, SamplesOfOnePromptShareItsBlocks) {
  const bool seeded = GetParam();
  const std::vector<int32_t> prompt = Tokens(70, 9);
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 5; i++) reqs.push_back(Req(prompt, 20, seeded, 7000 + i));
  std::vector<Outcome> want;
  for (auto& r : reqs) {
    auto off = MakeEngine(Opts(false));
    auto s = NewStream("solo");
    ASSERT_TRUE(off->Submit(s, r, nullptr));
    want.push_back(WaitAndRead(*s));
  }
  auto on = MakeEngine(Opts(true));
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 0; i < reqs.size(); i++) {
    streams.push_back(NewStream("n" + std::to_string(i)));
    ASSERT_TRUE(on->Submit(streams.back(), reqs[i], nullptr));
  }
  for (size_t i = 0; i < reqs.size(); i++) EXPECT_EQ(WaitAndRead(*streams[i]).tokens, want[i].tokens) << i;
  ExpectClean(*on);
  // 70 tokens: 4 whole blocks; each later sample shares them whether it was
  // admitted in the first one's step (sharing its pending blocks) or later.
  EXPECT_EQ(on->stats().prefix_cache_hits, 4u * 64);
}

// Identical prompts admitted in one step: the first prefills the prefix, the
// others share its blocks before they are written and are prefilled in a
// later pass. A paused sequence holding every block makes the step certain:
// its cancel frees the blocks, and the next step admits all of them.
TEST_P(PrefixCacheEngine, IdenticalPromptsAdmittedInOneStep) {
  const bool seeded = GetParam();
  // 2 whole blocks + 2 tokens: all five would fit one pass of 64 tokens, so
  // the pass count shows that the sharers waited for the first one's pass.
  const std::vector<int32_t> prompt = Tokens(34, 21);
  std::vector<backend::GenerationRequest> reqs;
  for (int i = 0; i < 5; i++) reqs.push_back(Req(prompt, 8, seeded, 300 + i));
  std::vector<Outcome> want;
  {
    auto off = MakeEngine(Opts(false));
    for (auto& r : reqs) {
      auto s = NewStream("solo");
      ASSERT_TRUE(off->Submit(s, r, nullptr));
      want.push_back(WaitAndRead(*s));
    }
  }
  EngineOptions o = Opts(true);
  o.admission = engine::AdmissionMode::kReserve;  // the paused holder holds every block
  o.num_kv_blocks = 8;  // the first needs 3 blocks, each other 1 (2 shared): 7
  auto on = MakeEngine(o);
  auto holder = NewStream("holder");
  // 127 positions, 8 blocks; 97 tokens to make, so it is still running
  // when the pause lands a step after its first token.
  ASSERT_TRUE(on->Submit(holder, Req(Tokens(30, 22), 97, false, 0), nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*holder) >= 1; }));
  on->SetPaused("holder", true);
  std::vector<std::shared_ptr<stream::Stream>> streams;
  for (size_t i = 0; i < reqs.size(); i++) {
    streams.push_back(NewStream("same" + std::to_string(i)));
    ASSERT_TRUE(on->Submit(streams.back(), reqs[i], nullptr));
  }
  ASSERT_TRUE(WaitFor([&] { return on->stats().waiting == 5; }));
  on->Cancel("holder");
  for (size_t i = 0; i < reqs.size(); i++) EXPECT_EQ(WaitAndRead(*streams[i]).tokens, want[i].tokens) << i;
  ExpectClean(*on);
  EngineStats st = on->stats();
  EXPECT_EQ(st.prefill_passes, 3u) << "the holder's, then the first alone, then the four sharers in one pass";
  EXPECT_EQ(st.prefix_cache_hits, 4u * 32);
  EXPECT_EQ(st.max_batch_seen, 5);
}

// Memory pressure: a finished request's cached blocks are evicted for new
// admissions, never a block that running sequences share; tokens equal the
// cache-off run's.
TEST_P(PrefixCacheEngine, EvictionUnderPressureWhileOthersShare) {
  const bool seeded = GetParam();
  const std::vector<int32_t> x = Tokens(64, 31);       // 4 whole blocks, cached when it ends
  const std::vector<int32_t> shared = Tokens(32, 32);  // the prefix A and B share
  std::vector<backend::GenerationRequest> reqs = {
      Req(x, 1, seeded, 1),                                // X: 4 blocks, all cached after
      Req(Concat(shared, Tokens(8, 33)), 40, seeded, 2),  // A: 79 positions, 5 blocks
      Req(Concat(shared, Tokens(8, 34)), 40, seeded, 3),  // B: 5 blocks, 2 shared with A
      Req(Tokens(40, 35), 8, seeded, 4),                   // C: 3 blocks
      Req(x, 1, seeded, 1),                                // X again: what is left of its blocks
  };
  auto run = [&](bool cache) {
    EngineOptions o = Opts(cache);
    o.num_kv_blocks = 12;
    auto e = MakeEngine(o);
    std::vector<Outcome> out;
    auto sx = NewStream("x");
    EXPECT_TRUE(e->Submit(sx, reqs[0], nullptr));
    out.push_back(WaitAndRead(*sx));
    // A's stream is gated: the engine waits after A's first token until B
    // and C are submitted, so that the three hold their blocks side by
    // side (the pressure this test is about) however the threads are
    // scheduled. Submitted in a plain loop, A could finish before C came on
    // a loaded machine, and X's blocks outlive the test's pressure.
    std::vector<std::shared_ptr<stream::Stream>> abc;
    abc.push_back(NewGatedStream("abc1"));
    EXPECT_TRUE(e->Submit(abc.back(), reqs[1], nullptr));
    EXPECT_TRUE(StepGated(*abc[0]));
    for (int i = 2; i <= 3; i++) {
      abc.push_back(NewStream("abc" + std::to_string(i)));
      EXPECT_TRUE(e->Submit(abc.back(), reqs[i], nullptr));
    }
    OpenGate(*abc[0]);
    for (auto& s : abc) out.push_back(WaitAndRead(*s));
    const uint64_t hits_before = e->stats().prefix_cache_hits;
    auto sx2 = NewStream("x2");
    EXPECT_TRUE(e->Submit(sx2, reqs[4], nullptr));
    out.push_back(WaitAndRead(*sx2));
    ExpectClean(*e);
    EngineStats st = e->stats();
    if (cache) {
      // A, B and C needed 5 + 3 + 3 fresh blocks of 12 with X's 4 cached:
      // some of X's were evicted (its tail first), so X's second run finds
      // fewer than the 48 tokens (3 blocks) it could share.
      EXPECT_LT(st.prefix_cache_hits - hits_before, 48u);
      EXPECT_GE(st.prefix_cache_hits, 32u) << "B shared A's prefix";
    }
    return out;
  };
  std::vector<Outcome> want = run(false);
  std::vector<Outcome> got = run(true);
  for (size_t i = 0; i < want.size(); i++) EXPECT_EQ(got[i].tokens, want[i].tokens) << i;
}

// Cancelling a sequence whose blocks another shares: the sharer runs on to
// the same tokens, and the blocks stay cached for the next request.
TEST_P(PrefixCacheEngine, CancelOfASequenceWhoseBlocksOthersShare) {
  const bool seeded = GetParam();
  const std::vector<int32_t> prefix = Tokens(48, 41);
  // a has 75 tokens to make (127 positions): it is still running a step
  // after b's first token, when the cancel lands.
  const backend::GenerationRequest a = Req(Concat(prefix, Tokens(5, 42)), 75, seeded, 11);
  const backend::GenerationRequest b = Req(Concat(prefix, Tokens(6, 43)), 20, seeded, 12);
  std::vector<int32_t> want_b;
  {
    auto off = MakeEngine(Opts(false));
    auto s = NewStream("b");
    ASSERT_TRUE(off->Submit(s, b, nullptr));
    want_b = WaitAndRead(*s).tokens;
  }
  auto on = MakeEngine(Opts(true));
  auto sa = NewStream("a");
  ASSERT_TRUE(on->Submit(sa, a, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*sa) >= 2; }));
  auto sb = NewStream("b");
  ASSERT_TRUE(on->Submit(sb, b, nullptr));
  ASSERT_TRUE(WaitFor([&] { return TokenCount(*sb) >= 1; }));
  on->Cancel("a");
  EXPECT_EQ(WaitAndRead(*sa).finish_reason, "cancelled");
  Outcome got = WaitAndRead(*sb);
  EXPECT_EQ(got.tokens, want_b);
  EXPECT_EQ(on->stats().prefix_cache_hits, 48u);
  auto sc = NewStream("c");
  ASSERT_TRUE(on->Submit(sc, Req(Concat(prefix, Tokens(9, 44)), 4, seeded, 13), nullptr));
  WaitAndRead(*sc);
  EXPECT_EQ(on->stats().prefix_cache_hits, 96u) << "the prefix outlived both sequences";
  ExpectClean(*on);
}

// Through the server: --prefix-cache on (the default) and off give the same
// completion, and the cache's counters reach /stats and /metrics.
TEST(PrefixCacheHttp, TheFlagReachesTheEngineAndTheCountersAreServed) {
  app::Config cfg;
  char prog[] = "tokenwire", flag[] = "--prefix-cache", bad[] = "maybe";
  char* argv[] = {prog, flag, bad};
  Status s = app::ParseServeFlags(3, argv, 1, &cfg);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--prefix-cache: on or off"), std::string::npos) << s.message();
  EXPECT_TRUE(app::Config().prefix_cache) << "on by default";

  std::string prompt;
  for (int i = 0; i < 8; i++) prompt += "The quick brown fox jumps over the lazy dog. ";
  const std::string body = R"({"model":"tiny-gpt2","prompt":")" + prompt + R"(","max_tokens":12,"temperature":0})";
  auto completion = [&](AppServer& srv) {
    json::Value v = srv.CallJson("POST", "/v1/completions", body);
    const json::Value* choices = v.Find("choices");
    EXPECT_TRUE(choices != nullptr && choices->items().size() == 1);
    return choices != nullptr && choices->items().size() == 1 ? choices->items()[0].Find("text")->as_string()
                                                               : std::string();
  };
  const std::vector<std::string> common = {"--backend", "cpu", "--model", DataPath("golden/tiny-gpt2"),
                                           "--threads", "1"};
  std::vector<std::string> off_flags = common;
  off_flags.insert(off_flags.end(), {"--prefix-cache", "off"});
  AppServer off(off_flags);
  const std::string want = completion(off);
  completion(off);
  json::Value off_engine = *off.Stats().Find("engine");
  EXPECT_EQ(off_engine.Find("prefix_cache")->as_int(), 0);
  EXPECT_EQ(off_engine.Find("prefix_cache_hits")->as_int(), 0);
  EXPECT_EQ(off_engine.Find("kv_blocks_cached")->as_int(), 0);

  AppServer on(common);
  EXPECT_EQ(completion(on), want);
  EXPECT_EQ(completion(on), want) << "the second completion's prompt came from the cache";
  // The engine publishes its counters at the end of the step that finished
  // the stream, which may be just after the answer.
  json::Value engine;
  EXPECT_TRUE(WaitUntil([&] {
    engine = *on.Stats().Find("engine");
    return engine.Find("kv_blocks_free")->as_int() == engine.Find("kv_blocks_total")->as_int();
  })) << "cached blocks no sequence holds count as free";
  EXPECT_EQ(engine.Find("prefix_cache")->as_int(), 1);
  const int64_t queried = engine.Find("prefix_cache_queries")->as_int();
  const int64_t hits = engine.Find("prefix_cache_hits")->as_int();
  EXPECT_GT(queried, 100);
  EXPECT_EQ(hits, (queried / 2 - 1) / 16 * 16) << "the second prompt's whole blocks, all but its last token";
  EXPECT_GT(engine.Find("kv_blocks_cached")->as_int(), 0);
  const std::string metrics = on.Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("\ntokenwire_prefix_cache_queries_total " + std::to_string(queried) + "\n"),
            std::string::npos);
  EXPECT_NE(metrics.find("\ntokenwire_prefix_cache_hits_total " + std::to_string(hits) + "\n"), std::string::npos);
  EXPECT_NE(metrics.find("\ntokenwire_kv_blocks_cached "), std::string::npos);
}

// `n` samples of one prompt through /v1/completions (choice i drawn with
// seed + i): the same choices with the cache off and on, and with it on the
// later choices share the prompt's blocks.
TEST(PrefixCacheHttp, NSamplesOfOnePromptShareItsBlocks) {
  std::string prompt;
  for (int i = 0; i < 6; i++) prompt += "A prompt that several samples share, block after block. ";
  const std::string body =
      R"({"model":"tiny-gpt2","prompt":")" + prompt + R"(","max_tokens":10,"temperature":0.9,"seed":7,"n":4})";
  auto choices = [&](AppServer& srv) {
    json::Value v = srv.CallJson("POST", "/v1/completions", body);
    std::vector<std::string> texts(4);
    const json::Value* cs = v.Find("choices");
    EXPECT_TRUE(cs != nullptr && cs->items().size() == 4) << json::Serialize(v);
    if (cs == nullptr) return texts;
    for (const json::Value& c : cs->items()) {
      const int64_t i = c.Find("index")->as_int();
      if (i >= 0 && i < 4) texts[static_cast<size_t>(i)] = c.Find("text")->as_string();
    }
    return texts;
  };
  const std::vector<std::string> common = {"--backend", "cpu", "--model", DataPath("golden/tiny-gpt2"),
                                           "--threads", "1"};
  std::vector<std::string> off_flags = common;
  off_flags.insert(off_flags.end(), {"--prefix-cache", "off"});
  AppServer off(off_flags);
  const std::vector<std::string> want = choices(off);
  EXPECT_NE(want[0], want[1]) << "seed + i: the samples differ";
  AppServer on(common);
  EXPECT_EQ(choices(on), want);
  json::Value engine;
  ASSERT_TRUE(WaitUntil([&] {
    engine = *on.Stats().Find("engine");
    return engine.Find("finished")->as_int() == 4;
  }));
  const int64_t prompt_tokens = engine.Find("prefix_cache_queries")->as_int() / 4;
  EXPECT_GT(prompt_tokens, 32);
  EXPECT_EQ(engine.Find("prefix_cache_hits")->as_int(), 3 * ((prompt_tokens - 1) / 16 * 16))
      << "choices 1..3 share the prompt's whole blocks (all but its last token)";
}

INSTANTIATE_TEST_SUITE_P(GreedyAndSeeded, PrefixCacheEngine, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Seeded" : "Greedy"; });

}  // namespace
}  // namespace tw::testing

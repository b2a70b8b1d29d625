// The paged KV block pool and block tables: budget, exhaustion, reference
// counts, and that nothing leaks.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/kv/kv_cache.h"
#include "core/scheduler/prefix_cache.h"

namespace prepack {
namespace {

ModelConfig Config() {
    ModelConfig c;
    c.dim = 32;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 8;
    c.rope_dim = 8;
    c.n_layers = 3;
    c.hidden_dim = 64;
    c.vocab_size = 300;
    c.max_context = 128;
    return c;
}

TEST(KvBlockPool, BudgetDecidesTheBlockCount) {
    const ModelConfig c = Config();
    // One block of 4 tokens: 2 (K,V) x 3 layers x 4 tokens x 16 floats x 4 bytes.
    const uint64_t per_block = 2ull * 3 * 4 * 16 * 4;
    auto pool = KvBlockPool::Create(c, 4, per_block * 10 + per_block / 2);
    ASSERT_TRUE(pool.ok()) << pool.status();
    EXPECT_EQ((*pool)->bytes_per_block(), per_block);
    EXPECT_EQ((*pool)->num_blocks(), 10);
    EXPECT_EQ((*pool)->num_free(), 10);
    EXPECT_EQ(KvBlockPool::Create(c, 4, per_block - 1).status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_EQ(KvBlockPool::Create(c, 0, 1 << 20).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KvBlockPool, ExhaustionIsAnErrorAndReleaseRefills) {
    auto pool = KvBlockPool::Create(Config(), 4, 2ull * 3 * 4 * 16 * 4 * 3);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    std::vector<int32_t> got;
    for (int i = 0; i < 3; ++i) {
        auto b = p.Allocate();
        ASSERT_TRUE(b.ok());
        got.push_back(*b);
    }
    auto none = p.Allocate();
    EXPECT_EQ(none.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_NE(std::string(none.status().message()).find("KV cache is full"), std::string::npos);
    p.AddRef(got[0]);
    EXPECT_EQ(p.RefCount(got[0]), 2);
    p.Release(got[0]);
    EXPECT_EQ(p.num_free(), 0) << "a shared block stays while referenced";
    for (int32_t b : got) p.Release(b);
    EXPECT_EQ(p.num_free(), 3);
}

TEST(BlockTable, ReserveIsAllOrNothing) {
    auto pool = KvBlockPool::Create(Config(), 4, 2ull * 3 * 4 * 16 * 4 * 5);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    BlockTable a, b;
    ASSERT_TRUE(a.Reserve(p, 9).ok());   // 3 blocks
    EXPECT_EQ(a.blocks().size(), 3u);
    EXPECT_EQ(a.capacity(), 12);
    EXPECT_EQ(p.num_free(), 2);
    EXPECT_EQ(b.Reserve(p, 13).code(), absl::StatusCode::kResourceExhausted);   // needs 4
    EXPECT_EQ(p.num_free(), 2) << "failed reserve must not keep blocks";
    ASSERT_TRUE(a.Reserve(p, 12).ok());   // already fits: no new block
    EXPECT_EQ(p.num_free(), 2);
    a.Release();
    EXPECT_EQ(p.num_free(), 5);
    {
        BlockTable c;
        ASSERT_TRUE(c.Reserve(p, 20).ok());
        EXPECT_EQ(p.num_free(), 0);
        BlockTable moved = std::move(c);
        EXPECT_EQ(moved.blocks().size(), 5u);
    }
    EXPECT_EQ(p.num_free(), 5) << "destructor releases blocks";
}

TEST(KvBlockPool, BlocksDoNotAlias) {
    auto pool = KvBlockPool::Create(Config(), 4, 2ull * 3 * 4 * 16 * 4 * 4);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    // Write a distinct value into every (layer, K/V, block) and read all back.
    for (int l = 0; l < 3; ++l) {
        for (int b = 0; b < 4; ++b) {
            for (int i = 0; i < 4 * 16; ++i) {
                p.K(l, b)[i] = float(l * 1000 + b * 10 + 1);
                p.V(l, b)[i] = float(l * 1000 + b * 10 + 2);
            }
        }
    }
    for (int l = 0; l < 3; ++l) {
        for (int b = 0; b < 4; ++b) {
            for (int i = 0; i < 4 * 16; ++i) {
                ASSERT_EQ(p.K(l, b)[i], float(l * 1000 + b * 10 + 1));
                ASSERT_EQ(p.V(l, b)[i], float(l * 1000 + b * 10 + 2));
            }
        }
    }
}
}  // namespace
}  // namespace prepack

namespace prepack {
namespace {

uint64_t BlockBytes() { return 2ull * 3 * 4 * 16 * 4; }

// Fills every layer's K and V rows of `slots` token slots of `t` with `value`.
void Write(KvBlockPool& p, const BlockTable& t, int from, int to, float value) {
    for (int l = 0; l < 3; ++l) {
        for (int i = from; i < to; ++i) {
            float* k = p.K(l, t.blocks()[i / 4]) + (i % 4) * 16;
            float* v = p.V(l, t.blocks()[i / 4]) + (i % 4) * 16;
            for (int j = 0; j < 16; ++j) k[j] = v[j] = value;
        }
    }
}

float Read(KvBlockPool& p, const BlockTable& t, int i) { return p.K(2, t.blocks()[i / 4])[(i % 4) * 16 + 5]; }

TEST(BlockTable, SharedPrefixIsCopiedOnWriteOfThePartialBlock) {
    auto pool = KvBlockPool::Create(Config(), 4, BlockBytes() * 10);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    BlockTable prefix;
    ASSERT_TRUE(prefix.Reserve(p, 6).ok());   // 2 blocks: 4 + 2 tokens
    Write(p, prefix, 0, 6, 1.0f);
    prefix.set_num_tokens(6);

    BlockTable a, b;
    a.Share(p, prefix.blocks(), 6);
    b.Share(p, prefix.blocks(), 6);
    EXPECT_EQ(a.num_tokens(), 6);
    EXPECT_EQ(p.RefCount(prefix.blocks()[0]), 3);
    EXPECT_EQ(p.num_free(), 8) << "sharing allocates nothing";
    // a writes token 6, inside the shared partial block: it gets a private copy.
    ASSERT_TRUE(a.Reserve(p, 7).ok());
    EXPECT_NE(a.blocks()[1], prefix.blocks()[1]);
    EXPECT_EQ(a.blocks()[0], prefix.blocks()[0]) << "full blocks stay shared";
    EXPECT_EQ(Read(p, a, 5), 1.0f) << "the copy carries the prefix's tokens";
    Write(p, a, 6, 7, 2.0f);
    // b writes its own token 6 too: neither sees the other's.
    ASSERT_TRUE(b.Reserve(p, 9).ok());
    Write(p, b, 6, 9, 3.0f);
    EXPECT_EQ(Read(p, a, 6), 2.0f);
    EXPECT_EQ(Read(p, b, 6), 3.0f);
    EXPECT_EQ(Read(p, prefix, 5), 1.0f);
    EXPECT_EQ(p.RefCount(prefix.blocks()[1]), 1) << "both sharers moved off the partial block";
    // Freed when the last holder lets go.
    prefix.Release();
    EXPECT_EQ(p.RefCount(a.blocks()[0]), 2);
    a.Release();
    b.Release();
    EXPECT_EQ(p.num_free(), p.num_blocks());
}

// Storage the pool does not own (the CUDA backend's device memory): the
// bytes are reached only through the allocator's copy, and given back once.
TEST(KvBlockPool, ExternalStorageIsCopiedThroughItsCallbackAndFreedOnce) {
    std::vector<char> memory;
    int copies = 0, frees = 0;
    size_t asked = 0;
    const KvStorageAllocator allocator = [&](size_t bytes) -> absl::StatusOr<KvStorage> {
        asked = bytes;
        memory.assign(bytes, 0);
        KvStorage s;
        s.base = memory.data();
        s.copy = [&](void* dst, const void* src, size_t n) {
            ++copies;
            std::memcpy(dst, src, n);
        };
        s.free = [&](void* base) {
            EXPECT_EQ(base, memory.data());
            ++frees;
        };
        return s;
    };
    {
        auto pool = KvBlockPool::Create(Config(), 4, BlockBytes() * 5, cpu::DType::kF32, allocator);
        ASSERT_TRUE(pool.ok()) << pool.status();
        KvBlockPool& p = **pool;
        EXPECT_FALSE(p.on_host());
        EXPECT_EQ(asked, BlockBytes() * 5);
        EXPECT_EQ(p.KBytes(0, 0), static_cast<void*>(memory.data()));
        BlockTable prefix, a;
        ASSERT_TRUE(prefix.Reserve(p, 6).ok());
        Write(p, prefix, 0, 6, 1.0f);   // (the test's memory is host memory)
        prefix.set_num_tokens(6);
        a.Share(p, prefix.blocks(), 6);
        ASSERT_TRUE(a.Reserve(p, 7).ok());   // copy-on-write of the partial block
        EXPECT_EQ(copies, 2 * 3) << "K and V of each of the 3 layers";
        EXPECT_EQ(Read(p, a, 5), 1.0f);
    }
    EXPECT_EQ(frees, 1);
    const KvStorageAllocator failing = [](size_t bytes) -> absl::StatusOr<KvStorage> {
        return absl::ResourceExhaustedError(absl::StrCat("no room for ", bytes, " bytes"));
    };
    EXPECT_EQ(KvBlockPool::Create(Config(), 4, BlockBytes() * 5, cpu::DType::kF32, failing).status().code(),
              absl::StatusCode::kResourceExhausted);
}

TEST(PrefixCache, ReusesWholeBlocksAndEvictsLeastRecentlyReleased) {
    auto pool = KvBlockPool::Create(Config(), 4, BlockBytes() * 12);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    PrefixCache cache(p);
    const std::vector<int32_t> x = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};   // 2 whole blocks + 2
    BlockTable t;
    ASSERT_TRUE(t.Reserve(p, 10).ok());
    cache.Insert(x, t, 10);
    EXPECT_EQ(cache.size(), 2);
    EXPECT_EQ(p.RefCount(t.blocks()[0]), 2);
    // Same first 8 tokens: both blocks; diverging in the second block: one.
    std::vector<int32_t> y = x;
    y[9] = 99;
    EXPECT_EQ(cache.Lookup(y, 10), (std::vector<int32_t>{t.blocks()[0], t.blocks()[1]}));
    y[6] = 77;
    EXPECT_EQ(cache.Lookup(y, 10), (std::vector<int32_t>{t.blocks()[0]}));
    y[0] = 55;
    EXPECT_TRUE(cache.Lookup(y, 10).empty());
    // Never the whole prompt: an 8-token prompt reuses at most 1 block (its
    // last token must be computed to get logits).
    EXPECT_EQ(cache.Lookup(std::vector<int32_t>(x.begin(), x.begin() + 8), 8).size(), 1u);
    // Blocks in use are not evicted; once only the cache holds them they are,
    // and a child goes with its parent.
    EXPECT_EQ(cache.Evict(5), 0);
    t.Release();   // the parent block is released first: it goes first
    EXPECT_EQ(cache.Evict(1), 2) << "evicting the parent drops its chained child";
    EXPECT_EQ(cache.size(), 0);
    EXPECT_EQ(p.num_free(), p.num_blocks());
}

TEST(PrefixCache, EvictsIdleBlocksInTheOrderTheyWereReleasedAndSkipsBlocksInUse) {
    auto pool = KvBlockPool::Create(Config(), 4, BlockBytes() * 12);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    PrefixCache cache(p);
    // Three one-block prompts, each computed by its own table.
    std::vector<std::vector<int32_t>> prompts = {{1, 1, 1, 1, 9}, {2, 2, 2, 2, 9}, {3, 3, 3, 3, 9}};
    std::vector<BlockTable> t(3);
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(t[i].Reserve(p, 5).ok());
        cache.Insert(prompts[i], t[i], 5);
    }
    ASSERT_EQ(cache.size(), 3);
    EXPECT_EQ(cache.IdleBlocks(), 0) << "every cached block is still in use";
    EXPECT_EQ(cache.Evict(3), 0);
    const int32_t b0 = t[0].blocks()[0], b1 = t[1].blocks()[0];
    t[1].Release();   // prompt 1 first, then prompt 0; prompt 2 stays in use
    t[0].Release();
    EXPECT_EQ(cache.IdleBlocks(), 2);
    const int32_t free_before = p.num_free();
    EXPECT_EQ(cache.Evict(1), 1);
    EXPECT_EQ(p.num_free(), free_before + 1);
    EXPECT_TRUE(cache.Lookup(prompts[1], 5).empty()) << "the block released longest ago goes first";
    EXPECT_EQ(cache.Lookup(prompts[0], 5), (std::vector<int32_t>{b0}));
    // A sharer makes an idle block busy again; letting go makes it idle again.
    BlockTable sharer;
    sharer.Share(p, {b0}, 4);
    EXPECT_EQ(cache.IdleBlocks(), 0);
    EXPECT_EQ(cache.Evict(1), 0) << "blocks in use are never evicted";
    sharer.Release();
    EXPECT_EQ(cache.IdleBlocks(), 1);
    EXPECT_EQ(cache.Evict(5), 1);
    EXPECT_EQ(cache.size(), 1) << "only the block still in use stays cached";
    (void)b1;
    t[2].Release();
    EXPECT_EQ(cache.IdleBlocks(), 1);
}

TEST(PrefixCache, GoingAwayLeavesTheBlocksItSharesWithTables) {
    auto pool = KvBlockPool::Create(Config(), 4, BlockBytes() * 4);
    ASSERT_TRUE(pool.ok());
    KvBlockPool& p = **pool;
    BlockTable t;
    ASSERT_TRUE(t.Reserve(p, 9).ok());
    {
        PrefixCache cache(p);
        cache.Insert({1, 2, 3, 4, 5, 6, 7, 8, 9}, t, 9);
        EXPECT_EQ(p.RefCount(t.blocks()[0]), 2);
    }
    EXPECT_EQ(p.RefCount(t.blocks()[0]), 1);
    t.Release();   // no listener is called any more: nothing to crash into
    EXPECT_EQ(p.num_free(), p.num_blocks());
}

}  // namespace
}  // namespace prepack

// The paged KV block pool and block tables: budget, exhaustion, reference
// counts, and that nothing leaks.
#include <gtest/gtest.h>

#include "core/kv_cache.h"

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

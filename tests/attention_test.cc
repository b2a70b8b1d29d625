// Paged attention kernels against a naive dense computation, and cascade
// (shared-prefix) attention against plain paged attention.
#include <algorithm>
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "core/request/sampler.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/bf16.h"

namespace prepack::cpu {
namespace {

constexpr int kBlock = 8;

// A paged K/V cache of random values. For a bf16 cache the values are
// rounded to bf16 first, so the dense f32 computation sees exactly the
// numbers the kernel reads (widening bf16 is exact).
struct Fixture {
    int n_heads, n_kv_heads, head_dim, n_blocks, block;
    DType dtype;
    std::vector<float> k, v;         // [block][slot][kv_dim]
    std::vector<uint16_t> k16, v16;  // the same, as bf16, for a bf16 cache
    Fixture(int heads, int kv_heads, int hd, int blocks, uint64_t seed, int block_size = kBlock,
            DType kv_dtype = DType::kF32)
        : n_heads(heads), n_kv_heads(kv_heads), head_dim(hd), n_blocks(blocks), block(block_size), dtype(kv_dtype) {
        Rng rng(seed);
        k.resize(size_t(blocks) * block * kv_dim());
        v.resize(k.size());
        for (float& x : k) x = rng.NextFloat() * 2 - 1;
        for (float& x : v) x = rng.NextFloat() * 2 - 1;
        if (dtype == DType::kBf16) {
            for (auto [f32, bf16] : {std::pair{&k, &k16}, std::pair{&v, &v16}}) {
                for (float x : *f32) bf16->push_back(F32ToBf16(x));
                for (size_t i = 0; i < f32->size(); ++i) (*f32)[i] = Bf16ToF32((*bf16)[i]);
            }
        }
    }
    int kv_dim() const { return n_kv_heads * head_dim; }
    PagedKv Kv() const {
        if (dtype == DType::kBf16) return {k16.data(), v16.data(), block, kv_dim(), DType::kBf16};
        return {k.data(), v.data(), block, kv_dim()};
    }
    AttentionShape Shape() const { return {n_heads, n_kv_heads, head_dim, int64_t(n_heads) * head_dim, int64_t(n_heads) * head_dim}; }
    const float* Row(const std::vector<float>& kv, const std::vector<int32_t>& blocks, int t) const {
        return kv.data() + (size_t(blocks[t / block]) * block + t % block) * kv_dim();
    }
    // Naive softmax attention of one query row over keys [0, n_keys).
    std::vector<float> Dense(const float* q, const std::vector<int32_t>& blocks, int n_keys) const {
        std::vector<float> out(size_t(n_heads) * head_dim, 0.0f);
        const int group = n_heads / n_kv_heads;
        for (int h = 0; h < n_heads; ++h) {
            const int kvh = h / group;
            std::vector<double> w(n_keys);
            double max = -1e300, sum = 0;
            for (int t = 0; t < n_keys; ++t) {
                double s = 0;
                for (int i = 0; i < head_dim; ++i) s += double(q[h * head_dim + i]) * Row(k, blocks, t)[kvh * head_dim + i];
                w[t] = s / std::sqrt(double(head_dim));
                max = std::max(max, w[t]);
            }
            for (double& x : w) sum += (x = std::exp(x - max));
            for (int t = 0; t < n_keys; ++t) {
                for (int i = 0; i < head_dim; ++i) out[h * head_dim + i] += float(w[t] / sum * Row(v, blocks, t)[kvh * head_dim + i]);
            }
        }
        return out;
    }
};

std::vector<float> RandomQ(int rows, int width, uint64_t seed) {
    Rng rng(seed);
    std::vector<float> q(size_t(rows) * width);
    for (float& x : q) x = rng.NextFloat() * 2 - 1;
    return q;
}

TEST(PagedAttention, PrefillSpansMatchDenseCausalAttention) {
    Fixture f(8, 2, 16, 40, 1);
    // Two spans: one continuing after 13 cached keys, one fresh; scattered blocks.
    const std::vector<int32_t> blocks_a = {7, 3, 30, 12, 5};
    const std::vector<int32_t> blocks_b = {1, 22, 9};
    const int width = f.n_heads * f.head_dim;
    std::vector<float> q = RandomQ(20 + 17, width, 2), out(q.size(), 0.0f);
    const AttentionSpan spans[] = {{0, 20, 13, blocks_a.data()}, {20, 17, 0, blocks_b.data()}};
    PagedAttention(q.data(), out.data(), f.Shape(), spans, 2, f.Kv());
    for (int i = 0; i < 37; ++i) {
        const bool a = i < 20;
        const auto want = f.Dense(q.data() + size_t(i) * width, a ? blocks_a : blocks_b, a ? 13 + i + 1 : i - 20 + 1);
        for (int j = 0; j < width; ++j) ASSERT_NEAR(out[size_t(i) * width + j], want[j], 1e-5) << "row " << i;
    }
}

// The register-blocked kernels have paths for head sizes that are multiples
// of 16, of 8 and neither, for row counts that are and are not multiples of
// the row block, and chunks that end inside a block or are capped below a
// large block, each for an f32 and a bf16 cache: random shapes over all of
// them against the dense computation.
class PagedAttentionDType : public ::testing::TestWithParam<DType> {};

TEST_P(PagedAttentionDType, RandomShapesMatchDenseCausalAttention) {
    Rng rng(77);
    for (int hd : {64, 24, 8, 5}) {
        for (int block : {1, 16, 80}) {
            for (int group : {1, 3, 4}) {
                const int kv_heads = 2, heads = kv_heads * group;
                const int n_spans = 3;
                std::vector<int> n_q(n_spans), before(n_spans);
                int total_q = 0, max_keys = 0;
                for (int i = 0; i < n_spans; ++i) {
                    n_q[i] = 1 + int(rng.NextFloat() * 40);
                    before[i] = i == 0 ? 0 : int(rng.NextFloat() * 100);
                    total_q += n_q[i];
                    max_keys = std::max(max_keys, n_q[i] + before[i]);
                }
                const int per_seq = (max_keys + block - 1) / block;
                Fixture f(heads, kv_heads, hd, per_seq * n_spans, 1000 + hd + block + group, block, GetParam());
                // Sequence i uses blocks i, i + n_spans, i + 2 n_spans, ... (interleaved, not contiguous).
                std::vector<std::vector<int32_t>> tables(n_spans);
                for (int i = 0; i < n_spans; ++i) {
                    for (int b = 0; b < per_seq; ++b) tables[i].push_back(b * n_spans + i);
                }
                const int width = heads * hd;
                std::vector<float> q = RandomQ(total_q, width, 5 + hd), out(q.size(), 0.0f);
                std::vector<AttentionSpan> spans;
                for (int i = 0, row = 0; i < n_spans; row += n_q[i], ++i) {
                    spans.push_back({row, n_q[i], before[i], tables[i].data()});
                }
                PagedAttention(q.data(), out.data(), f.Shape(), spans.data(), n_spans, f.Kv());
                for (int i = 0; i < n_spans; ++i) {
                    for (int j = 0; j < n_q[i]; ++j) {
                        const int64_t row = spans[i].q_row + j;
                        const auto want = f.Dense(q.data() + row * width, tables[i], before[i] + j + 1);
                        for (int x = 0; x < width; ++x) {
                            ASSERT_NEAR(out[row * width + x], want[x], 2e-5)
                                << "hd " << hd << " block " << block << " group " << group << " span " << i << " query " << j;
                        }
                    }
                }
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(KvDType, PagedAttentionDType, ::testing::Values(DType::kF32, DType::kBf16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

TEST_P(PagedAttentionDType, CascadeEqualsPlainPagedAttention) {
    for (int kv_heads : {1, 2, 4}) {
        Fixture f(4, kv_heads, 8, 64, 10 + kv_heads, kBlock, GetParam());
        // Five decode sequences sharing blocks {2, 9, 4} (24 tokens), then their
        // own blocks; one more sequence with other blocks.
        std::vector<std::vector<int32_t>> tables = {
            {2, 9, 4, 11, 12}, {2, 9, 4, 13}, {2, 9, 4, 14, 15, 16}, {2, 9, 4, 17}, {2, 9, 4, 18, 19}, {20, 21, 22}};
        const std::vector<int32_t> kv_before = {35, 27, 44, 24, 38, 20};
        const int width = f.n_heads * f.head_dim;
        std::vector<float> q = RandomQ(6, width, 99);
        std::vector<AttentionSpan> spans;
        for (int i = 0; i < 6; ++i) spans.push_back({i, 1, kv_before[i], tables[i].data()});
        const auto groups = FindSharedPrefixes(spans.data(), 6, kBlock, 8, 2);
        ASSERT_EQ(groups.size(), 1u);
        EXPECT_EQ(groups[0].shared_len, 24);
        EXPECT_EQ(groups[0].spans, (std::vector<int32_t>{0, 1, 2, 3, 4}));
        std::vector<float> plain(q.size()), cascade(q.size());
        PagedAttention(q.data(), plain.data(), f.Shape(), spans.data(), 6, f.Kv());
        PagedAttention(q.data(), cascade.data(), f.Shape(), spans.data(), 6, f.Kv(), groups);
        for (size_t i = 0; i < q.size(); ++i) ASSERT_NEAR(cascade[i], plain[i], 1e-5) << "kv_heads " << kv_heads << " at " << i;
        // And both equal the dense computation (the +1 is the query's own key).
        for (int s = 0; s < 6; ++s) {
            const auto want = f.Dense(q.data() + size_t(s) * width, tables[s], kv_before[s] + 1);
            for (int j = 0; j < width; ++j) ASSERT_NEAR(cascade[size_t(s) * width + j], want[j], 1e-5);
        }
    }
}

TEST(CascadeAttention, OnlyWholeBlocksBelowEveryQueryAreShared) {
    const std::vector<int32_t> a = {3, 4, 5, 6}, b = {3, 4, 5, 7}, c = {3, 4, 8};
    // c's keys end inside block 5's slot range: only blocks 3, 4 are below all queries.
    std::vector<AttentionSpan> spans = {{0, 1, 30, a.data()}, {1, 1, 25, b.data()}, {2, 1, 17, c.data()}};
    auto groups = FindSharedPrefixes(spans.data(), 3, kBlock, 1, 2);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].shared_len, 16);
    EXPECT_TRUE(FindSharedPrefixes(spans.data(), 3, kBlock, 17, 2).empty()) << "below the threshold";
    EXPECT_TRUE(FindSharedPrefixes(spans.data(), 3, kBlock, 1, 4).empty()) << "too few members";
    spans[1].n_q = 5;   // a prefill span never joins a cascade
    groups = FindSharedPrefixes(spans.data(), 3, kBlock, 1, 2);
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].spans, (std::vector<int32_t>{0, 2}));
}

}  // namespace
}  // namespace prepack::cpu

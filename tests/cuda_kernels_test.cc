// The CUDA kernels against the CPU kernels (the engine's reference backend)
// on random shapes: f32 activations to f32 tolerance, bf16 activations and
// KV to bf16's. Every test skips cleanly where no GPU is usable (CI has
// nvcc but no GPU: there this file only proves the backend compiles and links).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/bf16.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_buffer.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/lazy.h"

namespace prepack::cuda {
namespace {

using cpu::DType;

#define REQUIRE_GPU() \
    if (DeviceCount() == 0) GTEST_SKIP() << "no usable CUDA device (no GPU or no driver); skipping"

std::vector<float> Random(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = u(rng);
    return v;
}

// Values a bf16 buffer can hold exactly, so CPU and GPU start from the same numbers.
std::vector<float> RoundedToBf16(std::vector<float> v) {
    for (float& x : v) x = cpu::Bf16ToF32(cpu::F32ToBf16(x));
    return v;
}

// A device copy of `v` stored as `dtype`.
DeviceBuffer Upload(const std::vector<float>& v, DType dtype) {
    const size_t bytes = v.size() * (dtype == DType::kBf16 ? 2 : 4);
    auto b = DeviceBuffer::Allocate(bytes);
    EXPECT_TRUE(b.ok()) << b.status();
    if (dtype == DType::kBf16) {
        std::vector<uint16_t> h(v.size());
        cpu::F32ToBf16Row(v.data(), h.data(), v.size());
        EXPECT_TRUE(b->CopyFromHost(h.data(), bytes).ok());
    } else {
        EXPECT_TRUE(b->CopyFromHost(v.data(), bytes).ok());
    }
    return std::move(*b);
}

template <typename T>
DeviceBuffer UploadRaw(const std::vector<T>& v) {
    auto b = DeviceBuffer::Allocate(v.size() * sizeof(T));
    EXPECT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(b->CopyFromHost(v.data(), v.size() * sizeof(T)).ok());
    return std::move(*b);
}

std::vector<float> Download(const DeviceBuffer& b, size_t n, DType dtype) {
    EXPECT_TRUE(Synchronize("kernel").ok());
    std::vector<float> v(n);
    if (dtype == DType::kBf16) {
        std::vector<uint16_t> h(n);
        EXPECT_TRUE(b.CopyToHost(h.data(), n * 2).ok());
        cpu::Bf16ToF32Row(h.data(), v.data(), n);
    } else {
        EXPECT_TRUE(b.CopyToHost(v.data(), n * 4).ok());
    }
    return v;
}

// Largest |a - b| relative to the largest |b|.
double MaxRelDiff(const std::vector<float>& a, const std::vector<float>& b) {
    double diff = 0.0, scale = 1e-30;
    for (size_t i = 0; i < a.size(); ++i) {
        diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
        scale = std::max(scale, std::fabs(double(b[i])));
    }
    return diff / scale;
}

class CudaKernels : public ::testing::TestWithParam<DType> {
protected:
    void SetUp() override { REQUIRE_GPU(); }
    DType act() const { return GetParam(); }
    // f32 kernels differ from the CPU by summation order and libm; bf16
    // outputs are rounded once (2^-9 relative).
    double tol() const { return act() == DType::kBf16 ? 1e-2 : 2e-5; }
    std::vector<float> Input(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f) const {
        std::vector<float> v = Random(n, seed, lo, hi);
        return act() == DType::kBf16 ? RoundedToBf16(std::move(v)) : v;
    }
};

TEST_P(CudaKernels, RmsNormMatchesCpu) {
    for (auto [rows, dim] : {std::pair{1, 64}, {7, 288}, {33, 4096}, {3, 1000}}) {
        const std::vector<float> x = Input(size_t(rows) * dim, rows + dim), w = Random(dim, 5, 0.5f, 1.5f);
        std::vector<float> want(x.size());
        cpu::RmsNorm(x.data(), w.data(), want.data(), rows, dim, 1e-5f);
        DeviceBuffer dx = Upload(x, act()), dw = Upload(w, DType::kF32), dout = Upload(x, act());
        RmsNorm(dx.data(), dw.as<float>(), dout.data(), rows, dim, 1e-5f, act());
        EXPECT_LT(MaxRelDiff(Download(dout, x.size(), act()), want), tol()) << rows << "x" << dim;
    }
}

TEST_P(CudaKernels, GatherMatchesCpuForF32AndBf16Tables) {
    const int vocab = 300, dim = 96, rows = 17;
    const std::vector<float> table = RoundedToBf16(Random(size_t(vocab) * dim, 3));
    std::vector<int32_t> ids(rows);
    for (int r = 0; r < rows; ++r) ids[r] = (r * 131 + 7) % vocab;
    std::vector<float> want(size_t(rows) * dim);
    cpu::Gather(cpu::Matrix{table.data(), nullptr}, ids.data(), want.data(), rows, dim);
    DeviceBuffer dids = UploadRaw(ids);
    for (DType table_dtype : {DType::kF32, DType::kBf16}) {
        DeviceBuffer dt = Upload(table, table_dtype), dout = Upload(want, act());
        Gather(dt.data(), table_dtype, dids.as<int32_t>(), dout.data(), rows, dim, act());
        // Exact: the table's values are bf16-representable.
        EXPECT_EQ(MaxRelDiff(Download(dout, want.size(), act()), want), 0.0) << DTypeName(table_dtype);
    }
}

TEST_P(CudaKernels, RopeMatchesCpu) {
    const int rows = 9, n_heads = 6, head_dim = 64, rope_dim = 32, col = 128, stride = 128 + n_heads * head_dim + 16;
    for (bool neox : {false, true}) {
        std::vector<float> x = Input(size_t(rows) * stride, 8), inv_freq(rope_dim / 2);
        for (int i = 0; i < rope_dim / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rope_dim);
        std::vector<int32_t> pos(rows);
        for (int r = 0; r < rows; ++r) pos[r] = r * 517;   // large angles too
        DeviceBuffer dx = Upload(x, act()), dpos = UploadRaw(pos), dfreq = UploadRaw(inv_freq);
        cpu::Rope(x.data(), rows, stride, col, n_heads, head_dim, rope_dim, pos.data(), inv_freq.data(), neox);
        Rope(dx.data(), act(), rows, stride, col, n_heads, head_dim, rope_dim, dpos.as<int32_t>(), dfreq.as<float>(),
             neox);
        EXPECT_LT(MaxRelDiff(Download(dx, x.size(), act()), x), act() == DType::kBf16 ? 1e-2 : 1e-4) << neox;
    }
}

TEST_P(CudaKernels, HeadNormAndBiasMatchCpu) {
    const int rows = 7, n_heads = 5, head_dim = 48, col = 40, stride = 40 + n_heads * head_dim + 24;
    std::vector<float> x = Input(size_t(rows) * stride, 11), weight = Input(head_dim, 12, 0.5f, 1.5f);
    std::vector<float> bias = Input(stride, 13);
    DeviceBuffer dx = Upload(x, act()), dw = UploadRaw(weight), db = UploadRaw(bias);
    cpu::RmsNormHeads(x.data(), rows, stride, col, n_heads, head_dim, weight.data(), 1e-6f);
    cpu::AddBias(x.data(), bias.data(), rows, stride);
    RmsNormHeads(dx.data(), act(), rows, stride, col, n_heads, head_dim, dw.as<float>(), 1e-6f);
    AddBias(dx.data(), act(), db.as<float>(), rows, stride);
    EXPECT_LT(MaxRelDiff(Download(dx, x.size(), act()), x), act() == DType::kBf16 ? 2e-2 : 1e-4);
}

TEST_P(CudaKernels, SwiGluMatchesCpuIncludingHugeGates) {
    const int rows = 5, hidden = 700;
    std::vector<float> gu = Input(size_t(rows) * 2 * hidden, 4, -12.0f, 12.0f);
    gu[0] = 120.0f;
    gu[1] = -120.0f;
    std::vector<float> want(size_t(rows) * hidden);
    cpu::SwiGlu(gu.data(), want.data(), rows, hidden);
    DeviceBuffer dgu = Upload(gu, act()), dout = Upload(want, act());
    SwiGlu(dgu.data(), dout.data(), rows, hidden, act());
    EXPECT_LT(MaxRelDiff(Download(dout, want.size(), act()), want), tol());
}

TEST_P(CudaKernels, GeGluMatchesCpuIncludingHugeGates) {
    const int rows = 5, hidden = 700;
    std::vector<float> gu = Input(size_t(rows) * 2 * hidden, 14, -6.0f, 6.0f);
    gu[0] = 120.0f;    // tanh saturates: gelu(x) = x
    gu[1] = -120.0f;   // and gelu(x) = 0
    std::vector<float> want(size_t(rows) * hidden);
    cpu::GeGlu(gu.data(), want.data(), rows, hidden);
    DeviceBuffer dgu = Upload(gu, act()), dout = Upload(want, act());
    GeGlu(dgu.data(), dout.data(), rows, hidden, act());
    EXPECT_LT(MaxRelDiff(Download(dout, want.size(), act()), want), tol());
}

// The flat kernels around the blocks of Gemma and Granite: embedding and
// logit scales, the logit soft-cap, a post-normed branch added to the
// residual times its scale (against the CPU's Scale then AddTo). Sizes on
// both sides of the grid-stride loop's reach.
TEST_P(CudaKernels, ScaleSoftCapAndAddScaledMatchCpu) {
    for (int64_t n : {int64_t{1}, int64_t{1000}, int64_t{300000}}) {
        const std::vector<float> x = Input(n, 40, -20.0f, 20.0f), y = Input(n, 41, -3.0f, 3.0f);
        std::vector<float> scaled = x, capped = x, added = x, branch = y;
        cpu::Scale(scaled.data(), n, 0.37f);
        cpu::SoftCap(capped.data(), n, 5.0f);
        cpu::Scale(branch.data(), n, 0.22f);
        cpu::AddTo(added.data(), branch.data(), n);
        DeviceBuffer ds = Upload(x, act()), dc = Upload(x, act()), da = Upload(x, act()), dy = Upload(y, act());
        Scale(ds.data(), act(), n, 0.37f);
        SoftCap(dc.data(), act(), n, 5.0f);
        AddScaled(da.data(), dy.data(), act(), n, 0.22f);
        EXPECT_LT(MaxRelDiff(Download(ds, n, act()), scaled), tol()) << n;
        EXPECT_LT(MaxRelDiff(Download(dc, n, act()), capped), tol()) << n;
        EXPECT_LT(MaxRelDiff(Download(da, n, act()), added), tol()) << n;
        // The soft-cap bounds every value by the cap, which it nears for large inputs.
        const std::vector<float> got = Download(dc, n, act());
        EXPECT_LE(*std::max_element(got.begin(), got.end()), 5.0f);
    }
}

// LongRoPE's attention factor: the rotated dims (and only those) of each
// head end up times the factor, as the CPU's rotation followed by a scale.
TEST_P(CudaKernels, RopeScalesTheRotatedDimsOnly) {
    const int rows = 4, n_heads = 3, head_dim = 32, rope_dim = 12, stride = n_heads * head_dim;
    const float factor = 1.19f;
    for (bool neox : {false, true}) {
        std::vector<float> x = Input(size_t(rows) * stride, 15), inv_freq(rope_dim / 2);
        for (int i = 0; i < rope_dim / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / rope_dim);
        const std::vector<int32_t> pos = {0, 3, 77, 400};
        DeviceBuffer dx = Upload(x, act()), dpos = UploadRaw(pos), dfreq = UploadRaw(inv_freq);
        cpu::Rope(x.data(), rows, stride, 0, n_heads, head_dim, rope_dim, pos.data(), inv_freq.data(), neox);
        for (int r = 0; r < rows; ++r) {
            for (int h = 0; h < n_heads; ++h) {
                for (int i = 0; i < rope_dim; ++i) x[size_t(r) * stride + h * head_dim + i] *= factor;
            }
        }
        Rope(dx.data(), act(), rows, stride, 0, n_heads, head_dim, rope_dim, dpos.as<int32_t>(), dfreq.as<float>(),
             neox, factor);
        EXPECT_LT(MaxRelDiff(Download(dx, x.size(), act()), x), act() == DType::kBf16 ? 1e-2 : 1e-4) << neox;
    }
}

TEST_P(CudaKernels, LinearMatchesCpu) {
    auto blas = Blas::Create();
    ASSERT_TRUE(blas.ok()) << blas.status();
    for (auto [m, n, k] : {std::tuple{1, 96, 64}, {16, 300, 288}, {40, 64, 1000}}) {
        const std::vector<float> x = Input(size_t(m) * k, 1 + m), w = Input(size_t(n) * k, 2 + n);
        std::vector<float> y0 = Input(size_t(m) * n, 3), want = y0;
        cpu::Linear(x.data(), cpu::Matrix{w.data(), nullptr}, want.data(), m, n, k, /*accumulate=*/true);
        DeviceBuffer dx = Upload(x, act()), dw = Upload(w, act()), dy = Upload(y0, act());
        ASSERT_TRUE((*blas)->Linear(dx.data(), dw.data(), dy.data(), m, n, k, true, act()).ok());
        EXPECT_LT(MaxRelDiff(Download(dy, want.size(), act()), want), act() == DType::kBf16 ? 1e-2 : 1e-5)
            << m << "x" << n << "x" << k;
    }
}

// A ragged batch of spans (span s: n_q[s] queries after before[s] keys)
// over blocks of `block` keys handed out in a shuffled order, as a pool
// does, in the forms the CPU and the CUDA kernels take: CPU spans, per-row
// horizons and block-table offsets, the rows of one-query spans (decode) and
// the query tiles of the others (prefill).
struct RaggedLayout {
    int total = 0, blocks_needed = 0;
    std::vector<cpu::AttentionSpan> spans;
    std::vector<int32_t> horizon, table_begin, tables, singles;
    std::vector<QueryTile> tiles;
};

RaggedLayout MakeRaggedLayout(const std::vector<int>& n_q, const std::vector<int>& before, int block,
                              std::mt19937& rng) {
    RaggedLayout l;
    for (size_t s = 0; s < n_q.size(); ++s) {
        l.total += n_q[s];
        l.blocks_needed += (n_q[s] + before[s] + block - 1) / block;
    }
    std::vector<int32_t> ids(l.blocks_needed);
    for (int i = 0; i < l.blocks_needed; ++i) ids[i] = i;
    std::shuffle(ids.begin(), ids.end(), rng);
    for (size_t s = 0, row = 0, next = 0; s < n_q.size(); row += n_q[s], ++s) {
        const int nb = (n_q[s] + before[s] + block - 1) / block;
        const int32_t begin = static_cast<int32_t>(l.tables.size());
        l.tables.insert(l.tables.end(), ids.begin() + next, ids.begin() + next + nb);
        next += nb;
        for (int i = 0; i < n_q[s]; ++i) {
            l.horizon.push_back(before[s] + i);
            l.table_begin.push_back(begin);
            if (n_q[s] == 1) l.singles.push_back(static_cast<int32_t>(row));
        }
        for (int i = 0; n_q[s] >= 2 && i < n_q[s]; i += kQueryTileRows) {
            l.tiles.push_back({static_cast<int32_t>(row) + i, std::min(kQueryTileRows, n_q[s] - i), before[s] + i, begin});
        }
        l.spans.push_back({int64_t(row), n_q[s], before[s], nullptr});
    }
    // The tables are complete now: point each span at its own (a returned
    // vector keeps its buffer, so the pointers stay valid).
    for (size_t s = 0, at = 0; s < l.spans.size(); ++s) {
        l.spans[s].blocks = l.tables.data() + at;
        at += (n_q[s] + before[s] + block - 1) / block;
    }
    return l;
}

// Ragged spans over scattered blocks, GQA, block sizes that do and do not
// divide the spans, against cpu::PagedAttention; the KV cache in f32 and
// bf16. Each case twice: every row through the per-row kernel, and spans of
// two or more rows through the tiled kernel (tiles of kQueryTileRows, the
// last one partial) with the single rows through the per-row one, as the
// forward pass splits them.
TEST_P(CudaKernels, PagedAndTiledAttentionMatchCpu) {
    std::mt19937 rng(11);
    for (int head_dim : {64, 128, 24, 256}) {
        for (int block : {16, 5}) {
            for (DType kv_dtype : {DType::kF32, DType::kBf16}) {
                const int kv_heads = 2, heads = 6, kv_dim = kv_heads * head_dim, width = heads * head_dim;
                const std::vector<int> n_q = {1, 37, 5, 300}, before = {200, 0, 61, 10};
                // Blocks handed out in a shuffled order, as a pool does.
                const RaggedLayout layout = MakeRaggedLayout(n_q, before, block, rng);
                const auto& [total, blocks_needed, spans, horizon, table_begin, tables, singles, tiles] = layout;
                std::vector<float> k = Random(size_t(blocks_needed) * block * kv_dim, 20),
                                   v = Random(k.size(), 21), q = Input(size_t(total) * width, 22);
                if (kv_dtype == DType::kBf16) {
                    k = RoundedToBf16(std::move(k));
                    v = RoundedToBf16(std::move(v));
                }
                const cpu::AttentionShape shape{heads, kv_heads, head_dim, width, width};
                std::vector<float> want(q.size());
                cpu::PagedAttention(q.data(), want.data(), shape, spans.data(), int32_t(spans.size()),
                                    cpu::PagedKv{k.data(), v.data(), block, kv_dim});
                DeviceBuffer dq = Upload(q, act()), dout = Upload(q, act()), dk = Upload(k, kv_dtype),
                             dv = Upload(v, kv_dtype), dh = UploadRaw(horizon), db = UploadRaw(table_begin),
                             dt = UploadRaw(tables);
                const DeviceRows rows{total, dh.as<int32_t>(), db.as<int32_t>(), dt.as<int32_t>()};
                ASSERT_TRUE(PagedAttention(dq.data(), dout.data(), act(), shape, rows,
                                           cpu::PagedKv{dk.data(), dv.data(), block, kv_dim, kv_dtype}));
                const double tol = act() == DType::kBf16 ? 1e-2 : 1e-5;
                EXPECT_LT(MaxRelDiff(Download(dout, q.size(), act()), want), tol)
                    << "per-row: head_dim " << head_dim << " block " << block << " kv " << DTypeName(kv_dtype);

                DeviceBuffer split = Upload(std::vector<float>(q.size(), 7.0f), act()), ds = UploadRaw(singles),
                             dtiles = UploadRaw(tiles);
                const DeviceRows single_rows{int64_t(singles.size()), dh.as<int32_t>(), db.as<int32_t>(),
                                             dt.as<int32_t>(), ds.as<int32_t>()};
                const cpu::PagedKv kv{dk.data(), dv.data(), block, kv_dim, kv_dtype};
                ASSERT_TRUE(PagedAttention(dq.data(), split.data(), act(), shape, single_rows, kv));
                ASSERT_TRUE(TiledAttention(dq.data(), split.data(), act(), shape, dtiles.as<QueryTile>(),
                                           int32_t(tiles.size()), dt.as<int32_t>(), kv));
                EXPECT_LT(MaxRelDiff(Download(split, q.size(), act()), want), tol)
                    << "tiled: head_dim " << head_dim << " block " << block << " kv " << DTypeName(kv_dtype);

                // Split-K: every row's keys in ranges of 64 (up to 6 of them,
                // some empty for short rows), merged by the second kernel
                // (one shape per KV dtype: the emulator is slow).
                if (head_dim != 64 || block != 16) continue;
                DeviceBuffer splits = Upload(std::vector<float>(q.size(), 7.0f), act()),
                             so = Upload(std::vector<float>(size_t(total) * heads * 6 * head_dim, 0.0f), DType::kF32),
                             slse = Upload(std::vector<float>(size_t(total) * heads * 6, 0.0f), DType::kF32);
                DeviceRows split_rows = rows;
                split_rows.n_splits = 6;
                split_rows.split_keys = 64;
                split_rows.split_o = so.as<float>();
                split_rows.split_lse = slse.as<float>();
                ASSERT_TRUE(PagedAttention(dq.data(), splits.data(), act(), shape, split_rows, kv));
                EXPECT_LT(MaxRelDiff(Download(splits, q.size(), act()), want), tol)
                    << "split-K: head_dim " << head_dim << " block " << block << " kv " << DTypeName(kv_dtype);
            }
        }
    }
}

// Gemma 2/3's attention: a score scale of its own, a soft-cap low enough to
// bite, sliding windows narrower and wider than a key tile (and than the
// spans' histories), against cpu::PagedAttention with the same shape: every
// row per-row (decode), spans through the tiled kernel (prefill), and
// split-K. A cascade is refused under a window (its members' windows
// differ), for both kernels that could be asked.
TEST_P(CudaKernels, WindowedSoftCappedAttentionMatchesCpu) {
    std::mt19937 rng(12);
    const int head_dim = 32, kv_heads = 2, heads = 4, kv_dim = kv_heads * head_dim, width = heads * head_dim;
    const std::vector<int> n_q = {1, 37, 5, 70, 1}, before = {200, 0, 61, 10, 3};
    // (block size, window, soft-cap): windows narrower and wider than a key
    // tile, one key only; blocks that do and do not divide them.
    const std::vector<std::tuple<int, int, float>> cases = {{16, 8, 1.5f}, {5, 45, 1.5f}, {5, 1, 0.0f}, {16, 45, 0.0f}};
    for (const auto& [block, window, softcap] : cases) {
        const RaggedLayout layout = MakeRaggedLayout(n_q, before, block, rng);
        const auto& [total, blocks_needed, spans, horizon, table_begin, tables, singles, tiles] = layout;
        const std::vector<float> k = Random(size_t(blocks_needed) * block * kv_dim, 50),
                                 v = Random(k.size(), 51), q = Input(size_t(total) * width, 52, -2.0f, 2.0f);
        cpu::AttentionShape shape{heads, kv_heads, head_dim, width, width};
        shape.scale = 0.3f;
        shape.softcap = softcap;
        shape.window = window;
        std::vector<float> want(q.size());
        cpu::PagedAttention(q.data(), want.data(), shape, spans.data(), int32_t(spans.size()),
                            cpu::PagedKv{k.data(), v.data(), block, kv_dim});
        // The window must matter: the same attention without it differs.
        cpu::AttentionShape unwindowed = shape;
        unwindowed.window = 0;
        std::vector<float> full(q.size());
        cpu::PagedAttention(q.data(), full.data(), unwindowed, spans.data(), int32_t(spans.size()),
                            cpu::PagedKv{k.data(), v.data(), block, kv_dim});
        ASSERT_GT(MaxRelDiff(full, want), 1e-2) << "window " << window;

        const std::string what = ::testing::PrintToString(block) + " window " +
                                 ::testing::PrintToString(window) + " softcap " +
                                 ::testing::PrintToString(softcap);
        DeviceBuffer dq = Upload(q, act()), dk = Upload(k, DType::kF32), dv = Upload(v, DType::kF32),
                     dh = UploadRaw(horizon), db = UploadRaw(table_begin), dt = UploadRaw(tables),
                     ds = UploadRaw(singles), dtiles = UploadRaw(tiles);
        const cpu::PagedKv kv{dk.data(), dv.data(), block, kv_dim, DType::kF32};
        const DeviceRows rows{total, dh.as<int32_t>(), db.as<int32_t>(), dt.as<int32_t>()};
        const double tol = act() == DType::kBf16 ? 1e-2 : 1e-5;

        DeviceBuffer per_row = Upload(std::vector<float>(q.size(), 7.0f), act());
        ASSERT_TRUE(PagedAttention(dq.data(), per_row.data(), act(), shape, rows, kv));
        EXPECT_LT(MaxRelDiff(Download(per_row, q.size(), act()), want), tol) << "per-row: block " << what;

        DeviceBuffer tiled = Upload(std::vector<float>(q.size(), 7.0f), act());
        const DeviceRows single_rows{int64_t(singles.size()), dh.as<int32_t>(), db.as<int32_t>(),
                                     dt.as<int32_t>(), ds.as<int32_t>()};
        ASSERT_TRUE(PagedAttention(dq.data(), tiled.data(), act(), shape, single_rows, kv));
        ASSERT_TRUE(TiledAttention(dq.data(), tiled.data(), act(), shape, dtiles.as<QueryTile>(),
                                   int32_t(tiles.size()), dt.as<int32_t>(), kv));
        EXPECT_LT(MaxRelDiff(Download(tiled, q.size(), act()), want), tol) << "tiled: block " << what;

        // Split-K in ranges of 32 keys: a window leaves most of a row's ranges empty.
        DeviceBuffer splits = Upload(std::vector<float>(q.size(), 7.0f), act()),
                     so = Upload(std::vector<float>(size_t(total) * heads * 7 * head_dim, 0.0f), DType::kF32),
                     slse = Upload(std::vector<float>(size_t(total) * heads * 7, 0.0f), DType::kF32);
        DeviceRows split_rows = rows;
        split_rows.n_splits = 7;
        split_rows.split_keys = 32;
        split_rows.split_o = so.as<float>();
        split_rows.split_lse = slse.as<float>();
        ASSERT_TRUE(PagedAttention(dq.data(), splits.data(), act(), shape, split_rows, kv));
        EXPECT_LT(MaxRelDiff(Download(splits, q.size(), act()), want), tol) << "split-K: block " << what;

        DeviceRows cascade_rows = rows;
        cascade_rows.key_begin = dh.as<int32_t>();
        EXPECT_FALSE(PagedAttention(dq.data(), splits.data(), act(), shape, cascade_rows, kv));
        EXPECT_FALSE(CascadePrefix(dq.data(), act(), shape, dtiles.as<QueryTile>(), 0, ds.as<int32_t>(),
                                   dt.as<int32_t>(), kv, so.as<float>(), slse.as<float>()));
    }
}

// A soft-capped, rescaled cascade (no window) still equals plain attention:
// the cap acts on each score, so the prefix/suffix log-sum-exp merge holds.
TEST_P(CudaKernels, SoftCappedCascadeEqualsPlainAttention) {
    const int head_dim = 32, block = 8, kv_heads = 1, heads = 4, kv_dim = kv_heads * head_dim, width = heads * head_dim;
    const int prefix_blocks = 3, members = 5;
    std::vector<int32_t> horizon, table_begin, tables, key_begin, member_rows;
    std::vector<cpu::AttentionSpan> spans;
    int next_block = prefix_blocks;
    for (int s = 0; s < members; ++s) {
        const int total = prefix_blocks * block + 1 + 3 * s;
        table_begin.push_back(static_cast<int32_t>(tables.size()));
        for (int b = 0; b < (total + block - 1) / block; ++b) tables.push_back(b < prefix_blocks ? b : next_block++);
        horizon.push_back(total - 1);
        key_begin.push_back(prefix_blocks * block);
        member_rows.push_back(s);
        spans.push_back({s, 1, total - 1, nullptr});
    }
    for (int s = 0; s < members; ++s) spans[s].blocks = tables.data() + table_begin[s];
    const std::vector<float> k = Random(size_t(next_block) * block * kv_dim, 60), v = Random(k.size(), 61),
                             q = Input(size_t(members) * width, 62, -3.0f, 3.0f);
    cpu::AttentionShape shape{heads, kv_heads, head_dim, width, width};
    shape.scale = 0.5f;
    shape.softcap = 1.0f;
    std::vector<float> want(q.size());
    cpu::PagedAttention(q.data(), want.data(), shape, spans.data(), members,
                        cpu::PagedKv{k.data(), v.data(), block, kv_dim});
    const std::vector<QueryTile> tiles = {{0, members, prefix_blocks * block, table_begin[0]}};
    DeviceBuffer dq = Upload(q, act()), dout = Upload(std::vector<float>(q.size(), 7.0f), act()),
                 dk = Upload(k, DType::kF32), dv = Upload(v, DType::kF32), dh = UploadRaw(horizon),
                 db = UploadRaw(table_begin), dt = UploadRaw(tables), dkb = UploadRaw(key_begin),
                 dm = UploadRaw(member_rows), dtiles = UploadRaw(tiles),
                 po = Upload(std::vector<float>(q.size(), 0.0f), DType::kF32),
                 plse = Upload(std::vector<float>(size_t(members) * heads, 0.0f), DType::kF32);
    const cpu::PagedKv kv{dk.data(), dv.data(), block, kv_dim, DType::kF32};
    ASSERT_TRUE(CascadePrefix(dq.data(), act(), shape, dtiles.as<QueryTile>(), 1, dm.as<int32_t>(), dt.as<int32_t>(),
                              kv, po.as<float>(), plse.as<float>()));
    DeviceRows rows{members, dh.as<int32_t>(), db.as<int32_t>(), dt.as<int32_t>()};
    rows.key_begin = dkb.as<int32_t>();
    rows.partial_o = po.as<float>();
    rows.partial_lse = plse.as<float>();
    ASSERT_TRUE(PagedAttention(dq.data(), dout.data(), act(), shape, rows, kv));
    EXPECT_LT(MaxRelDiff(Download(dout, q.size(), act()), want), act() == DType::kBf16 ? 1e-2 : 1e-5);
}

// LazyLLM's scores under a sliding window and a soft-cap: the GPU's
// LastQueryScores against the CPU's, for a sequence holding every key and
// one whose layer lacks some (key depths), a window of 3 query rows, the
// heads' mean and their maximum.
TEST_P(CudaKernels, LazyScoresUnderAWindowAndSoftCapMatchCpu) {
    const int head_dim = 16, kv_heads = 2, heads = 4, kv_dim = kv_heads * head_dim, width = heads * head_dim;
    const int block = 8, layer = 2;
    // Two sequences: 40 keys (its last 4 tokens are rows 0..3) and 75 keys (rows 4..8).
    const int keys[2] = {40, 75}, n_rows[2] = {4, 5};
    std::vector<int32_t> tables;
    int32_t table_at[2];
    for (int s = 0, next = 0; s < 2; ++s) {
        table_at[s] = static_cast<int32_t>(tables.size());
        for (int b = 0; b < (keys[s] + block - 1) / block; ++b) tables.push_back(next++);
    }
    std::vector<int16_t> depth(keys[1]);
    for (int j = 0; j < keys[1]; ++j) depth[j] = static_cast<int16_t>(j % 3 == 1 && j < keys[1] - n_rows[1] ? 1 : 4);
    const std::vector<float> k = Random(tables.size() * block * kv_dim, 70),
                             q = Input(size_t(n_rows[0] + n_rows[1]) * width, 71, -2.0f, 2.0f);
    cpu::AttentionShape shape{heads, kv_heads, head_dim, width, width};
    shape.scale = 0.4f;
    shape.softcap = 1.2f;
    shape.window = 11;
    const cpu::PagedKv cpu_kv{k.data(), k.data(), block, kv_dim};
    for (bool head_max : {false, true}) {
        std::vector<float> want(size_t(keys[0] + keys[1]));
        for (int s = 0; s < 2; ++s) {
            cpu::AttentionSpan span{s == 0 ? 0 : n_rows[0], n_rows[s], keys[s] - n_rows[s],
                                    tables.data() + table_at[s]};
            if (s == 1) {
                span.key_depth = depth.data();
                span.layer = layer;
            }
            cpu::LastQueryScores(q.data(), shape, span, cpu_kv, {3, head_max}, want.data() + (s == 0 ? 0 : keys[0]));
        }
        const std::vector<ScoreJob> jobs = {
            {n_rows[0] - 1, keys[0] - 1, table_at[0], -1, 0, 3, head_max ? 1 : 0},
            {n_rows[0] + n_rows[1] - 1, keys[1] - 1, table_at[1], 0, keys[0], 3, head_max ? 1 : 0}};
        DeviceBuffer dq = Upload(q, act()), dk = Upload(k, DType::kF32), dt = UploadRaw(tables),
                     dd = UploadRaw(depth), dj = UploadRaw(jobs),
                     scores = Upload(std::vector<float>(want.size(), 7.0f), DType::kF32),
                     scratch = Upload(std::vector<float>(2 * want.size(), 0.0f), DType::kF32);
        LastQueryScores(dq.data(), act(), shape, dj.as<ScoreJob>(), 2, dt.as<int32_t>(), dd.as<int16_t>(), layer,
                        cpu::PagedKv{dk.data(), dk.data(), block, kv_dim, DType::kF32}, scores.as<float>(),
                        scratch.as<float>(), static_cast<int64_t>(want.size()));
        const std::vector<float> got = Download(scores, want.size(), DType::kF32);
        EXPECT_LT(MaxRelDiff(got, want), act() == DType::kBf16 ? 1e-2 : 1e-5) << head_max;
        // Keys before every query's window score nothing.
        EXPECT_EQ(got[0], 0.0f);
        EXPECT_EQ(got[keys[0] + 10], 0.0f);
    }
}

// Cascade: decode rows whose tables begin with the same prefix blocks (two
// groups, one larger than a query tile) get, after CascadePrefix and the
// merge in PagedAttention, what plain attention gives them; rows outside
// the groups are untouched by the cascade.
TEST_P(CudaKernels, CascadeEqualsPlainAttention) {
    std::mt19937 rng(5);
    for (int head_dim : {64, 24}) {
        const int block = 16, kv_heads = 2, heads = 8, kv_dim = kv_heads * head_dim, width = heads * head_dim;
        // (group, prefix blocks, members); group -1: a loner.
        struct Seq {
            int group, own_tokens;
        };
        const int prefix_blocks[2] = {4, 2};
        std::vector<Seq> seqs;
        for (int i = 0; i < 37; ++i) seqs.push_back({0, 1 + i % 20});
        for (int i = 0; i < 3; ++i) seqs.push_back({1, 5 + 7 * i});
        seqs.push_back({-1, 40});
        int next_block = 2 * 8;   // the two prefixes take blocks [0, 8) in a shuffled order
        std::vector<int32_t> prefix_ids(8);
        for (int i = 0; i < 8; ++i) prefix_ids[i] = i;
        std::shuffle(prefix_ids.begin(), prefix_ids.end(), rng);
        std::vector<int32_t> horizon, table_begin, tables, key_begin;
        std::vector<cpu::AttentionSpan> spans;
        std::vector<std::vector<int32_t>> members(2);
        for (size_t s = 0; s < seqs.size(); ++s) {
            const int g = seqs[s].group;
            const int shared = g < 0 ? 0 : prefix_blocks[g] * block;
            const int total = shared + seqs[s].own_tokens;   // keys, its query's own included
            const int32_t begin = static_cast<int32_t>(tables.size());
            for (int b = 0; b < (total + block - 1) / block; ++b) {
                tables.push_back(g >= 0 && b < prefix_blocks[g] ? prefix_ids[4 * g + b] : next_block++);
            }
            horizon.push_back(total - 1);
            table_begin.push_back(begin);
            key_begin.push_back(shared);
            if (g >= 0) members[g].push_back(static_cast<int32_t>(s));
            spans.push_back({int64_t(s), 1, total - 1, nullptr});
        }
        for (size_t s = 0; s < spans.size(); ++s) spans[s].blocks = tables.data() + table_begin[s];
        const std::vector<float> k = Random(size_t(next_block) * block * kv_dim, 30), v = Random(k.size(), 31),
                                 q = Input(seqs.size() * width, 32);
        const cpu::AttentionShape shape{heads, kv_heads, head_dim, width, width};
        std::vector<float> want(q.size());
        cpu::PagedAttention(q.data(), want.data(), shape, spans.data(), int32_t(spans.size()),
                            cpu::PagedKv{k.data(), v.data(), block, kv_dim});

        std::vector<int32_t> member_rows;
        std::vector<QueryTile> tiles;
        for (int g = 0; g < 2; ++g) {
            for (size_t i = 0; i < members[g].size(); i += kQueryTileRows) {
                const int n = std::min<int>(kQueryTileRows, members[g].size() - i);
                tiles.push_back({static_cast<int32_t>(member_rows.size()), n, prefix_blocks[g] * block,
                                 table_begin[members[g][0]]});
                member_rows.insert(member_rows.end(), members[g].begin() + i, members[g].begin() + i + n);
            }
        }
        DeviceBuffer dq = Upload(q, act()), dout = Upload(std::vector<float>(q.size(), 7.0f), act()),
                     dk = Upload(k, DType::kF32), dv = Upload(v, DType::kF32), dh = UploadRaw(horizon),
                     db = UploadRaw(table_begin), dt = UploadRaw(tables), dkb = UploadRaw(key_begin),
                     dm = UploadRaw(member_rows), dtiles = UploadRaw(tiles),
                     po = Upload(std::vector<float>(q.size(), 0.0f), DType::kF32),
                     plse = Upload(std::vector<float>(seqs.size() * heads, 0.0f), DType::kF32);
        const cpu::PagedKv kv{dk.data(), dv.data(), block, kv_dim, DType::kF32};
        ASSERT_TRUE(CascadePrefix(dq.data(), act(), shape, dtiles.as<QueryTile>(), int32_t(tiles.size()),
                                  dm.as<int32_t>(), dt.as<int32_t>(), kv, po.as<float>(), plse.as<float>()));
        DeviceRows rows{int64_t(seqs.size()), dh.as<int32_t>(), db.as<int32_t>(), dt.as<int32_t>()};
        rows.key_begin = dkb.as<int32_t>();
        rows.partial_o = po.as<float>();
        rows.partial_lse = plse.as<float>();
        ASSERT_TRUE(PagedAttention(dq.data(), dout.data(), act(), shape, rows, kv));
        EXPECT_LT(MaxRelDiff(Download(dout, q.size(), act()), want), act() == DType::kBf16 ? 1e-2 : 1e-5)
            << "head_dim " << head_dim;
        // And split-K: ranges of 16 keys, 6 covering every row (a member's
        // ranges inside the prefix are empty), merged with the prefix.
        DeviceBuffer so = Upload(std::vector<float>(seqs.size() * heads * 6 * head_dim, 0.0f), DType::kF32),
                     slse = Upload(std::vector<float>(seqs.size() * heads * 6, 0.0f), DType::kF32),
                     dsplit = Upload(std::vector<float>(q.size(), 7.0f), act());
        rows.n_splits = 6;
        rows.split_keys = 16;
        rows.split_o = so.as<float>();
        rows.split_lse = slse.as<float>();
        ASSERT_TRUE(PagedAttention(dq.data(), dsplit.data(), act(), shape, rows, kv));
        EXPECT_LT(MaxRelDiff(Download(dsplit, q.size(), act()), want), act() == DType::kBf16 ? 1e-2 : 1e-5)
            << "split-K cascade: head_dim " << head_dim;
    }
}

// Rows of three sequences (their block tables scattered over the pool)
// append their K/V; every other slot of the slabs is left as it was.
TEST_P(CudaKernels, AppendKvWritesEachRowAtItsSlot) {
    const int kv_dim = 48, q_dim = 96, stride = q_dim + 2 * kv_dim, block = 4, n_blocks = 12;
    // Sequence 0 holds blocks {7, 2}, 1 holds {5}, 2 holds {0, 9, 3}; rows append at these slots.
    const std::vector<int32_t> tables = {7, 2, 5, 0, 9, 3};
    const std::vector<int32_t> table_begin = {0, 0, 0, 2, 2, 3, 3, 3};
    const std::vector<int32_t> slots = {5, 6, 7, 0, 3, 8, 9, 10};
    const int rows = static_cast<int>(slots.size());
    const std::vector<float> qkv = Input(size_t(rows) * stride, 30);
    for (DType kv_dtype : {DType::kF32, DType::kBf16}) {
        std::vector<float> k(size_t(n_blocks) * block * kv_dim, 7.0f), v(k.size(), -7.0f);
        DeviceBuffer dk = Upload(k, kv_dtype), dv = Upload(v, kv_dtype), dqkv = Upload(qkv, act()),
                     ds = UploadRaw(slots), db = UploadRaw(table_begin), dt = UploadRaw(tables);
        AppendKv(dqkv.data(), act(), stride, q_dim, DeviceRows{rows, ds.as<int32_t>(), db.as<int32_t>(), dt.as<int32_t>()},
                 cpu::PagedKv{dk.data(), dv.data(), block, kv_dim, kv_dtype});
        for (int r = 0; r < rows; ++r) {
            const int32_t b = tables[table_begin[r] + slots[r] / block];
            const size_t dst = (size_t(b) * block + slots[r] % block) * kv_dim;
            for (int i = 0; i < kv_dim; ++i) {
                k[dst + i] = qkv[size_t(r) * stride + q_dim + i];
                v[dst + i] = qkv[size_t(r) * stride + q_dim + kv_dim + i];
            }
        }
        if (kv_dtype == DType::kBf16) {
            k = RoundedToBf16(std::move(k));
            v = RoundedToBf16(std::move(v));
        }
        EXPECT_EQ(MaxRelDiff(Download(dk, k.size(), kv_dtype), k), 0.0) << DTypeName(kv_dtype);
        EXPECT_EQ(MaxRelDiff(Download(dv, v.size(), kv_dtype), v), 0.0) << DTypeName(kv_dtype);
    }
}

INSTANTIATE_TEST_SUITE_P(Activations, CudaKernels, ::testing::Values(DType::kF32, DType::kBf16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

TEST(CudaArgmax, FirstIndexOfTheLargestAsOnTheCpu) {
    REQUIRE_GPU();
    const int rows = 4, vocab = 32000;
    std::vector<float> logits = Random(size_t(rows) * vocab, 9);
    logits[size_t(1) * vocab + 31999] = 5.0f;   // the last column
    logits[size_t(2) * vocab + 10] = 5.0f;      // a tie: the first wins
    logits[size_t(2) * vocab + 20000] = 5.0f;
    logits[size_t(3) * vocab + 0] = 5.0f;
    DeviceBuffer dl = Upload(logits, DType::kF32);
    auto dids = DeviceBuffer::Allocate(rows * sizeof(int32_t));
    ASSERT_TRUE(dids.ok());
    ArgmaxRows(dl.as<float>(), rows, vocab, dids->as<int32_t>());
    ASSERT_TRUE(Synchronize("argmax").ok());
    std::vector<int32_t> got(rows);
    ASSERT_TRUE(dids->CopyToHost(got.data(), rows * sizeof(int32_t)).ok());
    for (int r = 0; r < rows; ++r) {
        const float* l = logits.data() + size_t(r) * vocab;
        EXPECT_EQ(got[r], std::max_element(l, l + vocab) - l) << "row " << r;
    }
}

TEST(CudaMemory, AnImpossibleAllocationIsResourceExhaustedNotACrash) {
    REQUIRE_GPU();
    auto b = DeviceBuffer::Allocate(size_t{1} << 50);   // 1 PiB
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.status().code(), absl::StatusCode::kResourceExhausted) << b.status();
    // The device is still usable afterwards.
    auto small = DeviceBuffer::Allocate(1024);
    ASSERT_TRUE(small.ok()) << small.status();
    EXPECT_TRUE(Synchronize("after a failed allocation").ok());
}

}  // namespace
}  // namespace prepack::cuda

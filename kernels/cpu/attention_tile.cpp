// Per level (kernel_table.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "kernels/cpu/simd.h"

#include "kernels/cpu/vec8.h"   // after the others: per level, like what follows
#include "kernels/cpu/attention_tile.h"   // last: opens the per-level region

PREPACK_ISA_BEGIN
namespace {

// Keys per chunk at most: a chunk's transposed K (head_dim x 64 floats) and
// its scores stay in L1 next to the V rows being summed.
constexpr int kMaxChunk = 64;
// Score columns per register block: two 8-float vectors. Rows per register
// block: 4, so a block holds 8 accumulators and each K^T load feeds 4 rows.
constexpr int kCols = 16;
constexpr int kRowBlock = 4;
// Up to this many rows, scores are dot products with the K rows as they lie
// (a transpose pays off only when its K^T feeds several row blocks).
constexpr int kDotRows = 4;

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Score columns a chunk of n keys occupies: whole register blocks.
constexpr int PaddedCols(int n) { return (n + kCols - 1) / kCols * kCols; }

// s[RB][n_cols] = q[RB][hd] . kt[hd][n_cols], 16 columns at a time: 2 x RB
// accumulators live in registers for the whole head dimension and each K^T
// load feeds RB rows.
template <int RB>
void ScoreRows(const float* q, int hd, const float* kt, int ld, int n_cols, float* s) {
    for (int c0 = 0; c0 < n_cols; c0 += kCols) {
        Vec8 acc0[RB] = {}, acc1[RB] = {};
        for (int d = 0; d < hd; ++d) {
            const Vec8 k0 = Load8(kt + static_cast<size_t>(d) * ld + c0);
            const Vec8 k1 = Load8(kt + static_cast<size_t>(d) * ld + c0 + 8);
#pragma GCC unroll 4
            for (int r = 0; r < RB; ++r) {
                const Vec8 qv = Splat8(q[r * hd + d]);
                acc0[r] += qv * k0;
                acc1[r] += qv * k1;
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < RB; ++r) {
            Store8(s + r * ld + c0, acc0[r]);
            Store8(s + r * ld + c0 + 8, acc1[r]);
        }
    }
}

// acc[RB][hd] = acc * corr + p[RB][n_keys] . V[n_keys][hd], NV vectors of
// output columns held in registers across all the chunk's keys.
template <int RB, int NV, typename T>
void AccumulateRows(const float* p, int ld, int n_keys, const T* v, int32_t stride, int hd, const float* corr,
                    float* acc) {
    for (int d0 = 0; d0 < hd; d0 += 8 * NV) {
        Vec8 a[RB][NV];
#pragma GCC unroll 4
        for (int r = 0; r < RB; ++r) {
            for (int n = 0; n < NV; ++n) a[r][n] = Load8(acc + r * hd + d0 + 8 * n) * corr[r];
        }
        for (int j = 0; j < n_keys; ++j) {
            const T* vr = v + static_cast<size_t>(j) * stride + d0;
            Vec8 vv[NV];
            for (int n = 0; n < NV; ++n) vv[n] = LoadAsF32x8(vr + 8 * n);
#pragma GCC unroll 4
            for (int r = 0; r < RB; ++r) {
                const Vec8 pr = Splat8(p[r * ld + j]);
                for (int n = 0; n < NV; ++n) a[r][n] += pr * vv[n];
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < RB; ++r) {
            for (int n = 0; n < NV; ++n) Store8(acc + r * hd + d0 + 8 * n, a[r][n]);
        }
    }
}

// Head sizes that are not a multiple of 8 (none of the common models): plain loops.
template <typename T>
void AccumulateRowsScalar(int rows, const float* p, int ld, int n_keys, const T* v, int32_t stride, int hd,
                          const float* corr, float* acc) {
    for (int r = 0; r < rows; ++r) {
        float* ar = acc + static_cast<size_t>(r) * hd;
        for (int i = 0; i < hd; ++i) ar[i] *= corr[r];
        for (int j = 0; j < n_keys; ++j) {
            const float pr = p[static_cast<size_t>(r) * ld + j];
            const T* vr = v + static_cast<size_t>(j) * stride;
            for (int i = 0; i < hd; ++i) ar[i] += pr * AsF32(vr[i]);
        }
    }
}

// Calls kernel(RB, r) for row blocks covering rows [r_begin, rows): blocks
// of kRowBlock, then one smaller block; RB arrives as a compile-time constant.
template <typename Kernel>
void ForRowBlocks(int r_begin, int rows, Kernel&& kernel) {
    int r = r_begin;
    for (; r + kRowBlock <= rows; r += kRowBlock) kernel(std::integral_constant<int, kRowBlock>{}, r);
    switch (rows - r) {
        case 3: kernel(std::integral_constant<int, 3>{}, r); break;
        case 2: kernel(std::integral_constant<int, 2>{}, r); break;
        case 1: kernel(std::integral_constant<int, 1>{}, r); break;
        default: break;
    }
}

}  // namespace

void AttentionTile::Reset(const AttentionShape& shape, int max_chunk) {
    hd_ = shape.head_dim;
    scale_ = shape.Scale();
    softcap_ = shape.softcap;
    window_ = shape.window;
    ld_ = PaddedCols(std::min(max_chunk, kMaxChunk));
    q_.clear();
    horizon_.clear();
    m_.clear();
    l_.clear();
    acc_.clear();
    kt_.assign(static_cast<size_t>(hd_) * ld_, 0.0f);
}

void AttentionTile::AddRow(const float* q, int64_t horizon) {
    for (int i = 0; i < hd_; ++i) q_.push_back(q[i] * scale_);
    horizon_.push_back(horizon);
    m_.push_back(kNegInf);
    l_.push_back(0.0f);
    acc_.resize(acc_.size() + hd_, 0.0f);
}

void AttentionTile::CopyState(const AttentionTile& other, int from, int to) {
    m_[to] = other.m_[from];
    l_[to] = other.l_[from];
    std::copy_n(other.acc_.data() + static_cast<size_t>(from) * hd_, hd_, acc_.data() + static_cast<size_t>(to) * hd_);
}

void AttentionTile::Write(int r, float* out) const {
    // A row that saw no key (cannot happen for a causal query, which sees
    // itself) would have l = 0; its output is left as zeros then.
    const float inv = l_[r] > 0.0f ? 1.0f / l_[r] : 0.0f;
    const float* acc = acc_.data() + static_cast<size_t>(r) * hd_;
#pragma omp simd
    for (int i = 0; i < hd_; ++i) out[i] = acc[i] * inv;
}

template <typename T>
void AttentionTile::TransposeKeys(const T* k_rows, int32_t stride, int n_keys) {
    // Key rows are read whole (contiguous, what the prefetcher follows);
    // the scattered writes land in kt_, which sits in L1.
    for (int j = 0; j < n_keys; ++j) {
        const T* src = k_rows + static_cast<size_t>(j) * stride;
        float* dst = kt_.data() + j;
        for (int d = 0; d < hd_; ++d) dst[static_cast<size_t>(d) * ld_] = AsF32(src[d]);
    }
    const int n_cols = PaddedCols(n_keys);
    for (int d = 0; d < hd_; ++d) {
        float* dst = kt_.data() + static_cast<size_t>(d) * ld_;
        for (int j = n_keys; j < n_cols; ++j) dst[j] = 0.0f;   // pad columns: finite, masked below
    }
}

// s[r * ld + j] = q[r] . k[j] for RB rows and KB consecutive keys: each K
// vector is loaded (and widened, for a bf16 cache) once for all the rows,
// and the KB x RB accumulators are independent chains, so a single decode
// row does not wait on one FMA after another.
template <int RB, int KB, typename T>
void DotRows(const float* q, int hd, const T* k_rows, int32_t stride, float* s, int ld) {
    Vec8 acc[KB][RB] = {};
    for (int d = 0; d < hd; d += 8) {
        for (int b = 0; b < KB; ++b) {
            const Vec8 kv = LoadAsF32x8(k_rows + static_cast<size_t>(b) * stride + d);
            for (int r = 0; r < RB; ++r) acc[b][r] += Load8(q + r * hd + d) * kv;
        }
    }
    for (int b = 0; b < KB; ++b) {
        for (int r = 0; r < RB; ++r) s[r * ld + b] = Sum8(acc[b][r]);
    }
}

// Few rows (decode: one query, its GQA group): transposing K would cost more
// than the scores, so each key row is dotted with the queries directly, two
// keys at a time.
template <typename T>
void AttentionTile::ScoreByDots(int r_begin, const T* k_rows, int32_t stride, int n_keys) {
    const int hd = hd_, ld = ld_;
    ForRowBlocks(r_begin, rows(), [&](auto rb, int r) {
        constexpr int RB = decltype(rb)::value;
        const float* q = q_.data() + static_cast<size_t>(r) * hd;
        float* s = scores_.data() + static_cast<size_t>(r) * ld;
        int j = 0;
        for (; j + 2 <= n_keys; j += 2) DotRows<RB, 2>(q, hd, k_rows + static_cast<size_t>(j) * stride, stride, s + j, ld);
        if (j < n_keys) DotRows<RB, 1>(q, hd, k_rows + static_cast<size_t>(j) * stride, stride, s + j, ld);
    });
}

template <typename T>
void AttentionTile::PrefetchKeys(const T* k_rows, const T* v_rows, int32_t stride, int n_keys) const {
    constexpr int kPerLine = 64 / sizeof(T);
    for (int j = 0; j < n_keys; ++j) {
        const size_t row = static_cast<size_t>(j) * stride;
        for (int d = 0; d < hd_; d += kPerLine) {   // one cache line at a time
            __builtin_prefetch(k_rows + row + d);
            __builtin_prefetch(v_rows + row + d);
        }
    }
}

// Row r sees keys c0 .. horizon[r] of the chunk (from its window's first
// key under a sliding window), minus those a LazyLLM layer lacks; the rest
// get weight 0. Scores are soft-capped first where the model says so. Then
// the online-softmax step: new running max, rescale of what was
// accumulated, weights exp(s - max).
void AttentionTile::MaskAndSoftmax(int r_begin, int64_t c0, int n_keys, const AttentionSpan& span) {
    for (int r = r_begin; r < rows(); ++r) {
        float* s = scores_.data() + static_cast<size_t>(r) * ld_;
        const int limit = static_cast<int>(std::min<int64_t>(n_keys, horizon_[r] - c0 + 1));
        if (softcap_ > 0.0f) SoftCapValues(s, limit, softcap_);
        if (window_ > 0) {
            const int64_t before = std::min<int64_t>(limit, horizon_[r] - window_ + 1 - c0);
            for (int j = 0; j < before; ++j) s[j] = kNegInf;
        }
        if (span.key_depth != nullptr) {
            for (int j = 0; j < limit; ++j) {
                if (!span.Holds(c0 + j)) s[j] = kNegInf;
            }
        }
        float block_max = kNegInf;
#pragma omp simd reduction(max : block_max)
        for (int j = 0; j < limit; ++j) block_max = std::max(block_max, s[j]);
        if (block_max == kNegInf) {   // every key absent here (LazyLLM): nothing changes
            corr_[r] = 1.0f;
            std::fill(s, s + n_keys, 0.0f);
            continue;
        }
        const float m_new = std::max(m_[r], block_max);
        corr_[r] = ExpNonPositive(m_[r] - m_new);
        // Eight at a time: while the exp ran one value at a time this function
        // took 44% of prefill attention's samples at 2048 tokens (perf, AVX2
        // level), 27% after; the prefill ran 4-5% faster.
        Vec8 sum8 = {};
        int j = 0;
        for (; j + 8 <= limit; j += 8) {
            const Vec8 e = ExpNonPositive8(Load8(s + j) - m_new);
            Store8(s + j, e);
            sum8 += e;
        }
        float sum = Sum8(sum8);
        for (; j < limit; ++j) {
            s[j] = ExpNonPositive(s[j] - m_new);
            sum += s[j];
        }
        for (j = limit; j < n_keys; ++j) s[j] = 0.0f;
        l_[r] = l_[r] * corr_[r] + sum;
        m_[r] = m_new;
    }
}

template <typename T>
void AttentionTile::AccumulateV(int r_begin, const T* v_rows, int32_t stride, int n_keys) {
    const int hd = hd_, ld = ld_;
    const float* p = scores_.data() + static_cast<size_t>(r_begin) * ld;
    float* acc = acc_.data() + static_cast<size_t>(r_begin) * hd;
    const float* corr = corr_.data() + r_begin;
    if (hd % 8 != 0) {
        AccumulateRowsScalar(rows() - r_begin, p, ld, n_keys, v_rows, stride, hd, corr, acc);
        return;
    }
    ForRowBlocks(0, rows() - r_begin, [&](auto rb, int r) {
        constexpr int RB = decltype(rb)::value;
        const float* pr = p + static_cast<size_t>(r) * ld;
        float* ar = acc + static_cast<size_t>(r) * hd;
        if (hd % 16 == 0) {
            AccumulateRows<RB, 2>(pr, ld, n_keys, v_rows, stride, hd, corr + r, ar);
        } else {
            AccumulateRows<RB, 1>(pr, ld, n_keys, v_rows, stride, hd, corr + r, ar);
        }
    });
}

void AttentionTile::Attend(const AttentionSpan& span, const PagedKv& kv, int32_t kv_head, int64_t first_key,
                           int64_t last_key) {
    if (kv.dtype == DType::kBf16) {
        AttendChunks(span, static_cast<const uint16_t*>(kv.k), static_cast<const uint16_t*>(kv.v), kv, kv_head,
                     first_key, last_key);
    } else {
        AttendChunks(span, static_cast<const float*>(kv.k), static_cast<const float*>(kv.v), kv, kv_head, first_key,
                     last_key);
    }
}

template <typename T>
void AttentionTile::AttendChunks(const AttentionSpan& span, const T* k, const T* v, const PagedKv& kv,
                                 int32_t kv_head, int64_t first_key, int64_t last_key) {
    const int rows = this->rows();
    scores_.resize(static_cast<size_t>(rows) * ld_);
    corr_.resize(rows);
    const int bs = kv.block_size;
    int r_begin = 0;
    // The chunk starting at key c0: its length (never across a block, never
    // past last_key) and where its K/V head slices start.
    auto chunk_keys = [&](int64_t c0) {
        return static_cast<int>(std::min<int64_t>({bs - c0 % bs, ld_, last_key - c0 + 1}));
    };
    auto chunk_offset = [&](int64_t c0) {
        return (static_cast<size_t>(span.blocks[c0 / bs]) * bs + static_cast<size_t>(c0 % bs)) * kv.kv_dim +
               static_cast<size_t>(kv_head) * hd_;
    };
    for (int64_t c0 = first_key; c0 <= last_key;) {
        // Rows whose horizon ends before this chunk are done (horizons ascend).
        while (r_begin < rows && horizon_[r_begin] < c0) ++r_begin;
        if (r_begin == rows) break;
        // Under a sliding window no row sees a key before the first row's
        // window (the windows ascend with the horizons): skip them unread.
        if (window_ > 0 && c0 < horizon_[r_begin] - window_ + 1) {
            c0 = horizon_[r_begin] - window_ + 1;
            continue;
        }
        const int n_keys = chunk_keys(c0);
        const size_t off = chunk_offset(c0);
        // The next chunk sits in another block, somewhere else in the pool:
        // no hardware prefetcher can guess it, so ask for its K/V head slices
        // now (decode attention is a stream of such jumps).
        if (const int64_t next = c0 + n_keys; next <= last_key) {
            const size_t next_off = chunk_offset(next);
            PrefetchKeys(k + next_off, v + next_off, kv.kv_dim, chunk_keys(next));
        }
        if (rows - r_begin <= kDotRows && hd_ % 8 == 0) {
            ScoreByDots(r_begin, k + off, kv.kv_dim, n_keys);
        } else {
            TransposeKeys(k + off, kv.kv_dim, n_keys);
            const int n_cols = PaddedCols(n_keys);
            const int hd = hd_, ld = ld_;
            ForRowBlocks(r_begin, rows, [&](auto rb, int r) {
                constexpr int RB = decltype(rb)::value;
                ScoreRows<RB>(q_.data() + static_cast<size_t>(r) * hd, hd, kt_.data(), ld, n_cols,
                              scores_.data() + static_cast<size_t>(r) * ld);
            });
        }
        MaskAndSoftmax(r_begin, c0, n_keys, span);
        if (span.key_depth != nullptr) {
            // A key this layer lacks may have never-written V: zero it so that
            // its zero weight cannot meet a NaN.
            vz_.resize(static_cast<size_t>(ld_) * hd_);
            for (int j = 0; j < n_keys; ++j) {
                float* dst = vz_.data() + static_cast<size_t>(j) * hd_;
                const T* src = v + off + static_cast<size_t>(j) * kv.kv_dim;
                for (int d = 0; d < hd_; ++d) dst[d] = span.Holds(c0 + j) ? AsF32(src[d]) : 0.0f;
            }
            AccumulateV(r_begin, vz_.data(), hd_, n_keys);
        } else {
            AccumulateV(r_begin, v + off, kv.kv_dim, n_keys);
        }
        c0 += n_keys;
    }
}

PREPACK_ISA_END

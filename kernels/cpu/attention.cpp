#include "kernels/cpu/attention.h"

#include <algorithm>
#include <bit>
#include <climits>
#include <cmath>
#include <limits>
#include <vector>

namespace prepack::cpu {
namespace {

// Queries of one span handled together: they share every K/V block load.
constexpr int32_t kQueryTile = 16;

struct Task {
    int32_t span;
    int32_t kv_head;
    int32_t q_begin;   // offset within the span
    int32_t q_end;
};

inline float Dot(const float* a, const float* b, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

// exp(x) for the x <= 0 of an online softmax (a score minus the running
// max), in plain arithmetic the compiler vectorises: 2^(x log2 e) = 2^k 2^f
// with k an integer and |f| <= 1/2, e^(f ln 2) by its degree-6 Taylor
// polynomial (relative error below 2e-7). Underflow (and -inf, an absent
// key) gives exactly 0.
inline float ExpNonPositive(float x) {
    const float t = x * 1.44269504f;
    const float k = std::floor(t + 0.5f);
    const float r = (t - k) * 0.693147181f;
    const float p =
        1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    const int32_t e = static_cast<int32_t>(std::max(k, -126.0f)) + 127;
    const float scale = std::bit_cast<float>(e << 23);
    return x < -87.0f ? 0.0f : p * scale;
}

// Folds keys [j0, nk) of one block, whose scaled scores are in `scores`,
// into one (query, head) online-softmax state (m, l, acc): the running max,
// normaliser and weighted sum of V rows. Overwrites scores with weights.
inline void FoldBlock(float* scores, int j0, int nk, const float* vb, int32_t kv_dim, int hd, float& m,
                      float& l, float* acc) {
    float block_max = -std::numeric_limits<float>::infinity();
#pragma omp simd reduction(max : block_max)
    for (int j = j0; j < nk; ++j) block_max = std::max(block_max, scores[j]);
    if (block_max == -std::numeric_limits<float>::infinity()) return;   // every key absent (LazyLLM)
    const float m_new = std::max(m, block_max);
    const float corr = ExpNonPositive(m - m_new);
    float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
    for (int j = j0; j < nk; ++j) {
        scores[j] = ExpNonPositive(scores[j] - m_new);
        sum += scores[j];
    }
#pragma omp simd
    for (int i = 0; i < hd; ++i) acc[i] *= corr;
    for (int j = j0; j < nk; ++j) {
        const float p = scores[j];
        if (p == 0.0f) continue;   // an absent key (or one that underflows): adds nothing
        const float* vr = vb + static_cast<size_t>(j) * kv_dim;
#pragma omp simd
        for (int i = 0; i < hd; ++i) acc[i] += p * vr[i];
    }
    l = l * corr + sum;
    m = m_new;
}

// Per (query, head) online-softmax state: running max, normaliser, output;
// and the current key block, transposed.
struct TileState {
    std::vector<float> m, l, acc, scores, kt;
    void Reset(int n, int head_dim, int block_size) {
        m.assign(n, -std::numeric_limits<float>::infinity());
        l.assign(n, 0.0f);
        acc.assign(static_cast<size_t>(n) * head_dim, 0.0f);
        scores.resize(block_size);
        kt.resize(static_cast<size_t>(head_dim) * block_size);
    }
};

// Attends the task's queries to keys [first_key, horizon]. With fresh =
// false it continues from the state already in `st` (a cascade's prefix).
//
// Each key block is transposed once for all the tile's queries and heads,
// so a query's scores against the block are built along the keys (one
// vector multiply-add per head dimension, no horizontal sums).
void RunTask(const Task& t, const float* q, float* out, const AttentionShape& s,
             const AttentionSpan& span, const PagedKv& kv, TileState& st, int64_t first_key = 0, bool fresh = true) {
    const int hd = s.head_dim;
    const int bs = kv.block_size;
    const int group = s.n_heads / s.n_kv_heads;
    const int nq = t.q_end - t.q_begin;
    const int n_states = nq * group;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    if (fresh) st.Reset(n_states, hd, bs);
    const int64_t last_key = span.Horizon(t.q_end - 1);   // inclusive
    float* kt = st.kt.data();
    float* sc = st.scores.data();

    for (int64_t t0 = first_key / bs * bs; t0 <= last_key; t0 += bs) {
        const int j0 = static_cast<int>(std::max<int64_t>(0, first_key - t0));
        const int32_t block = span.blocks[t0 / bs];
        const size_t block_off = static_cast<size_t>(block) * bs * kv.kv_dim + t.kv_head * hd;
        const float* kb = kv.k + block_off;
        const float* vb = kv.v + block_off;
        const int n_keys = static_cast<int>(std::min<int64_t>(bs, last_key - t0 + 1));
        for (int j = 0; j < n_keys; ++j) {
            const float* kr = kb + static_cast<size_t>(j) * kv.kv_dim;
            for (int d = 0; d < hd; ++d) kt[static_cast<size_t>(d) * bs + j] = kr[d];
        }
        for (int qi = 0; qi < nq; ++qi) {
            const int64_t horizon = span.Horizon(t.q_begin + qi);   // inclusive
            if (t0 > horizon) continue;   // whole block is in this query's future
            const int nk = static_cast<int>(std::min<int64_t>(bs, horizon - t0 + 1));
            if (j0 >= nk) continue;
            const int64_t row = span.q_row + t.q_begin + qi;
            for (int g = 0; g < group; ++g) {
                const int head = t.kv_head * group + g;
                const float* qv = q + row * s.q_stride + static_cast<int64_t>(head) * hd;
                const int si = qi * group + g;
#pragma omp simd
                for (int j = 0; j < nk; ++j) sc[j] = 0.0f;
                for (int d = 0; d < hd; ++d) {
                    const float qd = qv[d];
                    const float* kr = kt + static_cast<size_t>(d) * bs;
#pragma omp simd
                    for (int j = 0; j < nk; ++j) sc[j] += qd * kr[j];
                }
#pragma omp simd
                for (int j = 0; j < nk; ++j) sc[j] *= scale;
                if (span.key_depth != nullptr) {
                    for (int j = j0; j < nk; ++j) {
                        if (!span.Holds(t0 + j)) sc[j] = -std::numeric_limits<float>::infinity();
                    }
                }
                FoldBlock(sc, j0, nk, vb, kv.kv_dim, hd, st.m[si], st.l[si],
                          st.acc.data() + static_cast<size_t>(si) * hd);
            }
        }
    }
    for (int qi = 0; qi < nq; ++qi) {
        const int64_t row = span.q_row + t.q_begin + qi;
        for (int g = 0; g < group; ++g) {
            const int head = t.kv_head * group + g;
            const int si = qi * group + g;
            const float inv = 1.0f / st.l[si];
            const float* acc = st.acc.data() + static_cast<size_t>(si) * hd;
            float* o = out + row * s.out_stride + static_cast<int64_t>(head) * hd;
#pragma omp simd
            for (int i = 0; i < hd; ++i) o[i] = acc[i] * inv;
        }
    }
}

// One kv head of a shared-prefix group: the prefix pass scores each prefix
// K row against all members' queries while it is in L1, then each member's
// suffix continues from its slice of the prefix state.
void RunCascade(const SharedPrefixGroup& g, int32_t kv_head, const float* q, float* out, const AttentionShape& s,
                const AttentionSpan* spans, const PagedKv& kv, TileState& prefix, TileState& member) {
    const int hd = s.head_dim;
    const int group = s.n_heads / s.n_kv_heads;
    const int members = static_cast<int>(g.spans.size());
    const int n_states = members * group;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    prefix.Reset(n_states, hd, kv.block_size * n_states);
    const int32_t* blocks = spans[g.spans[0]].blocks;
    for (int64_t t0 = 0; t0 < g.shared_len; t0 += kv.block_size) {
        const size_t off = static_cast<size_t>(blocks[t0 / kv.block_size]) * kv.block_size * kv.kv_dim + kv_head * hd;
        const float* kb = kv.k + off;
        const float* vb = kv.v + off;
        const int nk = static_cast<int>(std::min<int64_t>(kv.block_size, g.shared_len - t0));
        // Scores for every (member, head) of the block, each K row reused by all of them.
        float* sc = prefix.scores.data();
        for (int j = 0; j < nk; ++j) {
            const float* kr = kb + static_cast<size_t>(j) * kv.kv_dim;
            for (int m = 0; m < members; ++m) {
                const float* qrow = q + spans[g.spans[m]].q_row * s.q_stride;
                for (int h = 0; h < group; ++h) {
                    sc[(m * group + h) * kv.block_size + j] =
                        Dot(qrow + static_cast<int64_t>(kv_head * group + h) * hd, kr, hd) * scale;
                }
            }
        }
        for (int si = 0; si < n_states; ++si) {
            FoldBlock(sc + si * kv.block_size, 0, nk, vb, kv.kv_dim, hd, prefix.m[si], prefix.l[si],
                      prefix.acc.data() + static_cast<size_t>(si) * hd);
        }
    }
    for (int m = 0; m < members; ++m) {
        member.Reset(group, hd, kv.block_size);
        for (int h = 0; h < group; ++h) {
            const int si = m * group + h;
            member.m[h] = prefix.m[si];
            member.l[h] = prefix.l[si];
            std::copy_n(prefix.acc.data() + static_cast<size_t>(si) * hd, hd, member.acc.data() + static_cast<size_t>(h) * hd);
        }
        RunTask({g.spans[m], kv_head, 0, 1}, q, out, s, spans[g.spans[m]], kv, member, g.shared_len, /*fresh=*/false);
    }
}

}  // namespace

std::vector<SharedPrefixGroup> FindSharedPrefixes(const AttentionSpan* spans, int32_t n_spans, int32_t block_size,
                                                  int32_t min_shared, int32_t min_members) {
    // Decode spans grouped by their first block: sharing starts there or not at all.
    std::vector<int32_t> decode;
    for (int32_t i = 0; i < n_spans; ++i) {
        const bool plain = spans[i].q_slots == nullptr && spans[i].key_depth == nullptr;
        if (plain && spans[i].n_q == 1 && spans[i].kv_before >= block_size) decode.push_back(i);
    }
    std::stable_sort(decode.begin(), decode.end(),
                     [&](int32_t a, int32_t b) { return spans[a].blocks[0] < spans[b].blocks[0]; });
    std::vector<SharedPrefixGroup> groups;
    for (size_t a = 0; a < decode.size();) {
        size_t b = a;
        while (b < decode.size() && spans[decode[b]].blocks[0] == spans[decode[a]].blocks[0]) ++b;
        if (static_cast<int32_t>(b - a) >= min_members) {
            // Whole blocks that are the same in every member and below every member's query.
            int32_t full = INT32_MAX;
            for (size_t i = a; i < b; ++i) full = std::min(full, spans[decode[i]].kv_before / block_size);
            int32_t same = 0;
            while (same < full) {
                const int32_t id = spans[decode[a]].blocks[same];
                bool all = true;
                for (size_t i = a + 1; i < b && all; ++i) all = spans[decode[i]].blocks[same] == id;
                if (!all) break;
                ++same;
            }
            if (same > 0 && same * block_size >= min_shared) {
                groups.push_back({std::vector<int32_t>(decode.begin() + a, decode.begin() + b), same * block_size});
            }
        }
        a = b;
    }
    return groups;
}

void PagedAttention(const float* q, float* out, const AttentionShape& shape,
                    const AttentionSpan* spans, int32_t n_spans, const PagedKv& kv,
                    const std::vector<SharedPrefixGroup>& shared) {
    std::vector<uint8_t> in_cascade(n_spans, 0);
    for (const SharedPrefixGroup& g : shared) {
        for (int32_t s : g.spans) in_cascade[s] = 1;
    }
    std::vector<Task> tasks;
    for (int32_t s = 0; s < n_spans; ++s) {
        if (in_cascade[s]) continue;
        for (int32_t h = 0; h < shape.n_kv_heads; ++h) {
            for (int32_t b = 0; b < spans[s].n_q; b += kQueryTile) {
                tasks.push_back({s, h, b, std::min(spans[s].n_q, b + kQueryTile)});
            }
        }
    }
    // Later query tiles see more keys: hand them out first so the dynamic
    // schedule ends balanced.
    std::stable_sort(tasks.begin(), tasks.end(), [&](const Task& a, const Task& b) {
        return spans[a.span].Horizon(a.q_end - 1) > spans[b.span].Horizon(b.q_end - 1);
    });
    const int64_t n_tasks = static_cast<int64_t>(tasks.size());
    const int64_t n_cascade = static_cast<int64_t>(shared.size()) * shape.n_kv_heads;
#pragma omp parallel
    {
        TileState st, prefix;
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t i = 0; i < n_cascade; ++i) {
            RunCascade(shared[i / shape.n_kv_heads], static_cast<int32_t>(i % shape.n_kv_heads), q, out, shape, spans,
                       kv, prefix, st);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < n_tasks; ++i) {
            RunTask(tasks[i], q, out, shape, spans[tasks[i].span], kv, st);
        }
    }
}

void LastQueryScores(const float* q, const AttentionShape& s, const AttentionSpan& span, const PagedKv& kv,
                     float* scores) {
    const int hd = s.head_dim;
    const int group = s.n_heads / s.n_kv_heads;
    const int64_t horizon = span.Horizon(span.n_q - 1);
    const float* qrow = q + (span.q_row + span.n_q - 1) * s.q_stride;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::fill(scores, scores + horizon + 1, 0.0f);
    std::vector<float> p(static_cast<size_t>(horizon) + 1);
    for (int head = 0; head < s.n_heads; ++head) {
        const int kv_head = head / group;
        const float* qv = qrow + static_cast<int64_t>(head) * hd;
        float max = -std::numeric_limits<float>::infinity();
        for (int64_t j = 0; j <= horizon; ++j) {
            if (!span.Holds(j)) continue;
            const size_t off = static_cast<size_t>(span.blocks[j / kv.block_size]) * kv.block_size * kv.kv_dim +
                               static_cast<size_t>(j % kv.block_size) * kv.kv_dim + kv_head * hd;
            p[j] = Dot(qv, kv.k + off, hd) * scale;
            max = std::max(max, p[j]);
        }
        double sum = 0.0;
        for (int64_t j = 0; j <= horizon; ++j) {
            if (!span.Holds(j)) continue;
            p[j] = std::exp(p[j] - max);
            sum += p[j];
        }
        const float w = static_cast<float>(1.0 / (sum * s.n_heads));
        for (int64_t j = 0; j <= horizon; ++j) {
            if (span.Holds(j)) scores[j] += p[j] * w;
        }
    }
}

}  // namespace prepack::cpu

#include "kernels/cpu/attention.h"

#include <algorithm>
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

// Per (query, head) online-softmax state: running max, normaliser, output.
struct TileState {
    std::vector<float> m, l, acc, scores;
    void Reset(int n, int head_dim, int block_size) {
        m.assign(n, -std::numeric_limits<float>::infinity());
        l.assign(n, 0.0f);
        acc.assign(static_cast<size_t>(n) * head_dim, 0.0f);
        scores.resize(block_size);
    }
};

void RunTask(const Task& t, const float* q, float* out, const AttentionShape& s,
             const AttentionSpan& span, const PagedKv& kv, TileState& st) {
    const int hd = s.head_dim;
    const int group = s.n_heads / s.n_kv_heads;
    const int nq = t.q_end - t.q_begin;
    const int n_states = nq * group;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    st.Reset(n_states, hd, kv.block_size);
    const int64_t last_key = static_cast<int64_t>(span.kv_before) + t.q_end - 1;   // inclusive

    for (int64_t t0 = 0; t0 <= last_key; t0 += kv.block_size) {
        const int32_t block = span.blocks[t0 / kv.block_size];
        const size_t block_off = static_cast<size_t>(block) * kv.block_size * kv.kv_dim + t.kv_head * hd;
        const float* kb = kv.k + block_off;
        const float* vb = kv.v + block_off;
        for (int qi = 0; qi < nq; ++qi) {
            const int64_t horizon = static_cast<int64_t>(span.kv_before) + t.q_begin + qi;   // inclusive
            if (t0 > horizon) continue;   // whole block is in this query's future
            const int nk = static_cast<int>(std::min<int64_t>(kv.block_size, horizon - t0 + 1));
            const int64_t row = span.q_row + t.q_begin + qi;
            for (int g = 0; g < group; ++g) {
                const int head = t.kv_head * group + g;
                const float* qv = q + row * s.q_stride + static_cast<int64_t>(head) * hd;
                const int si = qi * group + g;
                float block_max = -std::numeric_limits<float>::infinity();
                for (int j = 0; j < nk; ++j) {
                    const float x = Dot(qv, kb + static_cast<size_t>(j) * kv.kv_dim, hd) * scale;
                    st.scores[j] = x;
                    block_max = std::max(block_max, x);
                }
                const float m_new = std::max(st.m[si], block_max);
                const float corr = std::exp(st.m[si] - m_new);
                float* acc = st.acc.data() + static_cast<size_t>(si) * hd;
                float sum = 0.0f;
#pragma omp simd
                for (int i = 0; i < hd; ++i) acc[i] *= corr;
                for (int j = 0; j < nk; ++j) {
                    const float p = std::exp(st.scores[j] - m_new);
                    sum += p;
                    const float* vr = vb + static_cast<size_t>(j) * kv.kv_dim;
#pragma omp simd
                    for (int i = 0; i < hd; ++i) acc[i] += p * vr[i];
                }
                st.l[si] = st.l[si] * corr + sum;
                st.m[si] = m_new;
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

}  // namespace

void PagedAttention(const float* q, float* out, const AttentionShape& shape,
                    const AttentionSpan* spans, int32_t n_spans, const PagedKv& kv) {
    std::vector<Task> tasks;
    for (int32_t s = 0; s < n_spans; ++s) {
        for (int32_t h = 0; h < shape.n_kv_heads; ++h) {
            for (int32_t b = 0; b < spans[s].n_q; b += kQueryTile) {
                tasks.push_back({s, h, b, std::min(spans[s].n_q, b + kQueryTile)});
            }
        }
    }
    // Later query tiles see more keys: hand them out first so the dynamic
    // schedule ends balanced.
    std::stable_sort(tasks.begin(), tasks.end(), [&](const Task& a, const Task& b) {
        return spans[a.span].kv_before + a.q_end > spans[b.span].kv_before + b.q_end;
    });
    const int64_t n_tasks = static_cast<int64_t>(tasks.size());
#pragma omp parallel
    {
        TileState st;
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < n_tasks; ++i) {
            RunTask(tasks[i], q, out, shape, spans[tasks[i].span], kv, st);
        }
    }
}

}  // namespace prepack::cpu

// Per level (kernel_table.h): the attention kernels of kernels/cpu/attention.h.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/held_keys.h"
#include "kernels/cpu/simd.h"

#include "kernels/cpu/attention_tile.h"   // last: opens the per-level region

PREPACK_ISA_BEGIN
namespace {

// Queries of one span handled together: they share every K/V load.
constexpr int32_t kQueryTile = 16;

struct Task {
    int32_t span;
    int32_t kv_head;
    int32_t q_begin;   // offset within the span
    int32_t q_end;
};

// A query head (f32) dotted with a cached key row (f32 or bf16).
template <typename T>
float Dot(const float* a, const T* b, int n) {
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; ++i) s += a[i] * AsF32(b[i]);
    return s;
}

float DotKey(const float* q, const PagedKv& kv, size_t off, int n) {
    return kv.dtype == DType::kBf16 ? Dot(q, static_cast<const uint16_t*>(kv.k) + off, n)
                                    : Dot(q, static_cast<const float*>(kv.k) + off, n);
}

const float* QueryHead(const float* q, const AttentionShape& s, int64_t row, int head) {
    return q + row * s.q_stride + static_cast<int64_t>(head) * s.head_dim;
}

float* OutHead(float* out, const AttentionShape& s, int64_t row, int head) {
    return out + row * s.out_stride + static_cast<int64_t>(head) * s.head_dim;
}

// The task's queries, each with every head of its KV head's group, as one
// tile attending to all the keys the last of them sees.
void RunTask(const Task& t, const float* q, float* out, const AttentionShape& s, const AttentionSpan& span,
             const PagedKv& kv, AttentionTile& tile) {
    const int group = s.n_heads / s.n_kv_heads;
    tile.Reset(s, kv.block_size);
    for (int32_t i = t.q_begin; i < t.q_end; ++i) {
        for (int g = 0; g < group; ++g) tile.AddRow(QueryHead(q, s, span.q_row + i, t.kv_head * group + g), span.Horizon(i));
    }
    tile.Attend(span, kv, t.kv_head, s.FirstKey(span.Horizon(t.q_begin)), span.Horizon(t.q_end - 1));
    int r = 0;
    for (int32_t i = t.q_begin; i < t.q_end; ++i) {
        for (int g = 0; g < group; ++g) tile.Write(r++, OutHead(out, s, span.q_row + i, t.kv_head * group + g));
    }
}

// One kv head of a shared-prefix group: the prefix is one tile whose rows
// are every member's query heads, so each prefix K/V row is loaded once for
// all of them (a matrix-matrix product instead of one matrix-vector per
// sequence); each member then continues from its rows' state over its own
// keys, which is exactly the log-sum-exp merge of the two partial attentions.
void RunCascade(const SharedPrefixGroup& g, int32_t kv_head, const float* q, float* out, const AttentionShape& s,
                const AttentionSpan* spans, const PagedKv& kv, AttentionTile& prefix, AttentionTile& member) {
    const int group = s.n_heads / s.n_kv_heads;
    prefix.Reset(s, kv.block_size);
    for (int32_t m : g.spans) {
        for (int h = 0; h < group; ++h) prefix.AddRow(QueryHead(q, s, spans[m].q_row, kv_head * group + h), g.shared_len - 1);
    }
    prefix.Attend(spans[g.spans[0]], kv, kv_head, 0, g.shared_len - 1);
    for (size_t m = 0; m < g.spans.size(); ++m) {
        const AttentionSpan& span = spans[g.spans[m]];
        member.Reset(s, kv.block_size);
        for (int h = 0; h < group; ++h) {
            member.AddRow(QueryHead(q, s, span.q_row, kv_head * group + h), span.Horizon(0));
            member.CopyState(prefix, static_cast<int>(m) * group + h, h);
        }
        member.Attend(span, kv, kv_head, g.shared_len, span.Horizon(0));
        for (int h = 0; h < group; ++h) member.Write(h, OutHead(out, s, span.q_row, kv_head * group + h));
    }
}

}  // namespace

void PagedAttention(const float* q, float* out, const AttentionShape& shape,
                    const AttentionSpan* spans, int32_t n_spans, const PagedKv& kv,
                    const std::vector<SharedPrefixGroup>& shared_groups) {
    // Under a sliding window a shared prefix is not one tile's keys (each
    // member's window starts elsewhere): every span runs on its own.
    static const std::vector<SharedPrefixGroup> kNone;
    const std::vector<SharedPrefixGroup>& shared = shape.window > 0 ? kNone : shared_groups;
    std::vector<uint8_t> in_cascade(n_spans, 0);
    for (const SharedPrefixGroup& g : shared) {
        for (int32_t s : g.spans) in_cascade[s] = 1;
    }
    // LazyLLM spans whose layer lacks many keys attend to a compact copy of
    // the held ones (held_keys.h). Kept per calling thread between calls.
    static thread_local std::vector<HeldKeys> held;
    // Sized before any is filled: span_of and kv_of point into its elements.
    std::vector<uint8_t> compact(n_spans, 0);
    size_t n_held = 0;
    for (int32_t s = 0; s < n_spans; ++s) {
        // A compact copy renumbers keys; a window counts token positions.
        compact[s] = !in_cascade[s] && shape.window == 0 && WorthCompacting(spans[s]);
        n_held += compact[s];
    }
    if (held.size() < n_held) held.resize(n_held);
    std::vector<const AttentionSpan*> span_of(n_spans);
    std::vector<const PagedKv*> kv_of(n_spans, &kv);
    n_held = 0;
    for (int32_t s = 0; s < n_spans; ++s) {
        span_of[s] = &spans[s];
        if (!compact[s]) continue;
        CompactHeldKeys(spans[s], kv, &held[n_held]);
        span_of[s] = &held[n_held].span;
        kv_of[s] = &held[n_held].kv;
        ++n_held;
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
        return span_of[a.span]->Horizon(a.q_end - 1) > span_of[b.span]->Horizon(b.q_end - 1);
    });
    const int64_t n_tasks = static_cast<int64_t>(tasks.size());
    const int64_t n_cascade = static_cast<int64_t>(shared.size()) * shape.n_kv_heads;
    // One task (a decode query with one KV head) has nothing to share out.
#pragma omp parallel if (n_tasks + n_cascade > 1)
    {
        // Per thread and kept between calls (OpenMP threads persist), so a
        // decode step allocates nothing once the tiles have grown.
        static thread_local AttentionTile tile, prefix;
#pragma omp for schedule(dynamic, 1) nowait
        for (int64_t i = 0; i < n_cascade; ++i) {
            RunCascade(shared[i / shape.n_kv_heads], static_cast<int32_t>(i % shape.n_kv_heads), q, out, shape, spans,
                       kv, prefix, tile);
        }
#pragma omp for schedule(dynamic, 1)
        for (int64_t i = 0; i < n_tasks; ++i) {
            RunTask(tasks[i], q, out, shape, *span_of[tasks[i].span], *kv_of[tasks[i].span], tile);
        }
    }
}

void LastQueryScores(const float* q, const AttentionShape& s, const AttentionSpan& span, const PagedKv& kv,
                     const QueryScoring& scoring, float* scores) {
    const int hd = s.head_dim;
    const int group = s.n_heads / s.n_kv_heads;
    const int64_t n = span.Horizon(span.n_q - 1) + 1;
    // The window's queries: the last one and those of the tokens just before
    // it, as long as the span holds them as consecutive rows.
    int32_t first = span.n_q - 1;
    while (first > 0 && span.n_q - first < scoring.window && span.Horizon(first - 1) == span.Horizon(first) - 1) {
        --first;
    }
    const int32_t rows = span.n_q - first;
    const float scale = s.Scale();
    // One row of probabilities per head, in parallel: a decode step scores
    // at every pruning layer while aux states wait, so this runs as often
    // as attention and must not leave the other threads idle.
    static thread_local std::vector<float> probs;
    probs.assign(static_cast<size_t>(n) * s.n_heads, 0.0f);
    float* const p = probs.data();   // the calling thread's buffer, shared by the team
#pragma omp parallel for schedule(static) if (n * s.n_heads * rows >= 4096)
    for (int head = 0; head < s.n_heads; ++head) {
        const int kv_head = head / group;
        float* ph = p + static_cast<size_t>(head) * n;
        // Each query's probabilities over the keys it sees, weighted so the
        // head's row sums to 1 / n_heads (a mean over heads is then a sum).
        // Per thread and kept between calls: decode steps score at every
        // pruning layer and should not allocate each time.
        static thread_local std::vector<float> logit;
        for (int32_t i = first; i < span.n_q; ++i) {
            const float* qv = q + (span.q_row + i) * s.q_stride + static_cast<int64_t>(head) * hd;
            const int64_t keys = span.Horizon(i) + 1;
            const int64_t first_key = s.FirstKey(span.Horizon(i));   // 0 without a sliding window
            logit.assign(static_cast<size_t>(keys), 0.0f);
            float max = -std::numeric_limits<float>::infinity();
            for (int64_t j = first_key; j < keys; ++j) {
                if (!span.Holds(j)) continue;
                const size_t off = static_cast<size_t>(span.blocks[j / kv.block_size]) * kv.block_size * kv.kv_dim +
                                   static_cast<size_t>(j % kv.block_size) * kv.kv_dim + kv_head * hd;
                logit[j] = DotKey(qv, kv, off, hd) * scale;
                if (s.softcap > 0.0f) logit[j] = s.softcap * std::tanh(logit[j] / s.softcap);
                max = std::max(max, logit[j]);
            }
            double sum = 0.0;
            for (int64_t j = first_key; j < keys; ++j) {
                if (!span.Holds(j)) continue;
                logit[j] = ExpNonPositive(logit[j] - max);
                sum += logit[j];
            }
            const float w = static_cast<float>(1.0 / (sum * s.n_heads * rows));
            for (int64_t j = first_key; j < keys; ++j) {
                if (span.Holds(j)) ph[j] += logit[j] * w;
            }
        }
    }
    // Head-averaged (summed in head order whatever the thread count), or the
    // heads' maximum (each head's share scaled back to a probability).
#pragma omp parallel for schedule(static) if (n >= 4096)
    for (int64_t j = 0; j < n; ++j) {
        float acc = 0.0f;
        for (int head = 0; head < s.n_heads; ++head) {
            const float v = p[static_cast<size_t>(head) * n + j];
            acc = scoring.head_max ? std::max(acc, v * s.n_heads) : acc + v;
        }
        scores[j] = acc;
    }
}

PREPACK_ISA_END

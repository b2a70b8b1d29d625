#include "core/model/reference.h"

#include <algorithm>
#include <cmath>

#include "kernels/cpu/matrix.h"

namespace prepack {
namespace {

// out[i] = sum_j W[first_row + i, j] * x[j]; W is row-major with d columns,
// each row decoded to f32 whatever its storage.
void MatVec(const cpu::Matrix& w, size_t first_row, const float* x, float* out, int n, int d) {
    std::vector<float> row(static_cast<size_t>(d));
    for (int i = 0; i < n; ++i) {
        cpu::DecodeMatrixRow(w, static_cast<int64_t>(first_row) + i, d, row.data());
        float sum = 0.0f;
        for (int j = 0; j < d; ++j) sum += row[j] * x[j];
        out[i] = sum;
    }
}

void RmsNorm(const float* x, const float* weight, float* out, int n, float eps) {
    float ss = 0.0f;
    for (int i = 0; i < n; ++i) ss += x[i] * x[i];
    const float scale = 1.0f / std::sqrt(ss / n + eps);
    for (int i = 0; i < n; ++i) out[i] = weight[i] * (scale * x[i]);
}

// Rotates the first rope_dim dims of every head: pairs (2i, 2i+1), or
// (i, i + rope_dim/2) for NEOX models. Frequency i is
// theta^(-2i/rope_dim) / scale / factors[i] (factors: rope_freqs.weight);
// a windowed layer with a base of its own uses that base and no scale.
void Rope(float* v, const ModelConfig& c, int n_heads, int pos, const float* factors, bool windowed) {
    const int half = c.rope_dim / 2;
    const bool own_base = windowed && c.rope_theta_swa > 0.0f;
    const double theta = own_base ? c.rope_theta_swa : c.rope_theta;
    const double scale = own_base ? 1.0 : c.rope_scale;
    for (int h = 0; h < n_heads; ++h) {
        for (int i = 0; i < half; ++i) {
            double freq = std::pow(theta, -2.0 * i / c.rope_dim) / scale;
            if (factors != nullptr) freq /= factors[i];
            const double angle = pos * freq;
            // LongRoPE's attention factor scales cos and sin (llama.cpp's attn_factor).
            const float cs = static_cast<float>(std::cos(angle) * c.rope_attn_factor);
            const float sn = static_cast<float>(std::sin(angle) * c.rope_attn_factor);
            float* head = v + h * c.head_dim;
            float* a = c.rope_style == RopeStyle::kNeox ? head + i : head + 2 * i;
            float* b = c.rope_style == RopeStyle::kNeox ? head + i + half : head + 2 * i + 1;
            const float x = *a, y = *b;
            *a = x * cs - y * sn;
            *b = x * sn + y * cs;
        }
    }
}

double Gelu(double x) { return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }

float SoftCap(float x, float cap) { return cap > 0.0f ? cap * std::tanh(x / cap) : x; }

void Softmax(float* x, int n) {
    float max = x[0];
    for (int i = 1; i < n; ++i) max = std::max(max, x[i]);
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
        x[i] = std::exp(x[i] - max);
        sum += x[i];
    }
    for (int i = 0; i < n; ++i) x[i] /= sum;
}

}  // namespace

ReferenceForward::ReferenceForward(const Model& model)
    : c_(model.config()), w_(model.weights()) {
    x_.resize(c_.dim);
    xb_.resize(std::max(c_.dim, c_.q_dim()));
    q_.resize(c_.q_dim());
    k_.resize(c_.kv_dim());
    v_.resize(c_.kv_dim());
    att_out_.resize(c_.q_dim());
    hb_.resize(c_.hidden_dim);
    hb2_.resize(c_.hidden_dim);
    logits_.resize(c_.vocab_size);
    key_cache_.resize(c_.n_layers);
    value_cache_.resize(c_.n_layers);
}

const std::vector<float>& ReferenceForward::Step(int32_t token) {
    const int d = c_.dim, hd = c_.head_dim, kv = c_.kv_dim(), qd = c_.q_dim(), hid = c_.hidden_dim;
    const int group = c_.n_heads / c_.n_kv_heads;
    const int pos = pos_++;
    cpu::DecodeMatrixRow(w_.token_embd, token, d, x_.data());
    for (int i = 0; i < d; ++i) x_[i] *= c_.embed_scale;
    // Adds a block's output (in xb_) to the residual stream: post-normed and
    // scaled where the model says so.
    auto add_branch = [&](const float* post_norm) {
        if (post_norm != nullptr) RmsNorm(xb_.data(), post_norm, xb_.data(), d, c_.norm_eps);
        for (int i = 0; i < d; ++i) x_[i] += c_.residual_scale * xb_[i];
    };
    const float att_scale = c_.attn_scale > 0.0f ? c_.attn_scale : 1.0f / std::sqrt(static_cast<float>(hd));

    for (int l = 0; l < c_.n_layers; ++l) {
        const LayerWeights& lw = w_.layers[l];
        RmsNorm(x_.data(), lw.attn_norm, xb_.data(), d, c_.norm_eps);
        MatVec(lw.wqkv, 0, xb_.data(), q_.data(), qd, d);
        MatVec(lw.wqkv, qd, xb_.data(), k_.data(), kv, d);
        MatVec(lw.wqkv, qd + kv, xb_.data(), v_.data(), kv, d);
        if (lw.bqkv != nullptr) {
            for (int i = 0; i < qd; ++i) q_[i] += lw.bqkv[i];
            for (int i = 0; i < kv; ++i) k_[i] += lw.bqkv[qd + i];
            for (int i = 0; i < kv; ++i) v_[i] += lw.bqkv[qd + kv + i];
        }
        if (lw.q_norm != nullptr) {   // Qwen3: each head normalised on its own
            for (int h = 0; h < c_.n_heads; ++h) RmsNorm(&q_[h * hd], lw.q_norm, &q_[h * hd], hd, c_.norm_eps);
            for (int h = 0; h < c_.n_kv_heads; ++h) RmsNorm(&k_[h * hd], lw.k_norm, &k_[h * hd], hd, c_.norm_eps);
        }
        Rope(q_.data(), c_, c_.n_heads, pos, w_.rope_freqs, c_.Windowed(l));
        Rope(k_.data(), c_, c_.n_kv_heads, pos, w_.rope_freqs, c_.Windowed(l));
        key_cache_[l].insert(key_cache_[l].end(), k_.begin(), k_.end());
        value_cache_[l].insert(value_cache_[l].end(), v_.begin(), v_.end());

        // Keys [first, pos]: all of them, or the last sliding_window on a windowed layer.
        const int first = c_.Windowed(l) ? std::max(0, pos - c_.sliding_window + 1) : 0;
        const int n_ctx = pos + 1 - first;
        scores_.resize(n_ctx);
        for (int h = 0; h < c_.n_heads; ++h) {
            const float* q = q_.data() + h * hd;
            const int kvh = h / group;
            for (int t = 0; t < n_ctx; ++t) {
                const float* k = key_cache_[l].data() + static_cast<size_t>(first + t) * kv + kvh * hd;
                float s = 0.0f;
                for (int i = 0; i < hd; ++i) s += q[i] * k[i];
                scores_[t] = SoftCap(s * att_scale, c_.attn_softcap);
            }
            Softmax(scores_.data(), n_ctx);
            float* out = att_out_.data() + h * hd;
            for (int i = 0; i < hd; ++i) out[i] = 0.0f;
            for (int t = 0; t < n_ctx; ++t) {
                const float* v = value_cache_[l].data() + static_cast<size_t>(first + t) * kv + kvh * hd;
                for (int i = 0; i < hd; ++i) out[i] += scores_[t] * v[i];
            }
        }
        MatVec(lw.wo, 0, att_out_.data(), xb_.data(), d, qd);
        add_branch(lw.attn_post_norm);

        RmsNorm(x_.data(), lw.ffn_norm, xb_.data(), d, c_.norm_eps);
        MatVec(lw.w_gate_up, 0, xb_.data(), hb_.data(), hid, d);
        MatVec(lw.w_gate_up, hid, xb_.data(), hb2_.data(), hid, d);
        for (int i = 0; i < hid; ++i) {
            const float g = hb_[i];
            const float act = c_.ffn_act == FfnActivation::kGeluTanh ? static_cast<float>(Gelu(g))
                                                                      : g / (1.0f + std::exp(-g));
            hb_[i] = act * hb2_[i];   // act(gate) * up
        }
        MatVec(lw.w_down, 0, hb_.data(), xb_.data(), d, hid);
        add_branch(lw.ffn_post_norm);
    }
    RmsNorm(x_.data(), w_.output_norm, x_.data(), d, c_.norm_eps);
    MatVec(w_.output, 0, x_.data(), logits_.data(), c_.vocab_size, d);
    for (float& v : logits_) v = SoftCap(v / c_.logit_scale, c_.final_softcap);
    return logits_;
}

const float* ReferenceForward::Key(int32_t layer, int32_t pos) const {
    return key_cache_[layer].data() + static_cast<size_t>(pos) * c_.kv_dim();
}

const float* ReferenceForward::Value(int32_t layer, int32_t pos) const {
    return value_cache_[layer].data() + static_cast<size_t>(pos) * c_.kv_dim();
}

}  // namespace prepack

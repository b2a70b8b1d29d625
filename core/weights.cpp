#include "core/weights.h"

#include <cmath>
#include <string>

#include "core/gguf.h"
#include "core/runtime.h"

namespace prepack {
namespace {

// Offsets (in floats) of every tensor inside the single storage block.
struct Layout {
    struct Layer {
        size_t attn_norm, wqkv, wo, ffn_norm, w_gate_up, w_down;
    };
    size_t token_embd = 0, output_norm = 0, output = 0, total = 0;
    std::vector<Layer> layers;
};

Layout MakeLayout(const ModelConfig& c) {
    Layout l;
    size_t at = 0;
    // Keep each tensor 64-byte aligned (16 floats).
    auto take = [&at](size_t n) {
        const size_t start = at;
        at += (n + 15) / 16 * 16;
        return start;
    };
    const size_t d = c.dim, h = c.hidden_dim, v = c.vocab_size;
    l.token_embd = take(v * d);
    l.output_norm = take(d);
    l.output = c.tied_output ? l.token_embd : take(v * d);
    for (int i = 0; i < c.n_layers; ++i) {
        Layout::Layer y;
        y.attn_norm = take(d);
        y.wqkv = take(static_cast<size_t>(c.qkv_dim()) * d);
        y.wo = take(d * c.q_dim());
        y.ffn_norm = take(d);
        y.w_gate_up = take(2 * h * d);
        y.w_down = take(d * h);
        l.layers.push_back(y);
    }
    l.total = at;
    return l;
}

ModelWeights Bind(const ModelConfig& c, const Layout& l, AlignedFloats storage) {
    ModelWeights w;
    w.storage = std::move(storage);
    const float* base = w.storage.data();
    w.token_embd = base + l.token_embd;
    w.output_norm = base + l.output_norm;
    w.output = base + l.output;
    for (int i = 0; i < c.n_layers; ++i) {
        const Layout::Layer& y = l.layers[i];
        w.layers.push_back({base + y.attn_norm, base + y.wqkv, base + y.wo, base + y.ffn_norm,
                            base + y.w_gate_up, base + y.w_down});
    }
    return w;
}

absl::Status CheckMemory(const ModelConfig& c) {
    const uint64_t need = WeightBytes(c);
    const uint64_t avail = AvailableMemoryBytes();
    if (avail != 0 && need > avail / 10 * 9) {
        return absl::ResourceExhaustedError(absl::StrCat(
            c.name, " needs ", need >> 20, " MiB of f32 weights but only ", avail >> 20,
            " MiB of memory is available"));
    }
    return absl::OkStatus();
}

std::string ShapeString(const std::vector<uint64_t>& ne) {
    std::string s = "[";
    for (size_t i = 0; i < ne.size(); ++i) absl::StrAppend(&s, i ? ", " : "", ne[i]);
    return s + "]";
}

// Finds `name` and checks its dims (ggml order: in_features first).
absl::StatusOr<const GgufTensor*> CheckTensor(const GgufFile& f, const std::string& name,
                                              const std::vector<uint64_t>& want) {
    const GgufTensor* t = f.FindTensor(name);
    if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("missing tensor '", name, "'"));
    if (t->ne != want) {
        return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' has shape ",
                                                       ShapeString(t->ne), ", expected ",
                                                       ShapeString(want)));
    }
    return t;
}

// Converts a checked tensor to f32 at `dst`.
absl::Status CopyTensor(const GgufTensor& t, float* dst) {
    const uint64_t row = t.ne[0];
    const uint64_t rows = t.n_elements() / row;
    PP_ASSIGN_OR_RETURN(uint64_t row_bytes, GgmlTypeBytes(t.type, row));
#pragma omp parallel for schedule(static)
    for (uint64_t r = 0; r < rows; ++r) {
        DequantizeRow(t.type, t.data + r * row_bytes, dst + r * row, row);
    }
    return absl::OkStatus();
}

// SplitMix64 of (seed, tensor, index): a counter-based generator, so weights
// can be produced in parallel and still be the same for every thread count.
inline uint64_t Mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

// Uniform in [-scale, scale].
void FillUniform(float* dst, size_t n, float scale, uint64_t seed, uint64_t tensor_id) {
    const uint64_t key = Mix(seed ^ Mix(tensor_id));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = Mix(key + i);
        const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);   // [0,1)
        dst[i] = (2.0f * u - 1.0f) * scale;
    }
}

void FillConstant(float* dst, size_t n, float value) {
    for (size_t i = 0; i < n; ++i) dst[i] = value;
}

}  // namespace

uint64_t WeightBytes(const ModelConfig& c) { return MakeLayout(c).total * sizeof(float); }

absl::StatusOr<ModelWeights> LoadWeights(const GgufFile& f, const ModelConfig& c) {
    PP_RETURN_IF_ERROR(c.Validate());
    const Layout l = MakeLayout(c);
    const uint64_t d = c.dim, h = c.hidden_dim, v = c.vocab_size, q = c.q_dim(), kv = c.kv_dim();
    // Every tensor: name, dims and where it goes in the storage.
    struct Part {
        std::string           name;
        std::vector<uint64_t> want;
        size_t                at;
    };
    std::vector<Part> parts = {{"token_embd.weight", {d, v}, l.token_embd}, {"output_norm.weight", {d}, l.output_norm}};
    if (!c.tied_output) parts.push_back({"output.weight", {d, v}, l.output});
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string p = absl::StrCat("blk.", i, ".");
        const Layout::Layer& y = l.layers[i];
        parts.push_back({p + "attn_norm.weight", {d}, y.attn_norm});
        parts.push_back({p + "attn_q.weight", {d, q}, y.wqkv});
        parts.push_back({p + "attn_k.weight", {d, kv}, y.wqkv + q * d});
        parts.push_back({p + "attn_v.weight", {d, kv}, y.wqkv + (q + kv) * d});
        parts.push_back({p + "attn_output.weight", {q, d}, y.wo});
        parts.push_back({p + "ffn_norm.weight", {d}, y.ffn_norm});
        parts.push_back({p + "ffn_gate.weight", {d, h}, y.w_gate_up});
        parts.push_back({p + "ffn_up.weight", {d, h}, y.w_gate_up + h * d});
        parts.push_back({p + "ffn_down.weight", {h, d}, y.w_down});
    }
    // Check every tensor before allocating: the storage size comes from the
    // file's metadata, so a tiny hostile file claiming a huge shape must be
    // refused here, not after allocating (up to 90% of) the machine's memory.
    std::vector<const GgufTensor*> found;
    for (const Part& p : parts) {
        PP_ASSIGN_OR_RETURN(const GgufTensor* t, CheckTensor(f, p.name, p.want));
        found.push_back(t);
    }
    PP_RETURN_IF_ERROR(CheckMemory(c));   // a real model too large for this machine
    AlignedFloats storage(l.total);
    float* base = storage.data();
    for (size_t i = 0; i < parts.size(); ++i) PP_RETURN_IF_ERROR(CopyTensor(*found[i], base + parts[i].at));
    return Bind(c, l, std::move(storage));
}

absl::StatusOr<ModelWeights> SyntheticWeights(const ModelConfig& c, uint64_t seed) {
    PP_RETURN_IF_ERROR(c.Validate());
    PP_RETURN_IF_ERROR(CheckMemory(c));
    const Layout l = MakeLayout(c);
    AlignedFloats storage(l.total);
    float* base = storage.data();
    const size_t d = c.dim, h = c.hidden_dim, v = c.vocab_size;
    // Uniform(-a, a) has variance a^2/3: a = sqrt(3 / fan_in) gives unit-gain
    // projections; residual branches are damped by 1/sqrt(2 * n_layers) so the
    // residual stream's scale stays bounded however deep the model is.
    const float unit_d = std::sqrt(3.0f / d);
    const float unit_q = std::sqrt(3.0f / c.q_dim());
    const float unit_h = std::sqrt(3.0f / h);
    const float damp = 1.0f / std::sqrt(2.0f * c.n_layers);
    uint64_t id = 0;
    FillUniform(base + l.token_embd, v * d, std::sqrt(3.0f), seed, id++);
    FillConstant(base + l.output_norm, d, 1.0f);
    if (!c.tied_output) FillUniform(base + l.output, v * d, unit_d, seed, id++);
    for (int i = 0; i < c.n_layers; ++i) {
        const Layout::Layer& y = l.layers[i];
        FillConstant(base + y.attn_norm, d, 1.0f);
        FillConstant(base + y.ffn_norm, d, 1.0f);
        FillUniform(base + y.wqkv, static_cast<size_t>(c.qkv_dim()) * d, unit_d, seed, id++);
        FillUniform(base + y.wo, d * c.q_dim(), unit_q * damp, seed, id++);
        FillUniform(base + y.w_gate_up, 2 * h * d, unit_d, seed, id++);
        FillUniform(base + y.w_down, d * h, unit_h * damp, seed, id++);
    }
    return Bind(c, l, std::move(storage));
}

}  // namespace prepack

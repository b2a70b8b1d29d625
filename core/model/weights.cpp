#include "core/model/weights.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "absl/strings/str_join.h"
#include "core/model/gguf.h"
#include "core/base/runtime.h"
#include "kernels/cpu/bf16.h"

namespace prepack {
namespace {

// Where a tensor lives: an element offset into the f32 storage, or into the
// bf16 storage (matrices when the dtype is bf16), or nowhere in either: a
// quantized matrix stays in the file's mapping (its slices are bound after).
struct Slot {
    size_t at = 0;
    bool   bf16 = false;
    bool   quant = false;

    Slot operator+(size_t elements) const { return {at + elements, bf16, quant}; }
};

// Which matrices are kept quantized (every part of them is in a quantized
// block type); the others are converted to the dense dtype.
struct QuantizedMatrices {
    bool token_embd = false, output = false;
    struct Layer {
        bool wqkv = false, wo = false, w_gate_up = false, w_down = false;
    };
    std::vector<Layer> layers;   // empty: none of them

    Layer At(int i) const { return i < static_cast<int>(layers.size()) ? layers[i] : Layer{}; }
};

// Every tensor's slot inside the two storage blocks.
struct Layout {
    struct Layer {
        Slot attn_norm, wqkv, wo, ffn_norm, w_gate_up, w_down;
        Slot bqkv, q_norm, k_norm, attn_post_norm, ffn_post_norm;   // only when the config has them
    };
    Slot token_embd, output_norm, output, rope_freqs;
    size_t f32_total = 0, bf16_total = 0;
    std::vector<Layer> layers;
};

Layout MakeLayout(const ModelConfig& c, cpu::DType dtype, const QuantizedMatrices& quant = {}) {
    Layout l;
    // Keep each tensor 64-byte aligned (a multiple of 32 elements of either type).
    auto take = [&l](size_t n, bool bf16) {
        size_t& at = bf16 ? l.bf16_total : l.f32_total;
        const Slot slot{at, bf16};
        at += (n + 31) / 32 * 32;
        return slot;
    };
    const bool half = dtype == cpu::DType::kBf16;
    auto vec = [&](size_t n) { return take(n, false); };
    auto mat = [&](size_t n, bool quantized) { return quantized ? Slot{0, false, true} : take(n, half); };
    const size_t d = c.dim, h = c.hidden_dim, v = c.vocab_size;
    l.token_embd = mat(v * d, quant.token_embd);
    l.output_norm = vec(d);
    l.output = c.tied_output ? l.token_embd : mat(v * d, quant.output);
    if (c.rope_freqs) l.rope_freqs = vec(c.rope_dim / 2);
    for (int i = 0; i < c.n_layers; ++i) {
        const QuantizedMatrices::Layer q = quant.At(i);
        Layout::Layer y;
        y.attn_norm = vec(d);
        y.wqkv = mat(static_cast<size_t>(c.qkv_dim()) * d, q.wqkv);
        y.wo = mat(d * c.q_dim(), q.wo);
        y.ffn_norm = vec(d);
        y.w_gate_up = mat(2 * h * d, q.w_gate_up);
        y.w_down = mat(d * h, q.w_down);
        if (c.qkv_bias) y.bqkv = vec(c.qkv_dim());
        if (c.qk_norm) {
            y.q_norm = vec(c.head_dim);
            y.k_norm = vec(c.head_dim);
        }
        if (c.post_norms) {
            y.attn_post_norm = vec(d);
            y.ffn_post_norm = vec(d);
        }
        l.layers.push_back(y);
    }
    return l;
}

// Owns the storage while tensors are written into it: f32 values go
// straight to their slot, or through a scratch row block rounded to bf16.
class Storage {
public:
    explicit Storage(const Layout& l) : f32_(l.f32_total), bf16_(l.bf16_total) {}

    // Where to write `n` f32 values of the tensor at `slot`; Commit() after.
    float* Begin(const Slot& slot, size_t n) {
        if (!slot.bf16) return f32_.data() + slot.at;
        scratch_.resize(n);
        return scratch_.data();
    }
    void Commit(const Slot& slot, size_t n) {
        if (!slot.bf16) return;
        uint16_t* dst = bf16_.data() + slot.at;
        const float* src = scratch_.data();
        constexpr size_t kPiece = 1 << 16;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < n; i += kPiece) cpu::F32ToBf16Row(src + i, dst + i, std::min(kPiece, n - i));
    }

    ModelWeights Bind(const ModelConfig& c, const Layout& l, cpu::DType dtype) && {
        ModelWeights w;
        w.dtype = dtype;
        w.storage = std::move(f32_);
        w.bf16_storage = std::move(bf16_);
        const float* f = w.storage.data();
        const uint16_t* b = w.bf16_storage.data();
        auto matrix = [&](const Slot& s) {
            if (s.quant) return cpu::Matrix{};   // its slices are bound by LoadWeights
            return s.bf16 ? cpu::Matrix{nullptr, b + s.at} : cpu::Matrix{f + s.at, nullptr};
        };
        w.token_embd = matrix(l.token_embd);
        w.output_norm = f + l.output_norm.at;
        w.output = matrix(l.output);
        if (c.rope_freqs) w.rope_freqs = f + l.rope_freqs.at;
        for (int i = 0; i < c.n_layers; ++i) {
            const Layout::Layer& y = l.layers[i];
            LayerWeights lw{f + y.attn_norm.at, matrix(y.wqkv), matrix(y.wo), f + y.ffn_norm.at,
                            matrix(y.w_gate_up), matrix(y.w_down)};
            if (c.qkv_bias) lw.bqkv = f + y.bqkv.at;
            if (c.qk_norm) {
                lw.q_norm = f + y.q_norm.at;
                lw.k_norm = f + y.k_norm.at;
            }
            if (c.post_norms) {
                lw.attn_post_norm = f + y.attn_post_norm.at;
                lw.ffn_post_norm = f + y.ffn_post_norm.at;
            }
            w.layers.push_back(lw);
        }
        return w;
    }

private:
    AlignedFloats          f32_;
    AlignedArray<uint16_t> bf16_;
    std::vector<float>     scratch_;
};

// `need`: the converted weights' bytes plus the quantized ones read from
// the file's mapping (resident once used, like any other weight).
absl::Status CheckMemory(const ModelConfig& c, cpu::DType dtype, uint64_t need) {
    const uint64_t avail = AvailableMemoryBytes();
    if (avail != 0 && need > avail / 10 * 9) {
        return absl::ResourceExhaustedError(absl::StrCat(
            c.name, " needs ", need >> 20, " MiB of weights (", cpu::DTypeName(dtype), " where not quantized) but only ",
            avail >> 20, " MiB of memory is available", dtype == cpu::DType::kF32 ? " (bf16 weights take half)" : ""));
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

// Converts a checked tensor to f32 and stores it at `slot`.
absl::Status CopyTensor(const GgufTensor& t, const Slot& slot, Storage& storage) {
    const uint64_t row = t.ne[0];
    const uint64_t rows = t.n_elements() / row;
    PP_ASSIGN_OR_RETURN(uint64_t row_bytes, GgmlTypeBytes(t.type, row));
    float* dst = storage.Begin(slot, t.n_elements());
#pragma omp parallel for schedule(static)
    for (uint64_t r = 0; r < rows; ++r) {
        DequantizeRow(t.type, t.data + r * row_bytes, dst + r * row, row);
    }
    storage.Commit(slot, t.n_elements());
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
void FillUniform(Storage& storage, const Slot& slot, size_t n, float scale, uint64_t seed, uint64_t tensor_id) {
    float* dst = storage.Begin(slot, n);
    const uint64_t key = Mix(seed ^ Mix(tensor_id));
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) {
        const uint64_t r = Mix(key + i);
        const float u = static_cast<float>(r >> 40) * (1.0f / 16777216.0f);   // [0,1)
        dst[i] = (2.0f * u - 1.0f) * scale;
    }
    storage.Commit(slot, n);
}

// Uniform in [lo, hi).
void FillUniformIn(Storage& storage, const Slot& slot, size_t n, float lo, float hi, uint64_t seed,
                   uint64_t tensor_id) {
    FillUniform(storage, slot, n, 0.5f * (hi - lo), seed, tensor_id);
    float* v = storage.Begin(slot, n);   // vectors are f32: this is the slot itself
    for (size_t i = 0; i < n; ++i) v[i] += 0.5f * (hi + lo);
}

void FillConstant(Storage& storage, const Slot& slot, size_t n, float value) {
    float* dst = storage.Begin(slot, n);
    for (size_t i = 0; i < n; ++i) dst[i] = value;
    storage.Commit(slot, n);
}

uint64_t DenseBytes(const Layout& l) { return l.f32_total * sizeof(float) + l.bf16_total * sizeof(uint16_t); }

// One model matrix: its GGUF tensors (consecutive row ranges of it), where
// its "kept quantized" flag lives in QuantizedMatrices and where it lives in
// the weights (layer < 0: a top-level matrix, else one of that layer's).
struct MatrixTensors {
    std::vector<std::string> names;
    int layer = -1;
    bool QuantizedMatrices::* top_flag = nullptr;
    cpu::Matrix ModelWeights::* top = nullptr;
    bool QuantizedMatrices::Layer::* layer_flag = nullptr;
    cpu::Matrix LayerWeights::* in_layer = nullptr;

    bool& Flag(QuantizedMatrices& q) const { return layer < 0 ? q.*top_flag : q.layers[layer].*layer_flag; }
    cpu::Matrix& Of(ModelWeights& w) const { return layer < 0 ? w.*top : w.layers[layer].*in_layer; }
};

// Every matrix of `c` with its tensors: the one list that both the choice of
// what stays quantized and the binding of it read.
std::vector<MatrixTensors> ModelMatrices(const ModelConfig& c) {
    using Q = QuantizedMatrices;
    std::vector<MatrixTensors> m = {{{"token_embd.weight"}, -1, &Q::token_embd, &ModelWeights::token_embd}};
    if (!c.tied_output) m.push_back({{"output.weight"}, -1, &Q::output, &ModelWeights::output});
    for (int i = 0; i < c.n_layers; ++i) {
        auto blk = [i](const char* name) { return absl::StrCat("blk.", i, ".", name); };
        auto in_layer = [&](std::vector<std::string> names, bool Q::Layer::* flag, cpu::Matrix LayerWeights::* mat) {
            m.push_back({std::move(names), i, nullptr, nullptr, flag, mat});
        };
        if (c.fused_qkv) {
            in_layer({blk("attn_qkv.weight")}, &Q::Layer::wqkv, &LayerWeights::wqkv);
        } else {
            in_layer({blk("attn_q.weight"), blk("attn_k.weight"), blk("attn_v.weight")}, &Q::Layer::wqkv,
                     &LayerWeights::wqkv);
        }
        in_layer({blk("attn_output.weight")}, &Q::Layer::wo, &LayerWeights::wo);
        if (c.fused_gate_up) {
            in_layer({blk("ffn_up.weight")}, &Q::Layer::w_gate_up, &LayerWeights::w_gate_up);
        } else {
            in_layer({blk("ffn_gate.weight"), blk("ffn_up.weight")}, &Q::Layer::w_gate_up, &LayerWeights::w_gate_up);
        }
        in_layer({blk("ffn_down.weight")}, &Q::Layer::w_down, &LayerWeights::w_down);
    }
    return m;
}

bool IsQuantized(const GgufFile& f, const std::vector<std::string>& names) {
    for (const std::string& name : names) {
        const GgufTensor* t = f.FindTensor(name);
        if (t == nullptr || !cpu::QuantTypeOfGgml(static_cast<uint32_t>(t->type))) return false;
    }
    return true;
}

// Which matrices of `f` stay quantized (those all of whose tensors are), and their bytes.
struct QuantPlan {
    QuantizedMatrices which;
    uint64_t          bytes = 0;
};

QuantPlan PlanQuantized(const GgufFile& f, const ModelConfig& c, const std::vector<MatrixTensors>& matrices) {
    QuantPlan plan;
    plan.which.layers.resize(c.n_layers);
    for (const MatrixTensors& m : matrices) {
        if (!IsQuantized(f, m.names)) continue;
        m.Flag(plan.which) = true;
        for (const std::string& name : m.names) plan.bytes += f.FindTensor(name)->nbytes;
    }
    return plan;
}

// Points `m` at its quantized tensors in the file's mapping.
void BindQuantized(const GgufFile& f, const std::vector<std::string>& names, cpu::Matrix& m) {
    for (const std::string& name : names) {
        const GgufTensor* t = f.FindTensor(name);
        m.quant[m.n_quant++] = {*cpu::QuantTypeOfGgml(static_cast<uint32_t>(t->type)), t->data,
                                static_cast<int64_t>(t->n_elements() / t->ne[0])};
    }
}

}  // namespace

uint64_t WeightBytes(const ModelConfig& c, cpu::DType dtype) { return DenseBytes(MakeLayout(c, dtype)); }

uint64_t ResidentWeightBytes(const GgufFile& file, const ModelConfig& c, cpu::DType dtype) {
    const QuantPlan plan = PlanQuantized(file, c, ModelMatrices(c));
    return DenseBytes(MakeLayout(c, dtype, plan.which)) + plan.bytes;
}

std::string ModelWeights::MatrixTypes() const {
    std::set<std::string> quant;
    bool dense = false;
    auto note = [&](const cpu::Matrix& m) {
        for (int s = 0; s < m.n_quant; ++s) quant.insert(cpu::QuantTypeName(m.quant[s].type));
        dense |= !m.quantized();
    };
    note(token_embd);
    note(output);
    for (const LayerWeights& l : layers) {
        for (const cpu::Matrix* m : {&l.wqkv, &l.wo, &l.w_gate_up, &l.w_down}) note(*m);
    }
    std::string out = absl::StrJoin(quant, "+");
    if (dense) absl::StrAppend(&out, out.empty() ? "" : "+", cpu::DTypeName(dtype));
    return out;
}

uint64_t ModelWeights::ResidentBytes() const {
    return storage.size() * sizeof(float) + bf16_storage.size() * sizeof(uint16_t) + quantized_bytes;
}

std::vector<float> RopeInverseFrequencies(const ModelConfig& c, const ModelWeights& w, bool windowed) {
    const bool own_base = windowed && c.rope_theta_swa > 0.0f;
    const float theta = own_base ? c.rope_theta_swa : c.rope_theta;
    const float scale = own_base ? 1.0f : c.rope_scale;
    std::vector<float> inv_freq;
    for (int i = 0; i < c.rope_dim / 2; ++i) {
        float f = 1.0f / std::pow(theta, static_cast<float>(2 * i) / c.rope_dim) / scale;
        if (w.rope_freqs != nullptr) f /= w.rope_freqs[i];
        inv_freq.push_back(f);
    }
    return inv_freq;
}

absl::StatusOr<cpu::DType> ParseDType(const std::string& name) {
    if (name == "f32") return cpu::DType::kF32;
    if (name == "bf16") return cpu::DType::kBf16;
    return absl::InvalidArgumentError(absl::StrCat("unknown dtype '", name, "' (expected f32 or bf16)"));
}

absl::StatusOr<ModelWeights> LoadWeights(std::shared_ptr<const GgufFile> file, const ModelConfig& c,
                                         cpu::DType dtype) {
    PP_RETURN_IF_ERROR(c.Validate());
    const GgufFile& f = *file;
    const uint64_t d = c.dim, h = c.hidden_dim, v = c.vocab_size, q = c.q_dim(), kv = c.kv_dim();
    const std::vector<MatrixTensors> matrices = ModelMatrices(c);
    QuantPlan plan = PlanQuantized(f, c, matrices);
    const QuantizedMatrices& quant = plan.which;
    const Layout l = MakeLayout(c, dtype, quant);
    // Every tensor: name, dims and where it goes in the storage.
    struct Part {
        std::string           name;
        std::vector<uint64_t> want;
        Slot                  at;
    };
    std::vector<Part> parts = {{"token_embd.weight", {d, v}, l.token_embd}, {"output_norm.weight", {d}, l.output_norm}};
    if (!c.tied_output) parts.push_back({"output.weight", {d, v}, l.output});
    if (c.rope_freqs) parts.push_back({c.rope_freqs_tensor, {static_cast<uint64_t>(c.rope_dim / 2)}, l.rope_freqs});
    for (int i = 0; i < c.n_layers; ++i) {
        const std::string p = absl::StrCat("blk.", i, ".");
        const Layout::Layer& y = l.layers[i];
        parts.push_back({p + "attn_norm.weight", {d}, y.attn_norm});
        if (c.fused_qkv) {
            parts.push_back({p + "attn_qkv.weight", {d, q + 2 * kv}, y.wqkv});
        } else {
            parts.push_back({p + "attn_q.weight", {d, q}, y.wqkv});
            parts.push_back({p + "attn_k.weight", {d, kv}, y.wqkv + q * d});
            parts.push_back({p + "attn_v.weight", {d, kv}, y.wqkv + (q + kv) * d});
        }
        parts.push_back({p + "attn_output.weight", {q, d}, y.wo});
        parts.push_back({p + "ffn_norm.weight", {d}, y.ffn_norm});
        if (c.fused_gate_up) {
            parts.push_back({p + "ffn_up.weight", {d, 2 * h}, y.w_gate_up});   // gate rows, then up rows
        } else {
            parts.push_back({p + "ffn_gate.weight", {d, h}, y.w_gate_up});
            parts.push_back({p + "ffn_up.weight", {d, h}, y.w_gate_up + h * d});
        }
        parts.push_back({p + "ffn_down.weight", {h, d}, y.w_down});
        if (c.qkv_bias) {
            parts.push_back({p + "attn_q.bias", {q}, y.bqkv});
            parts.push_back({p + "attn_k.bias", {kv}, y.bqkv + q});
            parts.push_back({p + "attn_v.bias", {kv}, y.bqkv + (q + kv)});
        }
        if (c.qk_norm) {
            parts.push_back({p + "attn_q_norm.weight", {static_cast<uint64_t>(c.head_dim)}, y.q_norm});
            parts.push_back({p + "attn_k_norm.weight", {static_cast<uint64_t>(c.head_dim)}, y.k_norm});
        }
        if (c.post_norms) {
            parts.push_back({p + "post_attention_norm.weight", {d}, y.attn_post_norm});
            parts.push_back({p + "post_ffw_norm.weight", {d}, y.ffn_post_norm});
        }
    }
    // Check every tensor before allocating: the storage size comes from the
    // file's metadata, so a tiny hostile file claiming a huge shape must be
    // refused here, not after allocating (up to 90% of) the machine's memory.
    std::vector<const GgufTensor*> found;
    for (const Part& p : parts) {
        PP_ASSIGN_OR_RETURN(const GgufTensor* t, CheckTensor(f, p.name, p.want));
        found.push_back(t);
    }
    PP_RETURN_IF_ERROR(CheckMemory(c, dtype, DenseBytes(l) + plan.bytes));   // a real model too large here
    Storage storage(l);
    for (size_t i = 0; i < parts.size(); ++i) {
        if (!parts[i].at.quant) PP_RETURN_IF_ERROR(CopyTensor(*found[i], parts[i].at, storage));
    }
    ModelWeights w = std::move(storage).Bind(c, l, dtype);
    for (const MatrixTensors& m : matrices) {
        if (m.Flag(plan.which)) BindQuantized(f, m.names, m.Of(w));
    }
    if (c.tied_output && quant.token_embd) w.output = w.token_embd;
    w.quantized_bytes = plan.bytes;
    // The mapping stays only while matrices compute on it: otherwise every
    // tensor has been copied, and its pages would count twice in memory.
    if (plan.bytes > 0) w.file = std::move(file);
    return w;
}

absl::StatusOr<ModelWeights> SyntheticWeights(const ModelConfig& c, uint64_t seed, cpu::DType dtype) {
    PP_RETURN_IF_ERROR(c.Validate());
    const Layout l = MakeLayout(c, dtype);
    PP_RETURN_IF_ERROR(CheckMemory(c, dtype, DenseBytes(l)));
    Storage storage(l);
    const size_t d = c.dim, h = c.hidden_dim, v = c.vocab_size;
    // Uniform(-a, a) has variance a^2/3: a = sqrt(3 / fan_in) gives unit-gain
    // projections; residual branches are damped by 1/sqrt(2 * n_layers) so the
    // residual stream's scale stays bounded however deep the model is.
    const float unit_d = std::sqrt(3.0f / d);
    const float unit_q = std::sqrt(3.0f / c.q_dim());
    const float unit_h = std::sqrt(3.0f / h);
    const float damp = 1.0f / std::sqrt(2.0f * c.n_layers);
    uint64_t id = 0;
    FillUniform(storage, l.token_embd, v * d, std::sqrt(3.0f), seed, id++);
    FillConstant(storage, l.output_norm, d, 1.0f);
    if (!c.tied_output) FillUniform(storage, l.output, v * d, unit_d, seed, id++);
    for (int i = 0; i < c.n_layers; ++i) {
        const Layout::Layer& y = l.layers[i];
        FillConstant(storage, y.attn_norm, d, 1.0f);
        FillConstant(storage, y.ffn_norm, d, 1.0f);
        FillUniform(storage, y.wqkv, static_cast<size_t>(c.qkv_dim()) * d, unit_d, seed, id++);
        FillUniform(storage, y.wo, d * c.q_dim(), unit_q * damp, seed, id++);
        FillUniform(storage, y.w_gate_up, 2 * h * d, unit_d, seed, id++);
        FillUniform(storage, y.w_down, d * h, unit_h * damp, seed, id++);
        // The optional parts, when a test's config asks for them, at scales
        // that change the result without swamping it.
        if (c.qkv_bias) FillUniform(storage, y.bqkv, c.qkv_dim(), 0.5f, seed, id++);
        if (c.qk_norm) {
            FillUniformIn(storage, y.q_norm, c.head_dim, 0.5f, 1.5f, seed, id++);
            FillUniformIn(storage, y.k_norm, c.head_dim, 0.5f, 1.5f, seed, id++);
        }
        if (c.post_norms) {
            FillUniformIn(storage, y.attn_post_norm, d, 0.5f, 1.5f, seed, id++);
            FillUniformIn(storage, y.ffn_post_norm, d, 0.5f, 1.5f, seed, id++);
        }
    }
    if (c.rope_freqs) FillUniformIn(storage, l.rope_freqs, c.rope_dim / 2, 1.0f, 8.0f, seed, id++);
    return std::move(storage).Bind(c, l, dtype);
}

}  // namespace prepack

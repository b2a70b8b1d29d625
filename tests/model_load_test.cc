// Loading llama models from GGUF: every supported weight type gives the
// weights it encodes, and files that are valid GGUF but not a valid model
// (wrong shapes, missing tensors, bad hyper-parameters) fail with a clear
// error naming the problem.
#include <cmath>
#include <functional>

#include <gtest/gtest.h>

#include "core/forward/cpu_pass.h"
#include "core/model/gguf.h"
#include "core/model/reference.h"
#include "tests/gguf_builder.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using test::GgufBuilder;
using test::TempGgufFile;

ModelConfig TestConfig() {
    ModelConfig c;
    c.name = "loadtest";
    c.dim = 64;
    c.n_heads = 4;
    c.n_kv_heads = 2;
    c.head_dim = 16;
    c.rope_dim = 16;
    c.n_layers = 2;
    c.hidden_dim = 96;
    c.vocab_size = 300;
    c.max_context = 256;
    return c;
}

// How a test wants f32 values stored, and the f32 values that storage decodes to
// (computed here, independently of the loader).
struct Encoding {
    GgmlType type;
    std::function<std::vector<uint8_t>(const std::vector<float>&)> encode;
    std::function<std::vector<float>(const std::vector<float>&)> decoded;
};

Encoding F32() {
    return {GgmlType::kF32, [](const std::vector<float>& v) { return GgufBuilder::ToBytes(v); },
            [](const std::vector<float>& v) { return v; }};
}

Encoding Half(bool bf16) {
    auto to = [bf16](float x) { return bf16 ? Fp32ToBf16(x) : Fp32ToFp16(x); };
    auto from = [bf16](uint16_t h) { return bf16 ? Bf16ToFp32(h) : Fp16ToFp32(h); };
    return {bf16 ? GgmlType::kBF16 : GgmlType::kF16,
            [to](const std::vector<float>& v) {
                std::vector<uint16_t> h;
                for (float x : v) h.push_back(to(x));
                return GgufBuilder::ToBytes(h);
            },
            [to, from](const std::vector<float>& v) {
                std::vector<float> out;
                for (float x : v) out.push_back(from(to(x)));
                return out;
            }};
}

// Q8_0: blocks of 32 values, an fp16 scale d = max|x| / 127 and int8 q = round(x / d).
Encoding Q8() {
    struct Block {
        uint16_t d;
        int8_t q[32];
    };
    auto quantize = [](const std::vector<float>& v, std::vector<float>* decoded) {
        std::vector<uint8_t> bytes;
        for (size_t b = 0; b < v.size(); b += 32) {
            float amax = 0.0f;
            for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
            const float d = amax / 127.0f;
            const uint16_t dh = Fp32ToFp16(d);
            GgufBuilder::Put<uint16_t>(bytes, dh);
            for (int i = 0; i < 32; ++i) {
                const int8_t q = static_cast<int8_t>(d == 0.0f ? 0 : std::lround(v[b + i] / d));
                GgufBuilder::Put<int8_t>(bytes, q);
                if (decoded) decoded->push_back(Fp16ToFp32(dh) * q);
            }
        }
        return bytes;
    };
    return {GgmlType::kQ8_0, [quantize](const std::vector<float>& v) { return quantize(v, nullptr); },
            [quantize](const std::vector<float>& v) {
                std::vector<float> out;
                quantize(v, &out);
                return out;
            }};
}

// Rows [row0, row0 + rows) of a [.., cols] matrix, as a flat vector.
std::vector<float> Rows(const float* m, size_t row0, size_t rows, size_t cols) {
    return std::vector<float>(m + row0 * cols, m + (row0 + rows) * cols);
}

// Tweaks applied to the metadata and tensor list of an otherwise valid model.
struct Edits {
    std::string key;                              // write this metadata key with `write` instead
    std::function<void(GgufBuilder&)> write;      // (a key not written by default is added)
    std::string skip_tensor;                      // leave this tensor out
    std::string reshape_tensor;                   // give this tensor a wrong shape
};

Edits Replace(std::string key, std::function<void(GgufBuilder&)> write) {
    Edits e;
    e.key = std::move(key);
    e.write = std::move(write);
    return e;
}
Edits SkipTensor(std::string name) {
    Edits e;
    e.skip_tensor = std::move(name);
    return e;
}
Edits ReshapeTensor(std::string name) {
    Edits e;
    e.reshape_tensor = std::move(name);
    return e;
}

// Writes `model`'s weights as a llama GGUF with every matrix stored in
// `enc`; norms stay f32 as llama.cpp's converters keep them.
GgufBuilder BuildGguf(const Model& model, const Encoding& enc, const Edits& e = {}) {
    const ModelConfig& c = model.config();
    const ModelWeights& w = model.weights();
    GgufBuilder b;
    bool replaced = false;
    // Writes a standard key, unless the edit replaces it.
    auto key = [&](const std::string& k, const std::function<void()>& standard) {
        if (k == e.key) {
            e.write(b);
            replaced = true;
        } else {
            standard();
        }
    };
    key("general.architecture", [&] { b.AddString("general.architecture", "llama"); });
    key("general.name", [&] { b.AddString("general.name", c.name); });
    key("llama.context_length", [&] { b.AddUint32("llama.context_length", c.max_context); });
    key("llama.embedding_length", [&] { b.AddUint32("llama.embedding_length", c.dim); });
    key("llama.block_count", [&] { b.AddUint32("llama.block_count", c.n_layers); });
    key("llama.feed_forward_length", [&] { b.AddUint32("llama.feed_forward_length", c.hidden_dim); });
    key("llama.attention.head_count", [&] { b.AddUint32("llama.attention.head_count", c.n_heads); });
    key("llama.attention.head_count_kv", [&] { b.AddUint32("llama.attention.head_count_kv", c.n_kv_heads); });
    key("llama.rope.dimension_count", [&] { b.AddUint32("llama.rope.dimension_count", c.rope_dim); });
    key("llama.attention.layer_norm_rms_epsilon",
        [&] { b.AddFloat32("llama.attention.layer_norm_rms_epsilon", c.norm_eps); });
    key("llama.rope.freq_base", [&] { b.AddFloat32("llama.rope.freq_base", c.rope_theta); });
    key("tokenizer.ggml.model", [&] { b.AddString("tokenizer.ggml.model", "llama"); });
    if (e.write && !replaced) e.write(b);
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (int i = 0; i < c.vocab_size; ++i) {
        pieces.push_back(model.tokenizer().Piece(i));
        scores.push_back(i < 259 ? 0.0f : -float(i));
        types.push_back(i == 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1);
    }
    b.AddStringArray("tokenizer.ggml.tokens", pieces);
    b.AddFloat32Array("tokenizer.ggml.scores", scores);
    b.AddInt32Array("tokenizer.ggml.token_type", types);

    const size_t d = c.dim, h = c.hidden_dim, q = c.q_dim(), kv = c.kv_dim(), v = c.vocab_size;
    auto add = [&](const std::string& name, std::vector<uint64_t> ne, std::vector<float> values, bool quantize) {
        if (name == e.skip_tensor) return;
        if (name == e.reshape_tensor) {   // a consistent tensor, just not of the model's shape
            ne[0] += 32;
            values.assign(ne[0] * (ne.size() > 1 ? ne[1] : 1), 0.5f);
        }
        if (quantize) {
            b.AddTensor(name, ne, enc.type, enc.encode(values));
        } else {
            b.AddTensorF32(name, ne, values);
        }
    };
    add("token_embd.weight", {d, v}, Rows(w.token_embd.f32, 0, v, d), true);
    add("output_norm.weight", {d}, Rows(w.output_norm, 0, 1, d), false);
    add("output.weight", {d, v}, Rows(w.output.f32, 0, v, d), true);
    for (int l = 0; l < c.n_layers; ++l) {
        const LayerWeights& lw = w.layers[l];
        const std::string p = "blk." + std::to_string(l) + ".";
        add(p + "attn_norm.weight", {d}, Rows(lw.attn_norm, 0, 1, d), false);
        add(p + "attn_q.weight", {d, q}, Rows(lw.wqkv.f32, 0, q, d), true);
        add(p + "attn_k.weight", {d, kv}, Rows(lw.wqkv.f32, q, kv, d), true);
        add(p + "attn_v.weight", {d, kv}, Rows(lw.wqkv.f32, q + kv, kv, d), true);
        add(p + "attn_output.weight", {q, d}, Rows(lw.wo.f32, 0, d, q), true);
        add(p + "ffn_norm.weight", {d}, Rows(lw.ffn_norm, 0, 1, d), false);
        add(p + "ffn_gate.weight", {d, h}, Rows(lw.w_gate_up.f32, 0, h, d), true);
        add(p + "ffn_up.weight", {d, h}, Rows(lw.w_gate_up.f32, h, h, d), true);
        add(p + "ffn_down.weight", {h, d}, Rows(lw.w_down.f32, 0, d, h), true);
    }
    return b;
}

// Every row of a loaded matrix as f32, whatever its storage.
std::vector<float> AllRows(const cpu::Matrix& m, size_t rows, size_t cols) {
    std::vector<float> out(rows * cols);
    for (size_t r = 0; r < rows; ++r) cpu::DecodeMatrixRow(m, static_cast<int64_t>(r), static_cast<int64_t>(cols), out.data() + r * cols);
    return out;
}

// The matrices of `m` as `enc` would decode them, for comparing loaded weights.
std::vector<float> Decoded(const Encoding& enc, const float* p, size_t n) {
    return enc.decoded(std::vector<float>(p, p + n));
}

class ModelLoadTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto m = Model::FromConfig(TestConfig(), 5);
        ASSERT_TRUE(m.ok()) << m.status();
        source_ = std::move(*m);
    }
    absl::StatusOr<std::unique_ptr<Model>> LoadWith(const Encoding& enc, const Edits& e = {}) {
        TempGgufFile f(BuildGguf(*source_, enc, e));
        EXPECT_TRUE(f.ok());
        return Model::Load(f.path());
    }
    std::unique_ptr<Model> source_;
};

TEST_F(ModelLoadTest, EveryWeightTypeDecodesToWhatItEncodes) {
    const ModelConfig& c = source_->config();
    for (const Encoding& enc : {F32(), Half(false), Half(true), Q8()}) {
        auto m = LoadWith(enc);
        ASSERT_TRUE(m.ok()) << GgmlTypeName(enc.type) << ": " << m.status();
        const ModelWeights& got = (*m)->weights();
        const ModelWeights& src = source_->weights();
        const size_t d = c.dim, h = c.hidden_dim;
        // Fused matrices hold the decoded source matrices, in order.
        for (int l = 0; l < c.n_layers; ++l) {
            const size_t qkv = size_t(c.qkv_dim()) * d;
            std::vector<float> want;
            for (size_t r = 0; r < size_t(c.qkv_dim()); r += (r == 0 ? c.q_dim() : c.kv_dim())) {
                const size_t rows = r == 0 ? c.q_dim() : c.kv_dim();
                auto part = Decoded(enc, src.layers[l].wqkv.f32 + r * d, rows * d);
                want.insert(want.end(), part.begin(), part.end());
            }
            ASSERT_EQ(want.size(), qkv);
            EXPECT_EQ(AllRows(got.layers[l].wqkv, c.qkv_dim(), d), want) << GgmlTypeName(enc.type) << " layer " << l;
            EXPECT_EQ(AllRows(got.layers[l].w_down, d, h), Decoded(enc, src.layers[l].w_down.f32, d * h))
                << GgmlTypeName(enc.type) << " layer " << l;
            // Block-quantized matrices stay quantized (Q|K|V as three slices).
            EXPECT_EQ(got.layers[l].wqkv.n_quant, enc.type == GgmlType::kQ8_0 ? 3 : 0);
        }
        EXPECT_EQ(AllRows(got.output, c.vocab_size, d), Decoded(enc, src.output.f32, c.vocab_size * d));
        // And the loaded model computes: logits stay close to the f32 source.
        ReferenceForward want(*source_), have(**m);
        const double tol = enc.type == GgmlType::kF32 ? 0.0 : enc.type == GgmlType::kF16 ? 0.02 : 0.1;
        for (int32_t t : {1, 20, 300 - 1, 77}) {
            const auto& a = want.Step(t);
            const auto& b = have.Step(t);
            EXPECT_LE(testing::MaxRelDiff(b.data(), a.data(), a.size()), tol) << GgmlTypeName(enc.type);
        }
    }
}

struct BadModelCase {
    const char* name;
    Edits edits;
    const char* message;   // must appear in the error
};

TEST_F(ModelLoadTest, InvalidModelsGiveClearErrors) {
    auto u32 = [](const char* k, uint32_t v) { return Replace(k, [k, v](GgufBuilder& b) { b.AddUint32(k, v); }); };
    std::vector<BadModelCase> cases = {
        {"missing tensor", SkipTensor("blk.1.ffn_up.weight"), "missing tensor 'blk.1.ffn_up.weight'"},
        {"wrong shape", ReshapeTensor("blk.0.attn_k.weight"), "tensor 'blk.0.attn_k.weight' has shape [96, 32], expected [64, 32]"},
        {"architecture", Replace("general.architecture", [](GgufBuilder& b) { b.AddString("general.architecture", "gpt2"); }),
         "unsupported architecture 'gpt2'"},
        {"tokenizer", Replace("tokenizer.ggml.model", [](GgufBuilder& b) { b.AddString("tokenizer.ggml.model", "rwkv"); }),
         "unsupported tokenizer model 'rwkv'"},
        {"rope scaling", Replace("llama.rope.freq_base", [](GgufBuilder& b) {
             b.AddFloat32("llama.rope.freq_base", 10000.0f);
             b.AddString("llama.rope.scaling.type", "yarn");
             b.AddFloat32("llama.rope.scaling.factor", 4.0f);
         }),
         "unsupported RoPE scaling 'yarn'"},
        {"value length", Replace("llama.rope.freq_base", [](GgufBuilder& b) {
             b.AddFloat32("llama.rope.freq_base", 10000.0f);
             b.AddUint32("llama.attention.value_length", 24);
         }),
         "value_length (24) differs from the key length"},
        {"missing key", Replace("llama.block_count", [](GgufBuilder&) {}), "llama.block_count"},
        {"heads not divisible", u32("llama.attention.head_count_kv", 3), "not a multiple of n_kv_heads"},
        {"zero layers", u32("llama.block_count", 0), "llama.block_count = 0 is out of range"},
        {"vocab mismatch", u32("llama.vocab_size", 301), "301"},
        {"huge dim", Replace("llama.embedding_length", [](GgufBuilder& b) { b.AddUint64("llama.embedding_length", 1ull << 40); }),
         "llama.embedding_length = 1099511627776 is out of range"},
        {"odd rope", u32("llama.rope.dimension_count", 7), "rope_dim (7) must be even"},
        {"bad eps", Replace("llama.attention.layer_norm_rms_epsilon",
                            [](GgufBuilder& b) { b.AddFloat32("llama.attention.layer_norm_rms_epsilon", -1.0f); }),
         "norm_eps = -1 is not in (0, 1)"},
        {"string for int", Replace("llama.context_length", [](GgufBuilder& b) { b.AddString("llama.context_length", "big"); }),
         "llama.context_length"},
    };
    for (const BadModelCase& bc : cases) {
        auto m = LoadWith(F32(), bc.edits);
        ASSERT_FALSE(m.ok()) << bc.name;
        EXPECT_NE(std::string(m.status().message()).find(bc.message), std::string::npos)
            << bc.name << ": got '" << m.status().message() << "'";
    }
}

TEST(ModelLoad, MissingFileAndUnknownSyntheticAreNotFound) {
    EXPECT_EQ(Model::Load("/no/such/model.gguf").status().code(), absl::StatusCode::kNotFound);
    EXPECT_EQ(Model::Load("synthetic:13b").status().code(), absl::StatusCode::kNotFound);
}

TEST(ModelLoad, SyntheticShapesAreTheNamedRealShapes) {
    auto tiny = SyntheticConfig("tiny");
    ASSERT_TRUE(tiny.ok());
    EXPECT_EQ(tiny->dim, 288);
    EXPECT_EQ(tiny->hidden_dim, 768);
    EXPECT_EQ(tiny->n_layers, 6);
    EXPECT_EQ(tiny->vocab_size, 512);
    auto m110 = SyntheticConfig("110m");
    ASSERT_TRUE(m110.ok());
    EXPECT_EQ(m110->n_kv_heads, 4);
    EXPECT_EQ(m110->vocab_size, 32000);
    auto b1 = SyntheticConfig("1b");
    ASSERT_TRUE(b1.ok());
    // Llama-3.2-1B has ~1.24B parameters with tied embeddings.
    EXPECT_NEAR(double(b1->TotalParams()), 1.236e9, 0.01e9);
    auto b7 = SyntheticConfig("7b");
    ASSERT_TRUE(b7.ok());
    // Llama-2-7B has ~6.74B parameters.
    EXPECT_NEAR(double(b7->TotalParams()), 6.738e9, 0.01e9);
    // Same name, same weights.
    auto a = Model::Load("synthetic:tiny"), b = Model::Load("synthetic:tiny");
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(std::vector<float>((*a)->weights().layers[3].wo.f32, (*a)->weights().layers[3].wo.f32 + 1000),
              std::vector<float>((*b)->weights().layers[3].wo.f32, (*b)->weights().layers[3].wo.f32 + 1000));
}

}  // namespace
}  // namespace prepack

// libFuzzer target: any bytes as a GGUF model file.
//
// GgufFile must turn every input into a status, never undefined behaviour or
// an unbounded allocation. Whatever parses is then read the way Model::Load
// reads a file: every metadata getter on every key, a few rows of every
// tensor dequantized, the llama hyper-parameters, the tokenizer, and the
// weights (which allocate only after every tensor's shape was checked).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/model/gguf.h"
#include "core/model/model_config.h"
#include "core/model/tokenizer.h"
#include "core/model/weights.h"
#include "kernels/cpu/quant_blocks.h"

namespace {

void ReadEveryKey(const prepack::GgufFile& f) {
    for (const std::string& key : f.Keys()) {
        (void)f.ValueSummary(key);
        (void)f.TypeOf(key);
        (void)f.GetString(key);
        (void)f.GetUint(key);
        (void)f.GetFloat(key);
        (void)f.GetBool(key);
        (void)f.GetStringArray(key);
        (void)f.GetFloatArray(key);
        (void)f.GetInt32Array(key);
    }
    (void)f.Has("no.such.key");
    (void)f.GetUint("no.such.key");
}

// Dequantizes the first (at most) 4096 elements of each tensor: enough to
// touch the data the validation vouched for without making runs slow.
void ReadEveryTensor(const prepack::GgufFile& f) {
    std::vector<float> out(4096);
    for (const prepack::GgufTensor& t : f.tensors()) {
        uint64_t n = std::min<uint64_t>(t.n_elements(), out.size());
        if (auto q = prepack::cpu::QuantTypeOfGgml(static_cast<uint32_t>(t.type))) {
            n -= n % static_cast<uint64_t>(prepack::cpu::QuantBlockElems(*q));   // whole blocks only
        }
        auto bytes = prepack::GgmlTypeBytes(t.type, n);
        if (n == 0 || !bytes.ok() || *bytes > t.nbytes) continue;
        prepack::DequantizeRow(t.type, t.data, out.data(), n);
        (void)f.FindTensor(t.name);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto file = prepack::GgufFile::FromBytes(std::vector<uint8_t>(data, data + size));
    if (!file.ok()) return 0;
    std::shared_ptr<const prepack::GgufFile> shared = std::move(*file);
    const prepack::GgufFile& f = *shared;
    ReadEveryKey(f);
    ReadEveryTensor(f);
    auto tok = prepack::Tokenizer::FromGguf(f);
    if (tok.ok()) {
        (void)tok->Encode("Once upon a time, \xc3\xa9t\xc3\xa9 \xf0\x9f\x98\x80", true);
        (void)tok->Decode({0, 1, 2, 3, tok->vocab_size() - 1});
    }
    auto config = prepack::ConfigFromGguf(f);
    if (config.ok()) (void)prepack::LoadWeights(shared, *config);
    return 0;
}

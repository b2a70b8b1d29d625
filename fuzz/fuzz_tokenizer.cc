// libFuzzer target: the tokenizer. Any bytes as text to encode, any int32
// values as ids to decode, with the properties the header promises checked:
//  - Encode succeeds exactly when the text is valid UTF-8;
//  - Decode(Encode(s)) == s for valid UTF-8 (the vocabulary has byte tokens)
//    without U+2581, the piece spelling of a space, which decodes as ' '
//    (SentencePiece); for byte-level BPE without exception;
//  - every id Encode returns is inside the vocabulary (parse_special or not);
//  - StreamDecoder output is always valid UTF-8, whatever the ids.
// The SentencePiece vocabulary is stories260K's (from ../shared/models) when
// present, else the synthetic one that synthetic:* models use; the BPE one
// is GPT-2's from ../shared/models/vocab when present (the first input byte
// chooses).
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "core/model/gguf.h"
#include "core/model/tokenizer.h"

namespace {

constexpr char kSpaceMarker[] = "\xe2\x96\x81";   // U+2581

const prepack::Tokenizer& Vocabulary() {
    static const prepack::Tokenizer* tok = [] {
        auto file = prepack::GgufFile::Open(std::string(PREPACK_MODELS_DIR) + "/stories260K/stories260K.gguf");
        if (file.ok()) {
            auto t = prepack::Tokenizer::FromGguf(**file);
            if (t.ok()) return new prepack::Tokenizer(std::move(*t));
        }
        std::fprintf(stderr, "fuzz_tokenizer: stories260K not found, using the synthetic vocabulary\n");
        return new prepack::Tokenizer(prepack::Tokenizer::Synthetic(512).value());
    }();
    return *tok;
}

const prepack::Tokenizer* BpeVocabulary() {
    static const prepack::Tokenizer* tok = []() -> const prepack::Tokenizer* {
        auto file = prepack::GgufFile::Open(std::string(PREPACK_MODELS_DIR) + "/vocab/ggml-vocab-gpt-2.gguf");
        if (file.ok()) {
            auto t = prepack::Tokenizer::FromGguf(**file);
            if (t.ok()) return new prepack::Tokenizer(std::move(*t));
        }
        std::fprintf(stderr, "fuzz_tokenizer: vocab/ggml-vocab-gpt-2.gguf not found, SentencePiece only\n");
        return nullptr;
    }();
    return tok;
}

[[noreturn]] void Fail(const char* what) {
    std::fprintf(stderr, "fuzz_tokenizer: %s\n", what);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    const bool use_bpe = in.ConsumeBool() && BpeVocabulary() != nullptr;
    const prepack::Tokenizer& tok = use_bpe ? *BpeVocabulary() : Vocabulary();
    const bool add_bos = in.ConsumeBool();
    const bool parse_special = in.ConsumeBool();
    const std::string text = in.ConsumeRandomLengthString(4096);

    auto ids = tok.Encode(text, add_bos, parse_special);
    if (ids.ok() != prepack::IsValidUtf8(text)) Fail("Encode accepted invalid UTF-8 or refused valid UTF-8");
    if (ids.ok()) {
        for (int32_t id : *ids) {
            if (id < 0 || id >= tok.vocab_size()) Fail("Encode returned an id outside the vocabulary");
        }
        // (With parse_special, control tokens' texts decode to nothing.)
        const bool exact = use_bpe || text.find(kSpaceMarker) == std::string::npos;
        // Decode keeps every byte of the ids; SentencePiece's dummy-prefix
        // space is dropped only after a BOS, so decode as the start of a text.
        std::vector<int32_t> as_text = *ids;
        if (!use_bpe && tok.bos_id() >= 0 && (as_text.empty() || as_text[0] != tok.bos_id())) {
            as_text.insert(as_text.begin(), tok.bos_id());
        }
        if (!parse_special && exact && tok.Decode(as_text) != text) Fail("Decode(Encode(s)) != s");
    }

    // The rest: raw ids, in range or not.
    std::vector<int32_t> raw;
    while (in.remaining_bytes() >= sizeof(int32_t)) raw.push_back(in.ConsumeIntegral<int32_t>());
    const std::string decoded = tok.Decode(raw);
    prepack::StreamDecoder stream(tok);
    std::string streamed;
    for (int32_t id : raw) {
        if (id >= 0 && id < tok.vocab_size()) {
            (void)tok.TokenBytes(id, true);
            (void)tok.IsControl(id);
        }
        streamed += stream.Push(id);
    }
    streamed += stream.Flush();
    if (!prepack::IsValidUtf8(streamed)) Fail("StreamDecoder produced invalid UTF-8");
    if (prepack::IsValidUtf8(decoded) && streamed != decoded) Fail("StreamDecoder disagrees with Decode on valid text");
    return 0;
}

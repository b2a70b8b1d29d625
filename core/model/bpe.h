// Byte-level BPE (GPT-2 style, GGUF `tokenizer.ggml.model = "gpt2"`): the
// byte <-> code point mapping its vocabulary pieces are spelled in, and the
// ranked merges applied inside one pre-tokenized word. Kept apart from
// tokenizer.cpp so the Tokenizer only wires vocabulary, special tokens and
// pre-tokenization together, and this file is the one place the merge
// algorithm lives.
//
// Pieces spell bytes, not text: GPT-2 maps every byte to one printable code
// point (the printable Latin-1 bytes to themselves, the other 68 to U+0100..
// U+0143 in byte order), so a piece's code points are its bytes. Merging
// follows llama.cpp's `llm_tokenizer_bpe_session`: start from one symbol per
// byte, repeatedly merge the adjacent pair with the lowest merge rank
// (leftmost on ties), then look each final symbol up in the vocabulary.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"

namespace prepack {

// `bytes` spelled in GPT-2's byte code points (UTF-8).
std::string BytesToBpeText(std::string_view bytes);
// The bytes a piece spells. Code points outside the mapping (a piece that is
// not byte-level, e.g. a user-defined token stored raw) are kept as their
// UTF-8, so nothing is lost.
std::string BpeTextToBytes(std::string_view text);

class BpeMerges {
public:
    // `merges` are "LEFT RIGHT" strings, rank = index (llama.cpp splits at
    // the first space after the first byte; an entry without one is ignored;
    // of duplicate pairs the first rank counts). `piece_to_id` is the whole
    // vocabulary, any token type, as llama.cpp's text_to_token.
    static BpeMerges Build(const std::unordered_map<std::string, int32_t>& piece_to_id,
                           int32_t vocab_size, const std::vector<std::string>& merges);

    // Appends the ids of one word (raw bytes). `ignore_merges`: a word that
    // is a vocabulary entry as a whole is that entry. A final symbol that is
    // no vocabulary entry is emitted as its single-byte pieces (those that
    // exist), as llama.cpp does.
    void EncodeWord(std::string_view word, bool ignore_merges,
                    const std::unordered_map<std::string, int32_t>& piece_to_id,
                    std::vector<int32_t>* out) const;

    size_t merge_count() const { return merges_.size(); }

private:
    struct Merge {
        int32_t rank;
        int32_t result;   // symbol of the concatenation
    };
    static uint64_t Key(int32_t left, int32_t right) {
        return static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32 | static_cast<uint32_t>(right);
    }
    void Emit(int32_t symbol, std::vector<int32_t>* out) const;

    // Symbols are vocabulary ids, or vocab_size_ + i for the i-th string that
    // occurs in the merges (or as a single byte) but not in the vocabulary.
    int32_t vocab_size_ = 0;
    int32_t byte_symbol_[256] = {};
    std::vector<std::vector<int32_t>> extra_fallback_;   // per extra symbol: its single-byte ids
    std::unordered_map<uint64_t, Merge> merges_;
};

}  // namespace prepack

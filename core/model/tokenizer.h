// SentencePiece-style (GGUF `tokenizer.ggml.model = "llama"`) tokenizer.
//
// Encoding follows llama2.c / SentencePiece BPE: optional BOS, a dummy-prefix
// space before non-empty text, spaces written as U+2581 ("▁"), every UTF-8
// code point looked up as a piece (byte fallback to <0xXX> tokens when it is
// not in the vocabulary), then repeated merging of the adjacent pair whose
// concatenation is a piece with the highest score (leftmost on ties).
// Decoding reverses it: "▁" becomes ' ', byte tokens become raw bytes, control
// tokens (BOS/EOS/unknown) produce nothing, and the dummy-prefix space of the
// first piece is dropped, so Decode(Encode(s)) == s for any valid UTF-8 s
// that does not contain U+2581 itself (it decodes as a space).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"

namespace prepack {

class GgufFile;

// Token types as stored in `tokenizer.ggml.token_type` (llama.cpp numbering).
enum class TokenType : int32_t {
    kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

class Tokenizer {
public:
    // Reads tokens, scores, token types and special ids from GGUF metadata.
    // INVALID_ARGUMENT when the model is not "llama", arrays disagree in
    // length, ids are out of range, or pieces are duplicated.
    static absl::StatusOr<Tokenizer> FromGguf(const GgufFile& file);
    // A deterministic vocabulary of `vocab_size` pieces for synthetic models:
    // <unk>, <s>, </s>, the 256 byte tokens, then printable pieces with
    // decreasing scores. vocab_size must be >= 259 + 1.
    static absl::StatusOr<Tokenizer> Synthetic(int vocab_size);
    // From explicit pieces (tests). `types` empty means: infer <0xXX> as byte
    // tokens and everything else as normal.
    static absl::StatusOr<Tokenizer> FromPieces(std::vector<std::string> pieces,
                                                std::vector<float> scores,
                                                std::vector<int32_t> types,
                                                int32_t bos_id, int32_t eos_id, int32_t unk_id);

    // Text to ids. INVALID_ARGUMENT when `text` is not valid UTF-8.
    absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool add_bos) const;
    // Ids to text (see the header comment). Out-of-range ids decode to nothing.
    std::string Decode(const std::vector<int32_t>& ids) const;
    // The bytes one token contributes in isolation: "▁" as ' ', byte tokens
    // as their byte, control tokens as "". `after_bos` drops the leading
    // dummy-prefix space as Decode does for the first piece.
    std::string TokenBytes(int32_t id, bool after_bos = false) const;
    // The raw vocabulary entry (with "▁"), for inspection.
    const std::string& Piece(int32_t id) const { return pieces_[id]; }

    int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
    int32_t bos_id() const { return bos_id_; }
    int32_t eos_id() const { return eos_id_; }
    int32_t unk_id() const { return unk_id_; }
    bool    add_bos() const { return add_bos_; }
    bool    IsControl(int32_t id) const;

private:
    // Validates and indexes a vocabulary; every constructor ends here.
    // Empty `scores` means all zero; empty `types` means inferred.
    static absl::StatusOr<Tokenizer> Assemble(std::vector<std::string> pieces,
                                              std::vector<float> scores,
                                              std::vector<int32_t> types,
                                              int64_t bos_id, int64_t eos_id, int64_t unk_id,
                                              bool add_bos, bool add_space_prefix);
    // Id of a normal/user-defined piece spelled `piece`, or -1.
    int32_t LookupText(const std::string& piece) const;
    // One id per code point of `normalized`, byte tokens where none exists.
    std::vector<int32_t> InitialSymbols(std::string_view normalized) const;
    // Applies the best-score-first merges to `initial`.
    std::vector<int32_t> MergePairs(const std::vector<int32_t>& initial) const;

    std::vector<std::string>                 pieces_;
    std::vector<float>                       scores_;
    std::vector<TokenType>                   types_;
    std::unordered_map<std::string, int32_t> piece_to_id_;
    int32_t byte_ids_[256];                  // byte value -> <0xXX> token, -1 if absent
    int32_t bos_id_ = 1, eos_id_ = 2, unk_id_ = 0;
    bool    add_bos_ = true;
    bool    add_space_prefix_ = true;
};

// Turns a token stream into text pieces that are always complete UTF-8:
// bytes of a code point split across byte-fallback tokens are held back
// until the code point is whole. Used for streaming output.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tok) : tok_(&tok) {}
    // Returns the text that became complete with this token (maybe "").
    std::string Push(int32_t id);
    // Whatever is still held back, with invalid leftovers as U+FFFD.
    std::string Flush();

private:
    const Tokenizer* tok_;
    std::string      pending_;
    bool             first_ = true;   // next text piece is the first: drop its dummy-prefix space
};

// True when `s` is valid UTF-8 (no overlongs, surrogates or values > U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace prepack

// The vocabulary of a GGUF model and the text <-> token id conversion, for
// the two vocabulary kinds GGUF models use:
//
// SentencePiece-style (`tokenizer.ggml.model = "llama"`, vocab_type() "spm").
// Encoding follows llama2.c / SentencePiece BPE: optional BOS, a dummy-prefix
// space before non-empty text, spaces written as U+2581 ("▁"), every UTF-8
// code point looked up as a piece (byte fallback to <0xXX> tokens when it is
// not in the vocabulary), then repeated merging of the adjacent pair whose
// concatenation is a piece with the highest score (leftmost on ties).
// Decoding reverses it: "▁" becomes ' ', byte tokens become raw bytes, control
// tokens (BOS/EOS/unknown) produce nothing, and the dummy-prefix space of the
// first piece after a BOS is dropped, so Decode(Encode(s, add_special=true))
// == s for any valid UTF-8 s that does not contain U+2581 itself (it decodes
// as a space). Without a BOS every byte is kept: ids decode to exactly the
// text they stand for in a longer sequence (a completion's ids alone give
// the completion's text, leading space included), so text encoded without
// BOS decodes with the dummy-prefix space in front.
//
// Byte-level BPE (`tokenizer.ggml.model = "gpt2"`, vocab_type() "bpe"), as
// llama.cpp tokenizes it: user-defined tokens are split out of the text first
// (and control tokens too when parse_special is on), the rest is cut into
// words by the pre-tokenizer `tokenizer.ggml.pre` names (pretokenizer.h), and
// each word's bytes are merged by the ranked `tokenizer.ggml.merges`
// (bpe.h). Decoding gives each token's exact bytes (normal pieces mapped back
// from GPT-2's byte code points, user-defined tokens as stored, control
// tokens nothing), so Decode(Encode(s)) == s for every valid UTF-8 s, and a
// single token may decode to part of a UTF-8 sequence (StreamDecoder holds
// such parts back). Unlike llama.cpp's detokenizer, Decode applies no
// "clean up tokenization spaces" rewriting: it would break that round trip.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"

namespace prepack {

class GgufFile;
class BpeMerges;
class PreTokenizer;

// Token types as stored in `tokenizer.ggml.token_type` (llama.cpp numbering).
enum class TokenType : int32_t {
    kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6,
};

class Tokenizer {
public:
    // Reads tokens, scores, token types and special ids from GGUF metadata
    // (for "gpt2" also the merges and the pre-tokenizer). INVALID_ARGUMENT
    // when the model is neither "llama" nor "gpt2", the pre-tokenizer is
    // unknown (the message names it), arrays disagree in length, ids are out
    // of range, or pieces are duplicated.
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
    // `add_special`: BOS / EOS as the vocabulary says (add_bos() / add_eos():
    // tokenizer.ggml.add_bos_token / add_eos_token; without them SPM adds
    // BOS and BPE follows llama.cpp's defaults), as llama.cpp does.
    // `parse_special`: the texts of control (and unknown) tokens in `text`
    // become those tokens, longest first, as llama.cpp's
    // tokenizer_st_partition; off, they are ordinary text. BPE splits out
    // user-defined tokens either way (as llama.cpp and Hugging Face do), and
    // so does SPM (llama.cpp: Gemma's whitespace runs and tags are
    // user-defined); each text fragment is then encoded as described above.
    absl::StatusOr<std::vector<int32_t>> Encode(std::string_view text, bool add_special,
                                                bool parse_special = false) const;
    // Byte ranges [first, second) of a text, sorted and disjoint.
    using ByteRanges = std::vector<std::pair<size_t, size_t>>;
    // A rendered chat prompt to ids: as Encode with parse_special on, except
    // that a control token's text is matched only where it lies wholly
    // outside `plain` (the bytes that came from message content, which must
    // stay ordinary text however they look: a user who types "<|im_end|>"
    // gets the characters, not the token). The text between control tokens
    // is tokenized as one piece, so a prompt whose content holds no control
    // text gets exactly Encode(text, add_special, true)'s ids. `add_special`
    // adds BOS only when the text does not already start with it (a template
    // that writes bos_token itself), so BOS is never doubled.
    absl::StatusOr<std::vector<int32_t>> EncodeMarkedUp(std::string_view text, const ByteRanges& plain,
                                                        bool add_special) const;
    // Ids to text (see the header comment). Out-of-range ids decode to nothing.
    std::string Decode(const std::vector<int32_t>& ids) const;
    // The bytes one token contributes in isolation: "▁" as ' ', byte tokens
    // as their byte, control tokens as "". `after_bos` drops the leading
    // dummy-prefix space as Decode does for the first piece (SPM only; BPE
    // has no dummy prefix). For BPE these are the token's raw bytes, which
    // may be an incomplete UTF-8 sequence.
    std::string TokenBytes(int32_t id, bool after_bos = false) const;
    // The raw vocabulary entry (with "▁"), for inspection.
    const std::string& Piece(int32_t id) const { return pieces_[id]; }

    int32_t vocab_size() const { return static_cast<int32_t>(pieces_.size()); }
    // Special ids; -1 where the vocabulary has none (possible for BPE).
    int32_t bos_id() const { return bos_id_; }
    int32_t eos_id() const { return eos_id_; }
    int32_t unk_id() const { return unk_id_; }
    int32_t pad_id() const { return pad_id_; }
    // End of turn / end of message (`tokenizer.ggml.eot_token_id` /
    // `eom_token_id`, else found by text as llama.cpp does), -1 if none.
    int32_t eot_id() const { return eot_id_; }
    int32_t eom_id() const { return eom_id_; }
    bool    add_bos() const { return add_bos_; }
    bool    add_eos() const { return add_eos_; }
    bool    IsControl(int32_t id) const;
    // Whether generating `id` ends generation: EOS, EOT, EOM and the tokens
    // llama.cpp's special_eog_ids holds (by text: <|eot_id|>, <|im_end|>,
    // <|endoftext|>, <|end_of_text|>, <|eom_id|>, <end_of_turn>, <|end|>, ...,
    // and the FIM pad / repo / file-separator tokens).
    bool    IsEndOfGeneration(int32_t id) const;
    // "spm" or "bpe".
    std::string_view vocab_type() const { return bpe_ ? "bpe" : "spm"; }
    // The BPE pre-tokenizer's name ("default" when the file names none); ""
    // for SPM, which has none.
    const std::string& pre_tokenizer() const { return pre_name_; }
    // The chat templates the file carries: "" for `tokenizer.chat_template`,
    // NAME for `tokenizer.chat_template.NAME` (e.g. "tool_use"). Jinja source.
    const std::map<std::string, std::string>& chat_templates() const { return chat_templates_; }

private:
    // Validates and indexes a vocabulary; every constructor ends here.
    // Empty `scores` means all zero; empty `types` means inferred. `bpe`:
    // special ids may be -1 (none).
    static absl::StatusOr<Tokenizer> Assemble(std::vector<std::string> pieces,
                                              std::vector<float> scores,
                                              std::vector<int32_t> types,
                                              int64_t bos_id, int64_t eos_id, int64_t unk_id,
                                              bool add_bos, bool add_space_prefix, bool bpe = false);
    static absl::StatusOr<Tokenizer> BpeFromGguf(const GgufFile& file);
    // EOT / EOM / FIM ids and the end-of-generation set (llama.cpp's rules);
    // for BPE also llama.cpp's type corrections of special tokens.
    absl::Status FinishSpecials(const GgufFile* file);
    // The candidates tokenizer_st_partition tries, longest first, and a trie
    // over their texts to find which occur in a text.
    void IndexSpecialTexts();
    struct Fragment {
        int32_t id;      // a special token, or -1: raw text [begin, end)
        size_t  begin, end;
    };
    // llama.cpp's tokenizer_st_partition. Control texts overlapping a range
    // of `plain` (when given) are not matched.
    std::vector<Fragment> Partition(std::string_view text, bool parse_special,
                                    const ByteRanges* plain = nullptr) const;
    absl::StatusOr<std::vector<int32_t>> EncodeImpl(std::string_view text, bool add_special, bool parse_special,
                                                    const ByteRanges* plain) const;
    // tokenizer.chat_template[.NAME] into chat_templates_.
    void ReadChatTemplates(const GgufFile& file);
    void EncodeSpmText(std::string_view text, bool space_prefix, std::vector<int32_t>* out) const;
    absl::Status EncodeBpeText(std::string_view text, std::vector<int32_t>* out) const;
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
    int32_t bos_id_ = 1, eos_id_ = 2, unk_id_ = 0, pad_id_ = -1, eot_id_ = -1, eom_id_ = -1;
    bool    add_bos_ = true;
    bool    add_eos_ = false;
    bool    add_space_prefix_ = true;
    std::vector<int32_t> eog_ids_;           // sorted
    std::map<std::string, std::string> chat_templates_;

    // Special-token texts for Partition: ids longest text first, per-id
    // strip flags (llama.cpp's LSTRIP / RSTRIP attributes), and a byte trie.
    std::vector<int32_t> special_order_;
    std::vector<uint8_t> strip_;             // empty, or per id: 1 lstrip | 2 rstrip
    struct Trie {
        std::unordered_map<uint64_t, int32_t> edges;   // node << 8 | byte -> node
        std::vector<int32_t> terminal;                 // node -> rank in special_order_, -1
        bool first_byte[256] = {};
    };
    std::shared_ptr<const Trie> trie_;

    // BPE only (null for SPM).
    std::string                        pre_name_;
    std::shared_ptr<const PreTokenizer> pre_;
    std::shared_ptr<const BpeMerges>   bpe_;
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
    bool             first_ = false;   // set by a BOS: the next text piece drops its dummy-prefix space (SPM)
};

// True when `s` is valid UTF-8 (no overlongs, surrogates or values > U+10FFFF).
bool IsValidUtf8(std::string_view s);

}  // namespace prepack

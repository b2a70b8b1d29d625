// The Tokenizer: vocabulary, special tokens, and the SentencePiece-style
// encoder; see tokenizer.h for the contract. Byte-level BPE vocabularies
// share everything here but the word encoding, which pretokenizer.h (words)
// and bpe.h (merges) do; special-token handling (llama.cpp's
// tokenizer_st_partition, end-of-generation set) is common to both and lives
// in tokenizer_special.cpp.
//
// Encoding reproduces llama2.c's `encode` (which llama.cpp's SPM tokenizer
// agrees with): code points looked up as pieces with byte fallback, then
// repeatedly the best-scoring adjacent pair is merged (leftmost on ties;
// pair_merge.h).
#include "core/model/tokenizer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include "core/model/bpe.h"
#include "core/model/gguf.h"
#include "core/model/pair_merge.h"
#include "core/model/pretokenizer.h"

namespace prepack {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";   // U+2581 "▁"
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";   // U+FFFD

// ---- UTF-8 ------------------------------------------------------------------

enum class Utf8Scan { kComplete, kIncomplete, kInvalid };

// Examines the sequence starting at s[i] following the well-formed byte
// sequences of Unicode Table 3-7 (which exclude overlongs, surrogates and
// values above U+10FFFF). kComplete: `*len` is the sequence length.
// kIncomplete: the bytes up to the end of `s` are a valid but unfinished
// prefix. kInvalid: `*len` is the length of the maximal valid prefix (>= 1),
// i.e. the bytes one U+FFFD replaces.
Utf8Scan ScanUtf8(std::string_view s, size_t i, size_t* len) {
    const auto lead = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    unsigned char lo = 0x80, hi = 0xBF;   // allowed range of the second byte
    if (lead < 0x80) {
        *len = 1;
        return Utf8Scan::kComplete;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
        n = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        n = 3;
        if (lead == 0xE0) lo = 0xA0;        // overlong below U+0800
        if (lead == 0xED) hi = 0x9F;        // surrogates U+D800..U+DFFF
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        n = 4;
        if (lead == 0xF0) lo = 0x90;        // overlong below U+10000
        if (lead == 0xF4) hi = 0x8F;        // above U+10FFFF
    } else {
        *len = 1;                           // C0, C1, F5..FF or a stray continuation
        return Utf8Scan::kInvalid;
    }
    for (size_t k = 1; k < n; ++k) {
        if (i + k >= s.size()) return Utf8Scan::kIncomplete;
        const auto c = static_cast<unsigned char>(s[i + k]);
        const bool ok = k == 1 ? (c >= lo && c <= hi) : (c >= 0x80 && c <= 0xBF);
        if (!ok) {
            *len = k;
            return Utf8Scan::kInvalid;
        }
    }
    *len = n;
    return Utf8Scan::kComplete;
}

// Offset of the first byte that is not part of valid UTF-8, or npos.
size_t FirstInvalidUtf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        size_t len = 0;
        if (ScanUtf8(s, i, &len) != Utf8Scan::kComplete) return i;
        i += len;
    }
    return std::string_view::npos;
}

// ---- pieces -----------------------------------------------------------------

// Parses a byte-token piece "<0xXX>" (either hex case); -1 when it is not one.
int ParseByteToken(std::string_view piece) {
    if (piece.size() != 6 || piece.substr(0, 3) != "<0x" || piece[5] != '>') return -1;
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    const int h = hex(piece[3]), l = hex(piece[4]);
    return (h < 0 || l < 0) ? -1 : h * 16 + l;
}

std::string ByteTokenPiece(int byte) {
    static constexpr char kHex[] = "0123456789ABCDEF";
    return std::string{'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
}

// Replaces every occurrence of `from` in `s` with `to`.
std::string ReplaceAll(std::string_view s, std::string_view from, std::string_view to) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (true) {
        const size_t j = s.find(from, i);
        out.append(s.substr(i, j == std::string_view::npos ? std::string_view::npos : j - i));
        if (j == std::string_view::npos) break;
        out.append(to);
        i = j + from.size();
    }
    return out;
}

bool IsTextType(TokenType t) {
    return t == TokenType::kNormal || t == TokenType::kUserDefined;
}

// ---- synthetic vocabulary ---------------------------------------------------

// Letters by rough English frequency, so the first (best-scoring) multi-letter
// pieces look like common fragments ("ee", "et", "ea", ...).
constexpr std::string_view kLetters = "etaoinshrdlcumwfgypbvkjxqz";

// Calls `emit` with normal pieces in decreasing priority until it returns false:
// "▁", the printable ASCII characters, "▁" + each of them, then every letter
// string of length 2, 3, ... (in kLetters order), each bare and with "▁".
template <typename Emit>
void GenerateSyntheticPieces(Emit emit) {
    if (!emit(std::string(kSpaceMarker))) return;
    for (char c = '!'; c <= '~'; ++c) {
        if (!emit(std::string(1, c))) return;
    }
    for (char c = '!'; c <= '~'; ++c) {
        if (!emit(std::string(kSpaceMarker) + c)) return;
    }
    for (size_t len = 2;; ++len) {
        std::vector<size_t> digits(len, 0);   // an odometer over kLetters
        while (true) {
            std::string s(len, ' ');
            for (size_t k = 0; k < len; ++k) s[k] = kLetters[digits[k]];
            if (!emit(s) || !emit(std::string(kSpaceMarker) + s)) return;
            size_t k = len;
            while (k > 0 && ++digits[k - 1] == kLetters.size()) digits[--k] = 0;
            if (k == 0) break;
        }
    }
}

}  // namespace

bool IsValidUtf8(std::string_view s) { return FirstInvalidUtf8(s) == std::string_view::npos; }

// ---- construction -----------------------------------------------------------

namespace {

absl::Status CheckSpecialId(const char* what, int64_t id, size_t vocab, bool may_be_none = false) {
    if (may_be_none && id == -1) return absl::OkStatus();
    if (id < 0 || static_cast<uint64_t>(id) >= vocab) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokenizer: ", what, " id ", id, " is out of range for a vocabulary of ", vocab));
    }
    return absl::OkStatus();
}

// Reads an optional token id stored as any unsigned integer type.
absl::Status ReadOptionalId(const GgufFile& file, const char* key, int64_t* id) {
    if (!file.Has(key)) return absl::OkStatus();
    PP_ASSIGN_OR_RETURN(uint64_t v, file.GetUint(key));
    if (v > static_cast<uint64_t>(INT32_MAX)) {
        return absl::InvalidArgumentError(absl::StrCat("tokenizer: ", key, " ", v, " is out of range"));
    }
    *id = static_cast<int64_t>(v);
    return absl::OkStatus();
}

absl::Status ReadOptionalBool(const GgufFile& file, const char* key, bool* value) {
    if (!file.Has(key)) return absl::OkStatus();
    PP_ASSIGN_OR_RETURN(*value, file.GetBool(key));
    return absl::OkStatus();
}

// Types for a vocabulary that stores none: byte tokens are recognisable by
// their spelling, and the special ids must not decode as text.
std::vector<int32_t> InferTypes(const std::vector<std::string>& pieces,
                                int64_t bos_id, int64_t eos_id, int64_t unk_id, bool bpe) {
    std::vector<int32_t> types(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
        types[i] = static_cast<int32_t>(
            !bpe && ParseByteToken(pieces[i]) >= 0 ? TokenType::kByte : TokenType::kNormal);
    }
    if (bos_id >= 0) types[bos_id] = static_cast<int32_t>(TokenType::kControl);
    if (eos_id >= 0) types[eos_id] = static_cast<int32_t>(TokenType::kControl);
    if (unk_id >= 0) types[unk_id] = static_cast<int32_t>(TokenType::kUnknown);
    return types;
}


}  // namespace

absl::StatusOr<Tokenizer> Tokenizer::FromPieces(std::vector<std::string> pieces,
                                                std::vector<float> scores,
                                                std::vector<int32_t> types,
                                                int32_t bos_id, int32_t eos_id, int32_t unk_id) {
    PP_ASSIGN_OR_RETURN(Tokenizer tok, Assemble(std::move(pieces), std::move(scores), std::move(types),
                                                bos_id, eos_id, unk_id, /*add_bos=*/true,
                                                /*add_space_prefix=*/true));
    PP_RETURN_IF_ERROR(tok.FinishSpecials(nullptr));
    return tok;
}

absl::StatusOr<Tokenizer> Tokenizer::FromGguf(const GgufFile& file) {
    PP_ASSIGN_OR_RETURN(std::string model, file.GetString("tokenizer.ggml.model"));
    if (model == "gpt2") return BpeFromGguf(file);
    if (model != "llama") {
        return absl::InvalidArgumentError(absl::StrCat("unsupported tokenizer model '", model, "'"));
    }
    PP_ASSIGN_OR_RETURN(std::vector<std::string> pieces, file.GetStringArray("tokenizer.ggml.tokens"));
    std::vector<float> scores;
    if (file.Has("tokenizer.ggml.scores")) {
        PP_ASSIGN_OR_RETURN(scores, file.GetFloatArray("tokenizer.ggml.scores"));
    }
    std::vector<int32_t> types;
    if (file.Has("tokenizer.ggml.token_type")) {
        PP_ASSIGN_OR_RETURN(types, file.GetInt32Array("tokenizer.ggml.token_type"));
    }
    int64_t bos = 1, eos = 2, unk = 0;
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.bos_token_id", &bos));
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.eos_token_id", &eos));
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.unknown_token_id", &unk));
    bool add_bos = true, add_eos = false, add_space_prefix = true;
    PP_RETURN_IF_ERROR(ReadOptionalBool(file, "tokenizer.ggml.add_bos_token", &add_bos));
    PP_RETURN_IF_ERROR(ReadOptionalBool(file, "tokenizer.ggml.add_eos_token", &add_eos));
    PP_RETURN_IF_ERROR(ReadOptionalBool(file, "tokenizer.ggml.add_space_prefix", &add_space_prefix));
    PP_ASSIGN_OR_RETURN(Tokenizer tok, Assemble(std::move(pieces), std::move(scores), std::move(types),
                                                bos, eos, unk, add_bos, add_space_prefix));
    tok.add_eos_ = add_eos;
    PP_RETURN_IF_ERROR(tok.FinishSpecials(&file));
    tok.ReadChatTemplates(file);
    return tok;
}

absl::StatusOr<Tokenizer> Tokenizer::BpeFromGguf(const GgufFile& file) {
    std::string pre_name;
    if (file.Has("tokenizer.ggml.pre")) {
        PP_ASSIGN_OR_RETURN(pre_name, file.GetString("tokenizer.ggml.pre"));
    }
    PP_ASSIGN_OR_RETURN(PreTokenizer pre, PreTokenizer::ForName(pre_name));
    PP_ASSIGN_OR_RETURN(std::vector<std::string> pieces, file.GetStringArray("tokenizer.ggml.tokens"));
    std::vector<int32_t> types;
    if (file.Has("tokenizer.ggml.token_type")) {
        PP_ASSIGN_OR_RETURN(types, file.GetInt32Array("tokenizer.ggml.token_type"));
    }
    if (!file.Has("tokenizer.ggml.merges")) {
        return absl::InvalidArgumentError("tokenizer: a gpt2 vocabulary needs tokenizer.ggml.merges");
    }
    PP_ASSIGN_OR_RETURN(std::vector<std::string> merges, file.GetStringArray("tokenizer.ggml.merges"));
    // llama.cpp's BPE defaults: BOS = EOS = 11 (disabled when that is out of
    // range; no default BOS for the ChatGLM pre-tokenizers), no unknown
    // token; explicit ids must be in range.
    const auto n = static_cast<int64_t>(pieces.size());
    int64_t eos = n > 11 ? 11 : -1, bos = pre.has_default_bos() ? eos : -1, unk = -1, pad = -1;
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.bos_token_id", &bos));
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.eos_token_id", &eos));
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.unknown_token_id", &unk));
    PP_RETURN_IF_ERROR(ReadOptionalId(file, "tokenizer.ggml.padding_token_id", &pad));
    PP_RETURN_IF_ERROR(CheckSpecialId("padding", pad, pieces.size(), /*may_be_none=*/true));
    bool add_bos = pre.add_bos_default(), add_eos = false;
    PP_RETURN_IF_ERROR(ReadOptionalBool(file, "tokenizer.ggml.add_bos_token", &add_bos));
    PP_RETURN_IF_ERROR(ReadOptionalBool(file, "tokenizer.ggml.add_eos_token", &add_eos));
    if (add_bos && bos < 0) return absl::InvalidArgumentError("tokenizer: add_bos_token is true, but there is no BOS id");
    if (add_eos && eos < 0) return absl::InvalidArgumentError("tokenizer: add_eos_token is true, but there is no EOS id");

    PP_ASSIGN_OR_RETURN(Tokenizer tok, Assemble(std::move(pieces), {}, std::move(types), bos, eos, unk,
                                                add_bos, /*add_space_prefix=*/false, /*bpe=*/true));
    tok.pad_id_ = static_cast<int32_t>(pad);
    tok.add_eos_ = add_eos;
    tok.pre_name_ = pre.name();
    tok.pre_ = std::make_shared<const PreTokenizer>(std::move(pre));
    tok.bpe_ = std::make_shared<const BpeMerges>(BpeMerges::Build(tok.piece_to_id_, tok.vocab_size(), merges));
    PP_RETURN_IF_ERROR(tok.FinishSpecials(&file));
    tok.ReadChatTemplates(file);
    return tok;
}

void Tokenizer::ReadChatTemplates(const GgufFile& file) {
    // llama.cpp's convert script writes the default template as
    // tokenizer.chat_template and the named ones (Hugging Face's
    // chat_template list: "tool_use", "rag", ...) as tokenizer.chat_template.NAME.
    constexpr std::string_view kKey = "tokenizer.chat_template";
    for (const std::string& key : file.Keys()) {
        if (key.rfind(kKey, 0) != 0) continue;
        std::string name;
        if (key.size() > kKey.size()) {
            if (key[kKey.size()] != '.') continue;   // e.g. tokenizer.chat_templates (the list of names)
            name = key.substr(kKey.size() + 1);
        }
        // A template is optional: one that is not text is left out (a chat
        // request then says the model has none), the model still loads.
        auto source = file.GetString(key);
        if (source.ok()) chat_templates_[name] = *std::move(source);
    }
}

absl::StatusOr<Tokenizer> Tokenizer::Synthetic(int vocab_size) {
    constexpr int kFixed = 3 + 256;   // <unk>, <s>, </s>, byte tokens
    if (vocab_size < kFixed + 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "synthetic vocabulary needs at least ", kFixed + 1, " entries, got ", vocab_size));
    }
    const auto n = static_cast<size_t>(vocab_size);
    std::vector<std::string> pieces;
    std::vector<float> scores;
    std::vector<int32_t> types;
    pieces.reserve(n);
    scores.reserve(n);
    types.reserve(n);
    auto add = [&](std::string piece, float score, TokenType type) {
        pieces.push_back(std::move(piece));
        scores.push_back(score);
        types.push_back(static_cast<int32_t>(type));
    };
    add("<unk>", 0.0f, TokenType::kUnknown);
    add("<s>", 0.0f, TokenType::kControl);
    add("</s>", 0.0f, TokenType::kControl);
    for (int b = 0; b < 256; ++b) add(ByteTokenPiece(b), 0.0f, TokenType::kByte);
    GenerateSyntheticPieces([&](std::string piece) {
        const auto rank = static_cast<float>(pieces.size() - kFixed + 1);   // 1, 2, 3, ...
        add(std::move(piece), -rank, TokenType::kNormal);
        return pieces.size() < n;
    });
    PP_ASSIGN_OR_RETURN(Tokenizer tok, Assemble(std::move(pieces), std::move(scores), std::move(types),
                                                1, 2, 0, /*add_bos=*/true, /*add_space_prefix=*/true));
    PP_RETURN_IF_ERROR(tok.FinishSpecials(nullptr));
    return tok;
}

absl::StatusOr<Tokenizer> Tokenizer::Assemble(std::vector<std::string> pieces,
                                              std::vector<float> scores,
                                              std::vector<int32_t> types,
                                              int64_t bos_id, int64_t eos_id, int64_t unk_id,
                                              bool add_bos, bool add_space_prefix, bool bpe) {
    const size_t n = pieces.size();
    if (n == 0) return absl::InvalidArgumentError("tokenizer: the vocabulary is empty");
    if (n > static_cast<size_t>(INT32_MAX)) {
        return absl::InvalidArgumentError(absl::StrCat("tokenizer: vocabulary of ", n, " is too large"));
    }
    if (scores.empty()) scores.assign(n, 0.0f);
    if (scores.size() != n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokenizer: ", scores.size(), " scores for ", n, " tokens"));
    }
    if (!types.empty() && types.size() != n) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tokenizer: ", types.size(), " token types for ", n, " tokens"));
    }
    PP_RETURN_IF_ERROR(CheckSpecialId("BOS", bos_id, n, bpe));
    PP_RETURN_IF_ERROR(CheckSpecialId("EOS", eos_id, n, bpe));
    PP_RETURN_IF_ERROR(CheckSpecialId("unknown-token", unk_id, n, bpe));
    if (types.empty()) types = InferTypes(pieces, bos_id, eos_id, unk_id, bpe);

    Tokenizer tok;
    tok.types_.reserve(n);
    tok.piece_to_id_.reserve(n);
    std::fill(std::begin(tok.byte_ids_), std::end(tok.byte_ids_), -1);
    for (size_t i = 0; i < n; ++i) {
        const auto id = static_cast<int32_t>(i);
        if (types[i] < static_cast<int32_t>(TokenType::kNormal) ||
            types[i] > static_cast<int32_t>(TokenType::kByte)) {
            return absl::InvalidArgumentError(absl::StrCat(
                "tokenizer: token ", id, " has unknown type ", types[i]));
        }
        // NaN would break the merge order (no pair could be ranked against it).
        if (std::isnan(scores[i])) {
            return absl::InvalidArgumentError(absl::StrCat("tokenizer: token ", id, " has a NaN score"));
        }
        const auto type = static_cast<TokenType>(types[i]);
        tok.types_.push_back(type);
        auto [it, inserted] = tok.piece_to_id_.emplace(pieces[i], id);
        if (!inserted) {
            return absl::InvalidArgumentError(absl::StrCat(
                "tokenizer: duplicate piece '", pieces[i], "' at ids ", it->second, " and ", id));
        }
        if (type == TokenType::kByte) {
            const int b = ParseByteToken(pieces[i]);
            if (b < 0) {
                return absl::InvalidArgumentError(absl::StrCat(
                    "tokenizer: byte token ", id, " is spelled '", pieces[i], "', expected <0xXX>"));
            }
            if (tok.byte_ids_[b] >= 0) {
                return absl::InvalidArgumentError(absl::StrCat(
                    "tokenizer: byte ", b, " has two tokens, ", tok.byte_ids_[b], " and ", id));
            }
            tok.byte_ids_[b] = id;
        }
    }
    tok.pieces_ = std::move(pieces);
    tok.scores_ = std::move(scores);
    tok.bos_id_ = static_cast<int32_t>(bos_id);
    tok.eos_id_ = static_cast<int32_t>(eos_id);
    tok.unk_id_ = static_cast<int32_t>(unk_id);
    tok.add_bos_ = add_bos;
    tok.add_space_prefix_ = add_space_prefix;
    return tok;
}

// ---- encoding ---------------------------------------------------------------

int32_t Tokenizer::LookupText(const std::string& piece) const {
    // Only text pieces take part: user input spelling "<0x41>" or "<s>" must
    // stay literal text, never turn into a byte or control token. (llama2.c
    // does not check types, but for real vocabularies no merge of text pieces
    // spells a non-text piece, so the results agree.)
    const auto it = piece_to_id_.find(piece);
    if (it == piece_to_id_.end() || !IsTextType(types_[it->second])) return -1;
    return it->second;
}

std::vector<int32_t> Tokenizer::InitialSymbols(std::string_view normalized) const {
    std::vector<int32_t> ids;
    ids.reserve(normalized.size());
    size_t i = 0;
    while (i < normalized.size()) {
        size_t len = 1;
        ScanUtf8(normalized, i, &len);   // input was validated: always complete
        const std::string cp(normalized.substr(i, len));
        const int32_t id = LookupText(cp);
        if (id >= 0) {
            ids.push_back(id);
        } else {
            for (unsigned char b : cp) ids.push_back(byte_ids_[b] >= 0 ? byte_ids_[b] : unk_id_);
        }
        i += len;
    }
    return ids;
}

std::vector<int32_t> Tokenizer::MergePairs(const std::vector<int32_t>& initial) const {
    std::string key;   // reused buffer for concatenated pieces
    // Highest score of the merged piece first.
    const auto merge = [&](int32_t left, int32_t right) -> std::optional<PairMerge> {
        key.assign(pieces_[left]);
        key.append(pieces_[right]);
        const int32_t merged = LookupText(key);
        if (merged < 0) return std::nullopt;
        return PairMerge{scores_[merged], merged};
    };
    return MergeAdjacentPairs(initial, merge);
}

void Tokenizer::EncodeSpmText(std::string_view text, bool space_prefix, std::vector<int32_t>* out) const {
    std::string normalized;
    if (space_prefix) normalized.append(kSpaceMarker);
    normalized.append(ReplaceAll(text, " ", kSpaceMarker));
    const std::vector<int32_t> merged = MergePairs(InitialSymbols(normalized));
    out->insert(out->end(), merged.begin(), merged.end());
}

absl::Status Tokenizer::EncodeBpeText(std::string_view text, std::vector<int32_t>* out) const {
    std::vector<std::pair<size_t, size_t>> words;
    PP_RETURN_IF_ERROR(pre_->Split(text, &words));
    for (const auto& [begin, end] : words) {
        bpe_->EncodeWord(text.substr(begin, end - begin), pre_->ignore_merges(), piece_to_id_, out);
    }
    return absl::OkStatus();
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::Encode(std::string_view text, bool add_special,
                                                       bool parse_special) const {
    return EncodeImpl(text, add_special, parse_special, nullptr);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodeMarkedUp(std::string_view text, const ByteRanges& plain,
                                                               bool add_special) const {
    for (size_t i = 0; i < plain.size(); ++i) {
        if (plain[i].first > plain[i].second || plain[i].second > text.size() ||
            (i > 0 && plain[i].first < plain[i - 1].second)) {
            return absl::InvalidArgumentError("plain-text ranges must be sorted, disjoint and inside the text");
        }
    }
    return EncodeImpl(text, add_special, /*parse_special=*/true, &plain);
}

absl::StatusOr<std::vector<int32_t>> Tokenizer::EncodeImpl(std::string_view text, bool add_special,
                                                           bool parse_special, const ByteRanges* plain) const {
    const size_t bad = FirstInvalidUtf8(text);
    if (bad != std::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("text is not valid UTF-8 at byte ", bad));
    }
    // Symbols are indexed with int32; no sensible prompt comes near this.
    if (text.size() > static_cast<size_t>(INT32_MAX) / 4) {
        return absl::InvalidArgumentError(absl::StrCat("text of ", text.size(), " bytes is too long to encode"));
    }
    std::vector<int32_t> ids;
    // User-defined tokens are split out of any text, control tokens only
    // with parse_special (llama.cpp's tokenizer_st_partition, for both
    // vocabulary kinds: Gemma's SentencePiece vocabulary has user-defined
    // whitespace runs and tags that must come out whole).
    const std::vector<Fragment> frags = Partition(text, parse_special, plain);
    // BOS / EOS as the vocabulary says (tokenizer.ggml.add_bos_token /
    // add_eos_token; SPM vocabularies add BOS unless they say otherwise). A
    // marked-up prompt that starts with its own BOS gets no second one.
    const bool starts_with_bos = plain != nullptr && !frags.empty() && frags[0].id == bos_id_;
    if (add_special && add_bos_ && bos_id_ >= 0 && !starts_with_bos) ids.push_back(bos_id_);
    if (!bpe_) {
        // llama.cpp: every text fragment that follows a special token (or
        // starts the text) gets the dummy prefix. Empty text has no
        // fragments, so no dummy prefix either (as llama2.c).
        bool after_special = true;
        for (const Fragment& f : frags) {
            if (f.id >= 0) {
                ids.push_back(f.id);
                after_special = true;
            } else {
                EncodeSpmText(text.substr(f.begin, f.end - f.begin), add_space_prefix_ && after_special, &ids);
                after_special = false;
            }
        }
    } else {
        for (const Fragment& f : frags) {
            if (f.id >= 0) {
                ids.push_back(f.id);
            } else {
                PP_RETURN_IF_ERROR(EncodeBpeText(text.substr(f.begin, f.end - f.begin), &ids));
            }
        }
    }
    if (add_special && add_eos_ && eos_id_ >= 0) ids.push_back(eos_id_);
    return ids;
}

// ---- decoding ---------------------------------------------------------------

bool Tokenizer::IsControl(int32_t id) const {
    return id >= 0 && id < vocab_size() && types_[id] == TokenType::kControl;
}

std::string Tokenizer::TokenBytes(int32_t id, bool after_bos) const {
    if (id < 0 || id >= vocab_size()) return "";
    if (bpe_) {
        // llama.cpp's token_to_piece with special = false.
        switch (types_[id]) {
            case TokenType::kNormal:      return BpeTextToBytes(pieces_[id]);
            case TokenType::kUserDefined: return pieces_[id];   // stored raw, not byte-level
            case TokenType::kByte:        return std::string(1, static_cast<char>(ParseByteToken(pieces_[id])));
            default:                      return "";
        }
    }
    switch (types_[id]) {
        case TokenType::kByte:
            // Byte tokens are raw bytes, never the dummy prefix (that is "▁").
            return std::string(1, static_cast<char>(ParseByteToken(pieces_[id])));
        case TokenType::kNormal:
        case TokenType::kUserDefined: {
            std::string text = ReplaceAll(pieces_[id], kSpaceMarker, " ");
            if (after_bos && add_space_prefix_ && !text.empty() && text[0] == ' ') text.erase(0, 1);
            return text;
        }
        default:
            return "";   // control, unknown and unused tokens print nothing
    }
}

namespace {

// Shared by Decode and StreamDecoder so both apply the same dummy-prefix
// rule: after a BOS, the first token that contributes bytes loses its
// leading space (the space the encoder put before the text). Anywhere else a
// token keeps every byte: the ids of a completion alone decode to exactly the
// text streamed for them, and Decode(a + b) == Decode(a) + Decode(b) whenever
// b does not start with a BOS. Updates `*first`; returns the token's bytes.
std::string NextTokenBytes(const Tokenizer& tok, int32_t id, bool* first) {
    // (A BPE vocabulary may lack a real BOS: its default id can be a normal
    // token, which must still print. BPE has no dummy prefix anyway.)
    if (id == tok.bos_id() && (tok.vocab_type() == "spm" || tok.IsControl(id))) {
        *first = true;
        return "";
    }
    std::string bytes = tok.TokenBytes(id, *first);
    // A lone "▁" is "" once its dummy space is dropped, yet it still was the
    // first piece; so ask whether the token has any bytes of its own.
    if (*first && (!bytes.empty() || !tok.TokenBytes(id, false).empty())) *first = false;
    return bytes;
}

}  // namespace

std::string Tokenizer::Decode(const std::vector<int32_t>& ids) const {
    std::string out;
    bool first = false;   // only a BOS starts text whose dummy prefix is dropped
    for (int32_t id : ids) out += NextTokenBytes(*this, id, &first);
    return out;
}

// ---- streaming --------------------------------------------------------------

std::string StreamDecoder::Push(int32_t id) {
    pending_ += NextTokenBytes(*tok_, id, &first_);
    // Emit every complete code point, U+FFFD for each invalid sequence, and
    // keep a trailing unfinished sequence for the next token to complete.
    std::string out;
    size_t i = 0;
    while (i < pending_.size()) {
        size_t len = 0;
        const Utf8Scan scan = ScanUtf8(pending_, i, &len);
        if (scan == Utf8Scan::kIncomplete) break;
        if (scan == Utf8Scan::kComplete) {
            out.append(pending_, i, len);
        } else {
            out.append(kReplacement);
        }
        i += len;
    }
    pending_.erase(0, i);
    return out;
}

std::string StreamDecoder::Flush() {
    // Whatever is held back is an unfinished sequence that can no longer complete.
    std::string out = pending_.empty() ? "" : std::string(kReplacement);
    pending_.clear();
    first_ = true;
    return out;
}

}  // namespace prepack

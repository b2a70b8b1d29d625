// The Tokenizer's special tokens, common to SentencePiece and BPE
// vocabularies: which ids are EOT / EOM / end of generation (llama.cpp's
// rules, by metadata and by text), and splitting a text on special-token
// texts before the word encoder sees it (llama.cpp's tokenizer_st_partition).
#include <algorithm>
#include <string>
#include <vector>

#include "core/model/gguf.h"
#include "core/model/tokenizer.h"

namespace prepack {
namespace {

// Texts llama.cpp recognises special tokens by (llama-vocab.cpp, load()),
// in the order this tokenizer prefers them when several exist (llama.cpp
// takes whichever its hash map yields first).
constexpr std::string_view kEotTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
    "<end_of_utterance>",
};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
constexpr std::string_view kFimRepTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
constexpr std::string_view kFimSepTexts[] = {"<|file_sep|>"};
// llama.cpp's special_eog_ids by text.
constexpr std::string_view kEogTexts[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[",
};
// gpt-oss: llama.cpp always renders these (user-defined).
constexpr std::string_view kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};

// C isspace in the "C" locale, which llama.cpp's LSTRIP / RSTRIP use.
bool IsCSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Whether [begin, end) meets any of the sorted, disjoint `ranges`.
bool OverlapsAny(const std::vector<std::pair<size_t, size_t>>& ranges, size_t begin, size_t end) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), begin,
                               [](size_t pos, const std::pair<size_t, size_t>& r) { return pos < r.second; });
    return it != ranges.end() && it->first < end;
}

}  // namespace

absl::Status Tokenizer::FinishSpecials(const GgufFile* file) {
    const auto n = static_cast<uint64_t>(vocab_size());
    auto find = [&](std::string_view text) -> int32_t {
        const auto it = piece_to_id_.find(std::string(text));
        return it == piece_to_id_.end() ? -1 : it->second;
    };
    // An id from the file if present and in range (llama.cpp ignores an out
    // of range one), else the first of `texts` in the vocabulary.
    auto resolve = [&](const char* key, auto& texts) -> absl::StatusOr<int32_t> {
        if (file != nullptr && file->Has(key)) {
            PP_ASSIGN_OR_RETURN(uint64_t v, file->GetUint(key));
            if (v < n) return static_cast<int32_t>(v);
        }
        for (std::string_view t : texts) {
            if (const int32_t id = find(t); id >= 0) return id;
        }
        return -1;
    };
    constexpr std::string_view kEomTexts[] = {"<|eom_id|>"};
    PP_ASSIGN_OR_RETURN(eot_id_, resolve("tokenizer.ggml.eot_token_id", kEotTexts));
    PP_ASSIGN_OR_RETURN(eom_id_, resolve("tokenizer.ggml.eom_token_id", kEomTexts));
    PP_ASSIGN_OR_RETURN(const int32_t fim_pad, resolve("tokenizer.ggml.fim_pad_token_id", kFimPadTexts));
    PP_ASSIGN_OR_RETURN(const int32_t fim_rep, resolve("tokenizer.ggml.fim_rep_token_id", kFimRepTexts));
    PP_ASSIGN_OR_RETURN(const int32_t fim_sep, resolve("tokenizer.ggml.fim_sep_token_id", kFimSepTexts));

    // llama.cpp marks every token it recognises by text as a control token,
    // whatever the vocabulary kind: Gemma 3's and Phi-3's user-defined
    // "</s>" become control tokens, which plain text never produces (without
    // parse_special) and which decode to nothing.
    auto make_control = [&](int32_t id) {
        if (id >= 0) types_[id] = TokenType::kControl;
    };
    std::vector<int32_t> eog;
    for (const int32_t id : {fim_pad, fim_rep, fim_sep}) {
        if (id >= 0) eog.push_back(id);
    }
    // (EOT / EOM found by text are among kEogTexts; FIM tokens found by
    // text are promoted like them.)
    auto found_by_text = [&](int32_t id, auto& texts) {
        if (id < 0) return false;
        for (std::string_view t : texts) {
            if (pieces_[id] == t) return true;
        }
        return false;
    };
    if (found_by_text(fim_pad, kFimPadTexts)) make_control(fim_pad);
    if (found_by_text(fim_rep, kFimRepTexts)) make_control(fim_rep);
    if (found_by_text(fim_sep, kFimSepTexts)) make_control(fim_sep);
    for (std::string_view t : kEogTexts) {
        if (const int32_t id = find(t); id >= 0) {
            eog.push_back(id);
            make_control(id);
        }
    }
    for (std::string_view t : kAlwaysRenderedTexts) {
        if (const int32_t id = find(t); id >= 0) types_[id] = TokenType::kUserDefined;
    }
    for (const int32_t id : {eos_id_, eot_id_, eom_id_}) {
        if (id >= 0) eog.push_back(id);
    }
    std::sort(eog.begin(), eog.end());
    eog.erase(std::unique(eog.begin(), eog.end()), eog.end());
    auto in_eog = [&](std::string_view text) {
        const int32_t id = find(text);
        return id >= 0 && std::binary_search(eog.begin(), eog.end(), id) ? id : -1;
    };
    auto drop_eog = [&](int32_t id, TokenType becomes) {
        eog.erase(std::find(eog.begin(), eog.end(), id));
        types_[id] = becomes;
    };
    // llama.cpp's workarounds: o200k_harmony / solar-open, where "<|end|>"
    // ends a message but not the generation; gemma4 / paddleocr's "</s>".
    const bool has_call = in_eog("<|call|>") >= 0 || in_eog("<|calls|>") >= 0;
    if (const int32_t end = in_eog("<|end|>");
        end >= 0 && has_call && (in_eog("<|return|>") >= 0 || in_eog("<|flush|>") >= 0)) {
        drop_eog(end, TokenType::kUserDefined);
    }
    if (const int32_t s = in_eog("</s>"); s >= 0 && in_eog("<|tool_response>") >= 0) {
        drop_eog(s, TokenType::kNormal);
    }
    eog_ids_ = std::move(eog);

    // llama.cpp strips the whitespace after Phi-3's special tokens (chosen
    // by the model's general.name).
    std::string name;
    if (file != nullptr && file->Has("general.name")) {
        PP_ASSIGN_OR_RETURN(name, file->GetString("general.name"));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    }
    strip_.clear();
    if (name.find("phi-3") != std::string::npos || name.find("phi3") != std::string::npos) {
        strip_.assign(pieces_.size(), 0);
        for (size_t id = 0; id < pieces_.size(); ++id) {
            const TokenType t = types_[id];
            if (t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) strip_[id] = 2;
        }
        if (const int32_t id = find("</s>"); id >= 0) strip_[id] = 2;
        for (std::string_view t : {"<unk>", "<s>", "<|endoftext|>"}) {
            if (const int32_t id = find(t); id >= 0) strip_[id] = 0;
        }
    }
    IndexSpecialTexts();
    return absl::OkStatus();
}

void Tokenizer::IndexSpecialTexts() {
    special_order_.clear();
    for (int32_t id = 0; id < vocab_size(); ++id) {
        const TokenType t = types_[id];
        if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
            !pieces_[id].empty()) {
            special_order_.push_back(id);
        }
    }
    // Longest first (llama.cpp); equal lengths by id, where llama.cpp's
    // unstable sort leaves the order unspecified.
    std::stable_sort(special_order_.begin(), special_order_.end(), [&](int32_t a, int32_t b) {
        return pieces_[a].size() > pieces_[b].size();
    });
    auto trie = std::make_shared<Trie>();
    trie->terminal.push_back(-1);
    for (size_t rank = 0; rank < special_order_.size(); ++rank) {
        int32_t node = 0;
        for (unsigned char c : pieces_[special_order_[rank]]) {
            const uint64_t key = static_cast<uint64_t>(node) << 8 | c;
            auto it = trie->edges.find(key);
            if (it == trie->edges.end()) {
                it = trie->edges.emplace(key, static_cast<int32_t>(trie->terminal.size())).first;
                trie->terminal.push_back(-1);
            }
            node = it->second;
        }
        trie->terminal[node] = static_cast<int32_t>(rank);
        trie->first_byte[static_cast<unsigned char>(pieces_[special_order_[rank]][0])] = true;
    }
    trie_ = std::move(trie);
}

std::vector<Tokenizer::Fragment> Tokenizer::Partition(std::string_view text, bool parse_special,
                                                      const ByteRanges* plain) const {
    std::vector<Fragment> frags;
    if (text.empty()) return frags;
    frags.push_back(Fragment{-1, 0, text.size()});
    // Which special texts occur at all: llama.cpp searches every fragment for
    // every special token in turn; a token that is nowhere in the text can
    // be skipped without changing the result, and most are.
    std::vector<bool> occurs(special_order_.size(), false);
    bool any = false;
    for (size_t i = 0; i < text.size(); ++i) {
        if (!trie_->first_byte[static_cast<unsigned char>(text[i])]) continue;
        int32_t node = 0;
        for (size_t j = i; j < text.size(); ++j) {
            const auto it = trie_->edges.find(static_cast<uint64_t>(node) << 8 | static_cast<unsigned char>(text[j]));
            if (it == trie_->edges.end()) break;
            node = it->second;
            if (const int32_t rank = trie_->terminal[node]; rank >= 0) occurs[rank] = any = true;
        }
    }
    if (!any) return frags;

    std::vector<Fragment> next;
    for (size_t rank = 0; rank < special_order_.size(); ++rank) {
        if (!occurs[rank]) continue;
        const int32_t id = special_order_[rank];
        const TokenType type = types_[id];
        // Without parse_special only user-defined tokens are split out.
        if (!parse_special && type != TokenType::kUserDefined) continue;
        const std::string& piece = pieces_[id];
        const bool lstrip = !strip_.empty() && (strip_[id] & 1);
        const bool rstrip = !strip_.empty() && (strip_[id] & 2);
        next.clear();
        for (const Fragment& f : frags) {
            if (f.id >= 0) {
                next.push_back(f);
                continue;
            }
            size_t begin = f.begin;
            const size_t end = f.end;
            size_t from = begin;
            while (true) {
                const size_t match = text.substr(0, end).find(piece, from);
                if (match == std::string_view::npos) {
                    if (end > begin) next.push_back(Fragment{-1, begin, end});
                    break;
                }
                // Control text a user wrote stays text (user-defined tokens
                // are split out of any text, as without parse_special).
                if (plain != nullptr && type != TokenType::kUserDefined &&
                    OverlapsAny(*plain, match, match + piece.size())) {
                    from = match + 1;
                    continue;
                }
                size_t left_end = match;
                if (lstrip) {
                    while (left_end > begin && IsCSpace(text[left_end - 1])) --left_end;
                }
                if (left_end > begin) next.push_back(Fragment{-1, begin, left_end});
                next.push_back(Fragment{id, 0, 0});
                begin = match + piece.size();
                if (rstrip) {
                    while (begin < end && IsCSpace(text[begin])) ++begin;
                }
                from = begin;
            }
        }
        frags.swap(next);
    }
    return frags;
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
    return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id);
}

}  // namespace prepack

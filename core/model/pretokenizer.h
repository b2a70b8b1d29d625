// Pre-tokenization of byte-level BPE vocabularies: the GGUF key
// `tokenizer.ggml.pre` names how text is cut into words before the BPE
// merges run inside each word. This file owns that name -> split rules table
// (the regular expressions llama.cpp's `llm_tokenizer_bpe` uses for each
// name, run by PCRE2) and the two vocabulary flags llama.cpp ties to the same
// name (whole-word lookup before merging, BOS by default), so that nothing
// else has to know a pre-tokenizer by name.
//
// Splitting follows llama.cpp's `unicode_regex_split`: the expressions apply
// one after another; each one cuts every current piece into its matches and
// the unmatched stretches between them, so a later expression never sees
// across a cut an earlier one made.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/base/status.h"

namespace prepack {

class PreTokenizer {
public:
    // The rules for `name` ("" means llama.cpp's "default", used for a file
    // without `tokenizer.ggml.pre`). INVALID_ARGUMENT naming `name` when it
    // is not a known pre-tokenizer.
    static absl::StatusOr<PreTokenizer> ForName(std::string_view name);
    // Every name ForName accepts, sorted.
    static std::vector<std::string> KnownNames();
    // The names llama.cpp accepts that ForName refuses (saying what each
    // would need), sorted.
    static std::vector<std::string> RefusedNames();

    // The name as given ("default" for "").
    const std::string& name() const { return name_; }
    // llama.cpp `ignore_merges`: a word that is itself a vocabulary entry is
    // taken whole, without running the merges (Llama 3).
    bool ignore_merges() const { return ignore_merges_; }
    // BOS default when the file has no `tokenizer.ggml.add_bos_token`.
    bool add_bos_default() const { return add_bos_default_; }
    // Whether a file without `tokenizer.ggml.bos_token_id` gets llama.cpp's
    // default BOS id (11); false for the ChatGLM family, which has none.
    bool has_default_bos() const { return has_default_bos_; }
    // The split expressions in order, spelled as llama.cpp spells them.
    const std::vector<std::string>& expressions() const { return expressions_; }

    // Cuts valid UTF-8 `text` into words: appends their [begin, end) byte
    // ranges, in order, covering `text` exactly. INTERNAL when PCRE2 gives up
    // (its match limit), which no realistic text reaches.
    absl::Status Split(std::string_view text, std::vector<std::pair<size_t, size_t>>* words) const;

    // The PCRE2 spelling of one llama.cpp expression (exposed for tests):
    // `\s` / `\S` become llama.cpp's exact whitespace set (Unicode
    // White_Space; PCRE2's own `\s` under UCP also takes U+180E), `$`
    // becomes `\z` (ECMAScript `$` without multiline is end of input only),
    // and the letter sub-categories `\p{Lu}` ... `\p{Lo}` become `\p{L}`
    // (llama.cpp's category-collapsed matching cannot tell them apart).
    static std::string ToPcre2(std::string_view llama_regex);

private:
    struct Compiled;   // the PCRE2 code objects, shared by copies (immutable)
    PreTokenizer() = default;

    std::string name_;
    bool ignore_merges_ = false;
    bool add_bos_default_ = false;
    bool has_default_bos_ = true;
    std::vector<std::string> expressions_;
    std::shared_ptr<const Compiled> compiled_;
};

}  // namespace prepack

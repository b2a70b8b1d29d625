// The grammar engine's run-time half: a grammar (grammar_ir.h) bound to a
// model's vocabulary, and a matcher per sequence that says which tokens may
// come next (a bitmask over the whole vocabulary), advances token by token,
// rolls back, and says when the text so far is complete.
//
// How masks stay fast on 150k-token vocabularies: the vocabulary's tokens
// sit in a byte trie walked once per mask; a lexeme's bytes cost one DFA
// transition each; the tokens that stay inside the current lexeme from a
// DFA state are allowed whatever the parser's stack holds, so they are
// computed once per (lexeme, DFA state) and cached in the CompiledGrammar
// (shared by every matcher of that grammar); only the tokens that may end
// a lexeme are checked against the Earley parser at run time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/grammar/grammar_ir.h"

namespace prepack::grammar {

// One bit per vocabulary id.
class TokenMask {
public:
    TokenMask() = default;
    explicit TokenMask(int32_t vocab_size) : size_(vocab_size), words_((vocab_size + 63) / 64, 0) {}
    int32_t size() const { return size_; }
    bool Test(int32_t id) const { return (words_[id >> 6] >> (id & 63)) & 1; }
    void Set(int32_t id) { words_[id >> 6] |= uint64_t{1} << (id & 63); }
    void Reset(int32_t id) { words_[id >> 6] &= ~(uint64_t{1} << (id & 63)); }
    void ClearAll() { std::fill(words_.begin(), words_.end(), 0); }
    int32_t Count() const;
    std::vector<uint64_t>& words() { return words_; }
    const std::vector<uint64_t>& words() const { return words_; }

private:
    int32_t               size_ = 0;
    std::vector<uint64_t> words_;
};

// The vocabulary as the matcher sees it.
struct VocabularyInfo {
    // Each token's bytes as it decodes in the middle of a text (Tokenizer::
    // TokenBytes(id)). Tokens with no bytes (control, unused) are never
    // allowed, except the end tokens below.
    std::vector<std::string> token_bytes;
    // The tokens that end generation (EOS, EOT, <|im_end|>, ...): allowed
    // exactly where the grammar may end.
    std::vector<int32_t> end_tokens;
};

// Immutable once built; shared by every grammar compiled for that model.
// Holds the token trie.
class TokenVocabulary {
public:
    explicit TokenVocabulary(VocabularyInfo info);
    ~TokenVocabulary();
    int32_t size() const;
    const VocabularyInfo& info() const;
    struct Impl;
    const Impl& impl() const { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

// Every single byte as a token (id = the byte value) and one end token
// (id kByteVocabularyEndToken): for checking texts byte by byte
// (AcceptBytes, CanEnd) and masks over bytes where no model's vocabulary is
// at hand (`prepack grammar`, the JSON Schema front end's own checks,
// tests). Built once and shared.
constexpr int32_t kByteVocabularyEndToken = 256;
std::shared_ptr<const TokenVocabulary> ByteVocabulary();

// Documented limits: a grammar over them is refused at compile time
// (RESOURCE_EXHAUSTED naming the limit), a lexeme whose DFA outgrows its
// limit while matching fails that request, never the process.
struct CompileLimits {
    int32_t max_rules = 100000;
    int32_t max_regex_nodes = 1000000;
    int32_t max_dfa_states_per_lexeme = 100000;
    // NFA states of all lexemes together, counted after counted repeats
    // ({m,n}) are expanded into copies (about 100 bytes each).
    int64_t max_nfa_states = 2000000;
};

// A grammar bound to a vocabulary: the lexemes' lazily built DFAs and the
// mask caches. Thread-safe: matchers on several threads may share one.
class CompiledGrammar {
public:
    ~CompiledGrammar();
    const Grammar& grammar() const;
    const TokenVocabulary& vocabulary() const;
    struct Impl;
    Impl& impl() const { return *impl_; }

private:
    friend absl::StatusOr<std::shared_ptr<const CompiledGrammar>> Compile(Grammar, std::shared_ptr<const TokenVocabulary>,
                                                                        const CompileLimits&);
    CompiledGrammar() = default;
    std::unique_ptr<Impl> impl_;
};

// INVALID_ARGUMENT for a malformed grammar (a symbol out of range, a rule
// with no alternatives), RESOURCE_EXHAUSTED past `limits`.
absl::StatusOr<std::shared_ptr<const CompiledGrammar>> Compile(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocab,
                                                             const CompileLimits& limits = {});

// The state of one sequence's output against a grammar.
class Matcher {
public:
    explicit Matcher(std::shared_ptr<const CompiledGrammar> grammar);
    ~Matcher();
    Matcher(Matcher&&) noexcept;
    Matcher& operator=(Matcher&&) noexcept;

    // The tokens that may come next: every token whose bytes continue a
    // sentence of the grammar, and the end tokens where the text so far is
    // one. `mask` is resized to the vocabulary.
    void FillNextTokenMask(TokenMask* mask);
    // Advances by one token; false, and no change, when it may not come
    // next. An end token is accepted where CanEnd() and ends the matcher.
    bool AcceptToken(int32_t id);
    // Advances by raw bytes (tests; forced text). false and no change when
    // they do not continue a sentence.
    bool AcceptBytes(std::string_view bytes);
    // Undoes the last `n` AcceptToken/AcceptBytes calls (at most
    // num_accepted()).
    void Rollback(int32_t n);
    // The text so far is a sentence of the grammar.
    bool CanEnd() const;
    // CanEnd() and no byte may follow: only an end token can come next.
    bool IsTerminated() const;
    // An end token was accepted.
    bool ended() const;
    int32_t num_accepted() const;
    // Set when a lexeme's DFA outgrew CompileLimits while matching: the
    // mask is then empty and the request must fail with this status.
    const absl::Status& status() const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace prepack::grammar

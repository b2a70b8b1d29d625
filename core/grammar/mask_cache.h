// The per-(lexeme, DFA state) half of a token mask, computed once by one
// walk of the token trie and shared by every matcher of a CompiledGrammar.
//
// From a lexeme's DFA state, a token either
//  - keeps the DFA alive through all its bytes: `inside`. Such a token is
//    allowed whenever an item scans this lexeme in this state, whatever the
//    rest of the parse holds (the lexeme can still be completed);
//  - kills the DFA after passing an accepting state (after >= 1 byte): the
//    lexeme may have ended inside the token and the parser must say whether
//    the rest continues a sentence. Whole trie subtrees fall in this class
//    at once (the byte where the DFA dies is the subtree's root), so they
//    are kept as `boundary` subtree roots;
//  - or is impossible from this item.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/grammar/lexeme_dfa.h"
#include "core/grammar/token_trie.h"

namespace prepack::grammar {

struct MaskEntry {
    // `inside` as a bitmask over ids when dense, else as a list of ids
    // (exactly one of the two is used).
    std::vector<uint64_t> inside_words;
    std::vector<int32_t>  inside_ids;
    std::vector<int32_t>  boundary_roots;   // trie nodes, in preorder
};

// RESOURCE_EXHAUSTED when the walk needs more DFA states than the limit.
absl::StatusOr<std::unique_ptr<MaskEntry>> BuildMaskEntry(const LexemeDfa& dfa, int32_t state,
                                                          const TokenVocabulary::Impl& trie);

class MaskCache {
public:
    // The entry for (lexeme, state), built on first use. Thread-safe; two
    // threads asking at once may both build it, one copy is kept.
    absl::StatusOr<const MaskEntry*> Get(int32_t lexeme, int32_t state, const LexemeDfa& dfa,
                                         const TokenVocabulary::Impl& trie) const;

private:
    mutable std::mutex mu_;
    mutable std::unordered_map<uint64_t, std::unique_ptr<MaskEntry>> entries_;
};

}  // namespace prepack::grammar

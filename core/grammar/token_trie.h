// TokenVocabulary::Impl: every token's bytes in one byte trie, laid out in
// preorder in flat arrays, so a mask walk is a loop over node indices that
// skips a whole subtree with one jump (subtree_end) when the lexeme's DFA
// dies on a node's byte.
//
// Tokens are sorted by their bytes; each node's subtree then covers one
// contiguous run of the sorted list, and the tokens ending exactly at a node
// are the first `num_ending` of that run (a prefix sorts before its
// extensions; equal byte strings, distinct ids, are adjacent).
//
// End tokens and tokens with no bytes are not in the trie: the matcher
// allows end tokens exactly where the grammar may end, and never allows
// empty ones.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/grammar/matcher.h"

namespace prepack::grammar {

struct TokenVocabulary::Impl {
    explicit Impl(VocabularyInfo vocabulary);

    int32_t num_nodes() const { return static_cast<int32_t>(node_byte.size()); }
    // The bytes on the path to `node` are a prefix of this string.
    const std::string& PathBytes(int32_t node) const { return info.token_bytes[sorted_tokens[first_token[node]]]; }

    VocabularyInfo       info;
    std::vector<char>    is_end;          // per id
    std::vector<int32_t> end_tokens;      // valid, distinct end ids

    // Node 0 is the root (depth 0, no byte).
    std::vector<uint8_t> node_byte;
    std::vector<int32_t> node_depth;
    std::vector<int32_t> subtree_end;     // one past the last node of the subtree
    std::vector<int32_t> first_token;     // the subtree's tokens: sorted_tokens[first_token, ...)
    std::vector<int32_t> num_ending;      // tokens whose bytes end at this node
    std::vector<int32_t> sorted_tokens;   // ids in trie (byte-lexicographic) order
    int32_t              max_depth = 0;
};

}  // namespace prepack::grammar

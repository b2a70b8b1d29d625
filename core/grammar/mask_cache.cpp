#include "core/grammar/mask_cache.h"

#include <utility>

namespace prepack::grammar {

absl::StatusOr<std::unique_ptr<MaskEntry>> BuildMaskEntry(const LexemeDfa& dfa, int32_t state,
                                                          const TokenVocabulary::Impl& trie) {
    auto entry = std::make_unique<MaskEntry>();
    const int32_t num_nodes = trie.num_nodes();
    // Per depth on the current trie path: the DFA state, and whether an
    // accepting state was passed after at least one byte.
    std::vector<int32_t> states(trie.max_depth + 1);
    std::vector<char> passed_accepting(trie.max_depth + 1, 0);
    states[0] = state;
    std::vector<int32_t> inside;
    for (int32_t node = 1; node < num_nodes;) {
        const int32_t depth = trie.node_depth[node];
        const int32_t next = dfa.Next(states[depth - 1], trie.node_byte[node]);
        if (next == LexemeDfa::kOverflow) {
            return absl::ResourceExhaustedError("a lexeme's DFA outgrew CompileLimits::max_dfa_states_per_lexeme");
        }
        if (next == LexemeDfa::kDead) {
            if (passed_accepting[depth - 1]) entry->boundary_roots.push_back(node);
            node = trie.subtree_end[node];
            continue;
        }
        states[depth] = next;
        passed_accepting[depth] = passed_accepting[depth - 1] || dfa.accepting(next);
        const int32_t first = trie.first_token[node];
        for (int32_t k = first; k < first + trie.num_ending[node]; ++k) inside.push_back(trie.sorted_tokens[k]);
        ++node;
    }
    const int32_t vocab_size = static_cast<int32_t>(trie.info.token_bytes.size());
    // A list costs 32 bits per token, a bitmask one bit per vocabulary id.
    if (static_cast<int64_t>(inside.size()) * 32 < vocab_size) {
        entry->inside_ids = std::move(inside);
    } else {
        entry->inside_words.assign((vocab_size + 63) / 64, 0);
        for (int32_t id : inside) entry->inside_words[id >> 6] |= uint64_t{1} << (id & 63);
    }
    return entry;
}

absl::StatusOr<const MaskEntry*> MaskCache::Get(int32_t lexeme, int32_t state, const LexemeDfa& dfa,
                                                const TokenVocabulary::Impl& trie) const {
    const uint64_t key = (static_cast<uint64_t>(lexeme) << 32) | static_cast<uint32_t>(state);
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (auto it = entries_.find(key); it != entries_.end()) return it->second.get();
    }
    // Built outside the lock: a first walk takes milliseconds and other
    // matchers' cached lookups should not wait for it.
    PP_ASSIGN_OR_RETURN(std::unique_ptr<MaskEntry> built, BuildMaskEntry(dfa, state, trie));
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, inserted] = entries_.try_emplace(key, std::move(built));
    return it->second.get();
}

}  // namespace prepack::grammar

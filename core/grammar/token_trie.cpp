#include "core/grammar/token_trie.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace prepack::grammar {

TokenVocabulary::Impl::Impl(VocabularyInfo vocabulary) : info(std::move(vocabulary)) {
    const int32_t size = static_cast<int32_t>(info.token_bytes.size());
    is_end.assign(size, 0);
    // Ids outside the vocabulary cannot be generated, so they are dropped
    // rather than refused (the constructor has no status to return).
    for (int32_t id : info.end_tokens) {
        if (id >= 0 && id < size && !is_end[id]) {
            is_end[id] = 1;
            end_tokens.push_back(id);
        }
    }
    for (int32_t id = 0; id < size; ++id) {
        if (!is_end[id] && !info.token_bytes[id].empty()) sorted_tokens.push_back(id);
    }
    std::sort(sorted_tokens.begin(), sorted_tokens.end(), [&](int32_t a, int32_t b) {
        const std::string_view x = info.token_bytes[a], y = info.token_bytes[b];
        return x != y ? x < y : a < b;
    });

    auto new_node = [&](uint8_t byte, int32_t depth, int32_t token_index) {
        node_byte.push_back(byte);
        node_depth.push_back(depth);
        subtree_end.push_back(-1);
        first_token.push_back(token_index);
        num_ending.push_back(0);
        return static_cast<int32_t>(node_byte.size()) - 1;
    };
    std::vector<int32_t> path{new_node(0, 0, 0)};   // path[d]: the node at depth d
    std::string_view previous;
    for (int32_t k = 0; k < static_cast<int32_t>(sorted_tokens.size()); ++k) {
        const std::string_view bytes = info.token_bytes[sorted_tokens[k]];
        size_t common = 0;
        while (common < previous.size() && common < bytes.size() && previous[common] == bytes[common]) ++common;
        while (path.size() > common + 1) {
            subtree_end[path.back()] = num_nodes();
            path.pop_back();
        }
        for (size_t d = common; d < bytes.size(); ++d) {
            path.push_back(new_node(static_cast<uint8_t>(bytes[d]), static_cast<int32_t>(d) + 1, k));
        }
        ++num_ending[path.back()];
        max_depth = std::max(max_depth, static_cast<int32_t>(bytes.size()));
        previous = bytes;
    }
    while (!path.empty()) {
        subtree_end[path.back()] = num_nodes();
        path.pop_back();
    }
}

TokenVocabulary::TokenVocabulary(VocabularyInfo info) : impl_(std::make_unique<Impl>(std::move(info))) {}
TokenVocabulary::~TokenVocabulary() = default;
int32_t TokenVocabulary::size() const { return static_cast<int32_t>(impl_->info.token_bytes.size()); }
const VocabularyInfo& TokenVocabulary::info() const { return impl_->info; }

}  // namespace prepack::grammar

// Builds Grammar::regex nodes hash-consed: a structurally identical node is
// stored once, so identical lexemes share one root index (one DFA in the
// matcher) and a regular rule referenced many times is one subtree. The
// pool is therefore a DAG (grammar_ir.h allows shared children).
//
// Constructors normalize as they go (nested concatenations and choices are
// flattened, "" dropped from concatenations, choices of single bytes
// merged into one byte set, {1,1} removed), which keeps the pool small and
// makes more lexemes compare equal.
//
// Bounded: past `max_nodes` nodes, a node whose tree-expanded size
// (shared subtrees counted at every use, repetitions at their count) is
// over `max_nodes`, or one nested deeper than `max_depth` (inlining chains
// of regular rules nests; a consumer may recurse over the tree), the pool
// refuses to grow and remembers a
// RESOURCE_EXHAUSTED status; constructors then return the "" node, and
// callers check status() once at the end of a step.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/grammar/grammar_ir.h"

namespace prepack::grammar::gbnf {

class RegexPool {
public:
    RegexPool(int32_t max_nodes, int32_t max_depth);

    int32_t Empty() const { return empty_; }
    int32_t ByteRange(uint8_t lo, uint8_t hi);
    int32_t Bytes(const std::array<uint64_t, 4>& bytes);
    int32_t Concat(const std::vector<int32_t>& children);
    int32_t Alt(const std::vector<int32_t>& children);
    int32_t Repeat(int32_t child, int32_t min, int32_t max);

    const RegexNode& node(int32_t index) const { return nodes_[index]; }
    // The node's tree-expanded size as described above (at most max_nodes).
    int64_t expanded_size(int32_t index) const { return expanded_size_[index]; }
    const absl::Status& status() const { return status_; }
    std::vector<RegexNode> Release() { return std::move(nodes_); }

private:
    int32_t Intern(RegexNode node);

    int32_t                                  max_nodes_;
    int32_t                                  max_depth_;
    std::vector<RegexNode>                   nodes_;
    std::vector<int64_t>                     expanded_size_;
    std::vector<int32_t>                     depth_;
    std::unordered_map<std::string, int32_t> index_of_;   // structural key -> node
    int32_t                                  empty_ = 0;
    absl::Status                             status_;
};

}  // namespace prepack::grammar::gbnf

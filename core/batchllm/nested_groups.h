// Multi-level prefix sharing for an offline batch: the single-level groups
// of prefix_tree.h, nested where a prefix is itself shared. A batch with a
// system prompt before every request and a document per group of requests
// gets one node for the system prompt (computed once for the batch) and one
// node per document under it (each computed once, on top of the system
// prompt's K/V), so it computes the prefix tree's minimum, where single-level
// groups compute the system prompt once per document.
//
// Built level by level: the best single-level grouping of the requests
// (GroupByPrefix), then the best single-level grouping of what came out of
// it (each group's prefix, each ungrouped request's prompt), and so on while
// a level still saves tokens. GroupByPrefix's one-token cap makes every
// outer prefix shorter than the prefixes and prompts it encloses, so each
// node computes at least one token of its own.
//
// Queue order (NestedOrder): depth first, a node's prefix before everything
// under it; at each level the children (nodes and requests) go in order of
// decode/prompt ratio, highest first: the max_tokens under a child over the
// prefill tokens it computes (its own prefix tokens and everything below;
// missing or negative max_tokens count as 0), so the requests that share K/V
// run together and decode-heavy groups start early, their long decodes
// overlapping later prefills. Ties go by the lowest request under the child.
#pragma once

#include <cstdint>
#include <vector>

#include "core/batchllm/prefix_tree.h"

namespace prepack {

struct PrefixNode {
    int32_t prefix_len = 0;    // the shared prefix: tokens [0, prefix_len) of `rep`'s prompt
    int32_t parent = -1;       // the enclosing node, -1 at the top
    int32_t rep = 0;           // a request under this node
};

struct NestedGrouping {
    std::vector<PrefixNode> nodes;     // every node with >= 2 children
    std::vector<int32_t>    node_of;   // per request: its innermost node, -1 for none
    int64_t computed_tokens = 0;       // every node's own tokens once + every request's own
    int64_t logical_tokens = 0;        // sum of prompt lengths
    int64_t optimal_tokens = 0;        // the prefix tree's unique tokens
};

// The nested grouping of `prompts` (options as for GroupByPrefix, applied at
// every level).
NestedGrouping NestGroups(const std::vector<std::vector<int32_t>>& prompts, const GroupingOptions& options = {});

// One entry of the queue order: a node's prefix (node >= 0) or a request.
struct NestedItem {
    int32_t node = -1;
    int32_t request = -1;
};

// The order described above; max_tokens[i] belongs to prompts[i].
std::vector<NestedItem> NestedOrder(const NestedGrouping& grouping, const std::vector<std::vector<int32_t>>& prompts,
                                    const std::vector<int32_t>& max_tokens);

}  // namespace prepack

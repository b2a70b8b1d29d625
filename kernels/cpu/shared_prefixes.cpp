// Finding decode spans that share a prefix by reference (cascade attention's
// groups): bookkeeping over block tables, no arithmetic, so built once.
#include <algorithm>
#include <climits>
#include <vector>

#include "kernels/cpu/attention.h"

namespace prepack::cpu {

std::vector<SharedPrefixGroup> FindSharedPrefixes(const AttentionSpan* spans, int32_t n_spans, int32_t block_size,
                                                  int32_t min_shared, int32_t min_members) {
    // Decode spans grouped by their first block: sharing starts there or not at all.
    std::vector<int32_t> decode;
    for (int32_t i = 0; i < n_spans; ++i) {
        const bool plain = spans[i].q_slots == nullptr && spans[i].key_depth == nullptr;
        if (plain && spans[i].n_q == 1 && spans[i].kv_before >= block_size) decode.push_back(i);
    }
    std::stable_sort(decode.begin(), decode.end(),
                     [&](int32_t a, int32_t b) { return spans[a].blocks[0] < spans[b].blocks[0]; });
    std::vector<SharedPrefixGroup> groups;
    for (size_t a = 0; a < decode.size();) {
        size_t b = a;
        while (b < decode.size() && spans[decode[b]].blocks[0] == spans[decode[a]].blocks[0]) ++b;
        if (static_cast<int32_t>(b - a) >= min_members) {
            // Whole blocks that are the same in every member and below every member's query.
            int32_t full = INT32_MAX;
            for (size_t i = a; i < b; ++i) full = std::min(full, spans[decode[i]].kv_before / block_size);
            int32_t same = 0;
            while (same < full) {
                const int32_t id = spans[decode[a]].blocks[same];
                bool all = true;
                for (size_t i = a + 1; i < b && all; ++i) all = spans[decode[i]].blocks[same] == id;
                if (!all) break;
                ++same;
            }
            if (same > 0 && same * block_size >= min_shared) {
                groups.push_back({std::vector<int32_t>(decode.begin() + a, decode.begin() + b), same * block_size});
            }
        }
        a = b;
    }
    return groups;
}

}  // namespace prepack::cpu

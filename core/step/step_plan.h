// StepPlan: everything one forward pass computes, as plain data. Every
// execution strategy (ragged prefill, packed or padded prefill, continuous
// decode, chunked prefill mixed with decode) lowers to this one shape:
// the flattened tokens of all sequences in the step, their positions, and
// each sequence's span of rows plus its KV block table.
#pragma once

#include <cstdint>
#include <vector>

namespace prepack {

class BlockTable;
class LazyState;

enum class LogitsWanted : uint8_t {
    kNone = 0,   // a prefill chunk that is not the prompt's last
    kLast = 1,   // logits of the span's last row: the next-token distribution
    kAll  = 2,   // logits of every row (scoring, tests)
};

struct SeqStep {
    BlockTable*  kv;            // capacity >= kv->num_tokens() + n_tokens + n_pad; advanced by n_tokens
    int32_t      token_begin;   // first row in StepPlan::tokens
    int32_t      n_tokens;      // rows of this sequence in the step
    LogitsWanted logits = LogitsWanted::kLast;
    // Padding rows right after the span that are computed as if they were
    // more tokens of this sequence (attention included) and then dropped:
    // their K/V land past num_tokens() and are overwritten later. This is
    // what right-padded batching costs, so the padded baseline uses it.
    int32_t      n_pad = 0;
    // LazyLLM pruning for this sequence (null: every token through every
    // layer). Needs n_pad 0, logits kLast or kNone, positions = token indices.
    LazyState*   lazy = nullptr;
};

struct StepPlan {
    std::vector<int32_t> tokens;      // [T] token ids
    std::vector<int32_t> positions;   // [T] RoPE positions
    std::vector<SeqStep> seqs;        // disjoint spans (with their pads) over [0, T);
                                      // rows in no span are padding that only the GEMMs see

    // Appends a span for `kv` holding `ids` at positions kv->num_tokens()...
    void Add(BlockTable* kv, const int32_t* ids, int32_t n, int32_t first_position,
             LogitsWanted logits = LogitsWanted::kLast) {
        const int32_t begin = static_cast<int32_t>(tokens.size());
        for (int32_t i = 0; i < n; ++i) {
            tokens.push_back(ids[i]);
            positions.push_back(first_position + i);
        }
        seqs.push_back({kv, begin, n, logits});
    }
};

}  // namespace prepack

// What the tests that hold prepack to llama.cpp's outputs on a real model
// share: how far two greedy answers agree, llama.cpp's own spread between
// its two settings (flash attention on vs off) in a reference file written
// by scripts/make_*_reference.py, and an engine stream's tokens with their
// log-probs and top-two margins.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine/stream.h"

namespace prepack::testing {

// How many leading tokens `a` and `b` share.
inline size_t CommonPrefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

// llama.cpp's first-position spread in a reference case: the largest
// log-prob difference between its flash-attention-on and -off runs over the
// ids both rank in their top 20.
inline double LlamaCppSpread(const nlohmann::ordered_json& c) {
    double spread = 0.0;
    for (const auto& a : c["first_top_flash_attn_on"]) {
        for (const auto& b : c["first_top_flash_attn_off"]) {
            if (a[0] == b[0]) spread = std::max(spread, std::abs(a[1].get<double>() - b[1].get<double>()));
        }
    }
    return spread;
}

// A request's tokens as its stream gave them, with each token's log-prob
// and (when the request asked for 2 or more logprobs) the margin between the
// two likeliest tokens at that step.
struct StreamAnswer {
    std::vector<int32_t> tokens;
    std::vector<float>   logprobs;
    std::vector<float>   margins;
};

inline StreamAnswer CollectStream(Stream& stream) {
    StreamAnswer a;
    Event e;
    while (stream.Next(&e, -1) && e.kind == Event::Kind::kToken) {
        a.tokens.push_back(e.token);
        a.logprobs.push_back(e.logprob);
        a.margins.push_back(e.top_logprobs.size() >= 2 ? e.top_logprobs[0].second - e.top_logprobs[1].second : 1e9f);
    }
    EXPECT_TRUE(e.status.ok()) << e.status;
    return a;
}

}  // namespace prepack::testing

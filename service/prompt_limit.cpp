#include "prompt_limit.h"

#include <algorithm>
#include <string>

namespace prepackd {

int32_t MaxBytesPerToken(const prepack_engine* engine, const prepack_model_desc& model) {
    // One pass over the vocabulary at load time (a few ms for 150k tokens).
    size_t longest = 0;
    std::string text(256, '\0');
    for (int32_t id = 0; id < model.vocab_size; ++id) {
        size_t len = 0;
        prepack_status st = prepack_detokenize(engine, &id, 1, text.data(), text.size(), &len);
        if (st == PREPACK_OUT_OF_RANGE) {
            text.resize(len + 1);
            st = prepack_detokenize(engine, &id, 1, text.data(), text.size(), &len);
        }
        if (st == PREPACK_OK) longest = std::max(longest, len);
    }
    return std::max(static_cast<int32_t>(longest) + 1, kControlTokenBytes);
}

uint64_t DerivedPromptByteLimit(const prepack_engine* engine, const prepack_model_desc& model) {
    return static_cast<uint64_t>(std::max(model.context_length, 1)) *
           static_cast<uint64_t>(MaxBytesPerToken(engine, model));
}

}  // namespace prepackd

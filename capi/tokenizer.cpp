// Text to token ids and back, with the engine's tokenizer.
#include "capi/capi_internal.h"

using namespace prepack::capi;

extern "C" {

prepack_status prepack_tokenize(const prepack_engine* engine, const char* text, size_t text_len, int add_bos,
                                int32_t* tokens, size_t capacity, size_t* n_tokens) {
    return prepack_tokenize_special(engine, text, text_len, add_bos, 0, tokens, capacity, n_tokens);
}

prepack_status prepack_tokenize_special(const prepack_engine* engine, const char* text, size_t text_len,
                                        int add_special, int parse_special, int32_t* tokens, size_t capacity,
                                        size_t* n_tokens) {
    return Guard([&] {
        if (engine == nullptr || n_tokens == nullptr || (text == nullptr && text_len > 0) ||
            (tokens == nullptr && capacity > 0)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "engine, text, tokens or n_tokens is NULL");
        }
        auto ids = engine->engine->model().tokenizer().Encode(std::string_view(text ? text : "", text_len),
                                                              add_special != 0, parse_special != 0);
        if (!ids.ok()) return FromStatus(ids.status());
        *n_tokens = ids->size();
        if (ids->size() > capacity) {
            return Fail(PREPACK_OUT_OF_RANGE, absl::StrCat("tokens buffer holds ", capacity, " ids; ", ids->size(), " needed"));
        }
        std::copy(ids->begin(), ids->end(), tokens);
        return PREPACK_OK;
    });
}

prepack_status prepack_detokenize(const prepack_engine* engine, const int32_t* tokens, size_t n_tokens, char* text,
                                  size_t capacity, size_t* text_len) {
    return Guard([&] {
        if (engine == nullptr || text_len == nullptr || (tokens == nullptr && n_tokens > 0) ||
            (text == nullptr && capacity > 0)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "engine, tokens, text or text_len is NULL");
        }
        const prepack::Tokenizer& tok = engine->engine->model().tokenizer();
        std::vector<int32_t> ids(tokens, tokens + n_tokens);
        for (size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] < 0 || ids[i] >= tok.vocab_size()) {
                return Fail(PREPACK_INVALID_ARGUMENT,
                            absl::StrCat("tokens[", i, "] = ", ids[i], " is outside the vocabulary [0, ", tok.vocab_size(), ")"));
            }
        }
        const std::string s = tok.Decode(ids);
        *text_len = s.size();
        if (s.size() + 1 > capacity) {
            return Fail(PREPACK_OUT_OF_RANGE, absl::StrCat("text buffer holds ", capacity, " bytes; ", s.size() + 1,
                                                           " needed (with the NUL)"));
        }
        std::memcpy(text, s.data(), s.size());
        text[s.size()] = '\0';
        return PREPACK_OK;
    });
}

}  // extern "C"

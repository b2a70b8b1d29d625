#include "convert.h"

#include <cstdint>

namespace prepackd {

prepack::v1::FinishReason ToProto(prepack_finish_reason reason) {
    switch (reason) {
        case PREPACK_FINISH_NONE: return prepack::v1::FINISH_REASON_UNSPECIFIED;
        case PREPACK_FINISH_STOP: return prepack::v1::FINISH_REASON_STOP;
        case PREPACK_FINISH_LENGTH: return prepack::v1::FINISH_REASON_LENGTH;
        case PREPACK_FINISH_EOS: return prepack::v1::FINISH_REASON_EOS;
        case PREPACK_FINISH_CANCELLED: return prepack::v1::FINISH_REASON_CANCELLED;
        case PREPACK_FINISH_ERROR: return prepack::v1::FINISH_REASON_ERROR;
    }
    return prepack::v1::FINISH_REASON_ERROR;
}

void FillUsage(const prepack_usage& u, prepack::v1::Usage* out) {
    out->set_prompt_tokens(u.prompt_tokens);
    out->set_generated_tokens(u.completion_tokens);
    out->set_cached_prefix_tokens(u.cached_prompt_tokens);
    out->set_pruned_fraction(u.pruned_fraction);
    out->set_ttft_ms(u.ttft_ms);
    out->set_queue_ms(u.queue_ms);
    out->set_total_ms(u.total_ms);
}

void FillUsage(const prepack_event& end, prepack::v1::Usage* out) {
    FillUsage(end.usage, out);
    out->set_reasoning_tokens(end.reasoning_tokens);
}

void AddLogprob(const prepack_event& e, prepack::v1::TokenLogprob* out) {
    out->set_token_id(e.token);
    out->set_logprob(e.logprob);
    for (size_t i = 0; i < e.n_top; ++i) {
        prepack::v1::TopLogprob* t = out->add_top();
        t->set_token_id(e.top_ids[i]);
        t->set_logprob(e.top_logprobs[i]);
    }
}

namespace {

// The length of the valid UTF-8 sequence at s[i], or 0 when the bytes there
// are not one. Overlong forms, surrogates and values past U+10FFFF are
// invalid, as in protobuf's own check.
size_t SequenceLength(std::string_view s, size_t i) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
        len = 1, cp = c;
    } else if ((c & 0xE0) == 0xC0) {
        len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        len = 4, cp = c & 0x07;
    }
    bool ok = len > 0 && i + len <= s.size();
    for (size_t k = 1; ok && k < len; ++k) {
        const auto cc = static_cast<unsigned char>(s[i + k]);
        ok = (cc & 0xC0) == 0x80;
        cp = (cp << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    ok = ok && cp >= kMin[len] && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    return ok ? len : 0;
}

}  // namespace

size_t ValidUtf8Prefix(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const size_t len = SequenceLength(s, i);
        if (len == 0) break;
        i += len;
    }
    return i;
}

std::string ToValidUtf8(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t i = 0;
    while (i < s.size()) {
        const size_t len = SequenceLength(s, i);
        if (len > 0) {
            out.append(s.substr(i, len));
            i += len;
        } else {
            out.append("\xEF\xBF\xBD");
            i += 1;
        }
    }
    return out;
}

}  // namespace prepackd

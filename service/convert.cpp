#include "convert.h"

#include <cstdint>
#include <string>
#include <string_view>

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

void AddPromptLogprobs(const prepack_event& e, google::protobuf::RepeatedPtrField<prepack::v1::TokenLogprob>* out) {
    for (size_t i = 0; i < e.n_prompt_logprobs; ++i) {
        prepack::v1::TokenLogprob* t = out->Add();
        t->set_token_id(e.prompt_token_ids[i]);
        t->set_logprob(e.prompt_logprobs[i]);
        for (size_t k = 0; k < e.prompt_n_top; ++k) {
            prepack::v1::TopLogprob* top = t->add_top();
            top->set_token_id(e.prompt_top_ids[i * e.prompt_n_top + k]);
            top->set_logprob(e.prompt_top_logprobs[i * e.prompt_n_top + k]);
        }
    }
}

namespace {

std::string Utf8(const char* s, size_t n) { return s == nullptr ? std::string() : ToValidUtf8(std::string_view(s, n)); }
std::string Utf8(const char* s) { return s == nullptr ? std::string() : ToValidUtf8(std::string_view(s)); }

}  // namespace

void AddToolCallDeltas(const prepack_event& e, google::protobuf::RepeatedPtrField<prepack::v1::ToolCallDelta>* out) {
    for (size_t i = 0; i < e.n_tool_call_deltas; ++i) {
        const prepack_tool_call_delta& d = e.tool_call_deltas[i];
        prepack::v1::ToolCallDelta* t = out->Add();
        t->set_index(d.index);
        t->set_id(Utf8(d.id));
        t->set_name(Utf8(d.name));
        t->set_arguments(Utf8(d.arguments, d.arguments_len));
    }
}

void AddToolCalls(const prepack_event& e, google::protobuf::RepeatedPtrField<prepack::v1::ToolCall>* out) {
    for (size_t i = 0; i < e.n_tool_calls; ++i) {
        const prepack_tool_call& c = e.tool_calls[i];
        prepack::v1::ToolCall* t = out->Add();
        t->set_id(Utf8(c.id));
        t->set_name(Utf8(c.name));
        t->set_arguments_json(Utf8(c.arguments, c.arguments_len));
    }
}

}  // namespace prepackd

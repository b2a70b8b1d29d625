#include "http/api_request_builder.h"

#include "engine_host.h"
#include "openai/json_text.h"

namespace prepackd::http {

std::vector<prepack_request> PreparedApiRequest::Choices(int n, uint64_t seed) const {
    std::vector<prepack_request> requests;
    for (const auto& p : prompts) {
        for (int c = 0; c < n; ++c) {
            prepack_request r = p->request;
            r.seed = seed + requests.size();
            requests.push_back(r);
        }
    }
    return requests;
}

int32_t PreparedApiRequest::FirstToken(size_t p) const {
    return prompts[p]->prompt_ids.empty() ? 0 : prompts[p]->prompt_ids[0];
}

grpc::Status PrepareApiRequest(ApiRequest& ar, const prepack_engine* engine, const prepack_model_desc& model,
                               uint64_t max_prompt_bytes, std::chrono::system_clock::time_point deadline,
                               PreparedApiRequest* out) {
    const bool max_tokens_set = ar.sampling.max_tokens.has_value();
    const bool several = ar.requests.size() > 1;
    for (size_t p = 0; p < ar.requests.size(); ++p) {
        prepack::v1::GenerateRequest& gr = ar.requests[p];
        // Chat without max_tokens: whatever the context leaves (checked below).
        if (!max_tokens_set) gr.mutable_sampling()->set_max_tokens(1);
        auto prepared = std::make_unique<PreparedRequest>();
        grpc::Status s =
            PrepareRequest(gr, "", engine, model, max_prompt_bytes, deadline, prepared.get(), "messages");
        const int32_t n_prompt = static_cast<int32_t>(prepared->prompt_ids.size());
        if (!s.ok() && !max_tokens_set && s.error_code() == grpc::StatusCode::OUT_OF_RANGE && n_prompt > 0) {
            s = grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                             "messages: the prompt (rendered: " + std::to_string(n_prompt) +
                                 " tokens) leaves no room to generate within the context length (" +
                                 std::to_string(model.context_length) + ")");
        }
        if (!s.ok()) return WithJsonNames(s, ar.api, several ? static_cast<int>(p) : -1, ar.response_format.field);
        if (!max_tokens_set) prepared->request.max_tokens = model.context_length - n_prompt;
        out->prompt_tokens += n_prompt;
        if (ar.echo) {
            std::string text;
            if (ar.prompts[p].token_ids) {
                if (grpc::Status d = DetokenizeIds(engine, prepared->prompt_ids, &text); !d.ok()) return d;
            } else {
                text = gr.text();
            }
            out->echo.push_back(std::move(text));
        }
        out->prompts.push_back(std::move(prepared));
    }
    return grpc::Status::OK;
}

grpc::Status DetokenizeIds(const prepack_engine* engine, const std::vector<int32_t>& ids, std::string* out) {
    std::string text(ids.size() * 8 + 1, '\0');
    size_t len = 0;
    prepack_status st = prepack_detokenize(engine, ids.data(), ids.size(), text.data(), text.size(), &len);
    if (st == PREPACK_OUT_OF_RANGE) {
        text.resize(len + 1);
        st = prepack_detokenize(engine, ids.data(), ids.size(), text.data(), text.size(), &len);
    }
    if (st != PREPACK_OK) return ToGrpc(st, prepack_last_error());
    *out = prepack::openai::ToValidUtf8(std::string_view(text.data(), len));
    return grpc::Status::OK;
}

}  // namespace prepackd::http

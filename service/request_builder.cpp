#include "request_builder.h"

#include <cmath>
#include <cstdio>

#include "engine_host.h"

namespace prepackd {
namespace {

constexpr int    kMaxTopLogprobs = 20;   // the engine's limit (prepack.h: logprobs 0..20)
constexpr size_t kMaxStop = 16;
constexpr size_t kMaxStopBytes = 256;

grpc::Status Invalid(const std::string& prefix, const std::string& field, const std::string& why) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, prefix + field + ": " + why);
}

std::string Num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

grpc::Status CheckSampling(const prepack::v1::SamplingParams& s, const std::string& p) {
    if (s.has_max_tokens() && s.max_tokens() < 1) {
        return Invalid(p, "sampling.max_tokens", "must be >= 1, got " + std::to_string(s.max_tokens()));
    }
    if (s.has_temperature() && !(std::isfinite(s.temperature()) && s.temperature() >= 0.0f)) {
        return Invalid(p, "sampling.temperature", "must be >= 0 (0 = greedy), got " + Num(s.temperature()));
    }
    if (s.top_k() < 0) return Invalid(p, "sampling.top_k", "must be >= 0 (0 = off), got " + std::to_string(s.top_k()));
    if (s.has_top_p() && !(s.top_p() > 0.0f && s.top_p() <= 1.0f)) {
        return Invalid(p, "sampling.top_p", "must be in (0, 1], got " + Num(s.top_p()));
    }
    if (!(s.min_p() >= 0.0f && s.min_p() <= 1.0f)) {
        return Invalid(p, "sampling.min_p", "must be in [0, 1], got " + Num(s.min_p()));
    }
    if (s.has_repetition_penalty() && !(std::isfinite(s.repetition_penalty()) && s.repetition_penalty() > 0.0f)) {
        return Invalid(p, "sampling.repetition_penalty", "must be > 0 (1 = off), got " + Num(s.repetition_penalty()));
    }
    if (static_cast<size_t>(s.stop_size()) > kMaxStop) {
        return Invalid(p, "sampling.stop", "at most " + std::to_string(kMaxStop) + " stop strings");
    }
    for (int i = 0; i < s.stop_size(); ++i) {
        const std::string field = "sampling.stop[" + std::to_string(i) + "]";
        if (s.stop(i).empty()) return Invalid(p, field, "must not be empty");
        if (s.stop(i).size() > kMaxStopBytes) return Invalid(p, field, "longer than 256 bytes");
    }
    return grpc::Status::OK;
}

// The prompt, checked without tokenizing: one is set, text is short enough
// to be worth tokenizing, token ids are in the vocabulary.
grpc::Status CheckPrompt(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_model_desc& model,
                         uint64_t max_prompt_bytes) {
    switch (in.prompt_case()) {
        case prepack::v1::GenerateRequest::kText:
            return CheckPromptBytes(in.text().size(), p + "text", max_prompt_bytes);
        case prepack::v1::GenerateRequest::kTokenIds: {
            if (in.has_add_bos() && in.add_bos()) {
                return Invalid(p, "add_bos", "applies to text prompts only (token_ids are taken as given)");
            }
            const auto& t = in.token_ids().ids();
            if (t.empty()) return Invalid(p, "token_ids.ids", "must not be empty");
            for (int i = 0; i < t.size(); ++i) {
                if (t[i] < 0 || t[i] >= model.vocab_size) {
                    return Invalid(p, "token_ids.ids[" + std::to_string(i) + "]",
                                   std::to_string(t[i]) + " is outside the vocabulary [0, " +
                                       std::to_string(model.vocab_size) + ")");
                }
            }
            return grpc::Status::OK;
        }
        case prepack::v1::GenerateRequest::PROMPT_NOT_SET: break;
    }
    return Invalid(p, "prompt", "set text or token_ids");
}

// The prompt's ids (after CheckPrompt): token_ids as given, or the text
// tokenized here.
grpc::Status PromptIds(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_engine* engine,
                       std::vector<int32_t>* ids) {
    if (in.prompt_case() == prepack::v1::GenerateRequest::kTokenIds) {
        ids->assign(in.token_ids().ids().begin(), in.token_ids().ids().end());
        return grpc::Status::OK;
    }
    // Empty text is BOS alone (llama.cpp's behaviour), when BOS is added.
    grpc::Status s = TokenizeText(engine, in.text(), !in.has_add_bos() || in.add_bos(), in.parse_special(), ids);
    if (!s.ok()) return grpc::Status(s.error_code(), p + "text: " + s.error_message());
    if (ids->empty()) return Invalid(p, "text", "is empty and no BOS token is added");
    return grpc::Status::OK;
}

}  // namespace

grpc::Status CheckPromptBytes(uint64_t bytes, const std::string& field, uint64_t max_prompt_bytes) {
    if (bytes <= max_prompt_bytes) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                        field + ": " + std::to_string(bytes) + " bytes, more than any prompt that fits the " +
                            "context (at most " + std::to_string(max_prompt_bytes) + " bytes, --max-prompt-bytes)");
}

grpc::Status CheckRequest(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_model_desc& model,
                          uint64_t max_prompt_bytes) {
    if (grpc::Status s = CheckSampling(in.sampling(), p); !s.ok()) return s;
    if (in.top_logprobs() < 0 || in.top_logprobs() > kMaxTopLogprobs) {
        return Invalid(p, "top_logprobs", "must be in [0, 20], got " + std::to_string(in.top_logprobs()));
    }
    if (in.lazy().has_keep_ratio() && !(in.lazy().keep_ratio() > 0.0f && in.lazy().keep_ratio() <= 1.0f)) {
        return Invalid(p, "lazy.keep_ratio", "must be in (0, 1], got " + Num(in.lazy().keep_ratio()));
    }
    if (in.lazy().has_revive_limit() && in.lazy().revive_limit() < -1) {
        return Invalid(p, "lazy.revive_limit",
                       "must be -1 (no bound), 0 (the default) or a count > 0, got " +
                           std::to_string(in.lazy().revive_limit()));
    }
    return CheckPrompt(in, p, model, max_prompt_bytes);
}

grpc::Status TokenizeText(const prepack_engine* engine, const std::string& text, bool add_bos, bool parse_special,
                          std::vector<int32_t>* ids) {
    // Ids are never more than bytes + BOS for this tokenizer family, but ask
    // again with the size the library reports if that ever changes.
    ids->resize(text.size() + 2);
    size_t n = 0;
    prepack_status st = prepack_tokenize_special(engine, text.data(), text.size(), add_bos, parse_special, ids->data(),
                                                 ids->size(), &n);
    if (st == PREPACK_OUT_OF_RANGE) {
        ids->resize(n);
        st = prepack_tokenize_special(engine, text.data(), text.size(), add_bos, parse_special, ids->data(),
                                      ids->size(), &n);
    }
    if (st != PREPACK_OK) return ToGrpc(st, prepack_last_error());
    ids->resize(n);
    return grpc::Status::OK;
}

grpc::Status PrepareRequest(const prepack::v1::GenerateRequest& in, const std::string& p, const prepack_engine* engine,
                            const prepack_model_desc& model, uint64_t max_prompt_bytes,
                            std::chrono::system_clock::time_point deadline, PreparedRequest* out) {
    if (grpc::Status s = CheckRequest(in, p, model, max_prompt_bytes); !s.ok()) return s;
    if (grpc::Status s = PromptIds(in, p, engine, &out->prompt_ids); !s.ok()) return s;

    prepack_request& r = out->request;
    const auto& s = in.sampling();
    if (s.has_max_tokens()) r.max_tokens = s.max_tokens();
    const int64_t total = static_cast<int64_t>(out->prompt_ids.size()) + r.max_tokens;
    if (total > model.context_length) {
        return grpc::Status(grpc::StatusCode::OUT_OF_RANGE,
                            p + "prompt (" + std::to_string(out->prompt_ids.size()) + " tokens) plus " + p +
                                "sampling.max_tokens (" + std::to_string(r.max_tokens) +
                                ") exceed the context length (" + std::to_string(model.context_length) + ")");
    }
    r.prompt_tokens = out->prompt_ids.data();
    r.n_prompt_tokens = out->prompt_ids.size();
    r.add_bos = 0;   // already in prompt_ids when asked for
    if (s.has_temperature()) r.temperature = s.temperature();
    r.top_k = s.top_k();
    if (s.has_top_p()) r.top_p = s.top_p();
    r.min_p = s.min_p();
    if (s.has_repetition_penalty()) r.repetition_penalty = s.repetition_penalty();
    r.seed = s.seed();
    r.ignore_eos = s.ignore_eos() ? 1 : 0;
    out->stop.assign(s.stop().begin(), s.stop().end());
    for (const std::string& st : out->stop) out->stop_ptrs.push_back(st.c_str());
    r.stop = out->stop_ptrs.empty() ? nullptr : out->stop_ptrs.data();
    r.n_stop = out->stop_ptrs.size();
    r.logprobs = in.top_logprobs();
    r.lazy = in.lazy().enabled() ? 1 : 0;
    if (in.lazy().has_keep_ratio()) r.lazy_keep_ratio = in.lazy().keep_ratio();
    out->lazy_schedule = in.lazy().schedule();
    if (!out->lazy_schedule.empty()) r.lazy_schedule = out->lazy_schedule.c_str();
    r.lazy_revive_limit = in.lazy().revive_limit();

    if (deadline != std::chrono::system_clock::time_point::max()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::system_clock::now());
        if (left.count() <= 0) return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded before start");
        r.deadline_ms = left.count();
    }
    return grpc::Status::OK;
}

}  // namespace prepackd

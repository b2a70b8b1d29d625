#include "http/batch_lines.h"

#include <random>

#include "openai/json_text.h"

namespace prepackd::http {
namespace {

namespace openai = prepack::openai;

// A result's log-prob as OpenAI's shapes take it.
TokenLogprob FromProto(const prepack::v1::TokenLogprob& t) {
    TokenLogprob out;
    out.token = t.token_id();
    out.logprob = t.logprob();
    for (const prepack::v1::TopLogprob& top : t.top()) out.top.emplace_back(top.token_id(), top.logprob());
    return out;
}

uint64_t RandomSeed() {
    static std::mt19937_64 rng{std::random_device{}()};
    return rng();
}

}  // namespace

BatchLines::BatchLines(const prepack_engine* engine, const prepack_model_desc& model, std::string model_id,
                       int max_choices, uint64_t max_prompt_bytes)
    : engine_(engine),
      model_(model),
      batch_model_{std::move(model_id), model.vocab_size, max_choices},
      max_prompt_bytes_(max_prompt_bytes),
      pieces_(EnginePieces(engine)) {}

std::optional<BatchLines::Refusal> BatchLines::Parse(uint32_t index, const std::string& text) {
    if (lines_.count(index)) return std::nullopt;
    openai::BatchEntry e = openai::ParseBatchLine(text, index + 1, batch_model_);
    if (!e.status.ok()) {
        return Refusal{openai::Dump(openai::BatchErrorLine(e, e.status, e.body_error)), FromAbsl(e.status)};
    }
    Line& line = lines_[index];
    static_cast<openai::ApiRequest&>(line.request) = e.request;
    BuildGenerateRequests(&line.request);
    line.run = std::make_unique<openai::BatchLineRun>(std::move(e));
    return std::nullopt;
}

int BatchLines::choices(uint32_t index) const { return lines_.at(index).request.choices(); }

bool BatchLines::logprobs(uint32_t index) const { return lines_.at(index).request.logprobs; }

std::optional<BatchLines::Refusal> BatchLines::Prepare(uint32_t index, std::chrono::system_clock::time_point deadline,
                                                       std::vector<prepack_request>* requests) {
    Line& line = lines_.at(index);
    const grpc::Status s = PrepareApiRequest(line.request, engine_, model_, max_prompt_bytes_, deadline, &line.prepared);
    if (!s.ok()) {
        const absl::Status why(static_cast<absl::StatusCode>(s.error_code()), s.error_message());   // the same codes
        Refusal r{openai::Dump(openai::BatchErrorLine(line.run->entry(), why, /*body_error=*/true)), s};
        lines_.erase(index);
        return r;
    }
    const ApiRequest& r = line.request;
    *requests = line.prepared.Choices(r.n, r.seed ? *r.seed : RandomSeed());
    line.run->Echo(line.prepared.echo);
    return std::nullopt;
}

std::optional<std::string> BatchLines::End(uint32_t index, size_t k, const prepack::v1::GenerateResult& result) {
    const auto it = lines_.find(index);
    if (it == lines_.end()) return std::nullopt;   // answered already (an earlier choice failed)
    Line& line = it->second;
    const ApiRequest& r = line.request;
    Choice& c = line.run->choice(k);
    c.text += result.text();
    c.reasoning = result.reasoning();
    for (const prepack::v1::ToolCall& call : result.tool_calls()) {
        c.tool_calls.push_back({call.id(), call.name(), call.arguments_json()});
    }
    if (r.scores_prompt()) {
        std::vector<TokenLogprob> scored;
        for (const auto& t : result.prompt_logprobs()) scored.push_back(FromProto(t));
        c.logprobs = openai::EchoedPrompt(line.prepared.FirstToken(k / static_cast<size_t>(r.n)), std::move(scored));
        c.prompt_logprobs = c.logprobs.size();
    }
    for (const auto& t : result.logprobs()) c.logprobs.push_back(FromProto(t));
    c.finish_reason = result.finish_reason() == prepack::v1::FINISH_REASON_LENGTH ? "length" : "stop";
    c.prompt_tokens = result.usage().prompt_tokens();
    c.completion_tokens = result.usage().generated_tokens();
    c.cached_tokens = result.usage().cached_prefix_tokens();
    c.reasoning_tokens = result.usage().reasoning_tokens();
    const absl::Status status(static_cast<absl::StatusCode>(result.status_code()), result.status_message());
    // Out of KV here means the prompt can never fit the budget: no retry helps (400, as the HTTP API says).
    const int http_status = status.code() == absl::StatusCode::kResourceExhausted ? 400 : 0;
    std::optional<Json> out = line.run->End(status, batch_model_.id, pieces_, http_status);
    if (!out) return std::nullopt;
    lines_.erase(it);
    return openai::Dump(*out);
}

}  // namespace prepackd::http

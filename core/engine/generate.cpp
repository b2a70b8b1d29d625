#include "core/engine/generate.h"

#include <optional>

#include "core/lazyllm/lazy_state.h"
#include "core/base/runtime.h"
#include "core/request/continuation.h"

namespace prepack {

absl::StatusOr<GenerateResult> Generate(StepRunner& forward, const GenerateRequest& request,
                                        const TextCallback& on_text) {
    const Model& model = forward.model();
    const ModelConfig& c = model.config();
    const Tokenizer& tok = model.tokenizer();
    PP_RETURN_IF_ERROR(ValidateSamplingParams(request.sampling));
    if (request.max_tokens < 0) {
        return absl::InvalidArgumentError(absl::StrCat("max_tokens must be >= 0, got ", request.max_tokens));
    }
    // The grammar first: a spec its front end refuses fails before any compute.
    std::optional<grammar::Matcher> matcher;
    if (request.grammar.active()) {
        if (request.ignore_eos) {
            return absl::InvalidArgumentError(
                "ignore_eos conflicts with a grammar (structured output): the grammar decides where the output may "
                "end, so end tokens cannot be ignored");
        }
        std::optional<GrammarCompiler> own;
        GrammarCompiler* grammars = request.grammars;
        if (grammars == nullptr) grammars = &own.emplace(tok);
        PP_ASSIGN_OR_RETURN(matcher, grammars->NewMatcher(request.grammar));
    }
    GenerateResult result;
    PP_ASSIGN_OR_RETURN(result.prompt_tokens, ResolvePrompt(model, request.prompt, request.prompt_tokens,
                                                            request.add_bos, request.parse_special));
    const std::vector<int32_t>& prompt = result.prompt_tokens;
    const int32_t n_prompt = static_cast<int32_t>(prompt.size());

    BlockTable kv;   // released on every return path by its destructor
    PP_RETURN_IF_ERROR(kv.Reserve(forward.pool(), n_prompt));

    // LazyLLM scores tokens by the prompt's last token, so a pruned prompt
    // is prefilled in one step.
    std::unique_ptr<LazyState> lazy;
    PP_ASSIGN_OR_RETURN(const int32_t revive_limit, ResolveReviveLimit(request.lazy_revive_limit));
    if (request.lazy) {
        lazy = std::make_unique<LazyState>(forward.pool(), c.n_layers, c.dim,
                                           request.lazy_schedule.empty() ? DefaultLazySchedule(c.n_layers)
                                                                         : request.lazy_schedule,
                                           0);
        lazy->set_n_prompt(n_prompt);
        lazy->set_revive_limit(revive_limit);
        lazy->set_scoring(request.lazy_scoring);
        PP_RETURN_IF_ERROR(lazy->aux().Reserve(n_prompt));
    }
    const int32_t chunk = lazy ? n_prompt : kPrefillChunk;
    // Prefill in chunks; only the last chunk asks for logits.
    StepOutput out;
    const double t0 = NowSeconds();
    for (int32_t begin = 0; begin < n_prompt; begin += chunk) {
        const int32_t n = std::min(chunk, n_prompt - begin);
        StepPlan plan;
        plan.Add(&kv, prompt.data() + begin, n, begin,
                 begin + n == n_prompt ? LogitsWanted::kLast : LogitsWanted::kNone);
        plan.seqs.back().lazy = lazy.get();
        PP_RETURN_IF_ERROR(forward.Run(plan, &out));
    }
    const double t1 = NowSeconds();
    result.prefill_seconds = t1 - t0;
    result.first_logits.assign(out.logits.data(), out.logits.data() + c.vocab_size);
    if (lazy) {
        result.prompt_work_fraction = lazy->PromptWorkFraction();
        result.prompt_layer_fractions = lazy->PromptLayerFractions();
    } else {
        result.prompt_layer_fractions.assign(c.n_layers, 1.0);
    }

    Continuation output(tok, request.sampling, request.stop, {request.max_tokens, c.max_context, request.ignore_eos});
    if (matcher) output.ConstrainFrom(request.grammar_trigger, std::move(*matcher));
    if (request.tool_calls) output.ReadToolCalls(*request.tool_calls);
    // The prompt's text is already known to the caller: prime the decoder
    // with it so the continuation's first space is kept.
    output.PrimeWithPrompt(prompt);
    std::vector<int32_t> history = prompt;
    result.finish_reason = FinishReason::kLength;
    for (int32_t i = 0; i < request.max_tokens; ++i) {
        NextToken next = output.Next({out.logits.data(), static_cast<size_t>(c.vocab_size)}, &history);
        if (next.reason == FinishReason::kError) return next.status;   // nothing sampled
        result.tokens.push_back(next.token);
        result.token_seconds.push_back(NowSeconds() - t0);
        result.token_work_fraction.push_back(lazy ? lazy->PromptWorkFraction() : 1.0);
        result.token_revived.push_back(lazy ? lazy->revived() : 0);
        if (!next.text.empty()) {
            result.text += next.text;
            if (on_text) on_text(next.text);
        }
        if (next.finished) {
            result.finish_reason = next.reason;
            result.tool_calls = output.tool_calls();
            break;
        }
        const int32_t pos = n_prompt + i;
        PP_RETURN_IF_ERROR(kv.Reserve(forward.pool(), pos + 1));
        StepPlan plan;
        plan.Add(&kv, &next.token, 1, pos);
        plan.seqs.back().lazy = lazy.get();   // each decode step re-scores and may bring tokens back
        PP_RETURN_IF_ERROR(forward.Run(plan, &out));
    }
    result.decode_seconds = NowSeconds() - t1;
    if (lazy) {
        result.prompt_work_fraction_end = lazy->PromptWorkFraction();
        result.max_revived_in_step = lazy->max_revived_in_step();
    }
    return result;
}

}  // namespace prepack

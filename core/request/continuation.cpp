#include "core/request/continuation.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace prepack {

Continuation::Continuation(const Tokenizer& tok, const SamplingParams& sampling, std::vector<std::string> stop,
                           ContinuationLimits limits)
    : tok_(&tok), sampler_(sampling), detok_(tok), stops_(std::move(stop)), limits_(limits) {}

void Continuation::ConstrainFrom(std::string trigger, grammar::Matcher matcher) {
    grammar_.emplace(std::move(matcher));
    trigger_ = std::move(trigger);
    grammar_active_ = trigger_.empty();
    watched_.clear();
}

void Continuation::WatchForTrigger(int32_t token) {
    // The grammar's own view of the token (the bytes its vocabulary gives
    // it), so the catch-up below and the tokens after it read one text.
    watched_ += tok_->TokenBytes(token);
    for (;;) {
        if (watch_thinking_) {
            const size_t close = watched_.find(kThinkClose);
            if (close == std::string::npos) {
                const size_t keep = std::min(watched_.size(), kThinkClose.size() - 1);
                watched_.erase(0, watched_.size() - keep);
                return;
            }
            watched_.erase(0, close + kThinkClose.size());
            watch_thinking_ = false;
            continue;
        }
        const size_t at = watched_.find(trigger_);
        const size_t think = reasoning_on_ ? watched_.find(kThinkOpen) : std::string::npos;
        if (think != std::string::npos && (at == std::string::npos || think < at)) {
            watched_.erase(0, think + kThinkOpen.size());
            watch_thinking_ = true;
            continue;
        }
        if (at == std::string::npos) {
            const size_t tail = std::max(trigger_.size(), reasoning_on_ ? kThinkOpen.size() : size_t{1}) - 1;
            watched_.erase(0, watched_.size() - std::min(watched_.size(), tail));
            return;
        }
        // The trigger's first byte on, through the end of this token.
        if (grammar_->AcceptBytes(std::string_view(watched_).substr(at))) {
            grammar_active_ = true;
        } else {
            grammar_.reset();   // see ConstrainFrom: the rest is free
        }
        watched_.clear();
        watched_.shrink_to_fit();
        return;
    }
}

void Continuation::PrimeWithPrompt(std::span<const int32_t> prompt) {
    for (int32_t id : prompt) detok_.Push(id);
}

NextToken Continuation::Next(std::span<const float> logits, std::vector<int32_t>* tokens) {
    NextToken out;
    if (grammar_active()) {
        if (absl::Status st = FillGrammarMask(); !st.ok()) return Failed(std::move(st));
        out.token = sampler_.SampleAllowed(logits, *tokens, mask_.words());
        // The mask allowed it, so the matcher takes it; anything else is a
        // bug, which fails this request rather than letting bad output out.
        if (out.token < 0 || !grammar_->AcceptToken(out.token)) {
            return Failed(absl::InternalError(absl::StrCat("structured output: the grammar refused token ", out.token,
                                                           " that its own mask allowed")));
        }
    } else {
        out.token = sampler_.Sample(logits, *tokens);
    }
    tokens->push_back(out.token);
    ++generated_;
    // EOS, and the vocabulary's other end-of-generation tokens (<|eot_id|>,
    // <|im_end|>, ...: what a chat model ends its turn with).
    const bool eos = tok_->IsEndOfGeneration(out.token) && !limits_.ignore_eos;
    if (grammar_ && !grammar_active_ && !tok_->IsEndOfGeneration(out.token)) WatchForTrigger(out.token);
    // The text is a whole sentence of the grammar and no byte may follow:
    // only an end token could come next, so the step that would sample it
    // is saved (and the answer is complete: kStop).
    const bool complete = grammar_active() && !eos && grammar_->IsTerminated();
    const bool length = generated_ >= limits_.max_tokens || static_cast<int32_t>(tokens->size()) >= limits_.max_context;
    if (!eos) out.text = stops_.Push(detok_.Push(out.token));   // the end token's text is not output
    if (stops_.stopped()) {
        out.finished = true;
        out.reason = FinishReason::kStop;
        Split(&out);
        return out;
    }
    if (!eos && !length && !complete) {
        Split(&out);
        return out;
    }
    // The end: what the decoder and the stop matcher still hold is output
    // too, unless it completes a stop string.
    ReleaseHeldText(&out);
    out.finished = true;
    out.reason = stops_.stopped() || complete ? FinishReason::kStop
                 : eos                        ? FinishReason::kEos
                                              : FinishReason::kLength;
    Split(&out);
    return out;
}

void Continuation::ReleaseHeldText(NextToken* out) {
    out->text += stops_.Push(detok_.Flush());
    if (!stops_.stopped()) out->text += stops_.Flush();
}

absl::Status Continuation::FillGrammarMask() {
    grammar_->FillNextTokenMask(&mask_);
    if (!grammar_->status().ok()) return grammar_->status();
    if (mask_.Count() == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "structured output: after ", generated_,
            " generated tokens the grammar allows no token of the model's vocabulary (it needs text no token spells)"));
    }
    return absl::OkStatus();
}

NextToken Continuation::Failed(absl::Status status) {
    // Text held back (a possible stop string's start, part of a UTF-8
    // sequence) is dropped: the output failed, and no token carries it.
    NextToken out;
    out.finished = true;
    out.reason = FinishReason::kError;
    out.status = std::move(status);
    return out;
}

void Continuation::Split(NextToken* out) {
    const bool was_inside = reasoning_.inside();
    ReasoningDelta d = reasoning_.Push(out->text);
    if (out->finished) {
        ReasoningDelta rest = reasoning_.Flush();
        d.reasoning += rest.reasoning;
        d.content += rest.content;
    }
    out->in_reasoning = was_inside || reasoning_.inside() || !d.reasoning.empty();
    out->text = std::move(d.content);
    out->reasoning = std::move(d.reasoning);
    if (!tool_stream_) return;
    ToolStreamDelta t = tool_stream_->Push(out->text);
    if (out->finished) {
        ToolStreamDelta rest = tool_stream_->Finish();
        t.content += rest.content;
        for (ToolCallDelta& c : rest.calls) t.calls.push_back(std::move(c));
        tool_calls_ = tool_stream_->calls();
    }
    out->text = std::move(t.content);
    out->tool_call_deltas = std::move(t.calls);
}

}  // namespace prepack

// Requests and streams: a request's C struct to the engine's, the pull API
// (prepack_generate_start / prepack_stream_next) and the push API
// (prepack_generate, a callback per event) built on it.
#include "capi/capi_internal.h"

namespace prepack::capi {

absl::StatusOr<Request> ToRequest(const prepack_request* in) {
    if (in == nullptr) return absl::InvalidArgumentError("request is NULL");
    prepack_request r;
    prepack_request_init(&r);
    if (!CopySized(in, &r)) return absl::InvalidArgumentError("request.struct_size is not set (call prepack_request_init)");
    Request out;
    if (r.chat != nullptr) {
        if (r.prompt != nullptr || r.prompt_tokens != nullptr) {
            return absl::InvalidArgumentError("request.chat is set: prompt and prompt_tokens must be NULL");
        }
        PP_ASSIGN_OR_RETURN(Conversation c, ToConversation(r.chat));
        out.chat = std::make_shared<const Conversation>(std::move(c));
    } else if (r.prompt_tokens != nullptr) {
        out.prompt_tokens.assign(r.prompt_tokens, r.prompt_tokens + r.n_prompt_tokens);
        if (out.prompt_tokens.empty()) return absl::InvalidArgumentError("prompt_tokens is empty");
    } else if (r.prompt != nullptr) {
        out.prompt = r.prompt;
    } else {
        return absl::InvalidArgumentError("request has neither prompt nor prompt_tokens");
    }
    out.add_bos = r.add_bos != 0;
    out.parse_special = r.parse_special != 0;
    out.max_tokens = r.max_tokens;
    out.sampling.temperature = r.temperature;
    out.sampling.top_k = r.top_k;
    out.sampling.top_p = r.top_p;
    out.sampling.min_p = r.min_p;
    out.sampling.repetition_penalty = r.repetition_penalty;
    out.sampling.seed = r.seed;
    if (r.n_stop > 0 && r.stop == nullptr) return absl::InvalidArgumentError("stop is NULL but n_stop > 0");
    for (size_t i = 0; i < r.n_stop; ++i) {
        if (r.stop[i] == nullptr) return absl::InvalidArgumentError(absl::StrCat("stop[", i, "] is NULL"));
        out.stop.emplace_back(r.stop[i]);
    }
    out.logprobs = r.logprobs;
    out.ignore_eos = r.ignore_eos != 0;
    out.deadline_ms = r.deadline_ms;
    out.lazy = r.lazy != 0;
    out.lazy_keep_ratio = r.lazy_keep_ratio;
    if (r.lazy_schedule != nullptr) out.lazy_schedule = r.lazy_schedule;
    out.lazy_revive_limit = r.lazy_revive_limit;
    out.prompt_logprobs = r.prompt_logprobs;
    PP_ASSIGN_OR_RETURN(out.grammar, RequestGrammar(r, in->struct_size));
    PP_ASSIGN_OR_RETURN(out.tool_choice, RequestToolChoice(r, in->struct_size));
    PP_RETURN_IF_ERROR(CheckToolChoice(&out));
    return out;
}

}  // namespace prepack::capi

using namespace prepack::capi;

namespace {

prepack_finish_reason ToC(prepack::FinishReason r) {
    switch (r) {
        case prepack::FinishReason::kStop: return PREPACK_FINISH_STOP;
        case prepack::FinishReason::kLength: return PREPACK_FINISH_LENGTH;
        case prepack::FinishReason::kEos: return PREPACK_FINISH_EOS;
        case prepack::FinishReason::kCancelled: return PREPACK_FINISH_CANCELLED;
        case prepack::FinishReason::kError: return PREPACK_FINISH_ERROR;
    }
    return PREPACK_FINISH_ERROR;
}

prepack_usage ToC(const prepack::Usage& u) {
    return {u.prompt_tokens,      u.completion_tokens,      u.queue_seconds * 1e3, u.time_to_first_token * 1e3,
            u.total_seconds * 1e3, u.cached_prompt_tokens, u.pruned_fraction};
}

// The first token's prompt scores, flattened into the stream's buffers.
void FillPromptLogprobs(const std::vector<prepack::Event::PromptLogprob>& in, prepack_stream* s, prepack_event* ev) {
    const size_t n_top = in.empty() ? 0 : in[0].top.size();
    s->prompt_token_ids.clear();
    s->prompt_logprobs.clear();
    s->prompt_top_ids.clear();
    s->prompt_top_logprobs.clear();
    for (const auto& p : in) {
        s->prompt_token_ids.push_back(p.token);
        s->prompt_logprobs.push_back(p.logprob);
        for (const auto& [id, lp] : p.top) {
            s->prompt_top_ids.push_back(id);
            s->prompt_top_logprobs.push_back(lp);
        }
    }
    ev->prompt_token_ids = s->prompt_token_ids.data();
    ev->prompt_logprobs = s->prompt_logprobs.data();
    ev->n_prompt_logprobs = in.size();
    ev->prompt_top_ids = s->prompt_top_ids.data();
    ev->prompt_top_logprobs = s->prompt_top_logprobs.data();
    ev->prompt_n_top = n_top;
}

// Fills the C view of `stream->current`; its pointers point into the stream.
void FillEvent(prepack_stream* s, prepack_event* out) {
    const prepack::Event& e = s->current;
    prepack_event ev;
    prepack_event_init(&ev);
    if (e.kind == prepack::Event::Kind::kToken) {
        ev.kind = PREPACK_EVENT_TOKEN;
        ev.token = e.token;
        ev.text = e.text.c_str();
        ev.text_len = e.text.size();
        ev.logprob = e.logprob;
        s->top_ids.clear();
        s->top_logprobs.clear();
        for (const auto& [id, lp] : e.top_logprobs) {
            s->top_ids.push_back(id);
            s->top_logprobs.push_back(lp);
        }
        ev.top_ids = s->top_ids.data();
        ev.top_logprobs = s->top_logprobs.data();
        ev.n_top = s->top_ids.size();
        ev.reasoning = e.reasoning.c_str();
        ev.reasoning_len = e.reasoning.size();
        if (e.prompt_logprobs) FillPromptLogprobs(*e.prompt_logprobs, s, &ev);
    } else {
        ev.kind = PREPACK_EVENT_END;
        ev.finish_reason = ToC(e.finish_reason);
        ev.status = static_cast<prepack_status>(e.status.code());
        s->message = std::string(e.status.message());
        ev.message = s->message.c_str();
        ev.usage = ToC(e.usage);
        ev.reasoning_tokens = e.usage.reasoning_tokens;
    }
    FillToolCalls(s, &ev);
    WriteSized(ev, out);
}

}  // namespace

extern "C" {

void prepack_request_init(prepack_request* r) {
    if (r == nullptr) return;
    std::memset(static_cast<void*>(r), 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->add_bos = 1;
    r->max_tokens = 128;
    r->temperature = 1.0f;
    r->top_p = 1.0f;
    r->repetition_penalty = 1.0f;
    r->prompt_logprobs = -1;
    r->tool_choice = PREPACK_TOOL_CHOICE_AUTO;
    r->parallel_tool_calls = 1;
}

void prepack_event_init(prepack_event* e) {
    if (e == nullptr) return;
    std::memset(static_cast<void*>(e), 0, sizeof *e);
    e->struct_size = sizeof *e;
    e->text = "";
    e->message = "";
    e->reasoning = "";
}

prepack_status prepack_generate_start(prepack_engine* engine, const prepack_request* request, prepack_stream** stream) {
    return Guard([&] {
        if (engine == nullptr || stream == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "engine or stream is NULL");
        auto r = ToRequest(request);
        if (!r.ok()) return FromStatus(r.status());
        auto s = engine->engine->Submit(std::move(*r));
        if (!s.ok()) return FromStatus(s.status());
        auto* out = new prepack_stream();
        out->stream = std::move(*s);
        *stream = out;
        return PREPACK_OK;
    });
}

prepack_status prepack_stream_next(prepack_stream* stream, int64_t timeout_ms, prepack_event* event) {
    return Guard([&] {
        if (stream == nullptr || event == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "stream or event is NULL");
        if (event->struct_size < sizeof(size_t)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "event.struct_size is not set (call prepack_event_init)");
        }
        if (stream->stream == nullptr) {
            if (!stream->error_pending) return Fail(PREPACK_OUT_OF_RANGE, "the stream has ended");
            stream->error_pending = false;
        } else if (stream->stream->finished()) {
            return Fail(PREPACK_OUT_OF_RANGE, "the stream has ended");
        } else if (!stream->stream->Next(&stream->current, timeout_ms)) {
            return Fail(PREPACK_DEADLINE_EXCEEDED, "no event within the timeout");
        }
        FillEvent(stream, event);
        return PREPACK_OK;
    });
}

prepack_status prepack_stream_cancel(prepack_stream* stream) {
    return Guard([&] {
        if (stream == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "stream is NULL");
        if (stream->stream != nullptr) stream->stream->Cancel();
        return PREPACK_OK;
    });
}

void prepack_stream_destroy(prepack_stream* stream) {
    Guard([&] {
        delete stream;   // ~Stream cancels a running request
        return PREPACK_OK;
    });
}

prepack_status prepack_generate(prepack_engine* engine, const prepack_request* request,
                                prepack_event_callback callback, void* user_data) {
    return Guard([&] {
        if (callback == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "callback is NULL");
        prepack_stream* s = nullptr;
        if (prepack_status st = prepack_generate_start(engine, request, &s); st != PREPACK_OK) return st;
        std::unique_ptr<prepack_stream, void (*)(prepack_stream*)> owned(s, prepack_stream_destroy);
        prepack_event ev;
        prepack_event_init(&ev);
        while (true) {
            if (prepack_status st = prepack_stream_next(s, -1, &ev); st != PREPACK_OK) return st;
            const int stop = callback(&ev, user_data);
            if (ev.kind == PREPACK_EVENT_END) {
                if (ev.status != PREPACK_OK) return Fail(ev.status, ev.message);
                return PREPACK_OK;
            }
            if (stop != 0) s->stream->Cancel();
        }
    });
}

}  // extern "C"

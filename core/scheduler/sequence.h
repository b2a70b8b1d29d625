// A request's state while the engine holds it: its tokens (prompt, then
// generated), how many of them have K/V in its block table, its output
// (sampling and stopping), its LazyLLM state, and its timings. Owned by
// shared pointers: the waiting queue, the scheduler's running set and a
// BatchLLM group may all refer to it. Touched by the engine thread only,
// except `stream`, whose own state is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/base/status.h"
#include "core/kv/kv_cache.h"
#include "core/lazyllm/lazy_schedule.h"
#include "core/lazyllm/lazy_state.h"
#include "core/request/continuation.h"
#include "core/request/request.h"

namespace prepack {

struct StreamState;   // the event queue a caller reads (engine/stream.h)

struct Sequence {
    Sequence(Request r, const Tokenizer& tok, int32_t max_context)
        : request(std::move(r)),
          output(tok, request.sampling, request.stop, {request.max_tokens, max_context, request.ignore_eos}) {}

    std::shared_ptr<StreamState> stream;   // null for internal sequences
    Request              request;
    std::vector<int32_t> tokens;           // prompt, then generated ids
    int32_t              n_prompt = 0;
    int32_t              num_computed = 0; // tokens whose K/V are in `kv`
    BlockTable           kv;
    Continuation         output;
    uint64_t             admit_order = 0;
    // An internal sequence computes K/V for others (a BatchLLM group's shared
    // prefix): it has no stream and samples nothing. Once its prompt is
    // computed it is done but keeps its blocks until the scheduler lets go;
    // `abandoned` asks the engine to end it early (nobody needs it any more).
    bool                 internal = false;
    bool                 abandoned = false;
    int32_t              cached_tokens = 0;     // prompt tokens taken from shared KV at admission
    int32_t              reasoning_tokens = 0;  // generated inside a <think> section
    // Request::prompt_logprobs: filled as prefill chunks are computed (by
    // position, so a recompute after preemption rewrites the same values),
    // handed to the first token's event.
    std::shared_ptr<std::vector<Event::PromptLogprob>> prompt_logprobs;
    // (Until its first token: a recompute after that scores nothing.)
    bool wants_prompt_logprobs() const { return request.prompt_logprobs >= 0 && !internal && generated() == 0; }
    // LazyLLM: the request's schedule, and its state while it holds KV.
    std::optional<LazySchedule> lazy_schedule;
    int32_t                     lazy_revive_limit = -1;   // resolved (negative: no bound)
    LazyScoring                 lazy_scoring;
    std::unique_ptr<LazyState>  lazy;
    double               prompt_work_fraction = 1.0;   // of its prefill
    std::vector<double>  prompt_layer_fractions;
    absl::Status         error;             // set by the scheduler when it can never go on: the engine ends it with this
    bool                 in_plan = false;
    bool                 done = false;      // finished (or, internal, computed): leaves the running set
    int32_t              planned = 0;       // tokens fed in the current step
    double               t_submit = 0.0, t_scheduled = -1.0, t_first_token = -1.0, deadline = 0.0;

    int32_t remaining() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
    int32_t generated() const { return output.generated(); }
};

}  // namespace prepack

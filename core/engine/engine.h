// The engine: one model, one KV pool, one scheduler thread, and any number of
// client threads submitting requests. Requests from all threads are batched
// together: every step of the scheduler thread plans one forward pass over
// the decode tokens of the running requests and prefill chunks of new ones
// (continuous batching with chunked prefill, vLLM-style: each request's
// computed-token count catches up with its token count), runs it, and
// applies the result: samples each request's next token and streams it.
//
// What runs in a step, what is shared and who is preempted when KV memory
// runs out belong to the scheduling policy (core/scheduler, core/batchllm);
// the forward pass belongs to the device (core/forward). The engine owns the
// loop, the streams, deadlines and cancellation.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

#include "core/engine/policies.h"
#include "core/engine/stream.h"
#include "core/forward/backend.h"
#include "core/request/grammar_compiler.h"
#include "core/request/request.h"
#include "core/scheduler/scheduler.h"
#include "core/scheduler/sequence_queue.h"

namespace prepack {

struct EngineOptions {
    std::string model;                   // GGUF path or synthetic:NAME
    Device      device = Device::kCpu;   // where steps run (cuda: weights, KV and activations on the GPU)
    cpu::DType  dtype = cpu::DType::kF32;   // weight matrices: f32 or bf16
    std::optional<cpu::DType> kv_dtype;     // KV cache elements; unset = as `dtype` (vLLM's "auto")
    int32_t     threads = 0;             // CPU threads (0 = all)
    uint64_t    kv_budget_bytes = 0;     // 0 = a quarter of free memory, at most 4 GiB, at least one context
    int32_t     kv_block_size = 16;
    int32_t     max_batch_tokens = 1024; // tokens per forward step
    int32_t     max_running = 64;        // sequences decoding at once
    SchedulePolicy policy = SchedulePolicy::kFcfs;
    // A Jinja chat template that replaces the model's own (its
    // tokenizer.chat_template) for chat requests; "" = the model's.
    std::string chat_template_file;
};

struct EngineStats {
    uint64_t requests_submitted = 0;
    uint64_t requests_finished = 0;      // any reason
    uint64_t requests_running = 0;
    uint64_t requests_waiting = 0;
    uint64_t prompt_tokens = 0;          // of finished and running requests
    uint64_t prompt_tokens_computed = 0; // prefill tokens that went through the model
    uint64_t generated_tokens = 0;
    uint64_t preemptions = 0;
    uint64_t prefix_tokens_recomputed = 0;   // shared-prefix tokens computed twice (BatchLLM pins them: 0)
    uint64_t cascade_decode_tokens = 0;  // decode tokens whose attention read a shared prefix once per group
    uint64_t steps = 0;
    uint64_t kv_bytes_total = 0;
    uint64_t kv_bytes_used = 0;          // held by requests (and group prefixes)
    uint64_t kv_bytes_cached = 0;        // held only by the LRU prefix cache (evictable)
    double   prefix_saving = 0.0;        // fraction of prompt tokens not recomputed (prefix sharing)
    double   prompt_fraction_computed = 1.0;   // LazyLLM: fraction of prompt token-layers computed
    uint64_t prompt_token_layers = 0;          // prefilled prompt tokens x layers
    uint64_t prompt_token_layers_computed = 0; // of which the forward pass computed (LazyLLM skips some)
    // Packing: steps that carried prompt tokens, every token they carried
    // (prompt and decode) and their token budget (max_batch_tokens each, or
    // the step's tokens when a lone LazyLLM prompt outgrew it). Their ratio
    // is how full prefill steps were packed.
    uint64_t prefill_steps = 0;
    uint64_t prefill_step_tokens = 0;
    uint64_t prefill_step_capacity = 0;
    // Prefix sharing, counted once per finished request that reached a step
    // (so it equals the sum of what their usage reported): its prompt
    // tokens, those it read from shared KV (a BatchLLM group's prefix or the
    // LRU prefix cache), and how many requests read any.
    uint64_t prefix_query_tokens = 0;
    uint64_t prefix_hit_tokens = 0;
    uint64_t prefix_query_requests = 0;
    uint64_t prefix_hit_requests = 0;
    // Structured output: compiled grammars reused from the engine's cache
    // (or by waiting for another request's compile of the same spec),
    // grammars compiled, and the seconds spent compiling (on the callers'
    // threads, never the engine's loop).
    uint64_t grammar_cache_hits = 0;
    uint64_t grammar_cache_misses = 0;
    double   grammar_compile_seconds = 0.0;
};

class Engine {
public:
    // Loads the model and starts the scheduler thread.
    static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options);
    // Stops the scheduler; unfinished requests end with CANCELLED.
    ~Engine();

    // Validates and queues a request. INVALID_ARGUMENT (empty prompt, bad
    // sampling, ids outside the vocabulary, prompt at or past the context,
    // a grammar its front end refuses, a grammar with ignore_eos; tools
    // (tool_choice other than none) with a grammar or ignore_eos, bad tools,
    // tool_choice required or a function without tools),
    // RESOURCE_EXHAUSTED (the prompt can never fit the KV budget),
    // UNAVAILABLE (engine shutting down).
    absl::StatusOr<std::unique_ptr<Stream>> Submit(Request request);

    // Submits an offline batch. Each element is that request's stream or its
    // own submission error (one bad request does not fail the others). Under
    // the BatchLLM policy the batch is grouped by shared prefix first (a
    // prefix tree over all prompts): each group's prefix is computed once,
    // pinned while members still wait, shared by reference, and groups start
    // in order of decode/prompt ratio, highest first. Under LRU they share
    // through the prefix cache; under FCFS nothing is shared. Requests with
    // one grammar spec compile it once; each gets its own matcher.
    std::vector<absl::StatusOr<std::unique_ptr<Stream>>> SubmitBatch(std::vector<Request> requests);

    // A conversation as a chat request's prompt: the rendered text, which
    // bytes are message content, and the ids (BOS as the vocabulary says).
    // Errors as a chat request's submission.
    absl::StatusOr<ChatPrompt> RenderChat(const Conversation& conversation, bool add_special = true) const;

    EngineStats Stats() const;
    const Model& model() const { return *model_; }
    const ChatTemplates& chat_templates() const { return chat_templates_; }

private:
    Engine() = default;
    absl::StatusOr<std::shared_ptr<Sequence>> MakeSequence(Request request) const;
    // A chat request with tools under tool_choice auto, required or a
    // function: its setup (tool_calls.h; the conversation to render may be
    // a copy holding the generic format's system prompt). nullopt when the
    // tools are only rendered (no tools, tool_choice none, not chat).
    absl::StatusOr<std::optional<ToolCallSetup>> ToolCallsFor(const Request& request) const;
    absl::Status Enqueue(std::vector<std::shared_ptr<Sequence>> seqs);
    void Loop();
    // One turn of the loop: ends cancelled and expired requests, then
    // plan -> run -> apply.
    void Step();
    void EndCancelledAndExpired();
    void Apply(const ScheduledStep& step, const StepOutput& out);
    // Samples `seq`'s next token from its logits row and streams it.
    void EmitToken(Sequence& seq, std::span<const float> logits);
    // Request::prompt_logprobs: the log-probs of the prompt tokens that
    // `rows` rows of logits, from position `first_position` on, predict.
    void ScorePrompt(Sequence& seq, int32_t first_position, const float* logits, int32_t rows);
    void Finish(Sequence& seq, FinishReason reason, absl::Status status);
    void PublishKvStats();   // called with mu_ held

    EngineOptions                options_;
    std::unique_ptr<Model>       model_;
    ChatTemplates                chat_templates_;
    // Structured output: the model's token trie (built on the first
    // constrained request) and compiled grammars. Used by MakeSequence on
    // the submitting threads; thread-safe.
    std::unique_ptr<GrammarCompiler> grammars_;
    // Submissions with tools so far: with the request's seed, what makes
    // each request's call ids differ.
    mutable std::atomic<uint64_t> tool_requests_{0};
    std::unique_ptr<KvBlockPool> pool_;
    std::unique_ptr<StepRunner>  forward_;
    SequenceQueue                waiting_;
    std::unique_ptr<Scheduler>   scheduler_;   // scheduler thread only

    mutable std::mutex           mu_;
    std::condition_variable      wake_;
    bool                         stopping_ = false;   // guarded by mu_
    EngineStats                  stats_;              // guarded by mu_
    std::thread                  thread_;
};

}  // namespace prepack

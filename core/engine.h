// The engine: one model, one KV pool, one scheduler thread, and any number of
// client threads submitting requests. Requests from all threads are batched
// together: every step of the scheduler thread runs one forward pass over the
// decode tokens of the running requests and prefill chunks of new ones
// (continuous batching with chunked prefill, vLLM-style: each request's
// computed-token count catches up with its token count).
//
// KV admission is by memory: a request starts when the blocks of its prompt
// fit; when decode runs out of blocks, the most recently admitted request is
// preempted (its blocks freed, recomputed later from its tokens), so the
// engine never deadlocks and never corrupts another request's cache.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/forward.h"
#include "core/prefix_cache.h"
#include "core/request.h"

namespace prepack {

// How the engine shares prompt prefixes between requests.
enum class SchedulePolicy {
    kFcfs,       // first come, first served; nothing shared (baseline)
    kLru,        // + a vLLM-style block-hash prefix cache with LRU eviction
    kBatchLlm,   // offline batches: global prefix tree, groups scheduled together (BatchLLM)
};
const char* SchedulePolicyName(SchedulePolicy p);
absl::StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name);

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
    uint64_t cascade_decode_tokens = 0;  // decode tokens whose attention read a shared prefix once per group
    uint64_t steps = 0;
    uint64_t kv_bytes_total = 0;
    uint64_t kv_bytes_used = 0;          // held by requests (and group prefixes)
    uint64_t kv_bytes_cached = 0;        // held only by the LRU prefix cache (evictable)
    double   prefix_saving = 0.0;        // fraction of prompt tokens not recomputed (prefix sharing)
    double   prompt_fraction_computed = 1.0;   // LazyLLM: fraction of prompt token-layers computed
    uint64_t prompt_token_layers = 0;          // prefilled prompt tokens x layers
    uint64_t prompt_token_layers_computed = 0; // of which the forward pass computed (LazyLLM skips some)
};

class Engine;

// One request's event stream. Thread-safe: Next() on one thread, Cancel()
// from any thread. Destroying a stream cancels its request.
class Stream {
public:
    ~Stream();
    // Waits up to `timeout_ms` (< 0: forever) for the next event. Returns
    // false on timeout. After the finish event every call returns false at once.
    bool Next(Event* event, int64_t timeout_ms);
    // Asks the engine to stop the request; its finish event (CANCELLED)
    // follows promptly and its KV blocks are freed.
    void Cancel();
    bool finished() const;

private:
    friend class Engine;
    struct State;
    explicit Stream(std::shared_ptr<State> state) : state_(std::move(state)) {}
    std::shared_ptr<State> state_;
};

class Engine {
public:
    // Loads the model and starts the scheduler thread.
    static absl::StatusOr<std::unique_ptr<Engine>> Create(const EngineOptions& options);
    // Stops the scheduler; unfinished requests end with CANCELLED.
    ~Engine();

    // Validates and queues a request. INVALID_ARGUMENT (empty prompt, bad
    // sampling, ids outside the vocabulary, prompt at or past the context),
    // RESOURCE_EXHAUSTED (the prompt can never fit the KV budget),
    // UNAVAILABLE (engine shutting down).
    absl::StatusOr<std::unique_ptr<Stream>> Submit(Request request);

    // Submits an offline batch. Each element is that request's stream or its
    // own submission error (one bad request does not fail the others). Under
    // the BatchLLM policy the batch is grouped by shared prefix first (a
    // prefix tree over all prompts): each group's prefix is computed once,
    // pinned while members still wait, shared by reference, and groups start
    // in order of decode/prompt ratio, highest first. Under LRU they share
    // through the prefix cache; under FCFS nothing is shared.
    std::vector<absl::StatusOr<std::unique_ptr<Stream>>> SubmitBatch(std::vector<Request> requests);

    EngineStats Stats() const;
    const Model& model() const { return *model_; }

private:
    struct Seq;
    Engine() = default;
    absl::StatusOr<std::shared_ptr<Seq>> MakeSeq(Request request) const;
    absl::Status Enqueue(std::vector<std::shared_ptr<Seq>> seqs);
    bool Admit(const std::shared_ptr<Seq>& s);
    void LeaveGroup(Seq& member);
    bool ReserveOrFree(std::vector<std::shared_ptr<Seq>>& running, Seq* s, int32_t n_tokens);
    void Loop();
    void Step(std::vector<std::shared_ptr<Seq>>& running);
    bool Schedule(std::vector<std::shared_ptr<Seq>>& running, StepPlan* plan, std::vector<Seq*>* in_plan);
    void Preempt(std::vector<std::shared_ptr<Seq>>& running, Seq* seq);
    void Finish(Seq& seq, FinishReason reason, absl::Status status);
    void AfterForward(const std::vector<Seq*>& in_plan, const StepOutput& out);
    void PublishKvStats(size_t running);   // called with mu_ held

    EngineOptions                options_;
    std::unique_ptr<Model>       model_;
    std::unique_ptr<KvBlockPool> pool_;
    std::unique_ptr<StepRunner>  forward_;
    std::unique_ptr<PrefixCache> cache_;       // LRU policy only; scheduler thread only

    mutable std::mutex                mu_;
    std::condition_variable           wake_;
    std::deque<std::shared_ptr<Seq>>  waiting_;   // guarded by mu_
    bool                              stopping_ = false;
    EngineStats                       stats_;     // guarded by mu_
    uint64_t                          admit_counter_ = 0;   // scheduler thread only
    std::thread                       thread_;
};

}  // namespace prepack

#include "core/engine.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/lazy_state.h"
#include "core/prefix_tree.h"
#include "core/runtime.h"
#include "core/stop_strings.h"

namespace prepack {

const char* SchedulePolicyName(SchedulePolicy p) {
    switch (p) {
        case SchedulePolicy::kFcfs: return "fcfs";
        case SchedulePolicy::kLru: return "lru";
        case SchedulePolicy::kBatchLlm: return "batchllm";
    }
    return "unknown";
}

absl::StatusOr<SchedulePolicy> ParseSchedulePolicy(std::string_view name) {
    for (SchedulePolicy p : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        if (name == SchedulePolicyName(p)) return p;
    }
    return absl::InvalidArgumentError(
        absl::StrCat("unknown policy '", std::string(name), "' (use fcfs, lru or batchllm)"));
}

// ---------------------------------------------------------------------------
// Stream: the per-request event queue shared by the engine thread (producer)
// and one consumer thread.

struct Stream::State {
    std::mutex              mu;
    std::condition_variable cv;
    std::deque<Event>       events;
    bool                    finish_queued = false;
    bool                    finish_delivered = false;
    std::atomic<bool>       cancel{false};

    void Push(Event e) {
        {
            std::lock_guard<std::mutex> lock(mu);
            if (finish_queued) return;
            finish_queued = e.kind == Event::Kind::kFinish;
            events.push_back(std::move(e));
        }
        cv.notify_all();
    }
};

Stream::~Stream() { Cancel(); }

bool Stream::Next(Event* event, int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (state_->finish_delivered) return false;
    auto ready = [&] { return !state_->events.empty(); };
    if (timeout_ms < 0) {
        state_->cv.wait(lock, ready);
    } else if (!state_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
        return false;
    }
    *event = std::move(state_->events.front());
    state_->events.pop_front();
    if (event->kind == Event::Kind::kFinish) state_->finish_delivered = true;
    return true;
}

void Stream::Cancel() { state_->cancel.store(true, std::memory_order_relaxed); }

bool Stream::finished() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->finish_delivered;
}

namespace {

// The `n` most likely ids under log softmax(logits), best first.
std::vector<std::pair<int32_t, float>> TopLogprobs(std::span<const float> logits, int32_t n) {
    std::vector<int32_t> ids(logits.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    n = std::min<int32_t>(n, static_cast<int32_t>(ids.size()));
    std::partial_sort(ids.begin(), ids.begin() + n, ids.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
    float max = logits[ids[0]];
    double sum = 0.0;
    for (float x : logits) sum += std::exp(double(x) - max);
    const float log_z = max + static_cast<float>(std::log(sum));
    std::vector<std::pair<int32_t, float>> out;
    for (int32_t i = 0; i < n; ++i) out.emplace_back(ids[i], logits[ids[i]] - log_z);
    return out;
}

}  // namespace

// ---------------------------------------------------------------------------
// Seq: the engine thread's view of one request.

struct Engine::Seq {
    std::shared_ptr<Stream::State> stream;
    Request              request;
    std::vector<int32_t> tokens;          // prompt, then generated ids
    int32_t              n_prompt = 0;
    int32_t              num_computed = 0;  // tokens whose K/V are in `kv`
    int32_t              generated = 0;
    BlockTable           kv;
    Sampler              sampler;
    StreamDecoder        detok;
    StopMatcher          stops;
    uint64_t             admit_order = 0;
    // BatchLLM groups: a prefix seq (no stream) computes a group's shared
    // prefix once; members wait for it, then share its blocks.
    bool                 is_prefix = false;
    int32_t              members_waiting = 0;   // prefix seq: members not yet admitted
    std::shared_ptr<Seq> prefix;                // member: its group's prefix seq
    int32_t              cached_tokens = 0;     // prompt tokens taken from shared KV at admission
    // LazyLLM: the request's schedule, and its state while it holds KV.
    std::optional<LazySchedule> lazy_schedule;
    std::unique_ptr<LazyState>  lazy;
    double               prompt_work_fraction = 1.0;   // of its prefill
    std::vector<double>  prompt_layer_fractions;
    bool                 in_plan = false;
    bool                 done = false;      // its finish event is queued
    int32_t              planned = 0;       // tokens fed in the current step
    double               t_submit = 0.0, t_scheduled = -1.0, t_first_token = -1.0, deadline = 0.0;

    Seq(Request r, const Tokenizer& tok)
        : request(std::move(r)), sampler(request.sampling), detok(tok), stops(request.stop) {}
    int32_t remaining() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
};

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(const EngineOptions& options) {
    if (options.max_batch_tokens < 1) {
        return absl::InvalidArgumentError(absl::StrCat("max_batch_tokens must be >= 1, got ", options.max_batch_tokens));
    }
    if (options.max_running < 1) {
        return absl::InvalidArgumentError(absl::StrCat("max_running must be >= 1, got ", options.max_running));
    }
    std::unique_ptr<Engine> e(new Engine());
    e->options_ = options;
    SetNumThreads(options.threads);
    PP_RETURN_IF_ERROR(CheckDevice(options.device));   // before loading a model it could not run
    PP_ASSIGN_OR_RETURN(e->model_, Model::Load(options.model, options.dtype));
    const ModelConfig& c = e->model_->config();
    const cpu::DType kv_dtype = options.kv_dtype.value_or(options.dtype);
    PP_ASSIGN_OR_RETURN(Backend backend, CreateBackend(*e->model_, options.device, options.kv_block_size,
                                                       options.kv_budget_bytes, c.max_context, kv_dtype));
    e->pool_ = std::move(backend.pool);
    e->forward_ = std::move(backend.runner);
    if (options.policy == SchedulePolicy::kLru) e->cache_ = std::make_unique<PrefixCache>(*e->pool_);
    e->stats_.kv_bytes_total = static_cast<uint64_t>(e->pool_->num_blocks()) * e->pool_->bytes_per_block();
    e->thread_ = std::thread([raw = e.get()] { raw->Loop(); });
    return e;
}

Engine::~Engine() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
}

absl::StatusOr<std::shared_ptr<Engine::Seq>> Engine::MakeSeq(Request request) const {
    PP_RETURN_IF_ERROR(ValidateSamplingParams(request.sampling));
    if (request.max_tokens < 1) {
        return absl::InvalidArgumentError(absl::StrCat("max_tokens must be >= 1, got ", request.max_tokens));
    }
    if (request.logprobs < 0 || request.logprobs > kMaxLogprobs) {
        return absl::InvalidArgumentError(
            absl::StrCat("logprobs must be in [0, ", kMaxLogprobs, "], got ", request.logprobs));
    }
    if (request.deadline_ms < 0) {
        return absl::InvalidArgumentError(absl::StrCat("deadline_ms must be >= 0, got ", request.deadline_ms));
    }
    std::optional<LazySchedule> lazy;
    if (request.lazy) {
        PP_ASSIGN_OR_RETURN(lazy, ResolveLazySchedule(request.lazy_schedule, request.lazy_keep_ratio,
                                                      model_->config().n_layers));
    } else if (!request.lazy_schedule.empty()) {
        return absl::InvalidArgumentError("lazy_schedule is set but lazy pruning is off");
    }
    auto seq = std::make_shared<Seq>(std::move(request), model_->tokenizer());
    seq->lazy_schedule = std::move(lazy);
    Request& r = seq->request;
    PP_ASSIGN_OR_RETURN(seq->tokens, ResolvePrompt(*model_, r.prompt, r.prompt_tokens, r.add_bos));
    seq->n_prompt = static_cast<int32_t>(seq->tokens.size());
    const int64_t blocks = (int64_t{seq->n_prompt} + 1 + pool_->block_size() - 1) / pool_->block_size();
    if (blocks > pool_->num_blocks()) {
        return absl::ResourceExhaustedError(absl::StrCat("prompt of ", seq->n_prompt,
                                                         " tokens needs more KV memory than the engine's whole budget (",
                                                         pool_->num_blocks() * int64_t{pool_->block_size()}, " tokens)"));
    }
    for (int32_t id : seq->tokens) seq->detok.Push(id);   // the prompt's text is the caller's already
    seq->stream = std::make_shared<Stream::State>();
    seq->t_submit = NowSeconds();
    seq->deadline = r.deadline_ms > 0 ? seq->t_submit + r.deadline_ms / 1000.0 : 0.0;
    return seq;
}

absl::Status Engine::Enqueue(std::vector<std::shared_ptr<Seq>> seqs) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return absl::UnavailableError("engine is shutting down");
        for (auto& s : seqs) {
            if (!s->is_prefix) {
                ++stats_.requests_submitted;
                stats_.prompt_tokens += s->n_prompt;
            }
            waiting_.push_back(std::move(s));
        }
    }
    wake_.notify_one();
    return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Stream>> Engine::Submit(Request request) {
    PP_ASSIGN_OR_RETURN(std::shared_ptr<Seq> seq, MakeSeq(std::move(request)));
    std::unique_ptr<Stream> stream(new Stream(seq->stream));
    PP_RETURN_IF_ERROR(Enqueue({seq}));
    return stream;
}

std::vector<absl::StatusOr<std::unique_ptr<Stream>>> Engine::SubmitBatch(std::vector<Request> requests) {
    std::vector<absl::StatusOr<std::unique_ptr<Stream>>> out;
    std::vector<std::shared_ptr<Seq>> valid;
    std::vector<std::vector<int32_t>> prompts;
    std::vector<int32_t> max_tokens;
    for (Request& r : requests) {
        absl::StatusOr<std::shared_ptr<Seq>> seq = MakeSeq(std::move(r));
        if (!seq.ok()) {
            out.push_back(seq.status());
            continue;
        }
        out.push_back(std::unique_ptr<Stream>(new Stream((*seq)->stream)));
        prompts.push_back((*seq)->tokens);
        max_tokens.push_back((*seq)->request.max_tokens);
        valid.push_back(std::move(*seq));
    }
    std::vector<std::shared_ptr<Seq>> order;
    if (options_.policy != SchedulePolicy::kBatchLlm) {
        order = valid;
    } else {
        Grouping grouping = GroupByPrefix(prompts);
        OrderByDecodeRatio(grouping, prompts, max_tokens);
        for (const PrefixGroup& g : grouping.groups) {
            std::shared_ptr<Seq> prefix;
            if (g.prefix_len > 0 && g.members.size() > 1) {
                // An internal sequence with no stream of its own computes the prefix once.
                const Seq& first = *valid[g.members[0]];
                Request pr;
                pr.prompt_tokens.assign(first.tokens.begin(), first.tokens.begin() + g.prefix_len);
                prefix = std::make_shared<Seq>(pr, model_->tokenizer());
                prefix->tokens = pr.prompt_tokens;
                prefix->n_prompt = g.prefix_len;
                prefix->is_prefix = true;
                prefix->members_waiting = static_cast<int32_t>(g.members.size());
                prefix->stream = std::make_shared<Stream::State>();
                prefix->t_submit = NowSeconds();
                order.push_back(prefix);
            }
            for (int32_t m : g.members) {
                valid[m]->prefix = prefix;
                order.push_back(valid[m]);
            }
        }
    }
    if (absl::Status st = Enqueue(std::move(order)); !st.ok()) {
        for (auto& o : out) {
            if (o.ok()) o = st;
        }
    }
    return out;
}

EngineStats Engine::Stats() const {
    std::lock_guard<std::mutex> lock(mu_);
    EngineStats s = stats_;
    s.requests_waiting = waiting_.size();
    // Prompt tokens not recomputed thanks to shared prefixes (exact once
    // every submitted request has been prefilled, e.g. after a batch).
    if (s.prompt_tokens > 0 && s.prompt_tokens_computed <= s.prompt_tokens) {
        s.prefix_saving = 1.0 - double(s.prompt_tokens_computed) / double(s.prompt_tokens);
    }
    if (s.prompt_token_layers > 0) {
        s.prompt_fraction_computed = double(s.prompt_token_layers_computed) / double(s.prompt_token_layers);
    }
    return s;
}

void Engine::Finish(Seq& seq, FinishReason reason, absl::Status status) {
    seq.done = true;
    seq.lazy.reset();   // its aux cache blocks go back to the pool
    seq.kv.Release();
    Event e;
    e.kind = Event::Kind::kFinish;
    e.finish_reason = reason;
    e.status = std::move(status);
    const double now = NowSeconds();
    e.usage.prompt_tokens = seq.n_prompt;
    e.usage.completion_tokens = seq.generated;
    e.usage.queue_seconds = seq.t_scheduled >= 0 ? seq.t_scheduled - seq.t_submit : now - seq.t_submit;
    e.usage.time_to_first_token = seq.t_first_token >= 0 ? seq.t_first_token - seq.t_submit : 0.0;
    e.usage.total_seconds = now - seq.t_submit;
    e.usage.cached_prompt_tokens = seq.cached_tokens;
    e.usage.pruned_fraction = 1.0 - seq.prompt_work_fraction;
    e.usage.prompt_layer_fractions = seq.prompt_layer_fractions;
    seq.stream->Push(std::move(e));
    std::lock_guard<std::mutex> lock(mu_);
    if (!seq.is_prefix) ++stats_.requests_finished;
}

void Engine::Preempt(std::vector<std::shared_ptr<Seq>>& running, Seq* victim) {
    victim->lazy.reset();
    victim->kv.Release();
    victim->num_computed = 0;
    auto it = std::find_if(running.begin(), running.end(), [&](const auto& s) { return s.get() == victim; });
    std::shared_ptr<Seq> keep = *it;
    running.erase(it);
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.push_front(std::move(keep));   // first in line when memory frees up
    ++stats_.preemptions;
}

void Engine::LeaveGroup(Seq& member) {
    Seq& p = *member.prefix;
    if (--p.members_waiting == 0) {
        if (p.done) {
            p.kv.Release();
        } else {
            p.stream->cancel.store(true, std::memory_order_relaxed);   // still computing: stop it
        }
    }
    member.prefix.reset();
}

bool Engine::ReserveOrFree(std::vector<std::shared_ptr<Seq>>& running, Seq* s, int32_t n_tokens) {
    while (!s->kv.Reserve(*pool_, n_tokens).ok()) {
        // Out of blocks: first give back cached prefixes nobody uses, then
        // preempt the newest request that is not in this step.
        if (cache_ && cache_->Evict(1) > 0) continue;
        Seq* victim = nullptr;
        for (auto& r : running) {
            if (!r->in_plan && r.get() != s && (!victim || r->admit_order > victim->admit_order)) victim = r.get();
        }
        if (victim == nullptr) return false;
        Preempt(running, victim);
    }
    return true;
}

bool Engine::Admit(const std::shared_ptr<Seq>& s) {
    // Reuse what is already computed: a BatchLLM group's prefix, or cached blocks.
    if (s->prefix && s->num_computed == 0) {
        Seq& p = *s->prefix;
        s->kv.Share(*pool_, p.kv.blocks(), p.n_prompt);
        s->num_computed = p.n_prompt;
        s->cached_tokens = p.n_prompt;
    } else if (cache_ && s->num_computed == 0) {
        const std::vector<int32_t> blocks = cache_->Lookup(s->tokens, s->n_prompt);
        if (!blocks.empty()) {
            const int32_t n = static_cast<int32_t>(blocks.size()) * pool_->block_size();
            s->kv.Share(*pool_, blocks, n);
            s->num_computed = n;
            s->cached_tokens = n;
        }
    }
    // Memory-centric admission: the rest of its prompt and its first token
    // must fit, and under LazyLLM an aux cache for every token it computes
    // (taken up front, so pruning never depends on what else runs).
    const ModelConfig& c = model_->config();
    if (s->lazy_schedule) {
        s->lazy = std::make_unique<LazyState>(*pool_, c.n_layers, c.dim, *s->lazy_schedule, s->num_computed);
        s->lazy->set_n_prompt(s->n_prompt);
    }
    const int32_t bs = pool_->block_size();
    const int64_t aux_cells = static_cast<int64_t>(s->tokens.size()) - s->num_computed;
    const int64_t need = (static_cast<int64_t>(s->tokens.size()) + 1 + bs - 1) / bs -
                         static_cast<int64_t>(s->kv.blocks().size()) + 1 /* copy on write */ +
                         (s->lazy ? s->lazy->aux().BlocksFor(aux_cells) : 0);
    if (need > pool_->num_free() && cache_) cache_->Evict(static_cast<int32_t>(need - pool_->num_free()));
    if (need > pool_->num_free() || (s->lazy && !s->lazy->aux().Reserve(aux_cells).ok())) {
        s->lazy.reset();
        s->kv.Release();   // give the shared blocks back; it retries in a later step
        s->num_computed = 0;
        return false;
    }
    return true;
}

bool Engine::Schedule(std::vector<std::shared_ptr<Seq>>& running, StepPlan* plan, std::vector<Seq*>* in_plan) {
    int32_t budget = options_.max_batch_tokens;
    auto add = [&](Seq* s, int32_t k) {
        s->in_plan = true;
        s->planned = k;
        if (s->t_scheduled < 0) s->t_scheduled = NowSeconds();
        const bool last = s->num_computed + k == static_cast<int32_t>(s->tokens.size()) && !s->is_prefix;
        plan->Add(&s->kv, s->tokens.data() + s->num_computed, k, s->num_computed,
                  last ? LogitsWanted::kLast : LogitsWanted::kNone);
        plan->seqs.back().lazy = s->lazy.get();
        in_plan->push_back(s);
        budget -= k;
    };
    // How much of `s` to feed now. LazyLLM scores a prompt by its last
    // token, so a pruned prompt goes in one piece: alone in a step if it is
    // longer than the step budget, or it waits for a step with room.
    // After a preemption its generated tokens are fed back one per step, as
    // they were decoded, so the recomputed cache (and what it pruned) is the
    // one it had.
    auto chunk = [&](const Seq* s) {
        if (s->lazy && s->num_computed < s->n_prompt) {
            const int32_t k = s->n_prompt - s->num_computed;
            return k <= budget || budget == options_.max_batch_tokens ? k : 0;
        }
        return s->lazy ? std::min(1, budget) : std::min(s->remaining(), budget);
    };
    // Decode tokens first (latency), then prefill chunks, each oldest first.
    std::vector<Seq*> order;
    for (auto& s : running) order.push_back(s.get());
    std::stable_sort(order.begin(), order.end(), [](Seq* a, Seq* b) {
        return (a->remaining() == 1) > (b->remaining() == 1);
    });
    for (Seq* s : order) {
        if (budget <= 0) break;
        if (std::none_of(running.begin(), running.end(), [&](const auto& r) { return r.get() == s; })) continue;
        const int32_t k = chunk(s);
        if (k <= 0 || !ReserveOrFree(running, s, s->num_computed + k)) continue;
        add(s, k);
    }
    // Admit waiting requests in queue order while their prompts fit in
    // memory. A group member waits for its prefix to be computed; others
    // behind it may go first.
    std::vector<std::shared_ptr<Seq>> snapshot;
    {
        std::lock_guard<std::mutex> lock(mu_);
        snapshot.assign(waiting_.begin(), waiting_.end());
    }
    for (const std::shared_ptr<Seq>& s : snapshot) {
        if (budget <= 0 || static_cast<int32_t>(running.size()) >= options_.max_running) break;
        if (s->prefix && s->prefix->num_computed < s->prefix->n_prompt) continue;
        if (!Admit(s)) break;
        {
            std::lock_guard<std::mutex> lock(mu_);
            auto it = std::find(waiting_.begin(), waiting_.end(), s);
            if (it == waiting_.end()) continue;   // cancelled meanwhile
            waiting_.erase(it);
        }
        // Once every member holds its own references, the prefix seq lets go:
        // the blocks live exactly as long as the group's last member.
        if (s->prefix) LeaveGroup(*s);
        s->admit_order = ++admit_counter_;
        running.push_back(s);
        const int32_t k = chunk(s.get());
        if (k > 0 && ReserveOrFree(running, s.get(), s->num_computed + k)) add(s.get(), k);
    }
    return !plan->seqs.empty();
}

void Engine::AfterForward(const std::vector<Seq*>& in_plan, const StepOutput& out) {
    const ModelConfig& c = model_->config();
    const Tokenizer& tok = model_->tokenizer();
    uint64_t prefill = 0, generated = 0, token_layers = 0, token_layers_computed = 0;
    for (size_t i = 0; i < in_plan.size(); ++i) {
        Seq& s = *in_plan[i];
        s.in_plan = false;
        const int32_t prompt_part = s.num_computed < s.n_prompt ? std::min(s.planned, s.n_prompt - s.num_computed) : 0;
        prefill += prompt_part;
        s.num_computed += s.planned;
        if (prompt_part > 0 && s.num_computed >= s.n_prompt && s.lazy) {
            s.prompt_work_fraction = s.lazy->PromptWorkFraction();
            s.prompt_layer_fractions = s.lazy->PromptLayerFractions();
        }
        const double fraction = s.lazy ? s.prompt_work_fraction : 1.0;
        token_layers += uint64_t(prompt_part) * c.n_layers;
        token_layers_computed += static_cast<uint64_t>(std::llround(prompt_part * c.n_layers * fraction));
        // A pruned sequence's KV is not complete in every layer: never share it.
        if (cache_ && !s.lazy) cache_->Insert(s.tokens, s.kv, std::min(s.num_computed, s.n_prompt));
        if (s.is_prefix) {
            // A computed group prefix leaves the running set but keeps its
            // blocks (pinned) until its members have taken them.
            if (s.num_computed == s.n_prompt) s.done = true;
            continue;
        }
        if (out.first_row[i] < 0) continue;
        const std::span<const float> logits(out.logits.data() + static_cast<size_t>(out.first_row[i]) * c.vocab_size,
                                            c.vocab_size);
        const int32_t t = s.sampler.Sample(logits, s.tokens);
        s.tokens.push_back(t);
        ++s.generated;
        ++generated;
        if (s.t_first_token < 0) s.t_first_token = NowSeconds();
        Event e;
        e.token = t;
        e.logprob = LogSoftmaxAt(logits, t);
        if (s.request.logprobs > 0) e.top_logprobs = TopLogprobs(logits, s.request.logprobs);
        const bool eos = t == tok.eos_id() && !s.request.ignore_eos;
        const bool length = s.generated >= s.request.max_tokens ||
                            static_cast<int32_t>(s.tokens.size()) >= c.max_context;
        if (!eos) e.text = s.stops.Push(s.detok.Push(t));
        if (!eos && !s.stops.stopped() && length) {
            e.text += s.stops.Push(s.detok.Flush());
            e.text += s.stops.Flush();
        }
        const bool stopped = s.stops.stopped();
        s.stream->Push(std::move(e));
        if (eos) {
            Finish(s, FinishReason::kEos, absl::OkStatus());
        } else if (stopped) {
            Finish(s, FinishReason::kStop, absl::OkStatus());
        } else if (length) {
            Finish(s, FinishReason::kLength, absl::OkStatus());
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.prompt_tokens_computed += prefill;
    stats_.prompt_token_layers += token_layers;
    stats_.prompt_token_layers_computed += token_layers_computed;
    stats_.generated_tokens += generated;
    ++stats_.steps;
}

void Engine::Step(std::vector<std::shared_ptr<Seq>>& running) {
    const double now = NowSeconds();
    // Cancelled and expired requests leave first, freeing their blocks.
    auto ended = [&](Seq& s) {
        if (s.stream->cancel.load(std::memory_order_relaxed)) {
            Finish(s, FinishReason::kCancelled, absl::CancelledError("request cancelled"));
            return true;
        }
        if (s.deadline > 0 && now > s.deadline) {
            Finish(s, FinishReason::kError, absl::DeadlineExceededError("request deadline exceeded"));
            return true;
        }
        return false;
    };
    std::erase_if(running, [&](const auto& s) { return ended(*s); });
    std::vector<std::shared_ptr<Seq>> dropped;
    {
        std::lock_guard<std::mutex> lock(mu_);
        for (auto it = waiting_.begin(); it != waiting_.end();) {
            const bool cancel = (*it)->stream->cancel.load(std::memory_order_relaxed);
            if (cancel || ((*it)->deadline > 0 && now > (*it)->deadline)) {
                dropped.push_back(*it);
                it = waiting_.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto& s : dropped) {
        ended(*s);
        // A member that leaves before sharing its group's prefix no longer pins it.
        if (s->prefix) LeaveGroup(*s);
    }

    StepPlan plan;
    std::vector<Seq*> in_plan;
    if (!Schedule(running, &plan, &in_plan)) return;
    StepOutput out;
    if (absl::Status st = forward_->Run(plan, &out); !st.ok()) {
        // A failed step ends its requests with the error rather than looping on it.
        for (Seq* s : in_plan) {
            s->in_plan = false;
            Finish(*s, FinishReason::kError, st);
        }
    } else {
        AfterForward(in_plan, out);
    }
    std::erase_if(running, [](const auto& s) { return s->done; });
}

void Engine::PublishKvStats(size_t running) {
    const uint64_t cached = cache_ ? static_cast<uint64_t>(cache_->IdleBlocks()) * pool_->bytes_per_block() : 0;
    stats_.requests_running = running;
    stats_.cascade_decode_tokens = forward_->cascade_queries();
    stats_.kv_bytes_cached = cached;
    stats_.kv_bytes_used = pool_->used_bytes() - cached;
}

void Engine::Loop() {
    std::vector<std::shared_ptr<Seq>> running;
    while (true) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !running.empty(); });
            if (stopping_) break;
            PublishKvStats(running.size());
        }
        Step(running);
        std::lock_guard<std::mutex> lock(mu_);
        PublishKvStats(running.size());
    }
    std::deque<std::shared_ptr<Seq>> rest;
    {
        std::lock_guard<std::mutex> lock(mu_);
        rest.swap(waiting_);
    }
    for (auto& s : running) Finish(*s, FinishReason::kCancelled, absl::CancelledError("engine shut down"));
    for (auto& s : rest) Finish(*s, FinishReason::kCancelled, absl::CancelledError("engine shut down"));
}

}  // namespace prepack

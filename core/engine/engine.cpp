#include "core/engine/engine.h"

#include <algorithm>
#include <cmath>

#include "core/base/runtime.h"

namespace prepack {

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

// SplitMix64's finalizer: spreads a small seed over all 64 bits (the call
// ids' generator starts poorly from seeds with few bits set).
uint64_t MixSeed(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

std::string ToolChoiceName(const ToolChoice& c) {
    switch (c.mode) {
        case ToolChoice::Mode::kNone:     return "none";
        case ToolChoice::Mode::kAuto:     return "auto";
        case ToolChoice::Mode::kRequired: return "required";
        case ToolChoice::Mode::kFunction: return absl::StrCat("function \"", c.function, "\"");
    }
    return "auto";
}

}  // namespace

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
    if (!options.chat_template_file.empty()) {
        PP_ASSIGN_OR_RETURN(e->chat_templates_, ChatTemplates::LoadFile(options.chat_template_file));
    } else {
        e->chat_templates_ = ChatTemplates::Load(e->model_->tokenizer());
    }
    e->grammars_ = std::make_unique<GrammarCompiler>(e->model_->tokenizer());
    const ModelConfig& c = e->model_->config();
    const cpu::DType kv_dtype = options.kv_dtype.value_or(options.dtype);
    PP_ASSIGN_OR_RETURN(Backend backend, CreateBackend(*e->model_, options.device, options.kv_block_size,
                                                       options.kv_budget_bytes, c.max_context, kv_dtype));
    e->pool_ = std::move(backend.pool);
    e->forward_ = std::move(backend.runner);
    e->scheduler_ = MakeScheduler(options.policy, *e->model_, *e->pool_, e->waiting_,
                                  {options.max_batch_tokens, options.max_running});
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

absl::StatusOr<std::shared_ptr<Sequence>> Engine::MakeSequence(Request request) const {
    PP_RETURN_IF_ERROR(ValidateSamplingParams(request.sampling));
    if (request.max_tokens < 1) {
        return absl::InvalidArgumentError(absl::StrCat("max_tokens must be >= 1, got ", request.max_tokens));
    }
    if (request.logprobs < 0 || request.logprobs > kMaxLogprobs) {
        return absl::InvalidArgumentError(
            absl::StrCat("logprobs must be in [0, ", kMaxLogprobs, "], got ", request.logprobs));
    }
    if (request.prompt_logprobs < -1 || request.prompt_logprobs > kMaxLogprobs) {
        return absl::InvalidArgumentError(
            absl::StrCat("prompt_logprobs must be in [0, ", kMaxLogprobs, "] (or -1: off), got ", request.prompt_logprobs));
    }
    if (request.prompt_logprobs >= 0 && request.lazy) {
        return absl::InvalidArgumentError(
            "prompt log-probs need every prompt token through every layer: not with LazyLLM pruning");
    }
    if (request.deadline_ms < 0) {
        return absl::InvalidArgumentError(absl::StrCat("deadline_ms must be >= 0, got ", request.deadline_ms));
    }
    const ModelConfig& c = model_->config();
    std::optional<LazySchedule> lazy;
    if (request.lazy) {
        PP_ASSIGN_OR_RETURN(lazy, ResolveLazySchedule(request.lazy_schedule, request.lazy_keep_ratio, c.n_layers));
    } else if (!request.lazy_schedule.empty() || !request.lazy_scoring.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(request.lazy_schedule.empty() ? "lazy_scoring" : "lazy_schedule",
                                                       " is set but lazy pruning is off"));
    }
    PP_ASSIGN_OR_RETURN(const int32_t revive_limit, ResolveReviveLimit(request.lazy_revive_limit));
    PP_ASSIGN_OR_RETURN(const LazyScoring scoring, ParseLazyScoring(request.lazy_scoring));
    std::optional<grammar::Matcher> matcher;
    PP_ASSIGN_OR_RETURN(std::optional<ToolCallSetup> tools, ToolCallsFor(request));
    if (tools) {
        // Compiled like a grammar (cached: one spec per tools and choice).
        PP_ASSIGN_OR_RETURN(matcher, grammars_->NewMatcher(tools->plan.grammar));
        request.chat = tools->conversation;
    } else if (request.grammar.active()) {
        if (request.ignore_eos) {
            return absl::InvalidArgumentError(
                "ignore_eos conflicts with a grammar (structured output): the grammar decides where the output may "
                "end, so end tokens cannot be ignored");
        }
        // Compiled here, on the caller's thread (once per spec: cached), so
        // a large schema never stalls the engine's loop.
        PP_ASSIGN_OR_RETURN(matcher, grammars_->NewMatcher(request.grammar));
    }
    const uint64_t seed = request.sampling.seed;
    auto seq = std::make_shared<Sequence>(std::move(request), model_->tokenizer(), c.max_context);
    if (tools) {
        seq->output.ConstrainFrom(tools->plan.trigger, std::move(*matcher));
        const uint64_t n = tool_requests_.fetch_add(1, std::memory_order_relaxed);
        seq->output.ReadToolCalls(ToolCallStream(tools->plan.format, std::move(tools->tools), tools->plan.trigger,
                                                 MixSeed(seed ^ MixSeed(n))));
    } else if (matcher) {
        seq->output.Constrain(std::move(*matcher));
    }
    seq->lazy_schedule = std::move(lazy);
    seq->lazy_revive_limit = revive_limit;
    seq->lazy_scoring = scoring;
    Request& r = seq->request;
    PP_ASSIGN_OR_RETURN(ResolvedPrompt prompt, ResolveRequestPrompt(*model_, chat_templates_, r));
    seq->tokens = std::move(prompt.ids);
    // A grammar shapes the whole output from its first token, so there is no
    // thinking section to split off (the answer would otherwise be taken for
    // thoughts when the template opened one). A grammar from a trigger on
    // (tool calls under "auto") leaves the thinking free: split it off, and
    // the trigger counts only outside it.
    if (prompt.reasoning && !seq->output.constrained()) seq->output.SplitReasoning(prompt.thinking_open);
    seq->n_prompt = static_cast<int32_t>(seq->tokens.size());
    const int64_t blocks = (int64_t{seq->n_prompt} + 1 + pool_->block_size() - 1) / pool_->block_size();
    if (blocks > pool_->num_blocks()) {
        return absl::ResourceExhaustedError(absl::StrCat("prompt of ", seq->n_prompt,
                                                         " tokens needs more KV memory than the engine's whole budget (",
                                                         pool_->num_blocks() * int64_t{pool_->block_size()}, " tokens)"));
    }
    seq->output.PrimeWithPrompt(seq->tokens);   // the prompt's text is the caller's already
    seq->stream = std::make_shared<StreamState>();
    seq->t_submit = NowSeconds();
    seq->deadline = r.deadline_ms > 0 ? seq->t_submit + r.deadline_ms / 1000.0 : 0.0;
    return seq;
}

absl::StatusOr<std::optional<ToolCallSetup>> Engine::ToolCallsFor(const Request& request) const {
    const ToolChoice& choice = request.tool_choice;
    const bool has_tools = request.chat && request.chat->tools.is_array() && !request.chat->tools.empty();
    if (!has_tools) {
        if (choice.mode == ToolChoice::Mode::kRequired || choice.mode == ToolChoice::Mode::kFunction) {
            return absl::InvalidArgumentError(absl::StrCat("tool_choice ", ToolChoiceName(choice),
                                                           " needs tools (a chat request's conversation.tools); this request has none"));
        }
        return std::optional<ToolCallSetup>();
    }
    if (choice.mode == ToolChoice::Mode::kNone) return std::optional<ToolCallSetup>();
    if (request.grammar.active()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tools (with tool_choice ", ToolChoiceName(choice),
            ") and a grammar (structured output) cannot be combined: tool calls are constrained by their own "
            "grammar; set tool_choice to none or drop the grammar"));
    }
    if (request.ignore_eos) {
        return absl::InvalidArgumentError(
            "ignore_eos conflicts with tools (tool_choice other than none): the tool-call grammar decides where "
            "the output may end, so end tokens cannot be ignored");
    }
    PP_ASSIGN_OR_RETURN(const std::string source, chat_templates_.SourceFor(*request.chat));
    return PrepareToolCalls(source, request.chat, choice);
}

absl::StatusOr<ChatPrompt> Engine::RenderChat(const Conversation& conversation, bool add_special) const {
    PP_ASSIGN_OR_RETURN(ChatPrompt p, chat_templates_.Apply(model_->tokenizer(), conversation, add_special));
    PP_RETURN_IF_ERROR(ResolvePrompt(*model_, "", p.ids, false).status());
    return p;
}

absl::Status Engine::Enqueue(std::vector<std::shared_ptr<Sequence>> seqs) {
    {
        std::lock_guard<std::mutex> lock(mu_);
        if (stopping_) return absl::UnavailableError("engine is shutting down");
        for (const auto& s : seqs) {
            if (!s->internal) {
                ++stats_.requests_submitted;
                stats_.prompt_tokens += s->n_prompt;
            }
        }
        // Under mu_, so the loop cannot miss the wake-up below.
        waiting_.PushBack(std::move(seqs));
    }
    wake_.notify_one();
    return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Stream>> Engine::Submit(Request request) {
    PP_ASSIGN_OR_RETURN(std::shared_ptr<Sequence> seq, MakeSequence(std::move(request)));
    auto stream = std::make_unique<Stream>(seq->stream);
    PP_RETURN_IF_ERROR(Enqueue({seq}));
    return stream;
}

std::vector<absl::StatusOr<std::unique_ptr<Stream>>> Engine::SubmitBatch(std::vector<Request> requests) {
    std::vector<absl::StatusOr<std::unique_ptr<Stream>>> out;
    std::vector<std::shared_ptr<Sequence>> valid;
    for (Request& r : requests) {
        absl::StatusOr<std::shared_ptr<Sequence>> seq = MakeSequence(std::move(r));
        if (!seq.ok()) {
            out.push_back(seq.status());
            continue;
        }
        out.push_back(std::make_unique<Stream>((*seq)->stream));
        valid.push_back(std::move(*seq));
    }
    if (absl::Status st = Enqueue(scheduler_->OrderBatch(std::move(valid))); !st.ok()) {
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
    const grammar::GrammarCacheStats g = grammars_->cache_stats();
    s.grammar_cache_hits = g.hits;
    s.grammar_cache_misses = g.misses;
    s.grammar_compile_seconds = g.compile_seconds;
    return s;
}

void Engine::Finish(Sequence& seq, FinishReason reason, absl::Status status) {
    seq.done = true;
    seq.lazy.reset();   // its aux cache blocks go back to the pool
    seq.kv.Release();
    scheduler_->Ended(seq);   // e.g. the last member of a group lets go of its prefix
    if (seq.internal) return;   // nobody reads it
    Event e;
    e.kind = Event::Kind::kFinish;
    e.finish_reason = reason;
    e.status = std::move(status);
    e.tool_calls = seq.output.tool_calls();   // empty unless the answer ended (not by an error) with calls
    const double now = NowSeconds();
    e.usage.prompt_tokens = seq.n_prompt;
    e.usage.completion_tokens = seq.generated();
    e.usage.queue_seconds = seq.t_scheduled >= 0 ? seq.t_scheduled - seq.t_submit : now - seq.t_submit;
    e.usage.time_to_first_token = seq.t_first_token >= 0 ? seq.t_first_token - seq.t_submit : 0.0;
    e.usage.total_seconds = now - seq.t_submit;
    e.usage.cached_prompt_tokens = seq.cached_tokens;
    e.usage.reasoning_tokens = seq.reasoning_tokens;
    e.usage.pruned_fraction = 1.0 - seq.prompt_work_fraction;
    e.usage.prompt_layer_fractions = seq.prompt_layer_fractions;
    {
        // Counted before the caller can see the end, so stats read after it include it.
        std::lock_guard<std::mutex> lock(mu_);
        ++stats_.requests_finished;
        if (seq.t_scheduled >= 0) {   // it was looked up in shared KV when admitted
            ++stats_.prefix_query_requests;
            stats_.prefix_query_tokens += static_cast<uint64_t>(seq.n_prompt);
            stats_.prefix_hit_tokens += static_cast<uint64_t>(seq.cached_tokens);
            if (seq.cached_tokens > 0) ++stats_.prefix_hit_requests;
        }
    }
    seq.stream->Push(std::move(e));
}

void Engine::EndCancelledAndExpired() {
    const double now = NowSeconds();
    // Why `s` ends now, if it does: cancelled (by its caller, or an internal
    // sequence nobody needs any more) before past its deadline.
    enum class Ending { kNo, kCancelled, kExpired };
    auto ending = [&](const Sequence& s) {
        if (s.abandoned || (s.stream && s.stream->cancel.load(std::memory_order_relaxed))) return Ending::kCancelled;
        return s.deadline > 0 && now > s.deadline ? Ending::kExpired : Ending::kNo;
    };
    auto end = [&](Sequence& s, Ending why) {
        if (why == Ending::kExpired) {
            Finish(s, FinishReason::kError, absl::DeadlineExceededError("request deadline exceeded"));
        } else {
            Finish(s, FinishReason::kCancelled, absl::CancelledError("request cancelled"));
        }
    };
    std::erase_if(scheduler_->running(), [&](const auto& s) {
        const Ending why = ending(*s);
        if (why == Ending::kNo) return false;
        end(*s, why);
        return true;
    });
    for (auto& s : waiting_.TakeIf([&](const Sequence& q) { return ending(q) != Ending::kNo; })) {
        end(*s, ending(*s));
    }
}

void Engine::EmitToken(Sequence& s, std::span<const float> logits) {
    NextToken next = s.output.Next(logits, &s.tokens);
    if (next.reason == FinishReason::kError) {   // nothing sampled: a grammar that cannot go on
        Finish(s, FinishReason::kError, std::move(next.status));
        return;
    }
    if (s.t_first_token < 0) s.t_first_token = NowSeconds();
    Event e;
    e.token = next.token;
    e.text = std::move(next.text);
    e.reasoning = std::move(next.reasoning);
    if (next.in_reasoning) ++s.reasoning_tokens;
    e.tool_call_deltas = std::move(next.tool_call_deltas);
    e.logprob = LogSoftmaxAt(logits, next.token);
    if (s.request.logprobs > 0) e.top_logprobs = TopLogprobs(logits, s.request.logprobs);
    if (s.prompt_logprobs) e.prompt_logprobs = std::move(s.prompt_logprobs);   // the first token's event
    s.stream->Push(std::move(e));
    if (next.finished) Finish(s, next.reason, absl::OkStatus());
}

void Engine::ScorePrompt(Sequence& s, int32_t first_position, const float* logits, int32_t rows) {
    // Row r's logits (position first_position + r) score the next prompt token.
    const size_t vocab = static_cast<size_t>(model_->config().vocab_size);
    if (!s.prompt_logprobs) {
        s.prompt_logprobs = std::make_shared<std::vector<Event::PromptLogprob>>(static_cast<size_t>(s.n_prompt - 1));
    }
    for (int32_t r = 0; r < rows; ++r) {
        const int32_t scored = first_position + r + 1;
        if (scored >= s.n_prompt) break;
        const std::span<const float> row(logits + static_cast<size_t>(r) * vocab, vocab);
        Event::PromptLogprob& p = (*s.prompt_logprobs)[static_cast<size_t>(scored - 1)];
        p.token = s.tokens[static_cast<size_t>(scored)];
        p.logprob = LogSoftmaxAt(row, p.token);
        if (s.request.prompt_logprobs > 0) p.top = TopLogprobs(row, s.request.prompt_logprobs);
    }
}

void Engine::Apply(const ScheduledStep& step, const StepOutput& out) {
    const ModelConfig& c = model_->config();
    std::vector<int32_t> prompt_part(step.seqs.size()), first_position(step.seqs.size());
    for (size_t i = 0; i < step.seqs.size(); ++i) {
        const Sequence& s = *step.seqs[i];
        prompt_part[i] = s.num_computed < s.n_prompt ? std::min(s.planned, s.n_prompt - s.num_computed) : 0;
        first_position[i] = s.num_computed;
    }
    scheduler_->Computed(step);
    uint64_t prefill = 0, step_tokens = 0, generated = 0, token_layers = 0, token_layers_computed = 0;
    for (size_t i = 0; i < step.seqs.size(); ++i) {
        Sequence& s = *step.seqs[i];
        prefill += prompt_part[i];
        step_tokens += static_cast<uint64_t>(s.planned);
        if (prompt_part[i] > 0 && s.num_computed >= s.n_prompt && s.lazy) {
            s.prompt_work_fraction = s.lazy->PromptWorkFraction();
            s.prompt_layer_fractions = s.lazy->PromptLayerFractions();
        }
        const double fraction = s.lazy ? s.prompt_work_fraction : 1.0;
        token_layers += uint64_t(prompt_part[i]) * c.n_layers;
        token_layers_computed += static_cast<uint64_t>(std::llround(prompt_part[i] * c.n_layers * fraction));
        if (s.internal || out.first_row[i] < 0) continue;
        const SeqStep& span = step.plan.seqs[i];
        const float* rows = out.logits.data() + static_cast<size_t>(out.first_row[i]) * c.vocab_size;
        if (span.logits == LogitsWanted::kAll) {
            ScorePrompt(s, first_position[i], rows, span.n_tokens);
            // Every row came back; the last one is the next token's, if this chunk ended the prompt.
            if (s.num_computed < static_cast<int32_t>(s.tokens.size())) continue;
            rows += static_cast<size_t>(span.n_tokens - 1) * c.vocab_size;
        }
        EmitToken(s, {rows, static_cast<size_t>(c.vocab_size)});
        ++generated;
    }
    std::lock_guard<std::mutex> lock(mu_);
    stats_.prompt_tokens_computed += prefill;
    stats_.prompt_token_layers += token_layers;
    stats_.prompt_token_layers_computed += token_layers_computed;
    stats_.generated_tokens += generated;
    ++stats_.steps;
    if (prefill > 0) {
        ++stats_.prefill_steps;
        stats_.prefill_step_tokens += step_tokens;
        const uint64_t budget = static_cast<uint64_t>(options_.max_batch_tokens);
        stats_.prefill_step_capacity += std::max(step_tokens, budget);   // a lone LazyLLM prompt may outgrow it
    }
}

void Engine::Step() {
    EndCancelledAndExpired();
    ScheduledStep step;
    if (!scheduler_->Plan(&step)) {
        std::erase_if(scheduler_->running(), [&](const auto& s) {
            if (s->error.ok()) return false;
            Finish(*s, FinishReason::kError, s->error);
            return true;
        });
        return;
    }
    StepOutput out;
    if (absl::Status st = forward_->Run(step.plan, &out); !st.ok()) {
        // A failed step ends its requests with the error rather than looping on it.
        for (Sequence* s : step.seqs) {
            s->in_plan = false;
            Finish(*s, FinishReason::kError, st);
        }
    } else {
        Apply(step, out);
    }
    std::erase_if(scheduler_->running(), [](const auto& s) { return s->done; });
}

void Engine::PublishKvStats() {
    const uint64_t cached = static_cast<uint64_t>(scheduler_->cached_blocks()) * pool_->bytes_per_block();
    stats_.requests_running = scheduler_->running().size();
    stats_.preemptions = scheduler_->preemptions();
    stats_.prefix_tokens_recomputed = scheduler_->prefix_tokens_recomputed();
    stats_.cascade_decode_tokens = forward_->cascade_queries();
    stats_.kv_bytes_cached = cached;
    stats_.kv_bytes_used = pool_->used_bytes() - cached;
}

void Engine::Loop() {
    while (true) {
        {
            std::unique_lock<std::mutex> lock(mu_);
            wake_.wait(lock, [&] { return stopping_ || !waiting_.empty() || !scheduler_->running().empty(); });
            if (stopping_) break;
            PublishKvStats();
        }
        Step();
        std::lock_guard<std::mutex> lock(mu_);
        PublishKvStats();
    }
    for (auto& s : scheduler_->running()) Finish(*s, FinishReason::kCancelled, absl::CancelledError("engine shut down"));
    scheduler_->running().clear();
    for (auto& s : waiting_.TakeAll()) Finish(*s, FinishReason::kCancelled, absl::CancelledError("engine shut down"));
}

}  // namespace prepack

// Engines: options, creation and destruction, the model's description and
// the engine's counters.
#include "capi/capi_internal.h"

#include <cstdio>

using namespace prepack::capi;

extern "C" {

void prepack_engine_options_init(prepack_engine_options* o) {
    if (o == nullptr) return;
    std::memset(static_cast<void*>(o), 0, sizeof *o);
    o->struct_size = sizeof *o;
    o->device = PREPACK_DEVICE_CPU;
    o->kv_block_size = 16;
    o->max_batch_tokens = 1024;
    o->max_running = 64;
    o->policy = PREPACK_POLICY_FCFS;
    o->dtype = PREPACK_DTYPE_F32;
}

prepack_status prepack_engine_create(const prepack_engine_options* options, prepack_engine** engine) {
    return Guard([&] {
        if (options == nullptr || engine == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "options or engine is NULL");
        prepack_engine_options o;
        prepack_engine_options_init(&o);
        if (!CopySized(options, &o)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "options.struct_size is not set (call prepack_engine_options_init)");
        }
        if (o.model == nullptr || o.model[0] == '\0') return Fail(PREPACK_INVALID_ARGUMENT, "options.model is empty");
        const int64_t device = RawEnum(o.device), policy = RawEnum(o.policy), dtype = RawEnum(o.dtype);
        if (device != PREPACK_DEVICE_CPU && device != PREPACK_DEVICE_CUDA) {
            return Fail(PREPACK_INVALID_ARGUMENT, absl::StrCat("options.device ", device, " is not a prepack_device"));
        }
        if (policy != PREPACK_POLICY_FCFS && policy != PREPACK_POLICY_LRU && policy != PREPACK_POLICY_BATCHLLM) {
            return Fail(PREPACK_INVALID_ARGUMENT, absl::StrCat("options.policy ", policy, " is not a prepack_policy"));
        }
        if (dtype != PREPACK_DTYPE_F32 && dtype != PREPACK_DTYPE_BF16) {
            return Fail(PREPACK_INVALID_ARGUMENT, absl::StrCat("options.dtype ", dtype, " is not a prepack_dtype"));
        }
        if (o.threads < 0 || o.kv_block_size < 1 || o.max_batch_tokens < 1 || o.max_running < 1) {
            return Fail(PREPACK_INVALID_ARGUMENT,
                        "options: threads must be >= 0 and kv_block_size, max_batch_tokens, max_running >= 1");
        }
        prepack::EngineOptions eo;
        eo.model = o.model;
        eo.device = device == PREPACK_DEVICE_CUDA ? prepack::Device::kCuda : prepack::Device::kCpu;
        eo.dtype = dtype == PREPACK_DTYPE_BF16 ? prepack::cpu::DType::kBf16 : prepack::cpu::DType::kF32;
        eo.threads = o.threads;
        eo.kv_budget_bytes = o.kv_budget_bytes;
        eo.kv_block_size = o.kv_block_size;
        eo.max_batch_tokens = o.max_batch_tokens;
        eo.max_running = o.max_running;
        if (o.chat_template_file != nullptr) eo.chat_template_file = o.chat_template_file;
        eo.policy = o.policy == PREPACK_POLICY_LRU        ? prepack::SchedulePolicy::kLru
                    : o.policy == PREPACK_POLICY_BATCHLLM ? prepack::SchedulePolicy::kBatchLlm
                                                          : prepack::SchedulePolicy::kFcfs;
        auto e = prepack::Engine::Create(eo);
        if (!e.ok()) return FromStatus(e.status());
        *engine = new prepack_engine{std::move(*e)};
        return PREPACK_OK;
    });
}

void prepack_engine_destroy(prepack_engine* engine) {
    Guard([&] {
        delete engine;
        return PREPACK_OK;
    });
}

void prepack_model_desc_init(prepack_model_desc* d) {
    if (d == nullptr) return;
    std::memset(static_cast<void*>(d), 0, sizeof *d);
    d->struct_size = sizeof *d;
}

prepack_status prepack_model_info(const prepack_engine* engine, prepack_model_desc* desc) {
    return Guard([&] {
        if (engine == nullptr || desc == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "engine or desc is NULL");
        if (desc->struct_size < sizeof(size_t)) return Fail(PREPACK_INVALID_ARGUMENT, "desc.struct_size is not set");
        const prepack::Model& m = engine->engine->model();
        const prepack::ModelConfig& c = m.config();
        prepack_model_desc d;
        prepack_model_desc_init(&d);
        std::snprintf(d.name, sizeof d.name, "%s", c.name.c_str());
        std::snprintf(d.architecture, sizeof d.architecture, "%s", c.arch.c_str());
        d.vocab_size = c.vocab_size;
        d.context_length = c.max_context;
        d.dim = c.dim;
        d.hidden_dim = c.hidden_dim;
        d.n_layers = c.n_layers;
        d.n_heads = c.n_heads;
        d.n_kv_heads = c.n_kv_heads;
        d.bos_id = m.tokenizer().bos_id();
        d.eos_id = m.tokenizer().eos_id();
        d.parameters = c.TotalParams();
        WriteSized(d, desc);
        return PREPACK_OK;
    });
}

void prepack_stats_init(prepack_stats* s) {
    if (s == nullptr) return;
    std::memset(static_cast<void*>(s), 0, sizeof *s);
    s->struct_size = sizeof *s;
}

prepack_status prepack_engine_stats(const prepack_engine* engine, prepack_stats* stats) {
    return Guard([&] {
        if (engine == nullptr || stats == nullptr) return Fail(PREPACK_INVALID_ARGUMENT, "engine or stats is NULL");
        if (stats->struct_size < sizeof(size_t)) return Fail(PREPACK_INVALID_ARGUMENT, "stats.struct_size is not set");
        const prepack::EngineStats e = engine->engine->Stats();
        prepack_stats s;
        prepack_stats_init(&s);
        s.requests_submitted = e.requests_submitted;
        s.requests_finished = e.requests_finished;
        s.requests_running = e.requests_running;
        s.requests_waiting = e.requests_waiting;
        s.prompt_tokens = e.prompt_tokens;
        s.prompt_tokens_computed = e.prompt_tokens_computed;
        s.generated_tokens = e.generated_tokens;
        s.preemptions = e.preemptions;
        s.kv_bytes_total = e.kv_bytes_total;
        s.kv_bytes_used = e.kv_bytes_used;
        s.prefix_saving = e.prefix_saving;
        s.prompt_fraction_computed = e.prompt_fraction_computed;
        s.steps = e.steps;
        s.prefill_steps = e.prefill_steps;
        s.prefill_step_tokens = e.prefill_step_tokens;
        s.prefill_step_capacity = e.prefill_step_capacity;
        s.prompt_token_layers = e.prompt_token_layers;
        s.prompt_token_layers_computed = e.prompt_token_layers_computed;
        s.prefix_query_tokens = e.prefix_query_tokens;
        s.prefix_hit_tokens = e.prefix_hit_tokens;
        s.prefix_query_requests = e.prefix_query_requests;
        s.prefix_hit_requests = e.prefix_hit_requests;
        s.grammar_cache_misses = e.grammar_cache_misses;
        s.grammar_cache_hits = e.grammar_cache_hits;
        s.grammar_compile_seconds = e.grammar_compile_seconds;
        WriteSized(s, stats);
        return PREPACK_OK;
    });
}

}  // extern "C"

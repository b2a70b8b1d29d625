// The C ABI over the engine. Every entry point catches every exception,
// converts absl::Status codes (google.rpc.Code numbers) by cast, and records a
// thread-local message for prepack_last_error().
#include "prepack/prepack.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "core/engine.h"

struct prepack_engine {
    std::unique_ptr<prepack::Engine> engine;
};

struct prepack_stream {
    std::unique_ptr<prepack::Stream> stream;    // null for a batch request that could not start:
    bool                             error_pending = false;   // then `current` is its END event, until read
    prepack::Event                   current;   // owns what the last delivered event points to
    std::vector<int32_t>             top_ids;
    std::vector<float>               top_logprobs;
    std::string                      message;
};

namespace {

thread_local std::string g_last_error;

prepack_status Fail(prepack_status code, std::string message) {
    g_last_error = std::move(message);
    return code;
}

prepack_status FromStatus(const absl::Status& s) {
    if (s.ok()) return PREPACK_OK;
    return Fail(static_cast<prepack_status>(s.code()), std::string(s.message()));
}

// Runs `body`, turning exceptions into statuses so none crosses the ABI.
template <typename Body>
prepack_status Guard(Body&& body) noexcept {
    try {
        g_last_error.clear();
        return body();
    } catch (const std::bad_alloc&) {
        return Fail(PREPACK_RESOURCE_EXHAUSTED, "out of memory");
    } catch (const std::exception& e) {
        return Fail(PREPACK_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return Fail(PREPACK_INTERNAL, "internal error: unknown exception");
    }
}

// Copies a caller's struct of `struct_size` bytes over `defaults`, so
// callers built against an older, shorter struct get defaults for the rest.
template <typename T>
bool CopySized(const T* in, T* defaults) {
    if (in->struct_size < sizeof(size_t)) return false;
    std::memcpy(static_cast<void*>(defaults), in, std::min(in->struct_size, sizeof(T)));
    defaults->struct_size = sizeof(T);
    return true;
}

// Writes `value` into a caller's struct, no further than its struct_size.
template <typename T>
void WriteSized(const T& value, T* out) {
    const size_t n = std::min(out->struct_size, sizeof(T));
    std::memcpy(static_cast<void*>(out), &value, n);
    out->struct_size = n;
}

// The integer a C caller stored in an enum field. C lets any int be stored
// there, but in C++ loading an enum whose value lies outside its enumerators'
// range is undefined (UBSan's -fsanitize=enum), so the bytes are read as the
// underlying integer and checked before they are ever used as the enum.
template <typename E>
int64_t RawEnum(const E& field) {
    std::underlying_type_t<E> v;
    std::memcpy(&v, &field, sizeof v);
    return static_cast<int64_t>(v);
}

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

absl::StatusOr<prepack::Request> ToRequest(const prepack_request* in) {
    if (in == nullptr) return absl::InvalidArgumentError("request is NULL");
    prepack_request r;
    prepack_request_init(&r);
    if (!CopySized(in, &r)) return absl::InvalidArgumentError("request.struct_size is not set (call prepack_request_init)");
    prepack::Request out;
    if (r.prompt_tokens != nullptr) {
        out.prompt_tokens.assign(r.prompt_tokens, r.prompt_tokens + r.n_prompt_tokens);
        if (out.prompt_tokens.empty()) return absl::InvalidArgumentError("prompt_tokens is empty");
    } else if (r.prompt != nullptr) {
        out.prompt = r.prompt;
    } else {
        return absl::InvalidArgumentError("request has neither prompt nor prompt_tokens");
    }
    out.add_bos = r.add_bos != 0;
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
    return out;
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
    } else {
        ev.kind = PREPACK_EVENT_END;
        ev.finish_reason = ToC(e.finish_reason);
        ev.status = static_cast<prepack_status>(e.status.code());
        s->message = std::string(e.status.message());
        ev.message = s->message.c_str();
        ev.usage = ToC(e.usage);
    }
    WriteSized(ev, out);
}

char* CopyString(const std::string& s) {
    char* p = static_cast<char*>(std::malloc(s.size() + 1));
    if (p == nullptr) throw std::bad_alloc();
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
    return p;
}

}  // namespace

extern "C" {

const char* prepack_version(void) { return PREPACK_VERSION_STRING; }
int prepack_abi_version(void) { return PREPACK_ABI_VERSION; }

const char* prepack_status_str(prepack_status status) {
    switch (status) {
        case PREPACK_OK: return "OK";
        case PREPACK_CANCELLED: return "CANCELLED";
        case PREPACK_UNKNOWN: return "UNKNOWN";
        case PREPACK_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case PREPACK_DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
        case PREPACK_NOT_FOUND: return "NOT_FOUND";
        case PREPACK_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
        case PREPACK_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
        case PREPACK_OUT_OF_RANGE: return "OUT_OF_RANGE";
        case PREPACK_UNIMPLEMENTED: return "UNIMPLEMENTED";
        case PREPACK_INTERNAL: return "INTERNAL";
        case PREPACK_UNAVAILABLE: return "UNAVAILABLE";
        case PREPACK_DATA_LOSS: return "DATA_LOSS";
    }
    return "UNKNOWN_STATUS_CODE";
}

const char* prepack_last_error(void) { return g_last_error.c_str(); }

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
        WriteSized(s, stats);
        return PREPACK_OK;
    });
}

prepack_status prepack_tokenize(const prepack_engine* engine, const char* text, size_t text_len, int add_bos,
                                int32_t* tokens, size_t capacity, size_t* n_tokens) {
    return Guard([&] {
        if (engine == nullptr || n_tokens == nullptr || (text == nullptr && text_len > 0) ||
            (tokens == nullptr && capacity > 0)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "engine, text, tokens or n_tokens is NULL");
        }
        auto ids = engine->engine->model().tokenizer().Encode(std::string_view(text ? text : "", text_len), add_bos != 0);
        if (!ids.ok()) return FromStatus(ids.status());
        *n_tokens = ids->size();
        if (ids->size() > capacity) {
            return Fail(PREPACK_OUT_OF_RANGE, absl::StrCat("tokens buffer holds ", capacity, " ids; ", ids->size(), " needed"));
        }
        std::copy(ids->begin(), ids->end(), tokens);
        return PREPACK_OK;
    });
}

prepack_status prepack_detokenize(const prepack_engine* engine, const int32_t* tokens, size_t n_tokens, char* text,
                                  size_t capacity, size_t* text_len) {
    return Guard([&] {
        if (engine == nullptr || text_len == nullptr || (tokens == nullptr && n_tokens > 0) ||
            (text == nullptr && capacity > 0)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "engine, tokens, text or text_len is NULL");
        }
        const prepack::Tokenizer& tok = engine->engine->model().tokenizer();
        std::vector<int32_t> ids(tokens, tokens + n_tokens);
        for (size_t i = 0; i < ids.size(); ++i) {
            if (ids[i] < 0 || ids[i] >= tok.vocab_size()) {
                return Fail(PREPACK_INVALID_ARGUMENT,
                            absl::StrCat("tokens[", i, "] = ", ids[i], " is outside the vocabulary [0, ", tok.vocab_size(), ")"));
            }
        }
        const std::string s = tok.Decode(ids);
        *text_len = s.size();
        if (s.size() + 1 > capacity) {
            return Fail(PREPACK_OUT_OF_RANGE, absl::StrCat("text buffer holds ", capacity, " bytes; ", s.size() + 1,
                                                           " needed (with the NUL)"));
        }
        std::memcpy(text, s.data(), s.size());
        text[s.size()] = '\0';
        return PREPACK_OK;
    });
}

void prepack_request_init(prepack_request* r) {
    if (r == nullptr) return;
    std::memset(static_cast<void*>(r), 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->add_bos = 1;
    r->max_tokens = 128;
    r->temperature = 1.0f;
    r->top_p = 1.0f;
    r->repetition_penalty = 1.0f;
}

void prepack_event_init(prepack_event* e) {
    if (e == nullptr) return;
    std::memset(static_cast<void*>(e), 0, sizeof *e);
    e->struct_size = sizeof *e;
    e->text = "";
    e->message = "";
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

void prepack_batch_options_init(prepack_batch_options* o) {
    if (o == nullptr) return;
    std::memset(static_cast<void*>(o), 0, sizeof *o);
    o->struct_size = sizeof *o;
}

prepack_status prepack_generate_batch_start(prepack_engine* engine, const prepack_request* const* requests, size_t n,
                                            prepack_stream** streams) {
    return Guard([&] {
        if (engine == nullptr || requests == nullptr || streams == nullptr || n == 0) {
            return Fail(PREPACK_INVALID_ARGUMENT, "engine, requests or streams is NULL, or n is 0");
        }
        // Build every C stream first, so an allocation failure leaves nothing behind.
        std::vector<std::unique_ptr<prepack_stream>> out(n);
        for (auto& s : out) s = std::make_unique<prepack_stream>();
        auto set_error = [&](size_t i, const absl::Status& st) {
            prepack::Event& e = out[i]->current;
            e.kind = prepack::Event::Kind::kFinish;
            e.finish_reason = prepack::FinishReason::kError;
            e.status = st;
            out[i]->error_pending = true;
        };
        // The whole batch goes in at once, so the engine's policy sees all of
        // it (under BatchLLM: one prefix tree over every prompt).
        std::vector<prepack::Request> valid;
        std::vector<size_t> index;
        for (size_t i = 0; i < n; ++i) {
            auto r = ToRequest(requests[i]);
            if (!r.ok()) {
                set_error(i, r.status());
                continue;
            }
            valid.push_back(std::move(*r));
            index.push_back(i);
        }
        auto submitted = engine->engine->SubmitBatch(std::move(valid));
        for (size_t k = 0; k < submitted.size(); ++k) {
            if (submitted[k].ok()) {
                out[index[k]]->stream = std::move(*submitted[k]);
            } else {
                set_error(index[k], submitted[k].status());
            }
        }
        for (size_t i = 0; i < n; ++i) streams[i] = out[i].release();
        return PREPACK_OK;
    });
}

prepack_status prepack_generate_batch(prepack_engine* engine, const prepack_request* const* requests, size_t n,
                                      const prepack_batch_options* options, prepack_result** results) {
    return Guard([&] {
        if (engine == nullptr || requests == nullptr || results == nullptr || n == 0) {
            return Fail(PREPACK_INVALID_ARGUMENT, "engine, requests or results is NULL, or n is 0");
        }
        prepack_batch_options o;
        prepack_batch_options_init(&o);
        if (options != nullptr && !CopySized(options, &o)) {
            return Fail(PREPACK_INVALID_ARGUMENT, "options.struct_size is not set (call prepack_batch_options_init)");
        }
        // calloc: results not yet filled stay valid (empty) to free.
        auto* out = static_cast<prepack_result*>(std::calloc(n, sizeof(prepack_result)));
        if (out == nullptr) return Fail(PREPACK_RESOURCE_EXHAUSTED, "out of memory");
        std::unique_ptr<prepack_result, std::function<void(prepack_result*)>> owned(
            out, [n](prepack_result* r) { prepack_results_free(r, n); });
        std::vector<prepack_stream*> raw(n, nullptr);
        if (prepack_status st = prepack_generate_batch_start(engine, requests, n, raw.data()); st != PREPACK_OK) return st;
        std::vector<std::unique_ptr<prepack_stream, void (*)(prepack_stream*)>> streams;
        for (prepack_stream* s : raw) streams.emplace_back(s, prepack_stream_destroy);
        size_t done = 0;
        for (size_t i = 0; i < n; ++i) {
            std::vector<int32_t> tokens;
            std::string text;
            prepack_event e;
            prepack_event_init(&e);
            while (prepack_stream_next(streams[i].get(), -1, &e) == PREPACK_OK) {
                if (e.kind == PREPACK_EVENT_TOKEN) {
                    tokens.push_back(e.token);
                    text.append(e.text, e.text_len);
                    continue;
                }
                out[i].finish_reason = e.finish_reason;
                out[i].status = e.status;
                out[i].usage = e.usage;
                out[i].message = CopyString(e.message);
            }
            out[i].tokens = static_cast<int32_t*>(std::malloc(std::max<size_t>(tokens.size(), 1) * sizeof(int32_t)));
            if (out[i].tokens == nullptr) throw std::bad_alloc();
            std::copy(tokens.begin(), tokens.end(), out[i].tokens);
            out[i].n_tokens = tokens.size();
            out[i].text = CopyString(text);
            out[i].text_len = text.size();
            streams[i].reset();   // frees this request's engine state now, not at the end of the batch
            if (o.progress) o.progress(++done, n, o.user_data);
        }
        *results = owned.release();
        g_last_error.clear();
        return PREPACK_OK;
    });
}

void prepack_results_free(prepack_result* results, size_t n) {
    if (results == nullptr) return;
    for (size_t i = 0; i < n; ++i) {
        std::free(results[i].tokens);
        std::free(results[i].text);
        std::free(results[i].message);
    }
    std::free(results);
}

}  // extern "C"

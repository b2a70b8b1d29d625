// The binding layer over the C ABI; see prepack_binding.h for the contract.
#include "prepack_binding.h"

#include <cstring>
#include <memory>
#include <new>
#include <utility>

namespace prepack {
namespace binding {
namespace {

// Stores a caller's integer in a C enum field as the C ABI sees it (an int):
// a value outside the enum (the library rejects it by name) must not pass
// through a C++ enum conversion, which is undefined for such values.
template <typename E>
void SetRawEnum(E* field, int32_t value) {
    static_assert(sizeof(E) == sizeof(int32_t), "C enums are int-sized on our platforms");
    std::memcpy(field, &value, sizeof value);
}

// Throws the calling thread's last C error when `st` is not OK.
void Check(prepack_status st) {
    if (st == PREPACK_OK) return;
    std::string message = prepack_last_error();
    if (message.empty()) message = prepack_status_str(st);
    throw Error(st, std::move(message));
}

// Runs `body`; reports its failure by throwing Error (status == NULL) or by
// storing it in *status and returning T(). Every exception becomes an Error
// so nothing else reaches SWIG's handlers or, from Go, crosses cgo.
template <typename T, typename Body>
T Report(Status* status, Body&& body) {
    Error error(PREPACK_OK, "");
    try {
        T value = body();
        if (status != nullptr) status->Set(PREPACK_OK, "");
        return value;
    } catch (const Error& e) {
        error = e;
    } catch (const std::bad_alloc&) {
        error = Error(PREPACK_RESOURCE_EXHAUSTED, "out of memory");
    } catch (const std::exception& e) {
        error = Error(PREPACK_INTERNAL, std::string("internal error: ") + e.what());
    }
    if (status == nullptr) throw error;
    status->Set(error.code(), error.message());
    return T();
}

// A C request viewing a binding Request, which must outlive it.
struct CRequest {
    prepack_request          c;
    std::vector<const char*> stop;

    explicit CRequest(const Request& r) {
        prepack_request_init(&c);
        if (r.prompt_tokens.empty()) {
            c.prompt = r.prompt.c_str();
        } else {
            c.prompt_tokens = r.prompt_tokens.data();
            c.n_prompt_tokens = r.prompt_tokens.size();
        }
        c.add_bos = r.add_bos ? 1 : 0;
        c.parse_special = r.parse_special ? 1 : 0;
        c.max_tokens = r.max_tokens;
        c.temperature = r.temperature;
        c.top_k = r.top_k;
        c.top_p = r.top_p;
        c.min_p = r.min_p;
        c.repetition_penalty = r.repetition_penalty;
        c.seed = static_cast<uint64_t>(r.seed);
        for (const std::string& s : r.stop) stop.push_back(s.c_str());
        c.stop = stop.empty() ? nullptr : stop.data();
        c.n_stop = stop.size();
        c.logprobs = r.logprobs;
        c.ignore_eos = r.ignore_eos ? 1 : 0;
        c.deadline_ms = r.deadline_ms;
        c.lazy = r.lazy ? 1 : 0;
        c.lazy_keep_ratio = r.lazy_keep_ratio;
        c.lazy_schedule = r.lazy_schedule.empty() ? nullptr : r.lazy_schedule.c_str();
        c.lazy_revive_limit = r.lazy_revive_limit;
    }
    CRequest(const CRequest&) = delete;
    CRequest& operator=(const CRequest&) = delete;
};

Usage ToUsage(const prepack_usage& u) {
    Usage out;
    out.prompt_tokens = u.prompt_tokens;
    out.completion_tokens = u.completion_tokens;
    out.cached_prompt_tokens = u.cached_prompt_tokens;
    out.queue_ms = u.queue_ms;
    out.ttft_ms = u.ttft_ms;
    out.total_ms = u.total_ms;
    out.pruned_fraction = u.pruned_fraction;
    return out;
}

// Copies one batch result; the C strings may be NULL for requests that never ran.
Result ToResult(const prepack_result& r) {
    Result out;
    if (r.tokens != nullptr) out.tokens.assign(r.tokens, r.tokens + r.n_tokens);
    if (r.text != nullptr) out.text.assign(r.text, r.text_len);
    out.finish_reason = r.finish_reason;
    out.status = r.status;
    if (r.message != nullptr) out.message = r.message;
    out.usage = ToUsage(r.usage);
    return out;
}

}  // namespace

Error::Error(int code, std::string message) : code_(code), message_(std::move(message)) {}

void Status::Set(int code, std::string message) {
    code_ = code;
    message_ = std::move(message);
}

std::string Version() { return prepack_version(); }

std::string StatusName(int code) {
    prepack_status status;
    SetRawEnum(&status, code);
    return prepack_status_str(status);
}

EngineOptions::EngineOptions() {
    prepack_engine_options o;
    prepack_engine_options_init(&o);
    device = o.device;
    threads = o.threads;
    kv_budget_bytes = static_cast<int64_t>(o.kv_budget_bytes);
    kv_block_size = o.kv_block_size;
    max_batch_tokens = o.max_batch_tokens;
    max_running = o.max_running;
    policy = o.policy;
    dtype = o.dtype;
}

Request::Request() {
    prepack_request r;
    prepack_request_init(&r);
    add_bos = r.add_bos != 0;
    parse_special = r.parse_special != 0;
    max_tokens = r.max_tokens;
    temperature = r.temperature;
    top_k = r.top_k;
    top_p = r.top_p;
    min_p = r.min_p;
    repetition_penalty = r.repetition_penalty;
    seed = static_cast<int64_t>(r.seed);
    logprobs = r.logprobs;
    ignore_eos = r.ignore_eos != 0;
    deadline_ms = r.deadline_ms;
    lazy = r.lazy != 0;
    lazy_keep_ratio = r.lazy_keep_ratio;
    lazy_revive_limit = r.lazy_revive_limit;
}

// ---- Stream ---------------------------------------------------------------

Stream::Stream(prepack_stream* stream) : stream_(stream) {}

Stream::~Stream() { Close(); }

NextResult Stream::Next(int64_t timeout_ms, Status* status) {
    return Report<NextResult>(status, [&] {
        std::lock_guard<std::mutex> lock(next_mu_);
        // stream_ changes only under next_mu_ (in Close), so it is stable here.
        if (stream_ == nullptr) throw Error(PREPACK_FAILED_PRECONDITION, "stream is closed");
        if (ended_) return NEXT_END;
        prepack_event ev;
        prepack_event_init(&ev);
        const prepack_status st = prepack_stream_next(stream_, timeout_ms, &ev);
        if (st == PREPACK_DEADLINE_EXCEEDED) return NEXT_TIMEOUT;
        if (st == PREPACK_OUT_OF_RANGE) {
            ended_ = true;
            return NEXT_END;
        }
        Check(st);
        if (ev.kind == PREPACK_EVENT_TOKEN) {
            // The event's pointers die at the next call: copy everything now.
            token_.id = ev.token;
            token_.text.assign(ev.text, ev.text_len);
            token_.logprob = ev.logprob;
            token_.top_ids.assign(ev.top_ids, ev.top_ids + ev.n_top);
            token_.top_logprobs.assign(ev.top_logprobs, ev.top_logprobs + ev.n_top);
            result_.tokens.push_back(ev.token);
            result_.text += token_.text;
            return NEXT_TOKEN;
        }
        ended_ = true;
        result_.finish_reason = ev.finish_reason;
        result_.status = ev.status;
        result_.message = ev.message != nullptr ? ev.message : "";
        result_.usage = ToUsage(ev.usage);
        return NEXT_END;
    });
}

Token Stream::token() const {
    std::lock_guard<std::mutex> lock(next_mu_);
    return token_;
}

Result Stream::result() const {
    std::lock_guard<std::mutex> lock(next_mu_);
    return result_;
}

bool Stream::ended() const {
    std::lock_guard<std::mutex> lock(next_mu_);
    return ended_;
}

void Stream::Cancel() {
    std::lock_guard<std::mutex> lock(handle_mu_);
    if (stream_ != nullptr) prepack_stream_cancel(stream_);
}

void Stream::Close() {
    Cancel();   // wakes a Next() blocked on another thread, so the lock below comes promptly
    std::lock_guard<std::mutex> next_lock(next_mu_);
    prepack_stream* s;
    {
        std::lock_guard<std::mutex> lock(handle_mu_);
        s = stream_;
        stream_ = nullptr;
    }
    prepack_stream_destroy(s);   // NULL is a no-op: closing twice is harmless
}

bool Stream::closed() const {
    std::lock_guard<std::mutex> lock(handle_mu_);
    return stream_ == nullptr;
}

// ---- Engine ---------------------------------------------------------------

Engine::Engine(prepack_engine* engine) : engine_(engine) {}

Engine::~Engine() { Close(); }

Engine* Engine::Open(const EngineOptions& options, Status* status) {
    return Report<Engine*>(status, [&] {
        if (options.kv_budget_bytes < 0) throw Error(PREPACK_INVALID_ARGUMENT, "kv_budget_bytes is negative");
        prepack_engine_options o;
        prepack_engine_options_init(&o);
        o.model = options.model.c_str();
        SetRawEnum(&o.device, options.device);
        o.threads = options.threads;
        o.kv_budget_bytes = static_cast<uint64_t>(options.kv_budget_bytes);
        o.kv_block_size = options.kv_block_size;
        o.max_batch_tokens = options.max_batch_tokens;
        o.max_running = options.max_running;
        SetRawEnum(&o.policy, options.policy);
        SetRawEnum(&o.dtype, options.dtype);
        prepack_engine* e = nullptr;
        Check(prepack_engine_create(&o, &e));
        std::unique_ptr<prepack_engine, void (*)(prepack_engine*)> owned(e, prepack_engine_destroy);
        Engine* out = new Engine(e);
        owned.release();
        return out;
    });
}

Stream* Engine::Start(const Request& request, Status* status) {
    return Report<Stream*>(status, [&] {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (engine_ == nullptr) throw Error(PREPACK_FAILED_PRECONDITION, "engine is closed");
        CRequest c(request);
        prepack_stream* s = nullptr;
        Check(prepack_generate_start(engine_, &c.c, &s));
        std::unique_ptr<prepack_stream, void (*)(prepack_stream*)> owned(s, prepack_stream_destroy);
        Stream* out = new Stream(s);
        owned.release();
        return out;
    });
}

Result Engine::Generate(const Request& request, Status* status) {
    return Report<Result>(status, [&] {
        // The engine lock is held only to start: Close() meanwhile cancels
        // the request instead of waiting for it.
        std::unique_ptr<Stream> stream(Start(request, nullptr));
        while (stream->Next(-1, nullptr) != NEXT_END) {
        }
        Result r = stream->result();
        if (r.status != PREPACK_OK) throw Error(r.status, r.message.empty() ? StatusName(r.status) : r.message);
        return r;
    });
}

std::vector<int32_t> Engine::Tokenize(const std::string& text, bool add_special, bool parse_special,
                                      Status* status) {
    return Report<std::vector<int32_t>>(status, [&] {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (engine_ == nullptr) throw Error(PREPACK_FAILED_PRECONDITION, "engine is closed");
        std::vector<int32_t> ids(text.size() + 2);   // asked again below if the tokenizer needs more
        size_t n = 0;
        prepack_status st = prepack_tokenize_special(engine_, text.data(), text.size(), add_special, parse_special,
                                                     ids.data(), ids.size(), &n);
        if (st == PREPACK_OUT_OF_RANGE) {
            ids.resize(n);
            st = prepack_tokenize_special(engine_, text.data(), text.size(), add_special, parse_special, ids.data(),
                                          ids.size(), &n);
        }
        Check(st);
        ids.resize(n);
        return ids;
    });
}

std::string Engine::Detokenize(const std::vector<int32_t>& ids, Status* status) {
    return Report<std::string>(status, [&] {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (engine_ == nullptr) throw Error(PREPACK_FAILED_PRECONDITION, "engine is closed");
        size_t n = 0;
        prepack_status st = prepack_detokenize(engine_, ids.data(), ids.size(), nullptr, 0, &n);
        if (st != PREPACK_OUT_OF_RANGE) Check(st);
        std::string text(n + 1, '\0');
        Check(prepack_detokenize(engine_, ids.data(), ids.size(), text.data(), text.size(), &n));
        text.resize(n);
        return text;
    });
}

std::vector<Result> Engine::GenerateBatch(const std::vector<Request>& requests, Status* status) {
    return Report<std::vector<Result>>(status, [&] {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (engine_ == nullptr) throw Error(PREPACK_FAILED_PRECONDITION, "engine is closed");
        if (requests.empty()) throw Error(PREPACK_INVALID_ARGUMENT, "no requests");
        std::vector<std::unique_ptr<CRequest>> c;
        std::vector<const prepack_request*> pointers;
        for (const Request& r : requests) {
            c.push_back(std::make_unique<CRequest>(r));
            pointers.push_back(&c.back()->c);
        }
        prepack_result* raw = nullptr;
        Check(prepack_generate_batch(engine_, pointers.data(), pointers.size(), nullptr, &raw));
        const size_t n = pointers.size();
        // Freed exactly once, by the library's own function, even if a copy throws.
        struct Free {
            prepack_result* r;
            size_t          n;
            ~Free() { prepack_results_free(r, n); }
        } free_results{raw, n};
        std::vector<Result> out;
        out.reserve(n);
        for (size_t i = 0; i < n; ++i) out.push_back(ToResult(raw[i]));
        return out;
    });
}

void Engine::Close() {
    std::unique_lock<std::shared_mutex> lock(mu_);
    prepack_engine_destroy(engine_);   // NULL is a no-op: closing twice is harmless
    engine_ = nullptr;
}

bool Engine::closed() const {
    std::shared_lock<std::shared_mutex> lock(mu_);
    return engine_ == nullptr;
}

}  // namespace binding
}  // namespace prepack

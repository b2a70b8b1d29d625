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

// The C grammar text for a binding's (kind, text): NONE and JSON_OBJECT
// take no text, so "" is NULL there (anything else goes, for the library to
// refuse by name); the other kinds take any text, "" included (an empty
// regex matches only ""), so a caller never gets "grammar is NULL" for
// text it set.
const char* GrammarText(int32_t kind, const std::string& text) {
    const bool takes_no_text = kind == PREPACK_GRAMMAR_NONE || kind == PREPACK_GRAMMAR_JSON_OBJECT;
    return takes_no_text && text.empty() ? nullptr : text.c_str();
}

// A C conversation viewing a binding Conversation, which must outlive it.
struct CChat {
    prepack_chat                          c;
    std::vector<prepack_chat_message>     messages;
    std::vector<std::vector<const char*>> parts;   // each message's text parts

    explicit CChat(const Conversation& conv) {
        prepack_chat_init(&c);
        messages.resize(conv.messages.size());
        parts.resize(conv.messages.size());
        for (size_t i = 0; i < conv.messages.size(); ++i) {
            const ChatMessage&    in = conv.messages[i];
            prepack_chat_message& m = messages[i];
            prepack_chat_message_init(&m);
            m.role = in.role.c_str();
            if (in.has_content) m.content = in.content.c_str();
            for (const std::string& p : in.content_parts) parts[i].push_back(p.c_str());
            if (!parts[i].empty()) {
                m.content_parts = parts[i].data();
                m.n_content_parts = parts[i].size();
            }
            m.name = OrNull(in.name);
            m.tool_calls_json = OrNull(in.tool_calls_json);
            m.tool_call_id = OrNull(in.tool_call_id);
        }
        // NULL for none: the library answers "chat.messages is empty".
        c.messages = messages.empty() ? nullptr : messages.data();
        c.n_messages = messages.size();
        c.tools_json = OrNull(conv.tools_json);
        c.kwargs_json = OrNull(conv.kwargs_json);
        c.add_generation_prompt = conv.add_generation_prompt ? 1 : 0;
        c.template_name = OrNull(conv.template_name);
    }
    CChat(const CChat&) = delete;
    CChat& operator=(const CChat&) = delete;

    static const char* OrNull(const std::string& s) { return s.empty() ? nullptr : s.c_str(); }
};

// A C request viewing a binding Request, which must outlive it.
struct CRequest {
    prepack_request          c;
    std::vector<const char*> stop;
    std::unique_ptr<CChat>   chat;

    explicit CRequest(const Request& r) {
        static const int32_t kNoTokens = 0;   // a non-NULL pointer for an empty token prompt
        prepack_request_init(&c);
        const bool tokens = r.prompt_tokens_set || !r.prompt_tokens.empty();
        if (tokens) {
            c.prompt_tokens = r.prompt_tokens.empty() ? &kNoTokens : r.prompt_tokens.data();
            c.n_prompt_tokens = r.prompt_tokens.size();
        }
        if (r.has_chat) {
            chat = std::make_unique<CChat>(r.chat);
            c.chat = &chat->c;
            if (!r.prompt.empty()) c.prompt = r.prompt.c_str();   // refused by the library, as in C
        } else if (!tokens) {
            c.prompt = r.prompt.c_str();
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
        SetRawEnum(&c.grammar_kind, r.grammar_kind);
        c.grammar = GrammarText(r.grammar_kind, r.grammar);
        SetRawEnum(&c.tool_choice, r.tool_choice);
        c.tool_choice_function = r.tool_choice_function.empty() ? nullptr : r.tool_choice_function.c_str();
        c.parallel_tool_calls = r.parallel_tool_calls ? 1 : 0;
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

// A C string that may be NULL as a std::string ("" for NULL).
std::string OrEmpty(const char* s) { return s != nullptr ? s : ""; }

std::vector<ToolCallDelta> ToDeltas(const prepack_tool_call_delta* deltas, size_t n) {
    std::vector<ToolCallDelta> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].index = deltas[i].index;
        out[i].id = OrEmpty(deltas[i].id);
        out[i].name = OrEmpty(deltas[i].name);
        if (deltas[i].arguments != nullptr) out[i].arguments.assign(deltas[i].arguments, deltas[i].arguments_len);
    }
    return out;
}

std::vector<ToolCall> ToCalls(const prepack_tool_call* calls, size_t n) {
    std::vector<ToolCall> out(n);
    for (size_t i = 0; i < n; ++i) {
        out[i].id = OrEmpty(calls[i].id);
        out[i].name = OrEmpty(calls[i].name);
        if (calls[i].arguments != nullptr) out[i].arguments.assign(calls[i].arguments, calls[i].arguments_len);
    }
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

void CheckGrammar(int32_t kind, const std::string& grammar, Status* status) {
    Report<bool>(status, [&] {
        prepack_grammar_kind k;
        SetRawEnum(&k, kind);
        Check(prepack_grammar_check(k, GrammarText(kind, grammar)));
        return true;
    });
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

Conversation::Conversation() {
    prepack_chat c;
    prepack_chat_init(&c);
    add_generation_prompt = c.add_generation_prompt != 0;
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
    grammar_kind = r.grammar_kind;
    tool_choice = r.tool_choice;
    parallel_tool_calls = r.parallel_tool_calls != 0;
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
            if (ev.reasoning != nullptr) {
                token_.reasoning.assign(ev.reasoning, ev.reasoning_len);
            } else {
                token_.reasoning.clear();
            }
            token_.logprob = ev.logprob;
            token_.top_ids.assign(ev.top_ids, ev.top_ids + ev.n_top);
            token_.top_logprobs.assign(ev.top_logprobs, ev.top_logprobs + ev.n_top);
            token_.tool_call_deltas = ToDeltas(ev.tool_call_deltas, ev.n_tool_call_deltas);
            result_.tokens.push_back(ev.token);
            result_.text += token_.text;
            result_.reasoning += token_.reasoning;
            return NEXT_TOKEN;
        }
        ended_ = true;
        result_.finish_reason = ev.finish_reason;
        result_.status = ev.status;
        result_.message = ev.message != nullptr ? ev.message : "";
        result_.usage = ToUsage(ev.usage);
        result_.usage.reasoning_tokens = ev.reasoning_tokens;
        result_.tool_calls = ToCalls(ev.tool_calls, ev.n_tool_calls);
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
        if (!options.chat_template_file.empty()) o.chat_template_file = options.chat_template_file.c_str();
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
        // The streaming batch, read to the end stream by stream as
        // prepack_generate_batch does, so that results carry what only the
        // events have (a chat's thinking, its reasoning_tokens).
        std::vector<prepack_stream*> raw(pointers.size(), nullptr);
        Check(prepack_generate_batch_start(engine_, pointers.data(), pointers.size(), raw.data()));
        // Those not yet read are freed here whatever happens below.
        struct Free {
            std::vector<prepack_stream*>& streams;
            ~Free() {
                for (prepack_stream* s : streams) prepack_stream_destroy(s);
            }
        } free_streams{raw};
        std::vector<Result> out;
        out.reserve(raw.size());
        for (prepack_stream*& s : raw) {
            Stream stream(s);   // frees this request's engine state at the end of the iteration
            s = nullptr;
            while (stream.Next(-1, nullptr) != NEXT_END) {
            }
            out.push_back(stream.result());
        }
        return out;
    });
}

ChatPrompt Engine::RenderChat(const Conversation& conversation, Status* status) {
    return Report<ChatPrompt>(status, [&] {
        std::shared_lock<std::shared_mutex> lock(mu_);
        if (engine_ == nullptr) throw Error(PREPACK_FAILED_PRECONDITION, "engine is closed");
        CChat c(conversation);
        prepack_chat_prompt* raw = nullptr;
        Check(prepack_chat_render(engine_, &c.c, &raw));
        std::unique_ptr<prepack_chat_prompt, void (*)(prepack_chat_prompt*)> owned(raw, prepack_chat_prompt_free);
        ChatPrompt out;
        out.text.assign(raw->text, raw->text_len);
        out.ids.assign(raw->tokens, raw->tokens + raw->n_tokens);
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

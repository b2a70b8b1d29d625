// libFuzzer target: request validation of the C ABI. Each input is a short
// program of calls (generate_start, generate, batch_start, batch, tokenize,
// detokenize, stats, engine_create) with fuzzed field values: struct sizes of
// older callers, NULLs, NaN and infinite floats, negative and huge integers,
// invalid UTF-8, ids outside the vocabulary, stop strings, lazy schedules.
// Every call must return a prepack_status; nothing may crash, leak or trip a
// sanitizer.
//
// Speed: requests run on one shared synthetic:tiny engine, prompts are a few
// tokens, and a started stream is read for at most two tokens and then
// destroyed, so the fuzzed max_tokens reaches validation unchanged. Only the
// blocking prepack_generate_batch (which cannot be stopped early) gets
// max_tokens clamped to 2, and only after validation would accept it.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "fuzz/fuzz_input.h"

namespace {

using prepack_fuzz::AnyFloat;
using prepack_fuzz::SomeFloat;

// struct_size of an older or careless caller: 0 (unset) or the end of some
// field, as sizeof of an older version of the struct would be. (A size in
// the middle of a pointer is no caller's struct: the library would read half
// a pointer, as any C library reading a mis-sized struct would.)
template <typename T>
size_t FieldBoundary(FuzzedDataProvider& in, std::initializer_list<size_t> field_offsets) {
    const size_t pick = in.ConsumeIntegralInRange<size_t>(0, field_offsets.size());
    return pick == field_offsets.size() ? sizeof(T) : field_offsets.begin()[pick];
}

#define PP_OFF(T, f) offsetof(T, f)

// Storage behind one fuzzed prepack_request's pointers.
struct FuzzedRequest {
    prepack_request          r;
    std::string              prompt;
    std::vector<int32_t>     ids;
    std::vector<std::string> stop;
    std::vector<const char*> stop_ptrs;
    std::string              schedule;

    explicit FuzzedRequest(FuzzedDataProvider& in) {
        prepack_request_init(&r);
        // An older caller's struct (shorter struct_size), or an unset one.
        switch (in.ConsumeIntegralInRange(0, 7)) {
            case 0:
                r.struct_size = FieldBoundary<prepack_request>(
                    in, {0, PP_OFF(prepack_request, prompt), PP_OFF(prepack_request, prompt_tokens),
                         PP_OFF(prepack_request, max_tokens), PP_OFF(prepack_request, stop),
                         PP_OFF(prepack_request, logprobs), PP_OFF(prepack_request, lazy),
                         PP_OFF(prepack_request, lazy_schedule)});
                break;
            case 1: r.struct_size = 0; break;
            default: break;
        }
        switch (in.ConsumeIntegralInRange(0, 3)) {
            case 0: r.prompt = nullptr; break;
            case 1:
                for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 8); n > 0; --n) {
                    ids.push_back(in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 511)
                                                   : in.ConsumeIntegral<int32_t>());
                }
                r.prompt_tokens = ids.empty() && in.ConsumeBool() ? nullptr : ids.data();
                r.n_prompt_tokens = ids.size();
                break;
            default:
                prompt = in.ConsumeRandomLengthString(24);   // any bytes: invalid UTF-8 too
                r.prompt = prompt.c_str();
                break;
        }
        r.add_bos = in.ConsumeIntegral<int32_t>();
        r.max_tokens = in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(-2, 4) : in.ConsumeIntegral<int32_t>();
        if (in.ConsumeBool()) r.temperature = SomeFloat(in, -1.0f, 3.0f);
        if (in.ConsumeBool()) r.top_k = in.ConsumeIntegral<int32_t>();
        if (in.ConsumeBool()) r.top_p = SomeFloat(in, -0.5f, 1.5f);
        if (in.ConsumeBool()) r.min_p = SomeFloat(in, -0.5f, 1.5f);
        if (in.ConsumeBool()) r.repetition_penalty = SomeFloat(in, -1.0f, 3.0f);
        r.seed = in.ConsumeIntegral<uint64_t>();
        const size_t n_stop = in.ConsumeIntegralInRange<size_t>(0, 3);
        for (size_t i = 0; i < n_stop; ++i) stop.push_back(in.ConsumeRandomLengthString(8));
        for (const std::string& s : stop) stop_ptrs.push_back(in.ConsumeIntegralInRange(0, 15) == 0 ? nullptr : s.c_str());
        r.stop = stop_ptrs.empty() || in.ConsumeIntegralInRange(0, 15) == 0 ? nullptr : stop_ptrs.data();
        r.n_stop = stop_ptrs.size();
        if (in.ConsumeBool()) r.logprobs = in.ConsumeIntegralInRange<int32_t>(-1, 21);
        r.ignore_eos = in.ConsumeIntegral<int32_t>();
        if (in.ConsumeBool()) r.deadline_ms = in.ConsumeIntegral<int64_t>();
        r.lazy = in.ConsumeBool() ? in.ConsumeIntegral<int32_t>() : 0;
        if (in.ConsumeBool()) r.lazy_keep_ratio = AnyFloat(in);
        if (in.ConsumeBool()) {
            schedule = in.ConsumeRandomLengthString(24);
            r.lazy_schedule = schedule.c_str();
        }
    }
};

void GenerateStart(FuzzedDataProvider& in) {
    FuzzedRequest q(in);
    const int read = in.ConsumeIntegralInRange(0, 2);
    const bool cancel_first = in.ConsumeBool();
    prepack_stream* s = nullptr;
    if (prepack_generate_start(prepack_fuzz::SharedEngine(), &q.r, &s) == PREPACK_OK) {
        prepack_fuzz::ReadAFewThenDestroy(s, read, cancel_first);
    }
}

int StopAfter(const prepack_event* ev, void* user) {
    int* left = static_cast<int*>(user);
    return ev->kind == PREPACK_EVENT_TOKEN && --*left <= 0;
}

void GeneratePush(FuzzedDataProvider& in) {
    FuzzedRequest q(in);
    int left = in.ConsumeIntegralInRange(1, 2);   // the callback stops it after this many tokens
    (void)prepack_generate(prepack_fuzz::SharedEngine(), &q.r, in.ConsumeIntegralInRange(0, 15) ? StopAfter : nullptr,
                           &left);
}

void Batch(FuzzedDataProvider& in, bool streaming) {
    std::vector<std::unique_ptr<FuzzedRequest>> qs;
    for (size_t n = in.ConsumeIntegralInRange<size_t>(1, 3); n > 0; --n) {
        qs.push_back(std::make_unique<FuzzedRequest>(in));
    }
    std::vector<const prepack_request*> ptrs;
    for (auto& q : qs) {
        if (!streaming && q->r.max_tokens > 2) q->r.max_tokens = 2;   // this call runs to the end
        ptrs.push_back(in.ConsumeIntegralInRange(0, 15) == 0 ? nullptr : &q->r);
    }
    if (streaming) {
        std::vector<prepack_stream*> streams(ptrs.size(), nullptr);
        if (prepack_generate_batch_start(prepack_fuzz::SharedEngine(), ptrs.data(), ptrs.size(), streams.data()) ==
            PREPACK_OK) {
            for (prepack_stream* s : streams) prepack_fuzz::ReadAFewThenDestroy(s, 1, false);
        }
        return;
    }
    prepack_result* results = nullptr;
    if (prepack_generate_batch(prepack_fuzz::SharedEngine(), ptrs.data(), ptrs.size(), nullptr, &results) == PREPACK_OK) {
        prepack_results_free(results, ptrs.size());
    }
}

void Tokenize(FuzzedDataProvider& in) {
    const std::string text = in.ConsumeRandomLengthString(64);
    const size_t capacity = in.ConsumeIntegralInRange<size_t>(0, 80);
    std::vector<int32_t> ids(capacity);
    size_t n = 0;
    (void)prepack_tokenize(prepack_fuzz::SharedEngine(), text.data(), text.size(), in.ConsumeIntegral<int>(),
                           capacity ? ids.data() : nullptr, capacity, &n);
}

void Detokenize(FuzzedDataProvider& in) {
    std::vector<int32_t> ids;
    for (size_t n = in.ConsumeIntegralInRange<size_t>(0, 16); n > 0; --n) {
        ids.push_back(in.ConsumeBool() ? in.ConsumeIntegralInRange<int32_t>(0, 511) : in.ConsumeIntegral<int32_t>());
    }
    const size_t capacity = in.ConsumeIntegralInRange<size_t>(0, 128);
    std::vector<char> text(capacity);
    size_t len = 0;
    (void)prepack_detokenize(prepack_fuzz::SharedEngine(), ids.empty() ? nullptr : ids.data(), ids.size(),
                             capacity ? text.data() : nullptr, capacity, &len);
}

void Describe(FuzzedDataProvider& in) {
    prepack_stats st;
    prepack_stats_init(&st);
    st.struct_size = in.ConsumeIntegralInRange<size_t>(0, sizeof st);
    (void)prepack_engine_stats(prepack_fuzz::SharedEngine(), &st);
    prepack_model_desc d;
    prepack_model_desc_init(&d);
    d.struct_size = in.ConsumeIntegralInRange<size_t>(0, sizeof d);
    (void)prepack_model_info(prepack_fuzz::SharedEngine(), &d);
}

// Engine options. Models that cannot load keep it fast (validation still
// sees every fuzzed value); rarely a real synthetic:tiny engine is made, with
// the sizes that allocate (threads, KV budget, batch tokens) bounded so that
// only validation, not the machine, decides the outcome.
void CreateEngine(FuzzedDataProvider& in) {
    prepack_engine_options o;
    prepack_engine_options_init(&o);
    if (in.ConsumeIntegralInRange(0, 7) == 0) {
        o.struct_size = FieldBoundary<prepack_engine_options>(
            in, {0, PP_OFF(prepack_engine_options, model), PP_OFF(prepack_engine_options, device),
                 PP_OFF(prepack_engine_options, kv_budget_bytes), PP_OFF(prepack_engine_options, policy)});
    }
    const int model = in.ConsumeIntegralInRange(0, 31);
    std::string spec = in.ConsumeRandomLengthString(24);
    o.model = model == 0 ? nullptr : model == 1 ? "synthetic:tiny" : model < 8 ? "synthetic:nope" : spec.c_str();
    // Any int, as a C caller may store in an enum field (a C++ cast to an
    // out-of-range enum value would itself be undefined).
    const int device = in.ConsumeIntegralInRange(-1, 2), policy = in.ConsumeIntegralInRange(-1, 3);
    std::memcpy(&o.device, &device, sizeof device);
    std::memcpy(&o.policy, &policy, sizeof policy);
    o.threads = in.ConsumeIntegral<int32_t>();
    o.kv_budget_bytes = in.ConsumeIntegral<uint64_t>();
    o.kv_block_size = in.ConsumeIntegral<int32_t>();
    o.max_batch_tokens = in.ConsumeIntegral<int32_t>();
    o.max_running = in.ConsumeIntegral<int32_t>();
    if (model == 1) {
        o.threads = std::min(o.threads, 2);
        o.kv_budget_bytes = std::min<uint64_t>(o.kv_budget_bytes, 64ull << 20);
        o.max_batch_tokens = std::min(o.max_batch_tokens, 4096);
        o.kv_block_size = std::min(o.kv_block_size, 4096);
    }
    prepack_engine* e = nullptr;
    if (prepack_engine_create(in.ConsumeIntegralInRange(0, 15) ? &o : nullptr, &e) == PREPACK_OK) {
        prepack_engine_destroy(e);
    }
}

// Calls on NULL objects and a finished stream.
void Edges(FuzzedDataProvider& in) {
    prepack_event ev;
    prepack_event_init(&ev);
    ev.struct_size = in.ConsumeIntegralInRange<size_t>(0, sizeof ev);
    (void)prepack_stream_next(nullptr, 0, &ev);
    (void)prepack_stream_cancel(nullptr);
    prepack_stream_destroy(nullptr);
    prepack_results_free(nullptr, 3);
    prepack_request r;
    prepack_request_init(&r);
    r.prompt = "x";
    r.max_tokens = 1;
    prepack_stream* s = nullptr;
    if (prepack_generate_start(prepack_fuzz::SharedEngine(), &r, &s) != PREPACK_OK) return;
    while (prepack_stream_next(s, -1, &ev) == PREPACK_OK && ev.kind != PREPACK_EVENT_END) {}
    (void)prepack_stream_next(s, in.ConsumeIntegral<int64_t>() % 5, &ev);   // after the end: OUT_OF_RANGE
    (void)prepack_stream_cancel(s);
    prepack_stream_destroy(s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider in(data, size);
    for (int calls = 0; calls < 4 && in.remaining_bytes() > 0; ++calls) {
        switch (in.ConsumeIntegralInRange(0, 8)) {
            case 0: GenerateStart(in); break;
            case 1: GeneratePush(in); break;
            case 2: Batch(in, true); break;
            case 3: Batch(in, false); break;
            case 4: Tokenize(in); break;
            case 5: Detokenize(in); break;
            case 6: Describe(in); break;
            case 7: CreateEngine(in); break;
            default: Edges(in); break;
        }
    }
    return 0;
}

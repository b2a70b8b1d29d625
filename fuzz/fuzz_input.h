// Helpers shared by the C ABI and service fuzz targets: raw-bit floats (so
// NaN, infinities and denormals reach validation, which FuzzedDataProvider's
// ConsumeFloatingPoint never produces) and the one small engine every input
// runs against.
#pragma once

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "prepack/prepack.h"

namespace prepack_fuzz {

// Any float bit pattern, NaNs included.
inline float AnyFloat(FuzzedDataProvider& in) {
    const uint32_t bits = in.ConsumeIntegral<uint32_t>();
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// Usually a plausible value, sometimes any bit pattern: plausible values get
// requests past validation into the engine, raw bits probe validation.
inline float SomeFloat(FuzzedDataProvider& in, float lo, float hi) {
    return in.ConsumeBool() ? in.ConsumeFloatingPointInRange<float>(lo, hi) : AnyFloat(in);
}

// synthetic:tiny (6 layers, 512-token vocabulary) on one thread with a small
// KV budget (room for 512 tokens), created once for the whole run. Requests
// that fit are cheap; prompts that do not fit hit RESOURCE_EXHAUSTED.
inline prepack_engine* SharedEngine() {
    static prepack_engine* engine = [] {
        prepack_engine_options o;
        prepack_engine_options_init(&o);
        o.model = "synthetic:tiny";
        o.threads = 1;
        o.kv_budget_bytes = 512ull * 2 * 6 * 288 * sizeof(float);   // 512 tokens of tiny's K and V
        prepack_engine* e = nullptr;
        if (prepack_engine_create(&o, &e) != PREPACK_OK) {
            std::fprintf(stderr, "fuzz: cannot create the engine: %s\n", prepack_last_error());
            std::abort();
        }
        // Destroyed at exit, before the OpenMP runtime shuts down (its exit
        // handler was registered while the engine was created, so it runs
        // after this one): an engine thread still finishing a cancelled
        // request inside a parallel region after that dies with "OMP: Error
        // #132: Thread identifier invalid", which libFuzzer reports as a
        // deadly signal once the run is over.
        std::atexit([] { prepack_engine_destroy(SharedEngine()); });
        return e;
    }();
    return engine;
}

// Reads a started stream's first few events, then destroys it (which cancels
// whatever is left): generation length never depends on max_tokens, so the
// fuzzed value stays as is and a run stays fast.
inline void ReadAFewThenDestroy(prepack_stream* s, int max_tokens_read, bool cancel_first) {
    prepack_event ev;
    prepack_event_init(&ev);
    if (cancel_first) prepack_stream_cancel(s);
    for (int i = 0; i <= max_tokens_read; ++i) {
        if (prepack_stream_next(s, -1, &ev) != PREPACK_OK || ev.kind == PREPACK_EVENT_END) break;
        if (ev.text == nullptr || (ev.n_top > 0 && (ev.top_ids == nullptr || ev.top_logprobs == nullptr))) {
            std::fprintf(stderr, "fuzz: token event with NULL pointers\n");
            std::abort();
        }
    }
    prepack_stream_destroy(s);
}

}  // namespace prepack_fuzz

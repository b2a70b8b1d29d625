// The oracle the engine tests compare against: what a request generates
// alone, through Generate() on a private KV pool (no batching, no sharing,
// no scheduler), with the same sampling and LazyLLM options.
#pragma once

#include <gtest/gtest.h>

#include "core/engine/generate.h"
#include "core/forward/cpu_pass.h"
#include "core/kv/kv_cache.h"
#include "core/request/request.h"

namespace prepack::testing {

inline GenerateResult SoloGenerate(const Model& m, const Request& r) {
    auto pool = KvBlockPool::Create(m.config(), 16, 64ull << 20);
    EXPECT_TRUE(pool.ok());
    if (!pool.ok()) return {};
    ForwardPass fwd(m, **pool);
    GenerateRequest g;
    g.prompt = r.prompt;
    g.prompt_tokens = r.prompt_tokens;
    g.max_tokens = r.max_tokens;
    g.sampling = r.sampling;
    g.stop = r.stop;
    g.ignore_eos = r.ignore_eos;
    g.grammar = r.grammar;
    g.lazy = r.lazy;
    if (r.lazy) {
        auto sch = ResolveLazySchedule(r.lazy_schedule, r.lazy_keep_ratio, m.config().n_layers);
        EXPECT_TRUE(sch.ok()) << sch.status();
        if (sch.ok()) g.lazy_schedule = *sch;
    }
    auto out = Generate(fwd, g);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *out : GenerateResult{};
}

}  // namespace prepack::testing

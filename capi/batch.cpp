// Offline batches: a whole batch submitted at once (so the engine's policy
// sees all of it), one stream per request, or every result collected with
// progress.
#include "capi/capi_internal.h"

#include <functional>

using namespace prepack::capi;

extern "C" {

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
        // Zeroed: results not yet filled stay valid (empty) to free.
        prepack_result* out = AllocateResults(n);
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
            ResultExtra& extra = *ResultExtras(out, i);
            prepack_event e;
            prepack_event_init(&e);
            while (prepack_stream_next(streams[i].get(), -1, &e) == PREPACK_OK) {
                if (e.kind == PREPACK_EVENT_TOKEN) {
                    tokens.push_back(e.token);
                    text.append(e.text, e.text_len);
                    if (e.reasoning != nullptr) extra.reasoning.append(e.reasoning, e.reasoning_len);
                    continue;
                }
                out[i].finish_reason = e.finish_reason;
                out[i].status = e.status;
                out[i].usage = e.usage;
                out[i].message = CopyString(e.message);
                for (size_t k = 0; k < e.n_tool_calls; ++k) {
                    const prepack_tool_call& c = e.tool_calls[k];
                    extra.calls.push_back({c.id, c.name, std::string(c.arguments, c.arguments_len)});
                }
            }
            // The views last: `calls` no longer moves.
            for (const prepack::ParsedToolCall& c : extra.calls) {
                extra.views.push_back({c.id.c_str(), c.name.c_str(), c.arguments.c_str(), c.arguments.size()});
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
        LastError().clear();
        return PREPACK_OK;
    });
}

void prepack_results_free(prepack_result* results, size_t n) { FreeResults(results, n); }

}  // extern "C"

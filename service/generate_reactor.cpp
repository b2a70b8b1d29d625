#include "generate_reactor.h"

#include "convert.h"
#include "request_log.h"

namespace prepackd {
namespace {

// How long the pump waits for one event before looking again. Events come
// promptly after a cancel, so this only bounds a hang, never adds latency.
constexpr int64_t kPollMs = 250;

}  // namespace

GenerateReactor::GenerateReactor(EngineHost* host, std::string id, prepack_stream* stream, bool logprobs,
                                 std::chrono::system_clock::time_point deadline, size_t capacity)
    : PumpedWriter(host, capacity), id_(std::move(id)), logprobs_(logprobs), deadline_(deadline), stream_(stream) {
    StartPump();
}

void GenerateReactor::StopWork() {
    std::lock_guard<std::mutex> lock(stream_mu_);
    if (stream_ != nullptr) prepack_stream_cancel(stream_);
}

void GenerateReactor::Pump() {
    RequestRecord rec;
    rec.id = id_;
    rec.rpc = "Generate";
    prepack_event ev;
    prepack_event_init(&ev);
    grpc::Status final;
    while (true) {
        const prepack_status st = prepack_stream_next(stream_, kPollMs, &ev);
        if (st == PREPACK_DEADLINE_EXCEEDED) continue;   // no event yet
        if (st != PREPACK_OK) {
            final = ToGrpc(st == PREPACK_OUT_OF_RANGE ? PREPACK_INTERNAL : st, prepack_last_error());
            break;
        }
        if (ev.kind == PREPACK_EVENT_TOKEN) {
            prepack::v1::GenerateResponse r;
            r.add_token_ids(ev.token);
            r.set_text(ToValidUtf8(std::string_view(ev.text, ev.text_len)));
            if (logprobs_) AddLogprob(ev, r.add_logprobs());
            Push(std::move(r));   // false: the client is gone; read on to the END event
            continue;
        }
        rec.prompt_tokens = ev.usage.prompt_tokens;
        rec.generated_tokens = ev.usage.completion_tokens;
        rec.ttft_ms = rec.generated_tokens > 0 ? ev.usage.ttft_ms : -1.0;
        rec.total_ms = ev.usage.total_ms;
        if (ev.status == PREPACK_OK) {
            prepack::v1::GenerateResponse last;
            last.set_finish_reason(ToProto(ev.finish_reason));
            FillUsage(ev.usage, last.mutable_usage());
            Push(std::move(last));
        }
        final = ToGrpc(ev.status, ev.message);
        break;
    }
    {
        std::lock_guard<std::mutex> lock(stream_mu_);
        prepack_stream_destroy(stream_);
        stream_ = nullptr;
    }
    host()->Release();
    // A stop from outside reads as CANCELLED in the engine; say why.
    if (server_cancelled()) {
        final = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server shut down before the request finished");
    } else if (final.error_code() == grpc::StatusCode::CANCELLED && AtDeadline(deadline_)) {
        final = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded");
    }
    rec.status = final;
    host()->CountFinished(final.error_code());
    LogRequest(rec);
    Close(final);
}

}  // namespace prepackd

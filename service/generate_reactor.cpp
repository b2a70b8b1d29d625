#include "generate_reactor.h"

#include "convert.h"
#include "request_builder.h"
#include "request_decoder.h"
#include "request_log.h"

namespace prepackd {
namespace {

// How long the pump waits for one event before looking again. Events come
// promptly after a cancel, so this only bounds a hang, never adds latency.
constexpr int64_t kPollMs = 250;

}  // namespace

const char* RpcName(StreamRpc rpc) { return rpc == StreamRpc::kChat ? "Chat" : "Generate"; }

GenerateReactor::GenerateReactor(EngineHost* host, StreamRpc rpc, std::string id, const grpc::ByteBuffer& request,
                                 std::chrono::system_clock::time_point deadline, size_t capacity,
                                 std::chrono::steady_clock::time_point received)
    : PumpedWriter(host, capacity),
      rpc_(rpc),
      id_(std::move(id)),
      bytes_(request),
      deadline_(deadline),
      received_(received) {
    StartPump();
}

void GenerateReactor::StopWork() {
    std::lock_guard<std::mutex> lock(stream_mu_);
    stopped_ = true;
    if (stream_ != nullptr) prepack_stream_cancel(stream_);
}

grpc::Status GenerateReactor::Decode() {
    grpc::Status s;
    if (rpc_ == StreamRpc::kChat) {
        prepack::v1::ChatRequest chat;
        s = DecodeRequest(bytes_, &chat);
        if (s.ok()) request_ = ToGenerateRequest(&chat);
    } else {
        s = DecodeRequest(bytes_, &request_);
    }
    bytes_.Clear();
    return s;
}

bool GenerateReactor::Start(grpc::Status* status, int32_t* prompt_tokens) {
    if (gone()) {   // cancelled before the pump ran: nothing to tokenize for
        *status = grpc::Status(grpc::StatusCode::CANCELLED, "the call was cancelled before it started");
        return false;
    }
    // Decoding (megabytes, for a long prompt) and tokenizing happen here,
    // on the call's own thread.
    *status = Decode();
    if (!status->ok()) return false;
    PreparedRequest prepared;
    *status = PrepareRequest(request_, "", host()->engine(), host()->model(), host()->max_prompt_bytes(), deadline_,
                             &prepared, rpc_ == StreamRpc::kChat ? "conversation" : "chat");
    *prompt_tokens = static_cast<int32_t>(prepared.prompt_ids.size());
    if (!status->ok()) return false;
    prepack_stream* stream = nullptr;
    if (prepack_status st = prepack_generate_start(host()->engine(), &prepared.request, &stream); st != PREPACK_OK) {
        *status = ToGrpc(st, prepack_last_error());
        return false;
    }
    std::lock_guard<std::mutex> lock(stream_mu_);
    stream_ = stream;
    // The client left while the prompt was tokenized: stop at once.
    if (stopped_) prepack_stream_cancel(stream_);
    return true;
}

grpc::Status GenerateReactor::Run(RequestRecord* rec) {
    const bool logprobs = request_.logprobs() || request_.top_logprobs() > 0;
    prepack_event ev;
    prepack_event_init(&ev);
    while (true) {
        const prepack_status st = host()->NextEvent(stream_, kPollMs, &ev);
        if (st == PREPACK_DEADLINE_EXCEEDED) continue;   // no event yet
        if (st != PREPACK_OK) return ToGrpc(st == PREPACK_OUT_OF_RANGE ? PREPACK_INTERNAL : st, prepack_last_error());
        if (ev.kind == PREPACK_EVENT_TOKEN) {
            prepack::v1::GenerateResponse r;
            r.add_token_ids(ev.token);
            r.set_text(ToValidUtf8(std::string_view(ev.text, ev.text_len)));
            if (ev.reasoning != nullptr && ev.reasoning_len > 0) {
                r.set_reasoning(ToValidUtf8(std::string_view(ev.reasoning, ev.reasoning_len)));
            }
            if (logprobs) AddLogprob(ev, r.add_logprobs());
            AddPromptLogprobs(ev, r.mutable_prompt_logprobs());   // the first response of a request that asked
            AddToolCallDeltas(ev, r.mutable_tool_call_deltas());
            Push(r);   // false: the client is gone; read on to the END event
            continue;
        }
        rec->prompt_tokens = ev.usage.prompt_tokens;
        rec->generated_tokens = ev.usage.completion_tokens;
        rec->ttft_ms = rec->generated_tokens > 0 ? ev.usage.ttft_ms : -1.0;
        rec->total_ms = ev.usage.total_ms;
        if (ev.status == PREPACK_OK) {
            prepack::v1::GenerateResponse last;
            last.set_finish_reason(ToProto(ev.finish_reason));
            FillUsage(ev, last.mutable_usage());
            AddToolCalls(ev, last.mutable_tool_calls());
            Push(last);
        }
        return ToGrpc(ev.status, ev.message);
    }
}

void GenerateReactor::Pump() {
    RequestRecord rec;
    rec.id = id_;
    rec.rpc = RpcName(rpc_);
    grpc::Status final;
    if (Start(&final, &rec.prompt_tokens)) {
        final = Run(&rec);
        std::lock_guard<std::mutex> lock(stream_mu_);
        prepack_stream_destroy(stream_);
        stream_ = nullptr;
    } else {
        // Refused before it reached the engine: the time spent here is the
        // whole cost of the call.
        rec.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - received_).count();
    }
    host()->admission().ReleaseInteractive();
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

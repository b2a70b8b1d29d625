#include "batch_reactor.h"

#include <memory>

#include "convert.h"
#include "request_builder.h"
#include "request_decoder.h"
#include "request_log.h"

namespace prepackd {
namespace {

// A pass over the running streams that found nothing waits this long on the
// oldest one, so an idle batch sleeps in the engine instead of spinning.
constexpr int64_t kWaitMs = 5;

}  // namespace

BatchReactor::BatchReactor(EngineHost* host, std::string id, const grpc::ByteBuffer& request,
                           std::chrono::system_clock::time_point deadline, size_t capacity)
    : PumpedWriter(host, capacity),
      id_(std::move(id)),
      bytes_(request),
      deadline_(deadline),
      window_(host->admission().batch_window()) {
    StartPump();
}

bool BatchReactor::TakeSlots(int n) {
    for (int taken = 0; taken < n; ++taken) {
        if (!TakeSlot()) {
            for (; taken > 0; --taken) ReleaseSlot();
            return false;
        }
    }
    return true;
}

bool BatchReactor::TakeSlot() {
    if (spare_) {
        spare_ = false;
        return true;
    }
    if (held_ >= window_ || !host()->admission().TryBatch()) return false;
    ++held_;
    return true;
}

void BatchReactor::ReleaseSlot() {
    host()->admission().ReleaseBatch();
    --held_;
}

void BatchReactor::StopWork() {
    std::lock_guard<std::mutex> lock(streams_mu_);
    stopped_ = true;
    for (Running& r : running_) prepack_stream_cancel(r.stream);
}

void BatchReactor::Answer(uint32_t index, prepack::v1::GenerateResult result, int32_t prompt_tokens,
                          size_t choice) {
    RequestRecord rec;
    rec.id = id_ + "." + std::to_string(index);
    if (lines_ != nullptr) rec.id.append(".").append(std::to_string(choice));   // a line's choice
    rec.rpc = "GenerateBatch";
    rec.prompt_tokens = prompt_tokens;
    rec.generated_tokens = result.token_ids_size();
    generated_ += rec.generated_tokens;
    if (result.has_usage()) {
        rec.ttft_ms = rec.generated_tokens > 0 ? result.usage().ttft_ms() : -1.0;
        rec.total_ms = result.usage().total_ms();
    }
    rec.status = grpc::Status(static_cast<grpc::StatusCode>(result.status_code()), result.status_message());
    if (rec.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) expired_ = true;
    host()->CountFinished(rec.status.error_code());
    LogRequest(rec);
    prepack::v1::GenerateBatchResponse resp;
    resp.set_index(index);
    if (lines_ != nullptr) {
        std::optional<std::string> line = lines_->End(index, choice, result);
        if (!line) return;   // the line's other choices still run
        resp.set_openai_batch_line(std::move(*line));
    } else {
        *resp.mutable_result() = std::move(result);
    }
    Push(std::move(resp));   // false: the client is gone; the pump winds down
}

void BatchReactor::AnswerLine(uint32_t index, http::BatchLines::Refusal refusal) {
    RequestRecord rec;
    rec.id = id_ + "." + std::to_string(index);
    rec.rpc = "GenerateBatch";
    rec.status = refusal.status;
    host()->CountFinished(refusal.status.error_code());
    LogRequest(rec);
    prepack::v1::GenerateBatchResponse resp;
    resp.set_index(index);
    resp.set_openai_batch_line(std::move(refusal.line));
    Push(std::move(resp));
}

bool BatchReactor::SubmitLine(uint32_t index, std::vector<Starting>* starting,
                              std::vector<prepack_request>* requests) {
    if (auto refusal = lines_->Parse(index, request_.openai_batch_lines(static_cast<int>(index)))) {
        AnswerLine(index, std::move(*refusal));
        return true;
    }
    const int choices = lines_->choices(index);
    if (!TakeSlots(choices)) return false;   // window or queue full: the rest wait for earlier ones to finish
    std::vector<prepack_request> mine;
    if (auto refusal = lines_->Prepare(index, deadline_, &mine)) {
        for (int k = 0; k < choices; ++k) ReleaseSlot();
        AnswerLine(index, std::move(*refusal));
        return true;
    }
    for (size_t k = 0; k < mine.size(); ++k) {
        starting->push_back({index, k, lines_->logprobs(index), 0});
        requests->push_back(mine[k]);
    }
    return true;
}

void BatchReactor::Submit() {
    // Take every admission slot the window allows now and submit those
    // requests in one call, so the engine's policy sees them together
    // (under BatchLLM: one prefix tree over all of them, shared prefixes
    // computed once).
    std::vector<Starting> starting;
    std::vector<prepack_request> requests;
    std::vector<std::unique_ptr<PreparedRequest>> prepared;   // what `requests` borrow until started
    while (next_ < count_ && !gone()) {
        const uint32_t i = static_cast<uint32_t>(next_);
        if (lines_ != nullptr) {
            if (!SubmitLine(i, &starting, &requests)) break;
            ++next_;
            continue;
        }
        if (!TakeSlot()) break;   // window or queue full: the rest wait for earlier ones to finish
        ++next_;
        const prepack::v1::GenerateRequest& in = request_.requests(static_cast<int>(i));
        auto p = std::make_unique<PreparedRequest>();
        const grpc::Status s = PrepareRequest(in, "requests[" + std::to_string(i) + "].", host()->engine(),
                                              host()->model(), host()->max_prompt_bytes(), deadline_, p.get());
        const int32_t prompt_tokens = static_cast<int32_t>(p->prompt_ids.size());
        if (!s.ok()) {
            AnswerError(i, s, prompt_tokens);
            continue;
        }
        starting.push_back({i, 0, in.logprobs() || in.top_logprobs() > 0, prompt_tokens});
        requests.push_back(p->request);
        prepared.push_back(std::move(p));
    }
    if (starting.empty()) return;
    std::vector<const prepack_request*> pointers;
    for (const prepack_request& r : requests) pointers.push_back(&r);
    std::vector<prepack_stream*> streams(requests.size(), nullptr);
    const prepack_status st =
        prepack_generate_batch_start(host()->engine(), pointers.data(), pointers.size(), streams.data());
    if (st != PREPACK_OK) {
        const grpc::Status s = ToGrpc(st, prepack_last_error());
        for (const Starting& m : starting) AnswerError(m.index, s, m.prompt_tokens, m.choice);
        return;
    }
    // A request the engine refused has a stream holding just its error; it
    // is read and answered like any other.
    std::lock_guard<std::mutex> lock(streams_mu_);
    for (size_t k = 0; k < starting.size(); ++k) {
        Running run;
        run.index = starting[k].index;
        run.choice = starting[k].choice;
        run.logprobs = starting[k].logprobs;
        run.stream = streams[k];
        // Cancelled while submitting: stop these too.
        if (stopped_) prepack_stream_cancel(run.stream);
        running_.push_back(std::move(run));
    }
}

void BatchReactor::AnswerError(uint32_t index, const grpc::Status& status, int32_t prompt_tokens, size_t choice) {
    ReleaseSlot();
    prepack::v1::GenerateResult result;
    result.set_finish_reason(prepack::v1::FINISH_REASON_ERROR);
    result.set_status_code(status.error_code());
    result.set_status_message(status.error_message());
    Answer(index, std::move(result), prompt_tokens, choice);
}

bool BatchReactor::ReadOne(Running* run, int64_t timeout_ms, bool* got_event) {
    prepack_event ev;
    prepack_event_init(&ev);
    const prepack_status st = host()->NextEvent(run->stream, timeout_ms, &ev);
    if (st == PREPACK_DEADLINE_EXCEEDED) return false;
    *got_event = true;
    prepack::v1::GenerateResult& r = run->result;
    if (st != PREPACK_OK) {
        r.set_finish_reason(prepack::v1::FINISH_REASON_ERROR);
        r.set_status_code(grpc::StatusCode::INTERNAL);
        r.set_status_message(prepack_last_error());
        return true;
    }
    if (ev.kind == PREPACK_EVENT_TOKEN) {
        r.add_token_ids(ev.token);
        r.mutable_text()->append(ev.text, ev.text_len);
        if (ev.reasoning != nullptr && ev.reasoning_len > 0) {
            r.mutable_reasoning()->append(ev.reasoning, ev.reasoning_len);
        }
        if (run->logprobs) AddLogprob(ev, r.add_logprobs());
        AddPromptLogprobs(ev, r.mutable_prompt_logprobs());   // the first token's, when asked for
        return false;
    }
    r.set_finish_reason(ToProto(ev.finish_reason));
    FillUsage(ev, r.mutable_usage());
    AddToolCalls(ev, r.mutable_tool_calls());
    grpc::StatusCode code = static_cast<grpc::StatusCode>(ev.status);
    std::string message = ev.message;
    if (code == grpc::StatusCode::CANCELLED && server_cancelled()) {
        code = grpc::StatusCode::UNAVAILABLE;
        message = "the server shut down before the request finished";
    } else if (code == grpc::StatusCode::CANCELLED && AtDeadline(deadline_)) {
        code = grpc::StatusCode::DEADLINE_EXCEEDED;
        message = "deadline exceeded";
    }
    r.set_status_code(code);
    r.set_status_message(message);
    return true;
}

bool BatchReactor::Drain(Running* run, int64_t first_timeout_ms, bool* got_event) {
    int64_t timeout = first_timeout_ms;
    while (true) {
        bool got = false;
        if (ReadOne(run, timeout, &got)) return true;
        if (!got) return false;
        *got_event = true;
        timeout = 0;
    }
}

void BatchReactor::Complete(size_t k) {
    Running done;
    {
        std::lock_guard<std::mutex> lock(streams_mu_);
        done = std::move(running_[k]);
        running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(k));
    }
    prepack_stream_destroy(done.stream);
    ReleaseSlot();
    // The text was assembled from whole-character pieces; check anyway.
    done.result.set_text(ToValidUtf8(done.result.text()));
    if (!done.result.reasoning().empty()) done.result.set_reasoning(ToValidUtf8(done.result.reasoning()));
    const int32_t prompt_tokens = done.result.usage().prompt_tokens();
    Answer(done.index, std::move(done.result), prompt_tokens, done.choice);
}

grpc::Status BatchReactor::Decode() {
    grpc::Status s = DecodeRequest(bytes_, &request_);
    bytes_.Clear();
    if (!s.ok()) return s;
    const int lines = request_.openai_batch_lines_size();
    if (request_.requests_size() > 0 && lines > 0) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                            "openai_batch_lines: set requests or openai_batch_lines, not both");
    }
    count_ = lines > 0 ? lines : request_.requests_size();
    if (count_ == 0) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "requests: must not be empty (or openai_batch_lines)");
    }
    // A line holds a slot per choice, all at once: no more than the window.
    if (lines > 0) {
        lines_ = std::make_unique<http::BatchLines>(host()->engine(), host()->model(), host()->model_id(), window_,
                                                    host()->max_prompt_bytes());
    }
    return grpc::Status::OK;
}

void BatchReactor::Pump() {
    grpc::Status refused = Decode();
    if (!refused.ok()) {
        // Refused as a whole: counted like any refusal (members never ran).
        host()->CountFinished(refused.error_code());
        End(refused);
        return;
    }
    while (true) {
        Submit();
        if (running_.empty()) {
            if (next_ >= count_ || gone()) break;
            // Every slot is taken by other calls: they end by themselves.
            std::this_thread::sleep_for(std::chrono::milliseconds(kWaitMs));
            continue;
        }
        bool got_event = false;
        for (size_t k = 0; k < running_.size();) {
            if (Drain(&running_[k], 0, &got_event)) {
                Complete(k);
                got_event = true;
            } else {
                ++k;
            }
        }
        // Nothing new anywhere: sleep on the oldest stream instead of spinning.
        if (!got_event && !running_.empty() && Drain(&running_.front(), kWaitMs, &got_event)) Complete(0);
    }
    grpc::Status final = grpc::Status::OK;
    if (server_cancelled()) {
        final = grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server shut down");
    } else if (expired_ || std::chrono::system_clock::now() >= deadline_) {
        // Every result already says which requests the deadline cut short.
        final = grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                             "deadline exceeded before every request of the batch finished");
    } else if (gone()) {
        // The client left (cancelled, or its own deadline timer fired a
        // moment before ours): never OK, though it no longer hears it.
        final = grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the batch");
    }
    End(final);
}

void BatchReactor::End(const grpc::Status& final) {
    if (spare_) ReleaseSlot();
    // The call's own line (members have theirs, "ID.INDEX"): what the
    // client was told about the batch as a whole.
    RequestRecord rec;
    rec.id = id_;
    rec.rpc = "GenerateBatch";
    rec.generated_tokens = generated_;
    rec.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started_).count();
    rec.status = final;
    LogRequest(rec);
    Close(final);
}

}  // namespace prepackd

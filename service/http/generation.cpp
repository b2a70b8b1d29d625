#include "http/generation.h"

#include <algorithm>

#include "http/http_transport.h"

namespace prepackd::http {
namespace {

using Clock = std::chrono::steady_clock;

// A pass over several streams that found nothing waits this long on the
// first unfinished one (as BatchReactor does).
constexpr int64_t kWaitMs = 5;

}  // namespace

GenerationCall::GenerationCall(EngineHost* host, std::string id, const char* rpc, Clock::time_point received,
                               int client_fd)
    : host_(host), received_(received), client_fd_(client_fd) {
    rec_.id = std::move(id);
    rec_.rpc = rpc;
    host_->CallStarted();
    host_->Register(this);
}

GenerationCall::~GenerationCall() {
    CancelAll();
    DrainAndDestroy();
    for (; slots_ > 0; --slots_) host_->admission().ReleaseInteractive();
    if (!finished_) {
        Finish(server_cancelled_ ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server shut down")
                                 : grpc::Status(grpc::StatusCode::CANCELLED, "the client disconnected"));
    }
    host_->Unregister(this);
    host_->CallEnded();   // last: the engine may go once every call ended
}

bool GenerationCall::TakeSlots(int count) {
    for (int i = 0; i < count; ++i) {
        if (!host_->admission().TryInteractive()) {
            for (; slots_ > 0; --slots_) host_->admission().ReleaseInteractive();
            return false;
        }
        ++slots_;
    }
    return true;
}

grpc::Status GenerationCall::Start(const std::vector<prepack_request>& requests) {
    std::vector<prepack_stream*> streams(requests.size(), nullptr);
    if (requests.size() == 1) {
        if (prepack_status st = prepack_generate_start(host_->engine(), &requests[0], &streams[0]); st != PREPACK_OK) {
            return ToGrpc(st, prepack_last_error());
        }
    } else {
        std::vector<const prepack_request*> ptrs;
        for (const prepack_request& r : requests) ptrs.push_back(&r);
        const prepack_status st =
            prepack_generate_batch_start(host_->engine(), ptrs.data(), ptrs.size(), streams.data());
        if (st != PREPACK_OK) return ToGrpc(st, prepack_last_error());
    }
    std::lock_guard<std::mutex> lock(mu_);
    streams_ = std::move(streams);
    // Stopped while starting: the END events (CANCELLED) come at once.
    if (stopped_) {
        for (prepack_stream* s : streams_) prepack_stream_cancel(s);
    }
    return grpc::Status::OK;
}

void GenerationCall::CancelAll() {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    for (prepack_stream* s : streams_) {
        if (s != nullptr) prepack_stream_cancel(s);
    }
}

void GenerationCall::CancelFromServer() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        server_cancelled_ = true;
    }
    CancelAll();
}

grpc::Status GenerationCall::Run(const OnEvent& on_token, const OnEvent& on_end) {
    const size_t n = streams_.size();
    std::vector<bool> ended(n, false);
    size_t left = n;
    grpc::Status first_error;
    double first_ttft = -1.0, last_total = -1.0;
    auto last_check = Clock::now();
    prepack_event ev;
    prepack_event_init(&ev);

    // Handles one event of choice k.
    auto handle = [&](size_t k) {
        const int choice = static_cast<int>(k);
        if (ev.kind == PREPACK_EVENT_TOKEN) {
            if (!client_gone_ && !on_token(choice, ev)) {
                client_gone_ = true;
                CancelAll();
            }
            return;
        }
        ended[k] = true;
        --left;
        rec_.generated_tokens += ev.usage.completion_tokens;
        if (ev.usage.completion_tokens > 0 && (first_ttft < 0 || ev.usage.ttft_ms < first_ttft)) {
            first_ttft = ev.usage.ttft_ms;
        }
        last_total = std::max(last_total, ev.usage.total_ms);
        const grpc::Status s = ToGrpc(ev.status, ev.message);
        if (s.ok()) {
            if (!client_gone_ && !on_end(choice, ev)) {
                client_gone_ = true;
                CancelAll();
            }
        } else if (first_error.ok()) {
            first_error = s;
            CancelAll();   // one choice failed: the request did
        }
    };
    // A stream that ends without an END event (it cannot, but never spin).
    auto broken = [&](size_t k, prepack_status st) {
        ended[k] = true;
        --left;
        if (first_error.ok()) {
            first_error = ToGrpc(st == PREPACK_OUT_OF_RANGE ? PREPACK_INTERNAL : st, prepack_last_error());
            CancelAll();
        }
    };

    while (left > 0) {
        if (n == 1) {
            const prepack_status st = host_->NextEvent(streams_[0], kCheckMs, &ev);
            if (st == PREPACK_OK) {
                handle(0);
            } else if (st != PREPACK_DEADLINE_EXCEEDED) {
                broken(0, st);
            }
        } else {
            bool got = false;
            for (size_t k = 0; k < n; ++k) {
                while (!ended[k]) {
                    const prepack_status st = host_->NextEvent(streams_[k], 0, &ev);
                    if (st == PREPACK_DEADLINE_EXCEEDED) break;
                    got = true;
                    if (st == PREPACK_OK) {
                        handle(k);
                    } else {
                        broken(k, st);
                    }
                }
            }
            if (!got && left > 0) {
                // Nothing new anywhere: sleep in the engine on the first unfinished stream.
                const size_t k = static_cast<size_t>(std::find(ended.begin(), ended.end(), false) - ended.begin());
                const prepack_status st = host_->NextEvent(streams_[k], kWaitMs, &ev);
                if (st == PREPACK_OK) {
                    handle(k);
                } else if (st != PREPACK_DEADLINE_EXCEEDED) {
                    broken(k, st);
                }
            }
        }
        // The client closed its connection: stop at once (KV freed), even
        // while nothing is written (queued, prefilling, not streamed).
        const auto now = Clock::now();
        if (!client_gone_ && now - last_check >= std::chrono::milliseconds(kCheckMs)) {
            last_check = now;
            if (ClientGone(client_fd_)) {
                client_gone_ = true;
                CancelAll();
            }
        }
    }
    rec_.ttft_ms = first_ttft;
    rec_.total_ms = last_total;
    bool server_cancelled;
    {
        std::lock_guard<std::mutex> lock(mu_);
        server_cancelled = server_cancelled_;
    }
    if (server_cancelled) {
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server shut down before the request finished");
    }
    if (client_gone_) return grpc::Status(grpc::StatusCode::CANCELLED, "the client disconnected");
    return first_error;
}

void GenerationCall::DrainAndDestroy() {
    std::vector<prepack_stream*> streams;
    {
        std::lock_guard<std::mutex> lock(mu_);
        streams = streams_;
    }
    // After a cancel the END events come promptly; Run() may have read
    // them already (then next() says OUT_OF_RANGE at once).
    prepack_event ev;
    prepack_event_init(&ev);
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    for (prepack_stream* s : streams) {
        while (Clock::now() < deadline) {
            const prepack_status st = host_->NextEvent(s, kCheckMs, &ev);
            if (st == PREPACK_DEADLINE_EXCEEDED) continue;
            if (st != PREPACK_OK || ev.kind == PREPACK_EVENT_END) break;
        }
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (prepack_stream* s : streams_) prepack_stream_destroy(s);
    streams_.clear();
}

void GenerationCall::Finish(const grpc::Status& status) {
    if (finished_) return;
    finished_ = true;
    if (rec_.total_ms < 0) {
        rec_.total_ms = std::chrono::duration<double, std::milli>(Clock::now() - received_).count();
    }
    rec_.status = status;
    host_->CountFinished(status.error_code());
    LogRequest(rec_);
}

}  // namespace prepackd::http

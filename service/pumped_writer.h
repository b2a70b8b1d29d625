// PumpedWriter: the server-streaming half shared by Generate and
// GenerateBatch. A pump thread reads the engine (blocking calls, never on a
// gRPC callback thread) and Push()es responses into a bounded queue; the
// reactor writes them one at a time. When the queue is full the pump waits
// (backpressure), so a slow reader holds its own stream back and nobody
// else's. The reactor frees itself once both gRPC (OnDone) and the pump are
// done with it. The methods are registered raw (request_decoder.h), so the
// reactor writes bytes: Push() serializes on the pump thread.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "engine_host.h"
#include "request_decoder.h"

namespace prepackd {

// Whether a request the engine reports CANCELLED was stopped by its gRPC
// deadline. The server learns the deadline as a timeout (grpc-timeout)
// counted from when the call arrived, so `deadline` here is later than the
// client's by the call's transit time: the client's own cancellation at its
// deadline arrives before it, by more when the machine is loaded. A
// cancellation that close to the deadline is the deadline.
inline bool AtDeadline(std::chrono::system_clock::time_point deadline) {
    constexpr auto kSlack = std::chrono::milliseconds(250);
    return std::chrono::system_clock::now() + kSlack >= deadline;
}

template <typename Msg>
class PumpedWriter : public grpc::ServerWriteReactor<grpc::ByteBuffer>, public Cancellable {
public:
    PumpedWriter(EngineHost* host, size_t capacity) : host_(host), capacity_(capacity) {}

    // A server-side stop (the shutdown grace period is over): the call ends
    // with UNAVAILABLE once the pump has wound down.
    void CancelFromServer() override {
        server_cancelled_.store(true);
        Abandon();
    }

protected:
    // Starts the pump thread. Call once, at the end of the subclass's
    // constructor.
    void StartPump() {
        host_->CallStarted();
        host_->Register(this);
        std::thread([this] {
            Pump();
            EngineHost* host = host_;
            host->Unregister(this);
            Unref();            // may free this
            host->CallEnded();  // last: the engine may go once every call ended
        }).detach();
    }

    // The pump's body: it must call Close() exactly once before returning.
    virtual void Pump() = 0;
    // Stops the engine work behind the call (the client went away or the
    // server cancels). Any thread, at most once, must not block.
    virtual void StopWork() = 0;

    // Pump thread: queues `msg`, waiting while `capacity` messages are
    // queued. False (message dropped) once the call is gone.
    bool Push(const Msg& msg) {
        grpc::ByteBuffer bytes = Encode(msg);
        {
            std::unique_lock<std::mutex> lock(mu_);
            space_cv_.wait(lock, [&] { return gone_ || queue_.size() < capacity_; });
            if (gone_) return false;
            queue_.push_back(std::move(bytes));
        }
        Progress();
        return true;
    }

    // Pump thread: ends the call with `status` once queued messages are out.
    void Close(grpc::Status status) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (closing_) return;
            final_ = std::move(status);
            closing_ = true;
        }
        Progress();
    }

    bool gone() const {
        std::lock_guard<std::mutex> lock(mu_);
        return gone_;
    }
    bool server_cancelled() const { return server_cancelled_.load(); }

    EngineHost* host() const { return host_; }

private:
    void OnWriteDone(bool ok) override {
        {
            std::lock_guard<std::mutex> lock(mu_);
            write_in_flight_ = false;
        }
        if (!ok) Abandon();   // the stream is broken: the client is gone
        Progress();
    }
    void OnCancel() override { Abandon(); }
    void OnDone() override { Unref(); }

    // The call is over for the client: drop what is queued, wake the pump,
    // stop the engine work.
    void Abandon() {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (gone_) return;
            gone_ = true;
            queue_.clear();
        }
        space_cv_.notify_all();
        StopWork();
        Progress();
    }

    // Starts the next write or the Finish. Decided under the lock, done
    // outside it: gRPC may run reactions on this thread.
    void Progress() {
        enum { kNothing, kWrite, kFinish } action = kNothing;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (write_in_flight_ || finished_) return;
            if (!gone_ && !queue_.empty()) {
                writing_ = std::move(queue_.front());
                queue_.pop_front();
                write_in_flight_ = true;
                action = kWrite;
            } else if (closing_) {
                finished_ = true;
                action = kFinish;
            }
        }
        if (action == kWrite) {
            space_cv_.notify_all();
            this->StartWrite(&writing_);
        } else if (action == kFinish) {
            this->Finish(final_);
        }
    }

    void Unref() {
        if (refs_.fetch_sub(1) == 1) delete this;
    }

    EngineHost* const       host_;
    const size_t            capacity_;
    mutable std::mutex      mu_;
    std::condition_variable space_cv_;
    std::deque<grpc::ByteBuffer> queue_;              // guarded by mu_
    grpc::ByteBuffer        writing_;                 // the message of the write in flight
    bool                    write_in_flight_ = false; // guarded by mu_
    bool                    gone_ = false;            // guarded by mu_
    bool                    closing_ = false;         // guarded by mu_
    bool                    finished_ = false;        // guarded by mu_
    grpc::Status            final_;                   // set once, before closing_
    std::atomic<bool>       server_cancelled_{false};
    std::atomic<int>        refs_{2};                 // gRPC's (until OnDone) and the pump's
};

// A stream refused before it started: finishes at once with `status`.
class RejectedWriter final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
public:
    explicit RejectedWriter(const grpc::Status& status) { this->Finish(status); }
    void OnDone() override { delete this; }
};

}  // namespace prepackd

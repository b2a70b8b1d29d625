// One request's event stream: the engine thread pushes token and finish
// events, one consumer thread reads them, any thread may cancel.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>

#include "core/request/request.h"

namespace prepack {

// The queue a Stream reads, shared by the engine thread (producer) and the
// consumer. After the finish event nothing more is queued.
struct StreamState {
    std::mutex              mu;
    std::condition_variable cv;
    std::deque<Event>       events;
    bool                    finish_queued = false;
    bool                    finish_delivered = false;
    std::atomic<bool>       cancel{false};

    void Push(Event e);
};

// Thread-safe: Next() on one thread, Cancel() from any thread. Destroying a
// stream cancels its request.
class Stream {
public:
    explicit Stream(std::shared_ptr<StreamState> state) : state_(std::move(state)) {}
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;
    // Waits up to `timeout_ms` (< 0: forever) for the next event. Returns
    // false on timeout. After the finish event every call returns false at once.
    bool Next(Event* event, int64_t timeout_ms);
    // Asks the engine to stop the request; its finish event (CANCELLED)
    // follows promptly and its KV blocks are freed.
    void Cancel();
    bool finished() const;

private:
    std::shared_ptr<StreamState> state_;
};

}  // namespace prepack

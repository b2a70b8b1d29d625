#include "core/engine/stream.h"

#include <chrono>

namespace prepack {

void StreamState::Push(Event e) {
    {
        std::lock_guard<std::mutex> lock(mu);
        if (finish_queued) return;
        finish_queued = e.kind == Event::Kind::kFinish;
        events.push_back(std::move(e));
    }
    cv.notify_all();
}

Stream::~Stream() { Cancel(); }

bool Stream::Next(Event* event, int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (state_->finish_delivered) return false;
    auto ready = [&] { return !state_->events.empty(); };
    if (timeout_ms < 0) {
        state_->cv.wait(lock, ready);
    } else if (!state_->cv.wait_for(lock, std::chrono::milliseconds(timeout_ms), ready)) {
        return false;
    }
    *event = std::move(state_->events.front());
    state_->events.pop_front();
    if (event->kind == Event::Kind::kFinish) state_->finish_delivered = true;
    return true;
}

void Stream::Cancel() { state_->cancel.store(true, std::memory_order_relaxed); }

bool Stream::finished() const {
    std::lock_guard<std::mutex> lock(state_->mu);
    return state_->finish_delivered;
}

}  // namespace prepack

// The waiting queue: sequences submitted but not yet running, in the order
// they should start. Client threads append to it (Engine::Submit); the
// engine thread admits from it, puts preempted sequences back at the front
// and drops cancelled ones. Thread-safe; each call takes the queue's own
// lock only, so a caller may hold its own lock around a call.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "core/scheduler/sequence.h"

namespace prepack {

class SequenceQueue {
public:
    void PushBack(std::vector<std::shared_ptr<Sequence>> seqs);
    // First in line (a preempted sequence resumes before newer ones).
    void PushFront(std::shared_ptr<Sequence> seq);
    // The queue as it is now, front first.
    std::vector<std::shared_ptr<Sequence>> Snapshot() const;
    // Takes `seq` out; false when it is no longer there.
    bool Remove(const Sequence* seq);
    // Takes out every sequence for which `pred` holds, in queue order.
    std::vector<std::shared_ptr<Sequence>> TakeIf(const std::function<bool(const Sequence&)>& pred);
    std::vector<std::shared_ptr<Sequence>> TakeAll();
    size_t size() const;
    bool   empty() const { return size() == 0; }

private:
    mutable std::mutex                    mu_;
    std::deque<std::shared_ptr<Sequence>> seqs_;
};

}  // namespace prepack

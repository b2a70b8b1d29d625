#include "core/scheduler/sequence_queue.h"

#include <algorithm>

namespace prepack {

void SequenceQueue::PushBack(std::vector<std::shared_ptr<Sequence>> seqs) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& s : seqs) seqs_.push_back(std::move(s));
}

void SequenceQueue::PushFront(std::shared_ptr<Sequence> seq) {
    std::lock_guard<std::mutex> lock(mu_);
    seqs_.push_front(std::move(seq));
}

std::vector<std::shared_ptr<Sequence>> SequenceQueue::Snapshot() const {
    std::lock_guard<std::mutex> lock(mu_);
    return {seqs_.begin(), seqs_.end()};
}

bool SequenceQueue::Remove(const Sequence* seq) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = std::find_if(seqs_.begin(), seqs_.end(), [&](const auto& s) { return s.get() == seq; });
    if (it == seqs_.end()) return false;
    seqs_.erase(it);
    return true;
}

std::vector<std::shared_ptr<Sequence>> SequenceQueue::TakeIf(const std::function<bool(const Sequence&)>& pred) {
    std::vector<std::shared_ptr<Sequence>> taken;
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = seqs_.begin(); it != seqs_.end();) {
        if (pred(**it)) {
            taken.push_back(std::move(*it));
            it = seqs_.erase(it);
        } else {
            ++it;
        }
    }
    return taken;
}

std::vector<std::shared_ptr<Sequence>> SequenceQueue::TakeAll() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::shared_ptr<Sequence>> all(seqs_.begin(), seqs_.end());
    seqs_.clear();
    return all;
}

size_t SequenceQueue::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return seqs_.size();
}

}  // namespace prepack

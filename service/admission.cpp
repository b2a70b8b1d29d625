#include "admission.h"

#include <algorithm>
#include <cmath>

namespace prepackd {
namespace {

// Fractions round down, so a reserve never exceeds what was asked for and
// a small --max-queue (1, in tests) still lets a batch run.
int32_t Fraction(int32_t n, double f) { return static_cast<int32_t>(std::floor(n * std::clamp(f, 0.0, 1.0))); }

}  // namespace

Admission::Admission(const AdmissionLimits& l)
    : max_queue_(l.max_queue),
      batch_limit_(std::max(1, l.max_queue - Fraction(l.max_queue, l.interactive_reserve))),
      batch_window_(std::clamp(Fraction(l.max_queue, l.batch_share), 1, batch_limit_)) {}

bool Admission::TryInteractive() {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= static_cast<uint64_t>(max_queue_)) return false;
    ++in_flight_;
    return true;
}

bool Admission::TryBatch() {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ >= static_cast<uint64_t>(max_queue_) || batch_in_flight_ >= static_cast<uint64_t>(batch_limit_)) {
        return false;
    }
    ++in_flight_;
    ++batch_in_flight_;
    return true;
}

void Admission::ReleaseInteractive() {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ > 0) --in_flight_;
}

void Admission::ReleaseBatch() {
    std::lock_guard<std::mutex> lock(mu_);
    if (in_flight_ > 0) --in_flight_;
    if (batch_in_flight_ > 0) --batch_in_flight_;
}

uint64_t Admission::in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return in_flight_;
}

uint64_t Admission::batch_in_flight() const {
    std::lock_guard<std::mutex> lock(mu_);
    return batch_in_flight_;
}

}  // namespace prepackd

// Admission: the --max-queue slots, one per request running or waiting in
// the engine, shared fairly between interactive calls and batches.
//
// Without a rule a single GenerateBatch of thousands of requests takes every
// free slot, and interactive Generate calls arriving meanwhile are refused
// RESOURCE_EXHAUSTED until it is done. So:
//   - a reserve of the slots (--interactive-reserve, a fraction of
//     --max-queue) is never given to batch members: Generate always finds
//     room unless interactive calls themselves fill the queue;
//   - one GenerateBatch call holds at most a window of slots (--batch-share,
//     a fraction of --max-queue), so concurrent batches share the rest; its
//     members beyond the window are submitted as earlier ones finish.
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>

namespace prepackd {

struct AdmissionLimits {
    int32_t max_queue = 256;               // every slot
    double  batch_share = 0.5;             // one batch call's window, as a fraction of max_queue
    double  interactive_reserve = 0.25;    // slots batch members never take, as a fraction of max_queue
};

class Admission {
public:
    explicit Admission(const AdmissionLimits& limits);

    // A slot for an interactive request (Generate): any free slot.
    bool TryInteractive();
    // A slot for a batch member: a free slot outside the interactive reserve.
    bool TryBatch();
    void ReleaseInteractive();
    void ReleaseBatch();

    uint64_t in_flight() const;         // every slot taken
    uint64_t batch_in_flight() const;   // slots held by batch members
    int32_t  max_queue() const { return max_queue_; }
    // Slots all batch members together may hold (max_queue less the reserve, at least 1).
    int32_t  batch_limit() const { return batch_limit_; }
    // Slots one GenerateBatch call may hold at once (at least 1, at most batch_limit).
    int32_t  batch_window() const { return batch_window_; }

private:
    const int32_t      max_queue_;
    const int32_t      batch_limit_;
    const int32_t      batch_window_;
    mutable std::mutex mu_;
    uint64_t           in_flight_ = 0;         // guarded by mu_
    uint64_t           batch_in_flight_ = 0;   // guarded by mu_; part of in_flight_
};

}  // namespace prepackd

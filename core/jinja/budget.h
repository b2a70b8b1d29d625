// The resource bounds of one render (Limits), kept where every string, list
// and loop operation can reach them without threading a context through each
// value operation: a thread-local pointer to the running render's Budget.
// Render is synchronous and single-threaded, so the pointer is set for exactly
// the duration of one Render call (BudgetScope). With no render running (at
// parse time) nothing is counted.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/jinja/template.h"

namespace prepack::jinja {

class Budget {
public:
    explicit Budget(const Limits& limits);

    const Limits& limits() const { return limits_; }

    // A string or list is about to grow from `current` to `current + add`
    // bytes: fails when that passes max_output_bytes (before anything is
    // allocated, so `'x' * 10**12` fails at once), and counts `add` against
    // the bytes processed in the whole render.
    void Grow(size_t current, size_t add);
    // `bytes` scanned or compared (searching, comparing, copying): a hostile
    // template repeating an O(n) operation in a loop runs out of this budget
    // instead of running for hours.
    void Charge(size_t bytes);
    // One loop iteration, loop-filter test or macro call.
    void Iteration();

private:
    Limits   limits_;
    uint64_t processed_ = 0;
    uint64_t max_processed_ = 0;
    int64_t  iterations_ = 0;
};

// The running render's budget, or nullptr.
Budget* CurrentBudget();

// Sets the current budget for its lifetime.
class BudgetScope {
public:
    explicit BudgetScope(Budget* budget);
    ~BudgetScope();
    BudgetScope(const BudgetScope&) = delete;
    BudgetScope& operator=(const BudgetScope&) = delete;

private:
    Budget* previous_;
};

// Shorthands that do nothing outside a render.
inline void GrowBy(size_t current, size_t add) {
    if (Budget* b = CurrentBudget()) b->Grow(current, add);
}
inline void ChargeBytes(size_t bytes) {
    if (Budget* b = CurrentBudget()) b->Charge(bytes);
}
// Bytes a list of `n` values counts as, for the size bounds.
inline constexpr size_t kBytesPerItem = 16;

}  // namespace prepack::jinja

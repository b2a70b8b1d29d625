#include "core/jinja/budget.h"

#include <string>

#include "core/jinja/cat.h"
#include "core/jinja/error.h"

namespace prepack::jinja {
namespace {
thread_local Budget* t_budget = nullptr;

// Total bytes one render may build or scan, as a multiple of the output
// bound: real templates copy each message a handful of times (concatenation
// chains, strip, split); a hostile one repeating a large copy in a loop stops
// after a fraction of a second.
constexpr uint64_t kProcessedPerOutputByte = 32;
}  // namespace

Budget::Budget(const Limits& limits) : limits_(limits) {
    const uint64_t out = limits.max_output_bytes;
    max_processed_ = out > UINT64_MAX / kProcessedPerOutputByte ? UINT64_MAX : out * kProcessedPerOutputByte;
}

void Budget::Grow(size_t current, size_t add) {
    if (add > limits_.max_output_bytes || current > limits_.max_output_bytes - add) {
        Exhausted(Cat("a string or list would exceed max_output_bytes (", limits_.max_output_bytes,
                               " bytes)"));
    }
    Charge(add);
}

void Budget::Charge(size_t bytes) {
    processed_ += bytes;
    if (processed_ > max_processed_) {
        Exhausted(Cat("the render processed more than ", kProcessedPerOutputByte,
                               " x max_output_bytes (", limits_.max_output_bytes, " bytes)"));
    }
}

void Budget::Iteration() {
    if (++iterations_ > limits_.max_loop_iterations) {
        Exhausted(Cat("more than max_loop_iterations (", limits_.max_loop_iterations,
                               ") loop iterations and macro calls"));
    }
}

Budget* CurrentBudget() { return t_budget; }

BudgetScope::BudgetScope(Budget* budget) : previous_(t_budget) { t_budget = budget; }
BudgetScope::~BudgetScope() { t_budget = previous_; }

}  // namespace prepack::jinja

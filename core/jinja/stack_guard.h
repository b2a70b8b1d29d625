// A backstop against stack overflow. The nesting limits (max_depth) bound
// each kind of recursion, but their product (a macro recursing max_depth
// times through a body nested max_depth deep) could still outgrow a thread's
// stack; this measures the stack actually used since the guard was made and
// reports when it passes a budget derived from the thread's real stack size.
#pragma once

#include <cstddef>
#include <cstdint>

namespace prepack::jinja {

class StackGuard {
public:
    StackGuard();
    // Whether the calling frame is deeper than the budget below the frame
    // that made the guard.
    bool Exceeded() const {
        const auto here = reinterpret_cast<uintptr_t>(__builtin_frame_address(0));
        return base_ > here && base_ - here > budget_;
    }

private:
    uintptr_t base_;
    size_t budget_;
};

}  // namespace prepack::jinja

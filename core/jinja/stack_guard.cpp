#include "core/jinja/stack_guard.h"

#include <pthread.h>

#include <algorithm>

namespace prepack::jinja {
namespace {

// Stack left below the current frame on this thread, measured once per
// thread (pthread_getattr_np reads /proc for the main thread).
size_t StackLeft(uintptr_t here) {
    thread_local uintptr_t low = 0;
    thread_local bool known = false;
    if (!known) {
        known = true;
        pthread_attr_t attr;
        if (pthread_getattr_np(pthread_self(), &attr) == 0) {
            void* addr = nullptr;
            size_t size = 0;
            if (pthread_attr_getstack(&attr, &addr, &size) == 0) low = reinterpret_cast<uintptr_t>(addr);
            pthread_attr_destroy(&attr);
        }
    }
    if (low == 0 || here <= low) return 512 * 1024;  // unknown: assume a small stack
    return here - low;
}

}  // namespace

StackGuard::StackGuard() : base_(reinterpret_cast<uintptr_t>(__builtin_frame_address(0))) {
    // Half of what is left, at most 4 MiB: room for the engine's own frames
    // after the check fires, and for whatever the caller runs afterwards.
    budget_ = std::min<size_t>(StackLeft(base_) / 2, 4u << 20);
}

}  // namespace prepack::jinja

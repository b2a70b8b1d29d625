// WorkerPool: a few threads for unary calls whose work grows with the
// request (tokenizing or detokenizing megabytes). gRPC runs callback
// handlers on a small set of threads that every service shares, health
// checks included; work that takes seconds there delays everybody. The
// handler posts such work here and the task finishes the call itself.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace prepackd {

class WorkerPool {
public:
    explicit WorkerPool(int threads);
    // Runs what is queued, then joins the threads.
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    // Runs `task` on a pool thread, in the order posted.
    void Post(std::function<void()> task);

private:
    void Loop();

    std::mutex                        mu_;
    std::condition_variable           cv_;
    std::deque<std::function<void()>> tasks_;          // guarded by mu_
    bool                              stopping_ = false;   // guarded by mu_
    std::vector<std::thread>          threads_;
};

}  // namespace prepackd

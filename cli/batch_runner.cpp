#include "cli/batch_runner.h"

#include <chrono>
#include <cstdio>
#include <thread>

#include <unistd.h>

#include "core/base/runtime.h"

namespace prepack::cli {
namespace {

// On a terminal the line redraws in place twice a second; into a log file
// or CI it is a plain line every few seconds, not thousands of carriage
// returns on one line.
struct ProgressLine {
    bool   tty = isatty(fileno(stderr)) != 0;
    double interval = tty ? 0.5 : 5.0;
    double last = 0.0;

    void Draw(size_t done, size_t total, uint64_t tokens, double elapsed) {
        const double rate = elapsed > 0 ? tokens / elapsed : 0.0;
        const double eta = done > 0 ? elapsed * double(total - done) / double(done) : 0.0;
        std::fprintf(stderr, "%s[%zu/%zu] %.0f tokens/s, elapsed %.0fs, ETA %.0fs%s", tty ? "\r" : "", done, total,
                     rate, elapsed, eta, tty ? "   " : "\n");
        if (tty && done == total) std::fputc('\n', stderr);
        std::fflush(stderr);
        last = elapsed;
    }
};

}  // namespace

BatchRunStats RunBatch(Engine& engine, std::vector<Request> requests,
                       const std::function<void(size_t, BatchResult)>& on_result, bool show_progress,
                       const std::function<void(size_t, const Event&)>& on_token) {
    const size_t n = requests.size();
    const double t0 = NowSeconds();
    auto streams = engine.SubmitBatch(std::move(requests));
    std::vector<BatchResult> partial(n);
    std::vector<bool> open(n, false);
    size_t done = 0;
    uint64_t tokens = 0;
    BatchRunStats stats;
    for (size_t i = 0; i < n; ++i) {
        if (streams[i].ok()) {
            open[i] = true;
        } else {
            partial[i].status = streams[i].status();
            on_result(i, std::move(partial[i]));
            ++done;
        }
    }
    ProgressLine progress;
    while (done < n) {
        bool progressed = false;
        for (size_t i = 0; i < n; ++i) {
            if (!open[i]) continue;
            Event e;
            while ((*streams[i])->Next(&e, 0)) {
                progressed = true;
                if (e.kind == Event::Kind::kToken) {
                    if (on_token) on_token(i, e);
                    partial[i].tokens.push_back(e.token);
                    partial[i].text += e.text;
                    ++tokens;
                    continue;
                }
                partial[i].finish_reason = e.finish_reason;
                partial[i].status = e.status;
                partial[i].usage = e.usage;
                open[i] = false;
                ++done;
                on_result(i, std::move(partial[i]));
                break;
            }
        }
        stats.peak_kv_bytes = std::max(stats.peak_kv_bytes, engine.Stats().kv_bytes_used);
        const double elapsed = NowSeconds() - t0;
        if (show_progress && (elapsed - progress.last > progress.interval || done == n)) {
            progress.Draw(done, n, tokens, elapsed);
        }
        // Nothing new: let the scheduler thread work instead of spinning.
        if (!progressed) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    stats.seconds = NowSeconds() - t0;
    return stats;
}

void PrintBatchSummary(const EngineStats& st, size_t failed, const char* what) {
    std::fprintf(stderr, "batch: done; %llu of %llu prompt tokens computed (%.1f%% saved by prefix sharing)%s\n",
                 static_cast<unsigned long long>(st.prompt_tokens_computed),
                 static_cast<unsigned long long>(st.prompt_tokens), 100.0 * st.prefix_saving,
                 failed ? absl::StrCat(", ", failed, " ", what, " failed (see their \"error\")").c_str() : "");
}

}  // namespace prepack::cli

#include "request_log.h"

#include <cstdio>
#include <mutex>

#include "engine_host.h"

namespace prepackd {

void LogRequest(const RequestRecord& r) {
    char timing[96] = "";
    if (r.ttft_ms >= 0.0) std::snprintf(timing, sizeof timing, " ttft_ms=%.1f", r.ttft_ms);
    if (r.total_ms >= 0.0) {
        const size_t n = std::char_traits<char>::length(timing);
        std::snprintf(timing + n, sizeof timing - n, " total_ms=%.1f", r.total_ms);
    }
    std::string msg;
    if (!r.status.ok()) msg = " message=\"" + r.status.error_message() + "\"";
    static std::mutex mu;
    std::lock_guard<std::mutex> lock(mu);
    std::fprintf(stderr, "prepackd: request id=%s rpc=%s prompt_tokens=%d tokens=%d%s status=%s%s\n", r.id.c_str(),
                 r.rpc, r.prompt_tokens, r.generated_tokens, timing, CodeName(r.status.error_code()), msg.c_str());
}

void LogRefusal(EngineHost* host, const std::string& id, const char* rpc, const grpc::Status& status,
                std::chrono::steady_clock::time_point received) {
    host->CountFinished(status.error_code());
    RequestRecord rec;
    rec.id = id;
    rec.rpc = rpc;
    rec.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - received).count();
    rec.status = status;
    LogRequest(rec);
}

}  // namespace prepackd

// prepackd_stats: GetStats over gRPC, printed as one line of JSON, for the
// HTTP tests (Python), which have no gRPC client of their own: the engine's
// counters and the admission slots in flight are what show an HTTP request
// gone from the engine, or a prompt computed once.
//
//   prepackd_stats HOST:PORT [--token-file F]             the stats, once
//   prepackd_stats HOST:PORT [--token-file F] --idle MS   polls every 10 ms
//       until nothing is in flight (slots, running, waiting); prints
//       {"idle_after_ms", "stats"}, or exits 1 after MS milliseconds
// --token-file: the server's --auth-token-file (sent as a bearer token).
#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "prepack/v1/prepack.grpc.pb.h"

namespace {

std::string g_token;

bool Get(prepack::v1::Prepack::Stub& stub, prepack::v1::Stats* out) {
    grpc::ClientContext ctx;
    if (!g_token.empty()) ctx.AddMetadata("authorization", "Bearer " + g_token);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    const grpc::Status s = stub.GetStats(&ctx, prepack::v1::GetStatsRequest(), out);
    if (!s.ok()) std::fprintf(stderr, "prepackd_stats: GetStats: %s\n", s.error_message().c_str());
    return s.ok();
}

std::string Json(const prepack::v1::Stats& stats) {
    std::string out;
    google::protobuf::util::JsonPrintOptions o;
    o.always_print_primitive_fields = true;
    o.preserve_proto_field_names = true;
    (void)google::protobuf::util::MessageToJsonString(stats, &out, o);
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    int idle_ms = -1;
    bool ok = argc >= 2 && argc % 2 == 0;
    for (int i = 2; ok && i + 1 < argc; i += 2) {
        if (std::strcmp(argv[i], "--idle") == 0) {
            idle_ms = std::atoi(argv[i + 1]);
        } else if (std::strcmp(argv[i], "--token-file") == 0) {
            std::ifstream in(argv[i + 1]);
            ok = static_cast<bool>(std::getline(in, g_token));
            while (!g_token.empty() && std::isspace(static_cast<unsigned char>(g_token.back()))) g_token.pop_back();
        } else {
            ok = false;
        }
    }
    if (!ok) {
        std::fprintf(stderr, "usage: prepackd_stats HOST:PORT [--token-file F] [--idle MS]\n");
        return 2;
    }
    auto stub = prepack::v1::Prepack::NewStub(grpc::CreateChannel(argv[1], grpc::InsecureChannelCredentials()));
    prepack::v1::Stats stats;
    if (idle_ms < 0) {
        if (!Get(*stub, &stats)) return 1;
        std::printf("%s\n", Json(stats).c_str());
        return 0;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const auto limit = std::chrono::milliseconds(idle_ms);
    while (true) {
        if (!Get(*stub, &stats)) return 1;
        const auto elapsed = std::chrono::steady_clock::now() - t0;
        if (stats.in_flight() == 0 && stats.requests_running() == 0 && stats.requests_waiting() == 0) {
            std::printf("{\"idle_after_ms\": %.1f, \"stats\": %s}\n",
                        std::chrono::duration<double, std::milli>(elapsed).count(), Json(stats).c_str());
            return 0;
        }
        if (elapsed >= limit) {
            std::printf("{\"idle_after_ms\": null, \"stats\": %s}\n", Json(stats).c_str());
            return 1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

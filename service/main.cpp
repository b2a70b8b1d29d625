// prepackd: serves one model over gRPC (prepack.v1.Prepack, health,
// reflection) and over the OpenAI-compatible HTTP API. Prints "prepackd
// listening on HOST:PORT" (gRPC), then "prepackd http listening on
// HOST:PORT" (unless --http-listen off), on stdout once the ports are open
// (before the model loads: health says NOT_SERVING until it has), logs one
// line per request on stderr, and on SIGTERM or SIGINT drains and exits 0.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "server.h"
#include "server_options.h"

int main(int argc, char** argv) {
    prepackd::ServerOptions options;
    if (int rc = prepackd::ParseServerOptions(argc, argv, &options); rc >= 0) return rc;

    // Block the stop signals before any thread exists, so every thread
    // inherits the mask and only the waiter below receives them.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

    prepackd::Server server(options);
    std::string address;
    if (grpc::Status s = server.Start(&address); !s.ok()) {
        std::fprintf(stderr, "prepackd: %s\n", s.error_message().c_str());
        return 1;
    }
    std::printf("prepackd listening on %s\n", address.c_str());
    // The second line (scripts read the gRPC port from the first).
    if (!server.http_address().empty()) {
        std::printf("prepackd http listening on %s\n", server.http_address().c_str());
    }
    std::fflush(stdout);

    std::atomic<bool> load_failed{false};
    std::thread waiter([&] {
        int sig = 0;
        sigwait(&stop_signals, &sig);
        if (load_failed.load()) return;   // main woke us to exit
        const char* name = sig == SIGINT ? "SIGINT" : "SIGTERM";
        if (!server.loaded()) {
            // Nothing runs yet and a load cannot be interrupted: just go.
            std::fprintf(stderr, "prepackd: %s while loading: exiting\n", name);
            std::_Exit(0);
        }
        std::fprintf(stderr, "prepackd: %s: draining (grace %.1f s)\n", name, options.grace_seconds);
        server.BeginDrain();
    });

    const auto t0 = std::chrono::steady_clock::now();
    const grpc::Status loaded = server.LoadModel();
    if (!loaded.ok()) {
        std::fprintf(stderr, "prepackd: cannot load %s: %s\n", options.model.c_str(), loaded.error_message().c_str());
        load_failed.store(true);
        kill(getpid(), SIGTERM);   // wakes the waiter
        waiter.join();
        server.Stop();
        return 1;
    }
    std::fprintf(stderr, "prepackd: %s loaded in %.2f s; serving\n", options.model.c_str(),
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::fprintf(stderr, "prepackd: %s\n", server.Limits().c_str());

    waiter.join();   // until SIGTERM or SIGINT
    const bool clean = server.Stop();
    std::fprintf(stderr, "prepackd: stopped\n");
    return clean ? 0 : 1;
}

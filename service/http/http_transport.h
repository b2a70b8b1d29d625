// The sockets under prepackd's HTTP API: cpp-httplib's server (Debian's
// libcpp-httplib-dev), plaintext or TLS, with what an LLM server needs on
// top of it:
//   - each connection's socket reachable from its handler
//     (ConnectionSocket), so a handler can see its client go away while it
//     waits for the engine, streamed or not (ClientGone), and cancel the
//     request at once instead of at its next write;
//   - a thread per connection, grown on demand up to a limit instead of a
//     fixed pool of eight (a stream holds its thread for as long as it runs);
//   - a listen backlog for bursts of connections (httplib listens with 5).
// Plaintext connections are served by our own keep-alive loop over our own
// socket stream (below: httplib's is internal to its library); TLS
// connections by httplib's SSLServer, whose requests carry their SSL*.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace prepackd::http {

// httplib's connection tasks on threads started as connections need them,
// up to `max_threads` (then tasks wait for a free thread). Threads stay once
// started, idle, until shutdown.
class GrowingPool final : public httplib::TaskQueue {
public:
    explicit GrowingPool(size_t max_threads) : max_threads_(max_threads) {}
    ~GrowingPool() override;

    void enqueue(std::function<void()> fn) override;
    // Runs what is queued, then joins every thread.
    void shutdown() override;

private:
    void Loop();

    const size_t                      max_threads_;
    std::mutex                        mu_;
    std::condition_variable           cv_;
    std::deque<std::function<void()>> tasks_;           // guarded by mu_
    size_t                            idle_ = 0;        // guarded by mu_: threads waiting for a task
    bool                              stopping_ = false;   // guarded by mu_
    std::vector<std::thread>          threads_;         // guarded by mu_
};

// The transport's knobs (seconds).
struct TransportLimits {
    size_t max_threads = 272;
    size_t max_body_bytes = 16 << 20;
    int    read_timeout_s = 30;        // waiting for request bytes
    int    write_timeout_s = 60;       // one write to a client that does not read
    int    keep_alive_timeout_s = 30;  // an idle connection between requests
    int    keep_alive_max = 100;       // requests per connection
};

// An httplib server, plaintext or TLS, bound and listening.
class Transport {
public:
    // Plaintext, or TLS with the PEM files when `tls_cert` is set. Null
    // with *error set when the TLS files do not load.
    static std::unique_ptr<Transport> Make(const std::string& tls_cert, const std::string& tls_key,
                                           const TransportLimits& limits, std::string* error);
    virtual ~Transport() = default;

    httplib::Server& server() { return *server_; }
    // Binds host:port (port 0: any free one). The bound port, or -1.
    int Bind(const std::string& host, int port);
    // Serves on a thread of its own until Stop().
    void Serve();
    // Stops listening, lets each connection finish what it is doing (their
    // handlers must end by themselves) and joins every thread.
    void Stop();

protected:
    Transport() = default;
    std::unique_ptr<httplib::Server> server_;
    // Raises the listen backlog of the bound socket.
    std::function<void()> raise_backlog_;

private:
    std::thread       thread_;
    std::atomic<bool> done_{false};   // the listening loop has returned
};

// The socket of the connection whose request `req` is, from its handler (or
// its content provider, which runs on the same thread): -1 when unknown.
int ConnectionSocket(const httplib::Request& req);

// From a handler: the connection closes once this response is out, even
// when the request's body was not read (a body refused by its size). On
// plaintext connections the close lingers (up to two seconds, discarding
// what the client still sends) so that the client reads the response
// instead of a reset.
void CloseAfterResponse();

// True when the client at the other end of `fd` has closed or reset the
// connection (a FIN, a RST, an error); false while it is there, or when fd
// is -1. Never blocks.
bool ClientGone(int fd);

}  // namespace prepackd::http

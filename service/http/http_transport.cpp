#include "http/http_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace prepackd::http {
namespace {

// The plaintext connection this thread serves (set by PlainServer).
thread_local int t_connection_fd = -1;
// Its handler asked for it to close after the response.
thread_local bool t_close_after = false;

// Waits up to timeout_ms for `events` on fd; false on timeout or error.
bool WaitFor(int fd, short events, int timeout_ms) {
    pollfd p{fd, events, 0};
    while (true) {
        const int r = ::poll(&p, 1, timeout_ms);
        if (r > 0) return true;
        if (r == 0 || errno != EINTR) return false;
    }
}

// Closes a connection whose client may still be sending (a body refused
// unread): our side first, then what arrives is read and dropped until the
// client closes too (bounded), so no reset destroys the response in flight.
void LingeringClose(int fd) {
    ::shutdown(fd, SHUT_WR);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    char buf[16384];
    while (std::chrono::steady_clock::now() < deadline && WaitFor(fd, POLLIN, 100)) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n == 0 || (n < 0 && errno != EINTR)) break;
    }
}

bool Address(int fd, bool peer, std::string& ip, int& port) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    const int r = peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                       : ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    if (r != 0) return false;
    char buf[INET6_ADDRSTRLEN] = "";
    if (addr.ss_family == AF_INET) {
        const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
        ::inet_ntop(AF_INET, &a->sin_addr, buf, sizeof buf);
        port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
        const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
        ::inet_ntop(AF_INET6, &a->sin6_addr, buf, sizeof buf);
        port = ntohs(a->sin6_port);
    } else {
        return false;
    }
    ip = buf;
    return true;
}

// A plaintext connection as httplib reads and writes it: buffered reads
// (httplib reads request lines a byte at a time), writes that fail once
// the client is gone, timeouts per read and per write.
class SocketStream final : public httplib::Stream {
public:
    SocketStream(int fd, const TransportLimits& l)
        : fd_(fd), read_ms_(l.read_timeout_s * 1000), write_ms_(l.write_timeout_s * 1000) {}

    bool is_readable() const override { return buffered() || WaitFor(fd_, POLLIN, read_ms_); }
    bool is_writable() const override { return WaitFor(fd_, POLLOUT, write_ms_) && !ClientGone(fd_); }

    ssize_t read(char* ptr, size_t size) override {
        if (!buffered()) {
            if (!WaitFor(fd_, POLLIN, read_ms_)) return -1;
            if (size >= sizeof buf_) return Recv(ptr, size);
            const ssize_t n = Recv(buf_, sizeof buf_);
            if (n <= 0) return n;
            pos_ = 0;
            len_ = static_cast<size_t>(n);
        }
        const size_t n = std::min(size, len_ - pos_);
        std::memcpy(ptr, buf_ + pos_, n);
        pos_ += n;
        return static_cast<ssize_t>(n);
    }

    ssize_t write(const char* ptr, size_t size) override {
        if (!is_writable()) return -1;
        while (true) {
            const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL);
            if (n >= 0 || errno != EINTR) return n;
        }
    }

    void get_remote_ip_and_port(std::string& ip, int& port) const override { Address(fd_, true, ip, port); }
    void get_local_ip_and_port(std::string& ip, int& port) const override { Address(fd_, false, ip, port); }
    socket_t socket() const override { return fd_; }

    bool buffered() const { return pos_ < len_; }

private:
    ssize_t Recv(char* ptr, size_t size) {
        while (true) {
            const ssize_t n = ::recv(fd_, ptr, size, 0);
            if (n >= 0 || errno != EINTR) return n;
        }
    }

    const int fd_;
    const int read_ms_;
    const int write_ms_;
    char      buf_[4096];
    size_t    pos_ = 0;
    size_t    len_ = 0;
};

// httplib's default socket options set SO_REUSEPORT, with which a second
// server on the same port would bind too and silently take half the
// connections. Like the gRPC port: SO_REUSEADDR only.
void SocketOptions(socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

// httplib listens with a backlog of 5: a burst of clients connecting at once
// (64 streams) would see SYNs dropped and retried a second later.
template <class Base>
class Listener : public Base {
public:
    using Base::Base;
    void RaiseBacklog() { ::listen(this->svr_sock_, SOMAXCONN); }
};

// Plaintext: our keep-alive loop over SocketStream, which records each
// connection's socket for its handlers.
class PlainServer final : public Listener<httplib::Server> {
public:
    explicit PlainServer(const TransportLimits& limits) : limits_(limits) {}

private:
    bool process_and_close_socket(socket_t sock) override {
        int one = 1;
        ::setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);   // each SSE event at once
        t_connection_fd = sock;
        t_close_after = false;
        bool ret = false;
        {
            SocketStream stream(sock, limits_);
            for (int left = limits_.keep_alive_max; left > 0 && NextRequest(stream, sock); --left) {
                bool closed = false;
                ret = process_request(stream, left == 1, closed, [](httplib::Request&) {});
                if (!ret || closed || t_close_after) break;
            }
        }
        t_connection_fd = -1;
        if (t_close_after) LingeringClose(sock);
        t_close_after = false;
        ::shutdown(sock, SHUT_RDWR);
        ::close(sock);
        return ret;
    }

    // Waits for the next request's first bytes (or the client's close,
    // which the request's read then finds) while the server runs, at most
    // the keep-alive timeout.
    bool NextRequest(const SocketStream& stream, int fd) const {
        if (stream.buffered()) return true;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(limits_.keep_alive_timeout_s);
        while (svr_sock_ != INVALID_SOCKET) {
            if (WaitFor(fd, POLLIN, 100)) return true;
            if (std::chrono::steady_clock::now() >= deadline) return false;
        }
        return false;
    }

    const TransportLimits limits_;
};

class PlainTransport final : public Transport {
public:
    explicit PlainTransport(const TransportLimits& limits) {
        auto s = std::make_unique<PlainServer>(limits);
        PlainServer* raw = s.get();
        raise_backlog_ = [raw] { raw->RaiseBacklog(); };
        server_ = std::move(s);
    }
};

using TlsServer = Listener<httplib::SSLServer>;

class TlsTransport final : public Transport {
public:
    TlsTransport(const std::string& cert, const std::string& key) {
        auto s = std::make_unique<TlsServer>(cert.c_str(), key.c_str());
        TlsServer* raw = s.get();
        raise_backlog_ = [raw] { raw->RaiseBacklog(); };
        server_ = std::move(s);
    }
};

}  // namespace

GrowingPool::~GrowingPool() { shutdown(); }

void GrowingPool::enqueue(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    tasks_.push_back(std::move(fn));
    if (idle_ >= tasks_.size() || threads_.size() >= max_threads_) {
        cv_.notify_one();
        return;
    }
    threads_.emplace_back([this] { Loop(); });
}

void GrowingPool::shutdown() {
    std::vector<std::thread> threads;
    {
        std::lock_guard<std::mutex> lock(mu_);
        stopping_ = true;
        threads.swap(threads_);
    }
    cv_.notify_all();
    for (std::thread& t : threads) t.join();
}

void GrowingPool::Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (true) {
        ++idle_;
        cv_.wait(lock, [&] { return stopping_ || !tasks_.empty(); });
        --idle_;
        if (tasks_.empty()) return;   // stopping, nothing left to run
        std::function<void()> task = std::move(tasks_.front());
        tasks_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
}

std::unique_ptr<Transport> Transport::Make(const std::string& tls_cert, const std::string& tls_key,
                                           const TransportLimits& limits, std::string* error) {
    std::unique_ptr<Transport> t;
    if (tls_cert.empty()) {
        t = std::make_unique<PlainTransport>(limits);
    } else {
        t = std::make_unique<TlsTransport>(tls_cert, tls_key);
        if (!t->server().is_valid()) {
            *error = "cannot load the TLS certificate " + tls_cert + " and key " + tls_key + " for HTTP";
            return nullptr;
        }
    }
    httplib::Server& s = t->server();
    s.set_socket_options(SocketOptions);
    s.set_tcp_nodelay(true);
    s.set_read_timeout(limits.read_timeout_s, 0);
    s.set_write_timeout(limits.write_timeout_s, 0);
    s.set_keep_alive_timeout(limits.keep_alive_timeout_s);
    s.set_keep_alive_max_count(static_cast<size_t>(limits.keep_alive_max));
    s.set_payload_max_length(limits.max_body_bytes);
    const size_t threads = limits.max_threads;
    s.new_task_queue = [threads] { return new GrowingPool(threads); };
    return t;
}

int Transport::Bind(const std::string& host, int port) {
    const int bound = port == 0 ? server_->bind_to_any_port(host) : (server_->bind_to_port(host, port) ? port : -1);
    if (bound > 0) raise_backlog_();
    return bound;
}

void Transport::Serve() {
    thread_ = std::thread([this] {
        server_->listen_after_bind();
        done_.store(true);
    });
}

void Transport::Stop() {
    if (!thread_.joinable()) return;
    // httplib's stop() does nothing until its loop has started: ask until
    // the loop has ended.
    while (!done_.load()) {
        server_->stop();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    thread_.join();
}

int ConnectionSocket(const httplib::Request& req) {
    if (req.ssl != nullptr) return SSL_get_fd(req.ssl);
    return t_connection_fd;
}

void CloseAfterResponse() { t_close_after = true; }

bool ClientGone(int fd) {
    if (fd < 0) return false;
    pollfd p{fd, static_cast<short>(POLLIN | POLLRDHUP), 0};
    int r;
    do {
        r = ::poll(&p, 1, 0);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) return false;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0;
}

}  // namespace prepackd::http

// ServerProcess: a prepackd child process for integration tests. Start()
// spawns it on 127.0.0.1:0 and reads the port from its stdout line
// "prepackd listening on HOST:PORT"; its stderr (the request log) goes to
// the test's stderr, or to a file the test reads. The destructor stops it
// (SIGTERM, then SIGKILL).
#pragma once

#include <grpcpp/grpcpp.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace prepackd_test {

class ServerProcess {
public:
    // `args` follow the binary (add --model etc.; --listen 127.0.0.1:0 and
    // --http-listen 127.0.0.1:0 are added unless given). Null with *error set if it did not print its
    // port within `timeout`. With `stderr_path` the server's stderr goes to
    // that file (created or truncated).
    static std::unique_ptr<ServerProcess> Start(const std::vector<std::string>& args, std::string* error,
                                                std::chrono::seconds timeout = std::chrono::seconds(60),
                                                const std::string& stderr_path = "");
    ~ServerProcess();

    const std::string& address() const { return address_; }
    pid_t pid() const { return pid_; }
    void Signal(int sig) const;
    // The exit code once the process has exited, or nullopt after `timeout`
    // (-1 when it died of a signal).
    std::optional<int> WaitExit(std::chrono::milliseconds timeout);
    // Resident memory in KiB (VmRSS), or -1.
    long RssKib() const;
    // A channel to the server (plaintext). With own_connection it never
    // shares a TCP connection with other channels (one per "client").
    std::shared_ptr<grpc::Channel> Channel(bool own_connection = false) const;

private:
    ServerProcess() = default;
    pid_t       pid_ = -1;
    int         stdout_fd_ = -1;
    bool        exited_ = false;
    int         exit_code_ = 0;
    std::string address_;
};

// The prepackd binary under test.
std::string PrepackdPath();

}  // namespace prepackd_test

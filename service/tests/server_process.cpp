#include "server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <thread>

namespace prepackd_test {

std::string PrepackdPath() { return PREPACKD_PATH; }

std::unique_ptr<ServerProcess> ServerProcess::Start(const std::vector<std::string>& args, std::string* error,
                                                    std::chrono::seconds timeout, const std::string& stderr_path) {
    std::vector<std::string> argv_s = {PrepackdPath()};
    bool has_listen = false, has_http = false;
    for (const std::string& a : args) {
        has_listen |= a == "--listen";
        has_http |= a == "--http-listen";
    }
    if (!has_listen) argv_s.insert(argv_s.end(), {"--listen", "127.0.0.1:0"});
    // HTTP on a free port too (its default, 8080, would collide between
    // tests running at once).
    if (!has_http) argv_s.insert(argv_s.end(), {"--http-listen", "127.0.0.1:0"});
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    int err_fd = -1;
    if (!stderr_path.empty()) {
        err_fd = open(stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (err_fd < 0) {
            *error = "open " + stderr_path + ": " + std::strerror(errno);
            return nullptr;
        }
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
        if (err_fd >= 0) close(err_fd);
        *error = std::string("pipe: ") + std::strerror(errno);
        return nullptr;
    }
    std::unique_ptr<ServerProcess> p(new ServerProcess());
    const pid_t parent = getpid();
    p->pid_ = fork();
    if (p->pid_ == 0) {
        // The child: only async-signal-safe calls until exec. If the test
        // dies (a ctest timeout), the server gets SIGTERM instead of
        // lingering on the shared machine.
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(127);
        dup2(fds[1], STDOUT_FILENO);   // dup2 clears O_CLOEXEC on the copy
        if (err_fd >= 0) dup2(err_fd, STDERR_FILENO);
        execv(argv[0], argv.data());
        _exit(127);
    }
    close(fds[1]);
    if (err_fd >= 0) close(err_fd);
    p->stdout_fd_ = fds[0];
    if (p->pid_ < 0) {
        p->pid_ = -1;
        *error = std::string("fork: ") + std::strerror(errno);
        return nullptr;
    }
    // Read stdout until the line with the port, within the timeout.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::string out;
    const std::string marker = "prepackd listening on ";
    while (true) {
        const size_t at = out.find(marker);
        const size_t nl = at == std::string::npos ? std::string::npos : out.find('\n', at);
        if (nl != std::string::npos) {
            p->address_ = out.substr(at + marker.size(), nl - at - marker.size());
            return p;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            *error = "prepackd printed no port within the timeout; stdout so far: " + out;
            return nullptr;
        }
        pollfd pfd{p->stdout_fd_, POLLIN, 0};
        if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
        char buf[256];
        const ssize_t n = read(p->stdout_fd_, buf, sizeof buf);
        if (n <= 0) {
            *error = "prepackd closed stdout before printing its port (it exited?); stdout: " + out;
            return nullptr;
        }
        out.append(buf, static_cast<size_t>(n));
    }
}

ServerProcess::~ServerProcess() {
    if (pid_ > 0 && !exited_) {
        Signal(SIGTERM);
        if (!WaitExit(std::chrono::seconds(20))) {
            Signal(SIGKILL);
            WaitExit(std::chrono::seconds(5));
        }
    }
    if (stdout_fd_ >= 0) close(stdout_fd_);
}

void ServerProcess::Signal(int sig) const {
    if (pid_ > 0 && !exited_) kill(pid_, sig);
}

std::optional<int> ServerProcess::WaitExit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!exited_) {
        int status = 0;
        const pid_t r = waitpid(pid_, &status, WNOHANG);
        if (r == pid_) {
            exited_ = true;
            exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return exit_code_;
}

long ServerProcess::RssKib() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
    }
    return -1;
}

std::shared_ptr<grpc::Channel> ServerProcess::Channel(bool own_connection) const {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(16 << 20);
    if (own_connection) args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    return grpc::CreateCustomChannel(address_, grpc::InsecureChannelCredentials(), args);
}

}  // namespace prepackd_test

// prepackd's lifecycle: health NOT_SERVING while the model loads (and
// UNAVAILABLE for work), SERVING once loaded, NOT_SERVING on SIGTERM while
// in-flight streams finish, cancellation when the grace period ends, exit
// codes; a slow reader does not hold up other streams; TLS.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

using grpc::health::v1::HealthCheckResponse;

// A scratch directory removed at the end of the test.
class TempDir {
public:
    TempDir() {
        char tmpl[] = "/tmp/prepackd_test_XXXXXX";
        if (mkdtemp(tmpl) != nullptr) path_ = tmpl;
    }
    ~TempDir() {
        std::error_code ec;
        if (!path_.empty()) std::filesystem::remove_all(path_, ec);
    }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// Reads a Watch stream on its own thread, recording every status.
class HealthWatch {
public:
    explicit HealthWatch(const std::shared_ptr<grpc::Channel>& channel)
        : stub_(grpc::health::v1::Health::NewStub(channel)) {
        ctx_.set_deadline(In(std::chrono::seconds(120)));
        reader_ = stub_->Watch(&ctx_, grpc::health::v1::HealthCheckRequest());
        thread_ = std::thread([this] {
            HealthCheckResponse r;
            while (reader_->Read(&r)) {
                std::lock_guard<std::mutex> lock(mu_);
                seen_.push_back(r.status());
                cv_.notify_all();
            }
            reader_->Finish();
        });
    }
    ~HealthWatch() {
        ctx_.TryCancel();
        thread_.join();
    }
    // Waits (up to `timeout`) until `status` is seen after what earlier
    // waits consumed: NOT_SERVING while loading must not satisfy a later wait
    // for the NOT_SERVING of a drain.
    bool WaitFor(HealthCheckResponse::ServingStatus status, std::chrono::seconds timeout) {
        std::unique_lock<std::mutex> lock(mu_);
        return cv_.wait_for(lock, timeout, [&] {
            const auto it = std::find(seen_.begin() + static_cast<std::ptrdiff_t>(consumed_), seen_.end(), status);
            if (it == seen_.end()) return false;
            consumed_ = static_cast<size_t>(it - seen_.begin()) + 1;
            return true;
        });
    }
    std::vector<HealthCheckResponse::ServingStatus> seen() {
        std::lock_guard<std::mutex> lock(mu_);
        return seen_;
    }

private:
    std::unique_ptr<grpc::health::v1::Health::Stub>                      stub_;
    grpc::ClientContext                                                  ctx_;
    std::unique_ptr<grpc::ClientReader<HealthCheckResponse>>             reader_;
    std::thread                                                          thread_;
    std::mutex                                                           mu_;
    std::condition_variable                                              cv_;
    std::vector<HealthCheckResponse::ServingStatus>                      seen_;
    size_t                                                               consumed_ = 0;   // seen_ before it: matched
};

TEST(LifecycleTest, NotServingAndUnavailableWhileTheModelLoads) {
    // The model "file" is a FIFO: loading blocks in open() until the test
    // opens the other end, so the loading phase lasts exactly as long as
    // the test needs.
    TempDir dir;
    const std::string fifo = dir.path() + "/model.gguf";
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::string error;
    auto server = ServerProcess::Start({"--model", fifo}, &error);
    ASSERT_NE(server, nullptr) << error;
    auto channel = server->Channel();
    auto stub = prepack::v1::Prepack::NewStub(channel);

    EXPECT_EQ(HealthOf(channel), HealthCheckResponse::NOT_SERVING);
    EXPECT_EQ(HealthOf(channel, "prepack.v1.Prepack"), HealthCheckResponse::NOT_SERVING);
    HealthWatch watch(channel);
    EXPECT_TRUE(watch.WaitFor(HealthCheckResponse::NOT_SERVING, std::chrono::seconds(10)));
    const Generated g = RunGenerate(*stub, Greedy("hello", 4));
    EXPECT_EQ(g.status.error_code(), grpc::StatusCode::UNAVAILABLE) << g.status.error_message();
    EXPECT_NE(g.status.error_message().find("loading"), std::string::npos);
    grpc::ClientContext ctx;
    prepack::v1::ModelInfo info;
    EXPECT_EQ(stub->GetModelInfo(&ctx, prepack::v1::GetModelInfoRequest(), &info).error_code(),
              grpc::StatusCode::UNAVAILABLE);

    // Let the load go on: an empty file is no model, so prepackd exits 1.
    const int fd = open(fifo.c_str(), O_WRONLY);
    ASSERT_GE(fd, 0);
    close(fd);
    const auto code = server->WaitExit(std::chrono::seconds(20));
    ASSERT_TRUE(code.has_value()) << "prepackd did not exit after a failed load";
    EXPECT_EQ(*code, 1);
    // It never claimed to serve.
    for (auto s : watch.seen()) EXPECT_NE(s, HealthCheckResponse::SERVING);
}

TEST(LifecycleTest, ServingOnceLoaded) {
    // A model that takes a moment to build (~0.5 s): a watch opened right
    // after the port appears sees NOT_SERVING first, then SERVING.
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:110m", "--threads", "1"}, &error);
    ASSERT_NE(server, nullptr) << error;
    HealthWatch watch(server->Channel());
    ASSERT_TRUE(watch.WaitFor(HealthCheckResponse::SERVING, std::chrono::seconds(60)));
    const auto seen = watch.seen();
    // Statuses only ever move forward: NOT_SERVING..., then SERVING.
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.back(), HealthCheckResponse::SERVING);
    for (size_t i = 0; i + 1 < seen.size(); ++i) EXPECT_EQ(seen[i], HealthCheckResponse::NOT_SERVING);
    if (seen.size() == 1) std::printf("note: the load finished before the watch began\n");
    EXPECT_EQ(HealthOf(server->Channel()), HealthCheckResponse::SERVING);
    EXPECT_EQ(HealthOf(server->Channel(), "prepack.v1.Prepack"), HealthCheckResponse::SERVING);
    // Unknown services are NOT_FOUND, as the health protocol says.
    auto hstub = grpc::health::v1::Health::NewStub(server->Channel());
    grpc::ClientContext ctx;
    grpc::health::v1::HealthCheckRequest req;
    req.set_service("no.such.Service");
    HealthCheckResponse resp;
    EXPECT_EQ(hstub->Check(&ctx, req, &resp).error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(LifecycleTest, SigtermDrainsInFlightStreamsThenExitsZero) {
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1", "--grace-seconds", "60"}, &error);
    ASSERT_NE(server, nullptr) << error;
    HealthWatch watch(server->Channel());
    ASSERT_TRUE(watch.WaitFor(HealthCheckResponse::SERVING, std::chrono::seconds(30)));
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());

    // Expected tokens first, from the same server.
    prepack::v1::GenerateRequest req = Greedy("Once upon a time", 400);
    req.mutable_sampling()->set_ignore_eos(true);
    const Generated alone = RunGenerate(*stub, req);
    ASSERT_TRUE(alone.status.ok());
    ASSERT_EQ(alone.ids.size(), 400u);

    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub->Generate(&ctx, req);
    prepack::v1::GenerateResponse msg;
    ASSERT_TRUE(reader->Read(&msg));
    std::vector<int32_t> ids(msg.token_ids().begin(), msg.token_ids().end());

    server->Signal(SIGTERM);
    EXPECT_TRUE(watch.WaitFor(HealthCheckResponse::NOT_SERVING, std::chrono::seconds(10)));
    EXPECT_EQ(HealthOf(server->Channel()), HealthCheckResponse::NOT_SERVING);
    const Generated refused = RunGenerate(*stub, Greedy("hello", 4));
    EXPECT_EQ(refused.status.error_code(), grpc::StatusCode::UNAVAILABLE) << refused.status.error_message();
    EXPECT_FALSE(server->WaitExit(std::chrono::milliseconds(0)).has_value()) << "exited with a stream in flight";

    // The in-flight stream runs to its end, unchanged.
    prepack::v1::FinishReason finish = prepack::v1::FINISH_REASON_UNSPECIFIED;
    while (reader->Read(&msg)) {
        ids.insert(ids.end(), msg.token_ids().begin(), msg.token_ids().end());
        if (msg.finish_reason() != prepack::v1::FINISH_REASON_UNSPECIFIED) finish = msg.finish_reason();
    }
    const grpc::Status st = reader->Finish();
    EXPECT_TRUE(st.ok()) << st.error_message();
    EXPECT_EQ(finish, prepack::v1::FINISH_REASON_LENGTH);
    EXPECT_EQ(ids, alone.ids);

    const auto code = server->WaitExit(std::chrono::seconds(30));
    ASSERT_TRUE(code.has_value()) << "prepackd did not exit after draining";
    EXPECT_EQ(*code, 0);
}

TEST(LifecycleTest, GracePeriodEndCancelsWhatIsLeft) {
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1", "--grace-seconds", "0.5"}, &error);
    ASSERT_NE(server, nullptr) << error;
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    WaitUntilServing(server->Channel());
    prepack::v1::GenerateRequest req = Greedy("Once upon a time", 2000);
    req.mutable_sampling()->set_ignore_eos(true);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub->Generate(&ctx, req);
    prepack::v1::GenerateResponse msg;
    ASSERT_TRUE(reader->Read(&msg));
    const auto t0 = std::chrono::steady_clock::now();
    server->Signal(SIGTERM);
    size_t n = 1;
    while (reader->Read(&msg)) n += static_cast<size_t>(msg.token_ids_size());
    const grpc::Status st = reader->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
    EXPECT_LT(n, 2000u);
    const auto code = server->WaitExit(std::chrono::seconds(20));
    ASSERT_TRUE(code.has_value());
    EXPECT_EQ(*code, 0);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST(LifecycleTest, SlowReaderDoesNotBlockOtherStreams) {
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1", "--stream-buffer", "2"}, &error);
    ASSERT_NE(server, nullptr) << error;
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    WaitUntilServing(server->Channel());
    // Big messages (20 alternatives a token), so the slow stream's unread
    // output outgrows the HTTP/2 window and its pump has to wait.
    prepack::v1::GenerateRequest slow_req = Greedy("Once upon a time", 600);
    slow_req.mutable_sampling()->set_ignore_eos(true);
    slow_req.set_top_logprobs(20);
    prepack::v1::GenerateRequest fast_req = Greedy("The cat", 32);
    fast_req.mutable_sampling()->set_ignore_eos(true);
    const Generated slow_alone = RunGenerate(*stub, slow_req);
    const Generated fast_alone = RunGenerate(*stub, fast_req);
    ASSERT_TRUE(slow_alone.status.ok() && fast_alone.status.ok());

    // The slow stream is opened on its own connection and not read.
    auto slow_stub = prepack::v1::Prepack::NewStub(server->Channel(/*own_connection=*/true));
    grpc::ClientContext slow_ctx;
    slow_ctx.set_deadline(In(std::chrono::seconds(120)));
    auto slow = slow_stub->Generate(&slow_ctx, slow_req);
    // Other clients are served meanwhile, with their own tokens.
    for (int i = 0; i < 3; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const Generated fast = RunGenerate(*stub, fast_req, std::chrono::seconds(30));
        ASSERT_TRUE(fast.status.ok()) << fast.status.error_message();
        EXPECT_EQ(fast.ids, fast_alone.ids);
        EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(15));
    }
    // The slow reader then gets every token, in order.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::vector<int32_t> ids;
    prepack::v1::GenerateResponse msg;
    while (slow->Read(&msg)) ids.insert(ids.end(), msg.token_ids().begin(), msg.token_ids().end());
    EXPECT_TRUE(slow->Finish().ok());
    EXPECT_EQ(ids, slow_alone.ids);
}

// Writes a self-signed certificate for 127.0.0.1 with openssl; false when
// openssl is not there.
bool MakeCertificate(const std::string& dir) {
    const std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
                            "-addext subjectAltName=IP:127.0.0.1 -keyout '" + dir + "/key.pem' -out '" + dir +
                            "/cert.pem' >/dev/null 2>&1";
    return std::system(cmd.c_str()) == 0;
}

TEST(LifecycleTest, ServesTlsWhenGivenACertificate) {
    TempDir dir;
    if (!MakeCertificate(dir.path())) GTEST_SKIP() << "openssl is not available to make a test certificate";
    std::string error;
    auto server = ServerProcess::Start({"--model", "synthetic:tiny", "--threads", "1", "--tls-cert",
                                        dir.path() + "/cert.pem", "--tls-key", dir.path() + "/key.pem"},
                                       &error);
    ASSERT_NE(server, nullptr) << error;
    std::ifstream in(dir.path() + "/cert.pem");
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    auto tls = grpc::CreateChannel(server->address(), grpc::SslCredentials(ssl));
    WaitUntilServing(tls);
    auto stub = prepack::v1::Prepack::NewStub(tls);
    prepack::v1::GenerateRequest req = Greedy("hello", 8);
    req.mutable_sampling()->set_ignore_eos(true);
    const Generated g = RunGenerate(*stub, req, std::chrono::seconds(30));
    ASSERT_TRUE(g.status.ok()) << g.status.error_message();
    EXPECT_EQ(g.ids.size(), 8u);
    // Plaintext is refused.
    auto plain = prepack::v1::Prepack::NewStub(server->Channel());
    EXPECT_FALSE(RunGenerate(*plain, req, std::chrono::seconds(5)).status.ok());
}

}  // namespace
}  // namespace prepackd_test

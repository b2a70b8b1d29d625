// Fault injection against a real prepackd: oversized messages, clients that
// vanish mid-stream (killed processes, with and without reading), 1 ms
// deadlines from many clients, and invalid UTF-8 on the wire. After each
// fault the server must have released everything (no request in flight, no
// KV memory held) and still give a request the tokens it gave before.
// Already covered elsewhere: a reader that stops reading but stays connected
// (LifecycleTest.SlowReaderDoesNotBlockOtherStreams), one cancel and one
// deadline (StatusTest), SIGTERM with streams in flight (LifecycleTest).
//
// This binary has its own main(): run as `prepackd_fault_test --client-then-die
// ADDRESS READ_TOKENS` it is a client that starts a long stream, reads that
// many tokens (0 = never reads) and then SIGKILLs itself, the way a crashed
// client or a dropped laptop looks to the server.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

prepack::v1::GenerateRequest Long() {
    prepack::v1::GenerateRequest r = Greedy("Once upon a time", 1500);
    r.mutable_sampling()->set_ignore_eos(true);
    return r;
}

// Nothing held: no call in flight, no request running, no KV memory.
void ExpectIdle(prepack::v1::Prepack::Stub& stub) {
    const auto s = WaitForStats(
        stub, [](const auto& s) { return s.in_flight() == 0 && s.kv_bytes_used() == 0 && s.requests_running() == 0; },
        std::chrono::seconds(20));
    EXPECT_EQ(s.in_flight(), 0u);
    EXPECT_EQ(s.requests_running(), 0u);
    EXPECT_EQ(s.kv_bytes_used(), 0u);
}

std::string SelfPath() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

TEST(FaultService, OversizedMessageIsRefusedAndTheServerStaysUp) {
    auto server = StartTiny({"--max-message-bytes", "4096"});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    const Generated before = RunGenerate(*stub, Greedy("hello there", 8));
    ASSERT_TRUE(before.status.ok()) << before.status.error_message();
    const Generated big = RunGenerate(*stub, Greedy(std::string(64 * 1024, 'a'), 4));
    EXPECT_EQ(big.status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << big.status.error_message();
    const Generated after = RunGenerate(*stub, Greedy("hello there", 8));
    ASSERT_TRUE(after.status.ok());
    EXPECT_EQ(after.ids, before.ids);
    ExpectIdle(*stub);
}

// Eight client processes start long streams; half read 3 tokens first, half
// never read; all are SIGKILLed mid-stream. The server notices each vanished
// connection, cancels its request and frees its memory.
TEST(FaultService, ClientsKilledMidStreamReleaseEverything) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    const Generated before = RunGenerate(*stub, Greedy("The cat sat", 16));
    ASSERT_TRUE(before.status.ok());
    std::vector<pid_t> children;
    for (int i = 0; i < 8; ++i) {
        const pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0) {
            const std::string self = SelfPath(), addr = server->address(), n = i % 2 ? "3" : "0";
            execl(self.c_str(), self.c_str(), "--client-then-die", addr.c_str(), n.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        children.push_back(pid);
    }
    int killed = 0;
    for (pid_t pid : children) {
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        killed += WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    }
    EXPECT_EQ(killed, 8) << "every client should have been mid-stream when it died";
    ExpectIdle(*stub);
    const auto s = Stats(*stub);
    EXPECT_GE(s.finished_by_status().count("CANCELLED") ? s.finished_by_status().at("CANCELLED") : 0, 8u);
    const Generated after = RunGenerate(*stub, Greedy("The cat sat", 16));
    EXPECT_EQ(after.ids, before.ids);
}

// 40 clients on 4 connections with 1 ms deadlines at once: each call ends
// DEADLINE_EXCEEDED (client or server side), none leaks a slot or KV.
TEST(FaultService, OneMillisecondDeadlinesFromManyClients) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    std::vector<std::thread> clients;
    std::atomic<int> exceeded{0}, other{0};
    for (int c = 0; c < 4; ++c) {
        clients.emplace_back([&] {
            auto stub = prepack::v1::Prepack::NewStub(server->Channel(/*own_connection=*/true));
            for (int i = 0; i < 10; ++i) {
                const Generated g = RunGenerate(*stub, Long(), std::chrono::milliseconds(1));
                (g.status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? exceeded : other)++;
            }
        });
    }
    for (auto& t : clients) t.join();
    EXPECT_EQ(exceeded.load(), 40);
    EXPECT_EQ(other.load(), 0);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    ExpectIdle(*stub);
    EXPECT_TRUE(RunGenerate(*stub, Greedy("still fine", 4)).status.ok());
}

// Invalid UTF-8 in the proto3 `text` field (a client that skips its own
// checks): refused INVALID_ARGUMENT naming the field, never a crash, and the
// server keeps serving.
TEST(FaultService, InvalidUtf8TextIsRefused) {
    auto server = StartTiny();
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    for (const char* bad : {"\xc3\x28", "ok \xff\xfe", "\xed\xa0\x80 surrogate", "\xf8\x88\x80\x80\x80"}) {
        const Generated g = RunGenerate(*stub, Greedy(bad, 4));
        EXPECT_FALSE(g.status.ok()) << "accepted invalid UTF-8";
        // Decoded by prepackd itself (request_decoder.h), not gRPC's bare UNIMPLEMENTED.
        EXPECT_EQ(g.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << g.status.error_message();
        EXPECT_EQ(g.status.error_message().rfind("text: invalid UTF-8", 0), 0u) << g.status.error_message();
    }
    EXPECT_TRUE(RunGenerate(*stub, Greedy("fine", 4)).status.ok());
    ExpectIdle(*stub);
}

}  // namespace

// The --client-then-die child (see the top of the file).
int ClientThenDie(const std::string& address, int read_tokens) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    auto stub = prepack::v1::Prepack::NewStub(
        grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(60)));
    auto reader = stub->Generate(&ctx, Long());
    prepack::v1::GenerateResponse msg;
    int got = 0;
    while (got < read_tokens && reader->Read(&msg)) got += msg.token_ids_size();
    if (read_tokens == 0) std::this_thread::sleep_for(std::chrono::milliseconds(300));   // started, never read
    if (got < read_tokens) return 3;   // the stream ended early: not mid-stream
    raise(SIGKILL);
    return 4;
}

}  // namespace prepackd_test

int main(int argc, char** argv) {
    if (argc == 4 && std::strcmp(argv[1], "--client-then-die") == 0) {
        return prepackd_test::ClientThenDie(argv[2], std::atoi(argv[3]));
    }
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}

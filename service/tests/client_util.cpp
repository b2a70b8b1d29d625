#include "client_util.h"

#include <gtest/gtest.h>

#include <grpcpp/generic/generic_stub.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace prepackd_test {

prepack::v1::GenerateRequest Greedy(const std::string& text, int max_tokens) {
    prepack::v1::GenerateRequest r;
    r.set_text(text);
    r.mutable_sampling()->set_max_tokens(max_tokens);
    r.mutable_sampling()->set_temperature(0.0f);
    return r;
}

prepack::v1::GenerateRequest GreedyIds(const std::vector<int32_t>& ids, int max_tokens) {
    prepack::v1::GenerateRequest r;
    r.mutable_token_ids()->mutable_ids()->Add(ids.begin(), ids.end());
    r.mutable_sampling()->set_max_tokens(max_tokens);
    r.mutable_sampling()->set_temperature(0.0f);
    return r;
}

namespace {

// Reads a Generate or Chat stream to its end.
Generated ReadAll(grpc::ClientReader<prepack::v1::GenerateResponse>* reader) {
    Generated g;
    prepack::v1::GenerateResponse r;
    while (reader->Read(&r)) {
        ++g.messages;
        if (g.finish != prepack::v1::FINISH_REASON_UNSPECIFIED) g.tokens_after_finish = true;
        g.ids.insert(g.ids.end(), r.token_ids().begin(), r.token_ids().end());
        g.text += r.text();
        g.reasoning += r.reasoning();
        g.logprobs.insert(g.logprobs.end(), r.logprobs().begin(), r.logprobs().end());
        if (r.finish_reason() != prepack::v1::FINISH_REASON_UNSPECIFIED) {
            g.finish = r.finish_reason();
            g.usage = r.usage();
        }
    }
    g.status = reader->Finish();
    return g;
}

}  // namespace

Generated RunGenerate(prepack::v1::Prepack::Stub& stub, const prepack::v1::GenerateRequest& request,
                      std::chrono::milliseconds timeout, const std::string& token, bool wait_for_ready) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(timeout));
    ctx.set_wait_for_ready(wait_for_ready);
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    auto reader = stub.Generate(&ctx, request);
    return ReadAll(reader.get());
}

Generated RunChat(prepack::v1::Prepack::Stub& stub, const prepack::v1::ChatRequest& request,
                  std::chrono::milliseconds timeout) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(timeout));
    auto reader = stub.Chat(&ctx, request);
    return ReadAll(reader.get());
}

prepack::v1::Stats Stats(prepack::v1::Prepack::Stub& stub) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(10)));
    prepack::v1::Stats s;
    const grpc::Status st = stub.GetStats(&ctx, prepack::v1::GetStatsRequest(), &s);
    EXPECT_TRUE(st.ok()) << "GetStats: " << st.error_message();
    return s;
}

grpc::health::v1::HealthCheckResponse::ServingStatus HealthOf(const std::shared_ptr<grpc::Channel>& channel,
                                                              const std::string& service) {
    auto stub = grpc::health::v1::Health::NewStub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(10)));
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(service);
    grpc::health::v1::HealthCheckResponse resp;
    if (!stub->Check(&ctx, req, &resp).ok()) return grpc::health::v1::HealthCheckResponse::UNKNOWN;
    return resp.status();
}

bool WaitUntilServing(const std::shared_ptr<grpc::Channel>& channel) {
    for (int i = 0; i < 500; ++i) {
        if (HealthOf(channel) == grpc::health::v1::HealthCheckResponse::SERVING) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

std::unique_ptr<ServerProcess> StartTiny(std::vector<std::string> extra) {
    return StartModel("synthetic:tiny", std::move(extra));
}

std::unique_ptr<ServerProcess> StartModel(const std::string& model, std::vector<std::string> extra) {
    std::vector<std::string> args = {"--model", model, "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    auto p = ServerProcess::Start(args, &error);
    EXPECT_NE(p, nullptr) << error;
    if (p != nullptr) {
        EXPECT_TRUE(WaitUntilServing(p->Channel()));
    }
    return p;
}

grpc::Status RawCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                     const std::string& request, std::vector<std::string>* responses, const std::string& token,
                     std::chrono::milliseconds timeout) {
    grpc::GenericStub stub(channel);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(timeout));
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    grpc::CompletionQueue cq;
    // Each step waits for its own completion: one operation at a time.
    auto wait = [&cq] {
        void* tag = nullptr;
        bool ok = false;
        return cq.Next(&tag, &ok) && ok;
    };
    auto call = stub.PrepareCall(&ctx, method, &cq);
    call->StartCall(reinterpret_cast<void*>(1));
    grpc::Status status;
    if (wait()) {
        grpc::Slice slice(request);
        grpc::ByteBuffer bytes(&slice, 1);
        call->Write(bytes, reinterpret_cast<void*>(2));
        if (wait()) {
            call->WritesDone(reinterpret_cast<void*>(3));
            wait();
        }
        while (true) {
            grpc::ByteBuffer in;
            call->Read(&in, reinterpret_cast<void*>(4));
            if (!wait()) break;
            std::vector<grpc::Slice> slices;
            std::string flat;
            if (in.Dump(&slices).ok()) {
                for (const auto& s : slices) flat.append(reinterpret_cast<const char*>(s.begin()), s.size());
            }
            if (responses != nullptr) responses->push_back(std::move(flat));
        }
    }
    call->Finish(&status, reinterpret_cast<void*>(5));
    wait();
    cq.Shutdown();
    void* tag = nullptr;
    bool ok = false;
    while (cq.Next(&tag, &ok)) {
    }
    return status;
}

TempPath::TempPath(const std::string& stem)
    : path_("/tmp/prepackd_" + stem + "_" + std::to_string(getpid()) + "_" +
            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count())) {}

TempPath::~TempPath() { std::remove(path_.c_str()); }

std::vector<std::string> GrepLines(const std::string& path, const std::vector<std::string>& parts) {
    std::ifstream in(path);
    std::vector<std::string> out;
    std::string line;
    while (std::getline(in, line)) {
        bool all = true;
        for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
        if (all) out.push_back(line);
    }
    return out;
}

double FieldOf(const std::string& line, const std::string& key) {
    const size_t at = line.find(" " + key + "=");
    if (at == std::string::npos) return -1.0;
    return std::strtod(line.c_str() + at + key.size() + 2, nullptr);
}

std::chrono::system_clock::time_point In(std::chrono::milliseconds d) { return std::chrono::system_clock::now() + d; }

grpc::Status RunBatch(prepack::v1::Prepack::Stub& stub, const prepack::v1::GenerateBatchRequest& batch,
                      std::map<uint32_t, prepack::v1::GenerateResult>* results) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    auto reader = stub.GenerateBatch(&ctx, batch);
    prepack::v1::GenerateBatchResponse resp;
    while (reader->Read(&resp)) (*results)[resp.index()] = resp.result();
    return reader->Finish();
}

bool SameUpToANearTie(const std::vector<int32_t>& got, const Generated& alone, float gap, std::string* why) {
    const size_t n = std::min(got.size(), alone.ids.size());
    for (size_t i = 0; i < n; ++i) {
        if (got[i] == alone.ids[i]) continue;
        if (i >= alone.logprobs.size() || alone.logprobs[i].top_size() < 2) {
            *why = "token " + std::to_string(i) + " differs and the alone run has no alternatives there";
            return false;
        }
        const auto& top = alone.logprobs[i].top();
        const bool second = top[1].token_id() == got[i];
        const float d = top[0].logprob() - top[1].logprob();
        if (second && d <= gap) return true;
        *why = "token " + std::to_string(i) + ": " + std::to_string(got[i]) + " against " +
               std::to_string(alone.ids[i]) + (second ? ", a log-prob gap of " + std::to_string(d) : ", not the runner-up");
        return false;
    }
    if (got.size() == alone.ids.size()) return true;
    *why = "lengths " + std::to_string(got.size()) + " and " + std::to_string(alone.ids.size());
    return false;
}

}  // namespace prepackd_test

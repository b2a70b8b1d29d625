#include "client_util.h"

#include <gtest/gtest.h>

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

Generated RunGenerate(prepack::v1::Prepack::Stub& stub, const prepack::v1::GenerateRequest& request,
                      std::chrono::milliseconds timeout, const std::string& token, bool wait_for_ready) {
    Generated g;
    grpc::ClientContext ctx;
    ctx.set_deadline(In(timeout));
    ctx.set_wait_for_ready(wait_for_ready);
    if (!token.empty()) ctx.AddMetadata("authorization", "Bearer " + token);
    auto reader = stub.Generate(&ctx, request);
    prepack::v1::GenerateResponse r;
    while (reader->Read(&r)) {
        ++g.messages;
        if (g.finish != prepack::v1::FINISH_REASON_UNSPECIFIED) g.tokens_after_finish = true;
        g.ids.insert(g.ids.end(), r.token_ids().begin(), r.token_ids().end());
        g.text += r.text();
        g.logprobs.insert(g.logprobs.end(), r.logprobs().begin(), r.logprobs().end());
        if (r.finish_reason() != prepack::v1::FINISH_REASON_UNSPECIFIED) {
            g.finish = r.finish_reason();
            g.usage = r.usage();
        }
    }
    g.status = reader->Finish();
    return g;
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
    std::vector<std::string> args = {"--model", "synthetic:tiny", "--threads", "1"};
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    auto p = ServerProcess::Start(args, &error);
    EXPECT_NE(p, nullptr) << error;
    if (p != nullptr) {
        EXPECT_TRUE(WaitUntilServing(p->Channel()));
    }
    return p;
}

std::chrono::system_clock::time_point In(std::chrono::milliseconds d) { return std::chrono::system_clock::now() + d; }

}  // namespace prepackd_test

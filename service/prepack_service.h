// The prepack.v1.Prepack service on the callback API. Handlers never block:
// they check the caller, the serving phase and the request, take an
// admission slot and hand streaming work to a reactor with its own pump
// thread. The unary calls are quick library calls answered in place.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

#include "auth.h"
#include "engine_host.h"
#include "prepack/v1/prepack.grpc.pb.h"

namespace prepackd {

class PrepackService final : public prepack::v1::Prepack::CallbackService {
public:
    PrepackService(EngineHost* host, Authenticator auth, size_t stream_buffer)
        : host_(host), auth_(std::move(auth)), stream_buffer_(stream_buffer) {}

    grpc::ServerWriteReactor<prepack::v1::GenerateResponse>* Generate(
        grpc::CallbackServerContext* context, const prepack::v1::GenerateRequest* request) override;
    grpc::ServerWriteReactor<prepack::v1::GenerateBatchResponse>* GenerateBatch(
        grpc::CallbackServerContext* context, const prepack::v1::GenerateBatchRequest* request) override;
    grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context,
                                       const prepack::v1::TokenizeRequest* request,
                                       prepack::v1::TokenizeResponse* response) override;
    grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context,
                                         const prepack::v1::DetokenizeRequest* request,
                                         prepack::v1::DetokenizeResponse* response) override;
    grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                           const prepack::v1::GetModelInfoRequest* request,
                                           prepack::v1::ModelInfo* response) override;
    grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context,
                                       const prepack::v1::GetStatsRequest* request,
                                       prepack::v1::Stats* response) override;

private:
    // OK when the caller may use the engine now: authenticated, and the
    // server SERVING (new work) or at least loaded (queries).
    grpc::Status Admissible(const grpc::CallbackServerContext* context, bool new_work) const;
    // Logs and counts a generation refused before it started.
    void Refused(const std::string& id, const char* rpc, const grpc::Status& status) const;

    EngineHost* const   host_;
    const Authenticator auth_;
    const size_t        stream_buffer_;
};

}  // namespace prepackd

// The prepack.v1.Prepack service on the callback API. Every method is
// registered raw (bytes in, bytes out) so that prepackd decodes requests
// itself: an undecodable one is refused INVALID_ARGUMENT naming the problem,
// logged and counted, instead of gRPC's bare UNIMPLEMENTED
// (request_decoder.h). Handlers run on gRPC's threads, which every service
// shares (health checks too), so they do only work that does not grow with
// the request: check the caller, the serving phase and the deadline, take
// an admission slot, and hand the rest (decoding, checking, tokenizing,
// generating) to a reactor with its own pump thread. Chat is Generate with
// a conversation for a prompt: the same handler and reactor. Unary calls
// whose work grows with the request (Tokenize, Detokenize, RenderChat) run
// whole on a small worker pool; GetModelInfo and GetStats, whose requests
// are empty, are answered in place.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>

#include "auth.h"
#include "engine_host.h"
#include "generate_reactor.h"
#include "prepack/v1/prepack.grpc.pb.h"
#include "worker_pool.h"

namespace prepackd {

using RawPrepackService = prepack::v1::Prepack::WithRawCallbackMethod_Generate<
    prepack::v1::Prepack::WithRawCallbackMethod_GenerateBatch<prepack::v1::Prepack::WithRawCallbackMethod_Chat<
        prepack::v1::Prepack::WithRawCallbackMethod_RenderChat<
            prepack::v1::Prepack::WithRawCallbackMethod_Tokenize<prepack::v1::Prepack::WithRawCallbackMethod_Detokenize<
                prepack::v1::Prepack::WithRawCallbackMethod_GetModelInfo<
                    prepack::v1::Prepack::WithRawCallbackMethod_GetStats<prepack::v1::Prepack::Service>>>>>>>>;

class PrepackService final : public RawPrepackService {
public:
    PrepackService(EngineHost* host, Authenticator auth, size_t stream_buffer)
        : host_(host), auth_(std::move(auth)), stream_buffer_(stream_buffer) {}

    grpc::ServerWriteReactor<grpc::ByteBuffer>* Generate(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request) override;
    grpc::ServerWriteReactor<grpc::ByteBuffer>* GenerateBatch(grpc::CallbackServerContext* context,
                                                              const grpc::ByteBuffer* request) override;
    grpc::ServerWriteReactor<grpc::ByteBuffer>* Chat(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request) override;
    grpc::ServerUnaryReactor* RenderChat(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
    grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
    grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
    grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                           grpc::ByteBuffer* response) override;
    grpc::ServerUnaryReactor* GetStats(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;

private:
    // Threads of the pool: tokenizing is one core's work per call, and
    // more threads would only take cores from the engine.
    static constexpr int kWorkers = 2;

    // Generate and Chat: the checks a handler makes, then a GenerateReactor.
    grpc::ServerWriteReactor<grpc::ByteBuffer>* StartStream(grpc::CallbackServerContext* context,
                                                            const grpc::ByteBuffer& request, StreamRpc rpc);
    // OK when the caller may use the engine now: authenticated, and the
    // server SERVING (new work) or at least loaded (queries).
    grpc::Status Admissible(const grpc::CallbackServerContext* context, bool new_work) const;
    // Auth and phase, then decodes a unary call's request. A request that
    // does not decode is logged and counted like a refused generation.
    grpc::Status AcceptUnary(const grpc::CallbackServerContext* context, const char* rpc,
                             const grpc::ByteBuffer& bytes, google::protobuf::Message* request);
    // A unary call run on the worker pool: auth and phase here, then on a
    // worker the decoding (logged and counted when it fails) and
    // `work(request)`, which fills the response and returns the status.
    template <typename Request, typename Work>
    grpc::ServerUnaryReactor* OnWorker(grpc::CallbackServerContext* context, const char* rpc,
                                       const grpc::ByteBuffer& bytes, Work work);
    // Logs and counts a call refused before it started; `received` is when
    // it arrived, so the log shows what the refusal cost.
    void Refused(const std::string& id, const char* rpc, const grpc::Status& status,
                 std::chrono::steady_clock::time_point received) const;

    EngineHost* const   host_;
    const Authenticator auth_;
    const size_t        stream_buffer_;
    WorkerPool          workers_{kWorkers};   // last: joined first, while the rest is alive
};

}  // namespace prepackd

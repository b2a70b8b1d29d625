#include "prepack_service.h"

#include <memory>

#include "batch_reactor.h"
#include "convert.h"
#include "generate_reactor.h"
#include "pumped_writer.h"
#include "request_builder.h"
#include "request_log.h"

namespace prepackd {

using prepack::v1::GenerateBatchResponse;
using prepack::v1::GenerateResponse;

grpc::Status PrepackService::Admissible(const grpc::CallbackServerContext* context, bool new_work) const {
    if (grpc::Status s = auth_.Check(context); !s.ok()) return s;
    return new_work ? host_->CheckServing() : host_->CheckLoaded();
}

void PrepackService::Refused(const std::string& id, const char* rpc, const grpc::Status& status) const {
    host_->CountFinished(status.error_code());
    RequestRecord rec;
    rec.id = id;
    rec.rpc = rpc;
    rec.status = status;
    LogRequest(rec);
}

grpc::ServerWriteReactor<GenerateResponse>* PrepackService::Generate(grpc::CallbackServerContext* context,
                                                                     const prepack::v1::GenerateRequest* request) {
    const std::string id = std::to_string(host_->NextRequestId());
    auto refuse = [&](const grpc::Status& s) {
        Refused(id, "Generate", s);
        return new RejectedWriter<GenerateResponse>(s);
    };
    if (grpc::Status s = Admissible(context, true); !s.ok()) return refuse(s);
    auto prepared = std::make_unique<PreparedRequest>();
    if (grpc::Status s = PrepareRequest(*request, "", host_->engine(), host_->model(), context->deadline(),
                                        prepared.get());
        !s.ok()) {
        return refuse(s);
    }
    if (!host_->TryAdmit()) {
        return refuse(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   "the server is at its limit of " + std::to_string(host_->max_queue()) +
                                       " requests in flight (--max-queue); retry later"));
    }
    prepack_stream* stream = nullptr;
    if (prepack_status st = prepack_generate_start(host_->engine(), &prepared->request, &stream); st != PREPACK_OK) {
        const grpc::Status s = ToGrpc(st, prepack_last_error());
        host_->Release();
        return refuse(s);
    }
    return new GenerateReactor(host_, id, stream, request->logprobs() || request->top_logprobs() > 0,
                               context->deadline(), stream_buffer_);
}

grpc::ServerWriteReactor<GenerateBatchResponse>* PrepackService::GenerateBatch(
    grpc::CallbackServerContext* context, const prepack::v1::GenerateBatchRequest* request) {
    const std::string id = std::to_string(host_->NextRequestId());
    auto refuse = [&](const grpc::Status& s) {
        Refused(id, "GenerateBatch", s);
        return new RejectedWriter<GenerateBatchResponse>(s);
    };
    if (grpc::Status s = Admissible(context, true); !s.ok()) return refuse(s);
    if (request->requests_size() == 0) {
        return refuse(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "requests: must not be empty"));
    }
    // One slot to begin with; the reactor takes more as they free up, so a
    // batch larger than --max-queue runs through a window.
    if (!host_->TryAdmit()) {
        return refuse(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                   "the server is at its limit of " + std::to_string(host_->max_queue()) +
                                       " requests in flight (--max-queue); retry later"));
    }
    return new BatchReactor(host_, id, request, context->deadline(), stream_buffer_);
}

grpc::ServerUnaryReactor* PrepackService::Tokenize(grpc::CallbackServerContext* context,
                                                   const prepack::v1::TokenizeRequest* request,
                                                   prepack::v1::TokenizeResponse* response) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status s = Admissible(context, false);
    std::vector<int32_t> ids;
    if (s.ok()) {
        s = TokenizeText(host_->engine(), request->text(), !request->has_add_bos() || request->add_bos(),
                         request->parse_special(), &ids);
    }
    if (s.ok()) response->mutable_token_ids()->Add(ids.begin(), ids.end());
    reactor->Finish(s);
    return reactor;
}

grpc::ServerUnaryReactor* PrepackService::Detokenize(grpc::CallbackServerContext* context,
                                                     const prepack::v1::DetokenizeRequest* request,
                                                     prepack::v1::DetokenizeResponse* response) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status s = Admissible(context, false);
    const auto& ids = request->token_ids();
    for (int i = 0; s.ok() && i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= host_->model().vocab_size) {
            s = grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                             "token_ids[" + std::to_string(i) + "]: " + std::to_string(ids[i]) +
                                 " is outside the vocabulary [0, " + std::to_string(host_->model().vocab_size) + ")");
        }
    }
    if (s.ok()) {
        // A first guess, then exactly the size the library asks for.
        std::string text(static_cast<size_t>(ids.size()) * 8 + 1, '\0');
        size_t len = 0;
        prepack_status st = prepack_detokenize(host_->engine(), ids.data(), ids.size(), text.data(), text.size(), &len);
        if (st == PREPACK_OUT_OF_RANGE) {
            text.resize(len + 1);
            st = prepack_detokenize(host_->engine(), ids.data(), ids.size(), text.data(), text.size(), &len);
        }
        s = ToGrpc(st, st == PREPACK_OK ? "" : prepack_last_error());
        if (s.ok()) response->set_text(ToValidUtf8(std::string_view(text.data(), len)));
    }
    reactor->Finish(s);
    return reactor;
}

grpc::ServerUnaryReactor* PrepackService::GetModelInfo(grpc::CallbackServerContext* context,
                                                       const prepack::v1::GetModelInfoRequest*,
                                                       prepack::v1::ModelInfo* r) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status s = Admissible(context, false);
    if (s.ok()) {
        const prepack_model_desc& m = host_->model();
        r->set_name(ToValidUtf8(m.name));
        r->set_architecture(ToValidUtf8(m.architecture));
        r->set_vocab_size(m.vocab_size);
        r->set_context_length(m.context_length);
        r->set_dim(m.dim);
        r->set_hidden_dim(m.hidden_dim);
        r->set_n_layers(m.n_layers);
        r->set_n_heads(m.n_heads);
        r->set_n_kv_heads(m.n_kv_heads);
        r->set_bos_id(m.bos_id);
        r->set_eos_id(m.eos_id);
        r->set_parameters(m.parameters);
        r->set_library_version(prepack_version());
    }
    reactor->Finish(s);
    return reactor;
}

grpc::ServerUnaryReactor* PrepackService::GetStats(grpc::CallbackServerContext* context,
                                                   const prepack::v1::GetStatsRequest*, prepack::v1::Stats* r) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    grpc::Status s = Admissible(context, false);
    prepack_stats st;
    prepack_stats_init(&st);
    if (s.ok()) {
        const prepack_status ps = prepack_engine_stats(host_->engine(), &st);
        s = ToGrpc(ps, ps == PREPACK_OK ? "" : prepack_last_error());
    }
    if (s.ok()) {
        r->set_requests_submitted(st.requests_submitted);
        r->set_requests_finished(st.requests_finished);
        r->set_requests_running(st.requests_running);
        r->set_requests_waiting(st.requests_waiting);
        r->set_prompt_tokens(st.prompt_tokens);
        r->set_prompt_tokens_computed(st.prompt_tokens_computed);
        r->set_generated_tokens(st.generated_tokens);
        r->set_preemptions(st.preemptions);
        r->set_kv_bytes_total(st.kv_bytes_total);
        r->set_kv_bytes_used(st.kv_bytes_used);
        r->set_prefix_saving(st.prefix_saving);
        r->set_prompt_fraction_computed(st.prompt_fraction_computed);
        r->set_in_flight(host_->in_flight());
        r->set_max_queue(static_cast<uint64_t>(host_->max_queue()));
        for (const auto& [name, n] : host_->FinishedByStatus()) (*r->mutable_finished_by_status())[name] = n;
        r->set_uptime_seconds(host_->UptimeSeconds());
    }
    reactor->Finish(s);
    return reactor;
}

}  // namespace prepackd

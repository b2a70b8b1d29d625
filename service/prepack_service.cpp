#include "prepack_service.h"

#include <memory>

#include "batch_reactor.h"
#include "convert.h"
#include "generate_reactor.h"
#include "pumped_writer.h"
#include "request_builder.h"
#include "request_decoder.h"
#include "request_log.h"

namespace prepackd {
namespace {

using Clock = std::chrono::steady_clock;

bool Expired(const grpc::CallbackServerContext* context) {
    const auto deadline = context->deadline();
    return deadline != std::chrono::system_clock::time_point::max() && std::chrono::system_clock::now() >= deadline;
}

}  // namespace

grpc::Status PrepackService::Admissible(const grpc::CallbackServerContext* context, bool new_work) const {
    if (grpc::Status s = auth_.Check(context); !s.ok()) return s;
    return new_work ? host_->CheckServing() : host_->CheckLoaded();
}

grpc::Status PrepackService::AcceptUnary(const grpc::CallbackServerContext* context, const char* rpc,
                                         const grpc::ByteBuffer& bytes, google::protobuf::Message* request) {
    const auto received = Clock::now();
    if (grpc::Status s = Admissible(context, false); !s.ok()) return s;
    grpc::Status s = DecodeRequest(bytes, request);
    if (!s.ok()) Refused(std::to_string(host_->NextRequestId()), rpc, s, received);
    return s;
}

void PrepackService::Refused(const std::string& id, const char* rpc, const grpc::Status& status,
                             Clock::time_point received) const {
    LogRefusal(host_, id, rpc, status, received);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* PrepackService::Generate(grpc::CallbackServerContext* context,
                                                                     const grpc::ByteBuffer* bytes) {
    return StartStream(context, *bytes, StreamRpc::kGenerate);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* PrepackService::Chat(grpc::CallbackServerContext* context,
                                                                 const grpc::ByteBuffer* bytes) {
    return StartStream(context, *bytes, StreamRpc::kChat);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* PrepackService::StartStream(grpc::CallbackServerContext* context,
                                                                        const grpc::ByteBuffer& bytes, StreamRpc rpc) {
    const auto received = Clock::now();
    const std::string id = std::to_string(host_->NextRequestId());
    auto refuse = [&](const grpc::Status& s) {
        Refused(id, RpcName(rpc), s, received);
        return new RejectedWriter(s);
    };
    if (grpc::Status s = Admissible(context, true); !s.ok()) return refuse(s);
    if (Expired(context)) return refuse(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded before start"));
    // A text prompt too long to fit is refused from its length prefix alone:
    // no slot, no thread, no decoding of megabytes. (A conversation's size
    // is its text's, not its length prefix's: the pump checks it once
    // decoded, before anything is rendered.)
    if (rpc == StreamRpc::kGenerate) {
        if (const auto text = LeadingFieldLength(bytes, prepack::v1::GenerateRequest::kTextFieldNumber)) {
            if (grpc::Status s = CheckPromptBytes(*text, "text", host_->max_prompt_bytes()); !s.ok()) return refuse(s);
        }
    }
    if (!host_->admission().TryInteractive()) return refuse(host_->QueueFull(false));
    // Decoding, checking and tokenizing grow with the request: the pump's.
    return new GenerateReactor(host_, rpc, id, bytes, context->deadline(), stream_buffer_, received);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* PrepackService::GenerateBatch(grpc::CallbackServerContext* context,
                                                                          const grpc::ByteBuffer* bytes) {
    const auto received = Clock::now();
    const std::string id = std::to_string(host_->NextRequestId());
    auto refuse = [&](const grpc::Status& s) {
        Refused(id, "GenerateBatch", s, received);
        return new RejectedWriter(s);
    };
    if (grpc::Status s = Admissible(context, true); !s.ok()) return refuse(s);
    if (Expired(context)) return refuse(grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "deadline exceeded before start"));
    // One slot to begin with; the reactor takes more, up to its window, as
    // they free up, so a batch larger than the window runs through it.
    if (!host_->admission().TryBatch()) return refuse(host_->QueueFull(true));
    return new BatchReactor(host_, id, *bytes, context->deadline(), stream_buffer_);
}

template <typename Request, typename Work>
grpc::ServerUnaryReactor* PrepackService::OnWorker(grpc::CallbackServerContext* context, const char* rpc,
                                                   const grpc::ByteBuffer& bytes, Work work) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (grpc::Status s = Admissible(context, false); !s.ok()) {
        reactor->Finish(s);
        return reactor;
    }
    const auto received = Clock::now();
    host_->CallStarted();   // the engine must outlive the task
    workers_.Post([this, reactor, rpc, received, bytes, work] {
        Request request;
        grpc::Status s = DecodeRequest(bytes, &request);
        if (s.ok()) {
            s = work(request);
        } else {
            Refused(std::to_string(host_->NextRequestId()), rpc, s, received);
        }
        reactor->Finish(s);
        host_->CallEnded();
    });
    return reactor;
}

grpc::ServerUnaryReactor* PrepackService::Tokenize(grpc::CallbackServerContext* context, const grpc::ByteBuffer* bytes,
                                                   grpc::ByteBuffer* response) {
    // As for Generate: text too long is refused from its length prefix,
    // before it takes a worker.
    const auto text = LeadingFieldLength(*bytes, prepack::v1::TokenizeRequest::kTextFieldNumber);
    if (text && Admissible(context, false).ok() && *text > host_->max_prompt_bytes()) {
        grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
        reactor->Finish(CheckPromptBytes(*text, "text", host_->max_prompt_bytes()));
        return reactor;
    }
    return OnWorker<prepack::v1::TokenizeRequest>(
        context, "Tokenize", *bytes, [this, response](const prepack::v1::TokenizeRequest& request) {
            // Text that long is no prompt for this model; refusing it bounds the work.
            grpc::Status s = CheckPromptBytes(request.text().size(), "text", host_->max_prompt_bytes());
            std::vector<int32_t> ids;
            if (s.ok()) {
                s = TokenizeText(host_->engine(), request.text(), !request.has_add_bos() || request.add_bos(),
                                 request.parse_special(), &ids);
            }
            if (s.ok()) {
                prepack::v1::TokenizeResponse r;
                r.mutable_token_ids()->Add(ids.begin(), ids.end());
                *response = Encode(r);
            }
            return s;
        });
}

grpc::ServerUnaryReactor* PrepackService::RenderChat(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
    return OnWorker<prepack::v1::RenderChatRequest>(
        context, "RenderChat", *bytes, [this, response](const prepack::v1::RenderChatRequest& request) {
            const std::string field = "conversation";
            grpc::Status s = CheckConversation(request.conversation(), field, host_->max_prompt_bytes());
            PreparedChat chat;
            if (s.ok()) s = BuildChat(request.conversation(), field, &chat);
            prepack::v1::RenderChatResponse r;
            std::vector<int32_t> ids;
            if (s.ok()) s = prepackd::RenderChat(host_->engine(), chat, field, r.mutable_text(), &ids);
            if (s.ok()) {
                // A template that writes bytes which are not UTF-8 (it could slice a string).
                r.set_text(ToValidUtf8(r.text()));
                r.mutable_token_ids()->Add(ids.begin(), ids.end());
                *response = Encode(r);
            }
            return s;
        });
}

grpc::ServerUnaryReactor* PrepackService::Detokenize(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
    return OnWorker<prepack::v1::DetokenizeRequest>(
        context, "Detokenize", *bytes, [this, response](const prepack::v1::DetokenizeRequest& request) {
            const auto& ids = request.token_ids();
            for (int i = 0; i < ids.size(); ++i) {
                if (ids[i] < 0 || ids[i] >= host_->model().vocab_size) {
                    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                                        "token_ids[" + std::to_string(i) + "]: " + std::to_string(ids[i]) +
                                            " is outside the vocabulary [0, " +
                                            std::to_string(host_->model().vocab_size) + ")");
                }
            }
            // A first guess, then exactly the size the library asks for.
            std::string text(static_cast<size_t>(ids.size()) * 8 + 1, '\0');
            size_t len = 0;
            prepack_status st =
                prepack_detokenize(host_->engine(), ids.data(), ids.size(), text.data(), text.size(), &len);
            if (st == PREPACK_OUT_OF_RANGE) {
                text.resize(len + 1);
                st = prepack_detokenize(host_->engine(), ids.data(), ids.size(), text.data(), text.size(), &len);
            }
            const grpc::Status s = ToGrpc(st, st == PREPACK_OK ? "" : prepack_last_error());
            if (s.ok()) {
                prepack::v1::DetokenizeResponse r;
                r.set_text(ToValidUtf8(std::string_view(text.data(), len)));
                *response = Encode(r);
            }
            return s;
        });
}

grpc::ServerUnaryReactor* PrepackService::GetModelInfo(grpc::CallbackServerContext* context,
                                                       const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    prepack::v1::GetModelInfoRequest request;
    const grpc::Status s = AcceptUnary(context, "GetModelInfo", *bytes, &request);
    if (s.ok()) {
        const prepack_model_desc& m = host_->model();
        prepack::v1::ModelInfo r;
        r.set_name(ToValidUtf8(m.name));
        r.set_architecture(ToValidUtf8(m.architecture));
        r.set_vocab_size(m.vocab_size);
        r.set_context_length(m.context_length);
        r.set_dim(m.dim);
        r.set_hidden_dim(m.hidden_dim);
        r.set_n_layers(m.n_layers);
        r.set_n_heads(m.n_heads);
        r.set_n_kv_heads(m.n_kv_heads);
        r.set_bos_id(m.bos_id);
        r.set_eos_id(m.eos_id);
        r.set_parameters(m.parameters);
        r.set_library_version(prepack_version());
        *response = Encode(r);
    }
    reactor->Finish(s);
    return reactor;
}

grpc::ServerUnaryReactor* PrepackService::GetStats(grpc::CallbackServerContext* context,
                                                   const grpc::ByteBuffer* bytes, grpc::ByteBuffer* response) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    prepack::v1::GetStatsRequest request;
    grpc::Status s = AcceptUnary(context, "GetStats", *bytes, &request);
    prepack_stats st;
    prepack_stats_init(&st);
    if (s.ok()) {
        const prepack_status ps = prepack_engine_stats(host_->engine(), &st);
        s = ToGrpc(ps, ps == PREPACK_OK ? "" : prepack_last_error());
    }
    if (s.ok()) {
        prepack::v1::Stats r;
        r.set_requests_submitted(st.requests_submitted);
        r.set_requests_finished(st.requests_finished);
        r.set_requests_running(st.requests_running);
        r.set_requests_waiting(st.requests_waiting);
        r.set_prompt_tokens(st.prompt_tokens);
        r.set_prompt_tokens_computed(st.prompt_tokens_computed);
        r.set_generated_tokens(st.generated_tokens);
        r.set_preemptions(st.preemptions);
        r.set_kv_bytes_total(st.kv_bytes_total);
        r.set_kv_bytes_used(st.kv_bytes_used);
        r.set_prefix_saving(st.prefix_saving);
        r.set_prompt_fraction_computed(st.prompt_fraction_computed);
        r.set_in_flight(host_->in_flight());
        r.set_max_queue(static_cast<uint64_t>(host_->max_queue()));
        for (const auto& [name, n] : host_->FinishedByStatus()) (*r.mutable_finished_by_status())[name] = n;
        r.set_uptime_seconds(host_->UptimeSeconds());
        r.set_steps(st.steps);
        r.set_prefill_steps(st.prefill_steps);
        r.set_prefill_step_tokens(st.prefill_step_tokens);
        r.set_prefill_step_capacity(st.prefill_step_capacity);
        r.set_prompt_token_layers(st.prompt_token_layers);
        r.set_prompt_token_layers_computed(st.prompt_token_layers_computed);
        r.set_prefix_query_tokens(st.prefix_query_tokens);
        r.set_prefix_hit_tokens(st.prefix_hit_tokens);
        r.set_prefix_query_requests(st.prefix_query_requests);
        r.set_prefix_hit_requests(st.prefix_hit_requests);
        for (const auto& [reason, n] : host_->metrics().FinishedByReason()) {
            (*r.mutable_finished_by_reason())[reason] = n;
        }
        *response = Encode(r);
    }
    reactor->Finish(s);
    return reactor;
}

}  // namespace prepackd

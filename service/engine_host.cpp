#include "engine_host.h"

#include "prompt_limit.h"

namespace prepackd {

namespace {

AdmissionLimits Limits(const ServerOptions& o) {
    AdmissionLimits l;
    l.max_queue = o.max_queue;
    l.batch_share = o.batch_share;
    l.interactive_reserve = o.interactive_reserve;
    return l;
}

}  // namespace

EngineHost::EngineHost(const ServerOptions& options)
    : admission_(Limits(options)), model_id_(ServedModelId(options)) {
    prepack_model_desc_init(&model_);
}

EngineHost::~EngineHost() { prepack_engine_destroy(engine_); }

grpc::Status EngineHost::Load(const ServerOptions& o) {
    prepack_engine_options eo;
    prepack_engine_options_init(&eo);
    eo.model = o.model.c_str();
    eo.threads = o.threads;
    eo.kv_budget_bytes = o.kv_memory;
    eo.max_batch_tokens = o.max_batch_tokens;
    eo.max_running = o.max_running;
    eo.policy = o.policy == "lru"        ? PREPACK_POLICY_LRU
                : o.policy == "batchllm" ? PREPACK_POLICY_BATCHLLM
                                         : PREPACK_POLICY_FCFS;
    eo.dtype = o.dtype == "bf16" ? PREPACK_DTYPE_BF16 : PREPACK_DTYPE_F32;
    eo.device = o.device == "cuda" ? PREPACK_DEVICE_CUDA : PREPACK_DEVICE_CPU;
    if (!o.chat_template_file.empty()) eo.chat_template_file = o.chat_template_file.c_str();
    prepack_engine* engine = nullptr;
    if (prepack_status st = prepack_engine_create(&eo, &engine); st != PREPACK_OK) {
        return ToGrpc(st, prepack_last_error());
    }
    prepack_model_desc desc;
    prepack_model_desc_init(&desc);
    if (prepack_status st = prepack_model_info(engine, &desc); st != PREPACK_OK) {
        grpc::Status s = ToGrpc(st, prepack_last_error());
        prepack_engine_destroy(engine);
        return s;
    }
    engine_ = engine;
    model_ = desc;
    max_prompt_bytes_ = o.max_prompt_bytes > 0 ? o.max_prompt_bytes : DerivedPromptByteLimit(engine, desc);
    metrics_ = std::make_unique<Metrics>(ServedModelId(o), desc.context_length);
    loaded_.store(true);
    // A drain that began while loading wins: the server never turns SERVING.
    Phase expected = Phase::kLoading;
    phase_.compare_exchange_strong(expected, Phase::kServing);
    return grpc::Status::OK;
}

prepack_status EngineHost::NextEvent(prepack_stream* stream, int64_t timeout_ms, prepack_event* event) {
    const prepack_status st = prepack_stream_next(stream, timeout_ms, event);
    if (st == PREPACK_OK && event->kind == PREPACK_EVENT_END) metrics_->ObserveEnd(*event);
    return st;
}

grpc::Status EngineHost::QueueFull(bool batch) const {
    if (!batch) {
        return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                            "the server is at its limit of " + std::to_string(admission_.max_queue()) +
                                " requests in flight (--max-queue); retry later");
    }
    return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                        "the server is at its limit of " + std::to_string(admission_.batch_limit()) +
                            " batch requests in flight (--max-queue less --interactive-reserve); retry later");
}

void EngineHost::BeginDrain() { phase_.store(Phase::kDraining); }

grpc::Status EngineHost::CheckServing() const {
    switch (phase_.load()) {
        case Phase::kServing: return grpc::Status::OK;
        case Phase::kLoading: return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the model is still loading");
        case Phase::kDraining: return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down");
    }
    return grpc::Status(grpc::StatusCode::INTERNAL, "unknown serving phase");
}

grpc::Status EngineHost::CheckLoaded() const {
    if (loaded_.load()) return grpc::Status::OK;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "the model is still loading");
}

void EngineHost::CallStarted() {
    std::lock_guard<std::mutex> lock(mu_);
    ++calls_;
}

void EngineHost::CallEnded() {
    std::lock_guard<std::mutex> lock(mu_);
    if (calls_ > 0) --calls_;
    if (calls_ == 0) calls_cv_.notify_all();
}

bool EngineHost::WaitCallsEnded(std::chrono::steady_clock::time_point deadline) {
    std::unique_lock<std::mutex> lock(mu_);
    return calls_cv_.wait_until(lock, deadline, [&] { return calls_ == 0; });
}

void EngineHost::Register(Cancellable* call) {
    std::lock_guard<std::mutex> lock(mu_);
    registered_.insert(call);
}

void EngineHost::Unregister(Cancellable* call) {
    std::lock_guard<std::mutex> lock(mu_);
    registered_.erase(call);
}

void EngineHost::CancelAll() {
    // Under the lock: a call unregisters (under the same lock) before it is
    // freed, so every pointer here is alive.
    std::lock_guard<std::mutex> lock(mu_);
    for (Cancellable* call : registered_) call->CancelFromServer();
}

void EngineHost::CountFinished(grpc::StatusCode code) {
    std::lock_guard<std::mutex> lock(mu_);
    ++finished_[CodeName(code)];
}

std::map<std::string, uint64_t> EngineHost::FinishedByStatus() const {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_;
}

double EngineHost::UptimeSeconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
}

grpc::Status ToGrpc(prepack_status status, const std::string& message) {
    if (status == PREPACK_OK) return grpc::Status::OK;
    return grpc::Status(static_cast<grpc::StatusCode>(status), message);
}

const char* CodeName(grpc::StatusCode code) {
    switch (code) {
        case grpc::StatusCode::OK: return "OK";
        case grpc::StatusCode::CANCELLED: return "CANCELLED";
        case grpc::StatusCode::UNKNOWN: return "UNKNOWN";
        case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
        case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
        case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
        case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
        case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
        case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
        case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
        case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
        case grpc::StatusCode::ABORTED: return "ABORTED";
        case grpc::StatusCode::OUT_OF_RANGE: return "OUT_OF_RANGE";
        case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
        case grpc::StatusCode::INTERNAL: return "INTERNAL";
        case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
        case grpc::StatusCode::DATA_LOSS: return "DATA_LOSS";
        default: return "UNKNOWN_CODE";
    }
}

}  // namespace prepackd

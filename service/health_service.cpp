#include "health_service.h"

namespace prepackd {

using grpc::health::v1::HealthCheckResponse;

// One Watch call: sends the current status, then every change, one write
// in flight; a change during a write is sent when it completes (only the
// latest status matters).
class HealthService::Watcher final : public grpc::ServerWriteReactor<HealthCheckResponse> {
public:
    Watcher(HealthService* service, bool known) : service_(service), known_(known) {}

    // Called with service_->mu_ held.
    void Update(Status status) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            pending_ = known_ ? status : HealthCheckResponse::SERVICE_UNKNOWN;
            has_pending_ = true;
        }
        Progress();
    }
    // Called with service_->mu_ held.
    void End(const grpc::Status& status) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (finish_wanted_) return;
            finish_wanted_ = true;
            final_ = status;
        }
        Progress();
    }

private:
    void OnWriteDone(bool ok) override {
        {
            std::lock_guard<std::mutex> lock(mu_);
            writing_ = false;
            if (!ok) {   // the client is gone: nothing more to send
                has_pending_ = false;
                if (!finish_wanted_) final_ = grpc::Status(grpc::StatusCode::CANCELLED, "the watch was cancelled");
                finish_wanted_ = true;
            }
        }
        Progress();
    }
    void OnCancel() override { End(grpc::Status(grpc::StatusCode::CANCELLED, "the watch was cancelled")); }
    void OnDone() override {
        service_->Remove(this);
        delete this;
    }

    void Progress() {
        enum { kNothing, kWrite, kFinish } action = kNothing;
        {
            std::lock_guard<std::mutex> lock(mu_);
            if (writing_ || finished_) return;
            // A last change goes out before the end (NOT_SERVING on shutdown).
            if (has_pending_) {
                message_.set_status(pending_);
                has_pending_ = false;
                writing_ = true;
                action = kWrite;
            } else if (finish_wanted_) {
                finished_ = true;
                action = kFinish;
            }
        }
        if (action == kWrite) StartWrite(&message_);
        if (action == kFinish) Finish(final_);
    }

    HealthService* const service_;
    const bool           known_;
    std::mutex           mu_;
    HealthCheckResponse  message_;               // the write in flight
    Status               pending_ = HealthCheckResponse::UNKNOWN;
    bool                 has_pending_ = false;
    bool                 writing_ = false;
    bool                 finish_wanted_ = false;
    bool                 finished_ = false;
    grpc::Status         final_;
};

bool HealthService::Known(const std::string& service) { return service.empty() || service == "prepack.v1.Prepack"; }

void HealthService::SetServing(bool serving) {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    status_ = serving ? HealthCheckResponse::SERVING : HealthCheckResponse::NOT_SERVING;
    for (Watcher* w : watchers_) w->Update(status_);
}

void HealthService::Shutdown() {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = HealthCheckResponse::NOT_SERVING;
    shut_down_ = true;
    for (Watcher* w : watchers_) {
        w->Update(status_);
        w->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    }
}

void HealthService::Remove(Watcher* watcher) {
    std::lock_guard<std::mutex> lock(mu_);
    watchers_.erase(watcher);
}

grpc::ServerUnaryReactor* HealthService::Check(grpc::CallbackServerContext* context,
                                               const grpc::health::v1::HealthCheckRequest* request,
                                               HealthCheckResponse* response) {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    if (!Known(request->service())) {
        reactor->Finish(grpc::Status(grpc::StatusCode::NOT_FOUND, "unknown service '" + request->service() + "'"));
        return reactor;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        response->set_status(status_);
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
}

grpc::ServerWriteReactor<HealthCheckResponse>* HealthService::Watch(
    grpc::CallbackServerContext*, const grpc::health::v1::HealthCheckRequest* request) {
    auto* w = new Watcher(this, Known(request->service()));
    std::lock_guard<std::mutex> lock(mu_);
    watchers_.insert(w);
    w->Update(status_);
    if (shut_down_) w->End(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is shutting down"));
    return w;
}

}  // namespace prepackd

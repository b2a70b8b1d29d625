// The standard grpc.health.v1.Health service, ours rather than gRPC's
// built-in one: the built-in one reports SERVING from the moment the port
// opens, before prepackd has loaded its model. Status for "" (the server)
// and "prepack.v1.Prepack": NOT_SERVING until SetServing(true).
#pragma once

#include <grpcpp/grpcpp.h>

#include <mutex>
#include <set>
#include <string>

#include "grpc/health/v1/health.grpc.pb.h"

namespace prepackd {

class HealthService final : public grpc::health::v1::Health::CallbackService {
public:
    using Status = grpc::health::v1::HealthCheckResponse::ServingStatus;

    // Sets every known service's status and tells the watchers.
    void SetServing(bool serving);
    // NOT_SERVING, then ends every Watch so server shutdown need not wait
    // for them. Later Watch calls end at once.
    void Shutdown();

    grpc::ServerUnaryReactor* Check(grpc::CallbackServerContext* context,
                                    const grpc::health::v1::HealthCheckRequest* request,
                                    grpc::health::v1::HealthCheckResponse* response) override;
    grpc::ServerWriteReactor<grpc::health::v1::HealthCheckResponse>* Watch(
        grpc::CallbackServerContext* context, const grpc::health::v1::HealthCheckRequest* request) override;

private:
    class Watcher;
    static bool Known(const std::string& service);
    void Remove(Watcher* watcher);

    std::mutex         mu_;
    Status             status_ = grpc::health::v1::HealthCheckResponse::NOT_SERVING;   // guarded by mu_
    bool               shut_down_ = false;                                             // guarded by mu_
    std::set<Watcher*> watchers_;                                                      // guarded by mu_
};

}  // namespace prepackd

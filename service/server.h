// Server: prepackd's lifecycle. Start() opens the ports (gRPC, and HTTP
// unless --http-listen off) with health NOT_SERVING; LoadModel() loads and
// turns SERVING; BeginDrain() (SIGTERM) turns NOT_SERVING and refuses new
// work; Stop() lets in-flight streams (gRPC and HTTP) finish within the
// grace period, cancels what is left and shuts down.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "engine_host.h"
#include "health_service.h"
#include "http/http_server.h"
#include "prepack_service.h"
#include "server_options.h"

namespace prepackd {

class Server {
public:
    explicit Server(ServerOptions options);
    ~Server();

    // Listens on options.listen (gRPC) and options.http_listen (HTTP,
    // unless "" or "off"). *address receives "host:port" with the port
    // actually bound (the one picked when the port was 0).
    grpc::Status Start(std::string* address);
    // The HTTP API's "host:port" once started; "" when it is off.
    const std::string& http_address() const { return http_address_; }
    grpc::Status LoadModel();
    // True once LoadModel() has succeeded.
    bool loaded() const { return host_ != nullptr && host_->CheckLoaded().ok(); }
    // The limits in force, for the startup log (valid once loaded).
    std::string Limits() const;
    void BeginDrain();
    // Returns false when calls were still running after everything was
    // cancelled: the engine is then left alone (not freed).
    bool Stop();

private:
    const ServerOptions             options_;
    std::unique_ptr<EngineHost>     host_;
    HealthService                   health_;
    std::unique_ptr<PrepackService> service_;
    std::vector<std::unique_ptr<grpc::Service>> reflection_;
    std::unique_ptr<grpc::Server>   server_;
    std::unique_ptr<http::HttpServer> http_;   // the OpenAI-compatible API (null when off)
    std::string                     http_address_;
};

}  // namespace prepackd

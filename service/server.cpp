#include "server.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "reflection_service.h"

namespace prepackd {
namespace {

grpc::Status ReadFile(const std::string& path, std::string* out) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    if (!(in && ss << in.rdbuf())) return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "cannot read " + path);
    *out = ss.str();
    return grpc::Status::OK;
}

grpc::Status Credentials(const ServerOptions& o, std::shared_ptr<grpc::ServerCredentials>* out) {
    if (o.tls_cert.empty()) {
        *out = grpc::InsecureServerCredentials();
        return grpc::Status::OK;
    }
    grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
    if (grpc::Status s = ReadFile(o.tls_key, &pair.private_key); !s.ok()) return s;
    if (grpc::Status s = ReadFile(o.tls_cert, &pair.cert_chain); !s.ok()) return s;
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back(std::move(pair));
    *out = grpc::SslServerCredentials(ssl);
    return grpc::Status::OK;
}

// "127.0.0.1:0" with port 50123 bound -> "127.0.0.1:50123".
std::string WithPort(const std::string& listen, int port) {
    const size_t colon = listen.rfind(':');
    return (colon == std::string::npos ? listen : listen.substr(0, colon)) + ":" + std::to_string(port);
}

}  // namespace

Server::Server(ServerOptions options)
    : options_(std::move(options)), host_(std::make_unique<EngineHost>(options_)) {}

Server::~Server() = default;

grpc::Status Server::Start(std::string* address) {
    Authenticator auth;
    if (!options_.auth_token_file.empty()) {
        if (grpc::Status s = Authenticator::FromFile(options_.auth_token_file, &auth); !s.ok()) return s;
    }
    std::shared_ptr<grpc::ServerCredentials> creds;
    if (grpc::Status s = Credentials(options_, &creds); !s.ok()) return s;
    if (!IsLoopback(options_.listen) && options_.tls_cert.empty()) {
        std::fprintf(stderr, "prepackd: warning: listening on %s, beyond loopback, without TLS\n",
                     options_.listen.c_str());
    }
    if (options_.http_listen != "" && options_.http_listen != "off") {
        // The same token (one Authenticator, copied) for both protocols.
        http_ = std::make_unique<http::HttpServer>(host_.get(), auth, options_);
        if (grpc::Status s = http_->Start(&http_address_); !s.ok()) {
            http_.reset();
            return s;
        }
        if (!IsLoopback(options_.http_listen) && options_.tls_cert.empty()) {
            std::fprintf(stderr, "prepackd: warning: HTTP on %s, beyond loopback, without TLS\n",
                         options_.http_listen.c_str());
        }
    }
    reflection_ = MakeReflectionServices(auth, {prepack::v1::Prepack::service_full_name(),
                                                grpc::health::v1::Health::service_full_name()});
    service_ = std::make_unique<PrepackService>(host_.get(), std::move(auth),
                                                static_cast<size_t>(options_.stream_buffer));
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort(options_.listen, creds, &port);
    // Two servers must never share a port silently.
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.SetMaxReceiveMessageSize(options_.max_message_bytes);
    builder.SetMaxSendMessageSize(options_.max_message_bytes);
    builder.RegisterService(service_.get());
    builder.RegisterService(&health_);
    for (const auto& r : reflection_) builder.RegisterService(r.get());
    server_ = builder.BuildAndStart();
    if (server_ == nullptr || port == 0) {
        if (http_ != nullptr) http_->Stop();
        return grpc::Status(grpc::StatusCode::UNAVAILABLE, "cannot listen on " + options_.listen);
    }
    *address = WithPort(options_.listen, port);
    return grpc::Status::OK;
}

grpc::Status Server::LoadModel() {
    grpc::Status s = host_->Load(options_);
    if (s.ok() && host_->phase() == Phase::kServing) health_.SetServing(true);
    return s;
}

std::string Server::Limits() const {
    const Admission& a = host_->admission();
    return "prompts up to " + std::to_string(host_->max_prompt_bytes()) + " bytes (--max-prompt-bytes); " +
           std::to_string(a.max_queue()) + " request slots, batches hold at most " + std::to_string(a.batch_limit()) +
           " of them, one batch call " + std::to_string(a.batch_window());
}

void Server::BeginDrain() {
    host_->BeginDrain();
    health_.SetServing(false);
}

bool Server::Stop() {
    BeginDrain();
    const auto grace = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(options_.grace_seconds));
    if (!host_->WaitCallsEnded(std::chrono::steady_clock::now() + grace)) {
        std::fprintf(stderr, "prepackd: grace period over; cancelling %llu requests in flight\n",
                     static_cast<unsigned long long>(host_->in_flight()));
        host_->CancelAll();
    }
    health_.Shutdown();
    // Stops listening; calls still open after a second (a client that
    // stopped reading) are cancelled, which ends their pumps.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    // HTTP connections: their generations were cancelled above; idle ones
    // close within a tenth of a second.
    if (http_ != nullptr) http_->Stop();
    if (!host_->WaitCallsEnded(std::chrono::steady_clock::now() + std::chrono::seconds(30))) {
        std::fprintf(stderr, "prepackd: requests still running after shutdown; leaving the engine\n");
        (void)host_.release();   // never free an engine that a pump still uses
        return false;
    }
    host_.reset();
    return true;
}

}  // namespace prepackd

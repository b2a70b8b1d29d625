// HttpServer: prepackd's OpenAI-compatible HTTP API beside gRPC, on the same
// EngineHost: the same engine, admission slots (an HTTP request for n
// choices holds n interactive slots, exactly as n Generate calls would),
// token auth (Authenticator), serving phase, request building and chat
// rendering (request_builder.h), per-status counters and request log.
//
//   POST /v1/chat/completions   messages through the model's chat template
//   POST /v1/completions        text or token-id prompts
//   GET  /v1/models, GET /v1/models/{id}
//   GET  /health                200 serving, 503 loading or draining (no auth)
//   GET  /metrics               Prometheus text (metrics.h); the token when auth is on
//   POST /tokenize, POST /detokenize   (vLLM's shapes, see openai_request.h)
//   GET  /v1/loads              the engine's load in SGLang's schema (a router's poll)
//   GET  /get_server_info, GET /get_model_info   SGLang's worker metadata, for routers
//                               (smg): the model, its context, the scheduler's limits
//
// Each connection has its own thread (http_transport.h); a generation runs
// on it from parsing to the last event, streamed as server-sent events
// when asked. Errors are OpenAI's envelope (openai_response.h).
#pragma once

#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <cstdint>
#include <memory>
#include <string>

#include "auth.h"
#include "engine_host.h"
#include "http/http_transport.h"
#include "http/openai_request.h"
#include "server_options.h"

namespace prepackd::http {

class HttpServer {
public:
    HttpServer(EngineHost* host, Authenticator auth, const ServerOptions& options);
    ~HttpServer();
    HttpServer(const HttpServer&) = delete;
    HttpServer& operator=(const HttpServer&) = delete;

    // Listens on options.http_listen (TLS with --tls-cert/--tls-key) and
    // serves. *address gets "host:port" with the port bound.
    grpc::Status Start(std::string* address);
    // Stops listening and joins every connection's thread: call once the
    // running generations have been cancelled (EngineHost::CancelAll).
    void Stop();

private:
    void Route();
    void Health(const httplib::Request& req, httplib::Response& res);
    void Scrape(const httplib::Request& req, httplib::Response& res);   // GET /metrics
    void Models(const httplib::Request& req, httplib::Response& res);
    void Model(const httplib::Request& req, httplib::Response& res);
    void Generate(const httplib::Request& req, httplib::Response& res, Api api);
    void Tokenize(const httplib::Request& req, httplib::Response& res);
    void Detokenize(const httplib::Request& req, httplib::Response& res);
    // What a router in front of replicas asks a worker (SGLang's worker
    // contract, as smg reads it): server and model metadata, and the load.
    void ServerInfo(const httplib::Request& req, httplib::Response& res);
    void ModelInfo(const httplib::Request& req, httplib::Response& res);
    void Loads(const httplib::Request& req, httplib::Response& res);
    // The error handler: unmatched routes, bodies too large, requests
    // httplib cannot parse, all in OpenAI's envelope.
    httplib::Server::HandlerResponse OnError(const httplib::Request& req, httplib::Response& res);

    grpc::Status Authorize(const httplib::Request& req) const;
    Json ModelObject() const;

    EngineHost* const          host_;
    const Authenticator        auth_;
    const ServerOptions        options_;
    const std::string          model_id_;
    const int64_t              created_;   // unix seconds: the server's start, the model's "created"
    std::unique_ptr<Transport> transport_;
};

// "host:port" -> host (brackets of an IPv6 address removed) and port.
grpc::Status SplitHostPort(const std::string& listen, std::string* host, int* port);

}  // namespace prepackd::http

// The optional shared-token check: with --auth-token-file every Prepack and
// reflection call, and every HTTP request but /health, must carry
// "authorization: Bearer <token>" (the scheme in any case, RFC 7235). Health
// stays open so probes need no secret. One check for both protocols: gRPC
// passes its metadata, HTTP its header.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>
#include <string_view>

namespace prepackd {

class Authenticator {
public:
    // No token: every call is allowed.
    Authenticator() = default;
    // Reads the token (the first line, surrounding whitespace trimmed) from
    // `path`. An unreadable or empty file is an error, never "no auth".
    static grpc::Status FromFile(const std::string& path, Authenticator* out);

    bool enabled() const { return !expected_.empty(); }
    // OK, or UNAUTHENTICATED when the call's metadata lacks the token.
    grpc::Status Check(const grpc::CallbackServerContext* context) const;
    // The same check of an authorization value (null: none was sent);
    // `carrier` names where it travels in messages ("metadata", "header").
    grpc::Status CheckValue(const std::string_view* authorization, const char* carrier) const;

private:
    std::string expected_;   // the token, empty when auth is off
};

}  // namespace prepackd

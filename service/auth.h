// The optional shared-token check: with --auth-token-file every Prepack and
// reflection call must carry "authorization: Bearer <token>" (the scheme in
// any case, RFC 7235). Health stays open so probes need no secret.
#pragma once

#include <grpcpp/grpcpp.h>

#include <string>

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

private:
    std::string expected_;   // the token, empty when auth is off
};

}  // namespace prepackd

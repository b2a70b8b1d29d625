#include "auth.h"

#include <cctype>
#include <fstream>

namespace prepackd {
namespace {

std::string Trim(const std::string& s) {
    const char* ws = " \t\r\n";
    const size_t b = s.find_first_not_of(ws);
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

// Compares without an early exit, so the time taken does not reveal how
// much of a guessed token was right.
bool ConstantTimeEquals(std::string_view a, std::string_view b) {
    unsigned char diff = a.size() == b.size() ? 0 : 1;
    for (size_t i = 0; i < a.size(); ++i) {
        diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
    }
    return diff == 0;
}

}  // namespace

grpc::Status Authenticator::FromFile(const std::string& path, Authenticator* out) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "--auth-token-file: cannot read " + path);
    }
    const std::string token = Trim(line);
    if (token.empty()) {
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "--auth-token-file: " + path + " holds no token");
    }
    out->expected_ = token;
    return grpc::Status::OK;
}

grpc::Status Authenticator::Check(const grpc::CallbackServerContext* context) const {
    if (!enabled()) return grpc::Status::OK;
    const auto& md = context->client_metadata();
    const auto it = md.find("authorization");
    if (it == md.end()) return CheckValue(nullptr, "metadata");
    const std::string_view value(it->second.data(), it->second.size());
    return CheckValue(&value, "metadata");
}

grpc::Status Authenticator::CheckValue(const std::string_view* authorization, const char* carrier) const {
    if (!enabled()) return grpc::Status::OK;
    if (authorization == nullptr) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            std::string("missing 'authorization: Bearer <token>' ") + carrier);
    }
    // RFC 7235: credentials = auth-scheme 1*SP token68, and the scheme is
    // case-insensitive ("bearer", "BEARER" are "Bearer").
    const std::string_view value = *authorization;
    constexpr std::string_view kScheme = "bearer";
    bool scheme_ok = value.size() > kScheme.size() && value[kScheme.size()] == ' ';
    for (size_t i = 0; scheme_ok && i < kScheme.size(); ++i) {
        scheme_ok = std::tolower(static_cast<unsigned char>(value[i])) == kScheme[i];
    }
    if (!scheme_ok) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            std::string("the authorization ") + carrier + " is not 'Bearer <token>'");
    }
    std::string_view token = value.substr(kScheme.size());
    while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
    if (!ConstantTimeEquals(token, expected_)) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "wrong bearer token");
    }
    return grpc::Status::OK;
}

}  // namespace prepackd

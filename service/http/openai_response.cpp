#include "http/openai_response.h"

#include <cstdio>
#include <mutex>
#include <random>

#include "convert.h"

namespace prepackd::http {

Json ErrorBody(const std::string& message, const std::string& type, const std::string& param,
               const std::string& code) {
    Json e = Json::object();
    e["message"] = message;
    e["type"] = type;
    e["param"] = param.empty() ? Json(nullptr) : Json(param);
    e["code"] = code.empty() ? Json(nullptr) : Json(code);
    Json body = Json::object();
    body["error"] = std::move(e);
    return body;
}

HttpError ToHttpError(const grpc::Status& s, int http_status) {
    const std::string& message = s.error_message();
    // "FIELD: why", FIELD a JSON path (no spaces).
    std::string param;
    if (const size_t colon = message.find(": "); colon != std::string::npos && colon > 0) {
        const std::string head = message.substr(0, colon);
        if (head.find(' ') == std::string::npos && head != "body") param = head;
    }
    HttpError e;
    std::string code;
    switch (s.error_code()) {
        case grpc::StatusCode::INVALID_ARGUMENT:
        case grpc::StatusCode::FAILED_PRECONDITION: e.status = 400; break;
        case grpc::StatusCode::OUT_OF_RANGE:
            e.status = 400;
            code = "context_length_exceeded";
            break;
        case grpc::StatusCode::UNAUTHENTICATED:
            e.status = 401;
            code = "invalid_api_key";
            break;
        case grpc::StatusCode::NOT_FOUND:
            e.status = 404;
            if (param == "model") code = "model_not_found";
            break;
        case grpc::StatusCode::RESOURCE_EXHAUSTED:
            e.status = 429;
            code = "rate_limit_exceeded";
            e.retry_after_s = 1;
            break;
        case grpc::StatusCode::UNAVAILABLE:
            e.status = 503;
            code = "service_unavailable";
            break;
        default: e.status = 500; break;
    }
    if (http_status > 0 && http_status != e.status) {
        e.status = http_status;
        e.retry_after_s = 0;
        if (http_status == 400 && code == "rate_limit_exceeded") code.clear();
    }
    const char* type = e.status == 401   ? "authentication_error"
                       : e.status == 429 ? "rate_limit_error"
                       : e.status >= 500 ? "server_error"
                                         : "invalid_request_error";
    e.body = ErrorBody(message, type, param, code);
    return e;
}

const char* FinishReasonName(prepack_finish_reason reason) {
    switch (reason) {
        case PREPACK_FINISH_LENGTH: return "length";
        case PREPACK_FINISH_STOP:
        case PREPACK_FINISH_EOS: return "stop";
        default: return "stop";
    }
}

TokenLogprob TokenLogprob::From(const prepack_event& e) {
    TokenLogprob t;
    t.token = e.token;
    t.logprob = e.logprob;
    for (size_t i = 0; i < e.n_top; ++i) t.top.emplace_back(e.top_ids[i], e.top_logprobs[i]);
    return t;
}

const std::string& Pieces::Bytes(int32_t id) {
    auto it = cache_.find(id);
    if (it != cache_.end()) return it->second;
    std::string text(64, '\0');
    size_t len = 0;
    prepack_status st = prepack_detokenize(engine_, &id, 1, text.data(), text.size(), &len);
    if (st == PREPACK_OUT_OF_RANGE) {
        text.resize(len + 1);
        st = prepack_detokenize(engine_, &id, 1, text.data(), text.size(), &len);
    }
    text.resize(st == PREPACK_OK ? len : 0);
    return cache_.emplace(id, std::move(text)).first->second;
}

std::string Pieces::Text(int32_t id) { return ToValidUtf8(Bytes(id)); }

namespace {

Json ByteList(const std::string& bytes) {
    Json list = Json::array();
    for (const char c : bytes) list.push_back(static_cast<int>(static_cast<unsigned char>(c)));
    return list;
}

}  // namespace

Json ChatLogprobs(const std::vector<TokenLogprob>& tokens, Pieces& pieces) {
    Json content = Json::array();
    for (const TokenLogprob& t : tokens) {
        Json entry = Json::object();
        entry["token"] = pieces.Text(t.token);
        entry["logprob"] = t.logprob;
        entry["bytes"] = ByteList(pieces.Bytes(t.token));
        Json top = Json::array();
        for (const auto& [id, lp] : t.top) {
            Json alt = Json::object();
            alt["token"] = pieces.Text(id);
            alt["logprob"] = lp;
            alt["bytes"] = ByteList(pieces.Bytes(id));
            top.push_back(std::move(alt));
        }
        entry["top_logprobs"] = std::move(top);
        content.push_back(std::move(entry));
    }
    Json out = Json::object();
    out["content"] = std::move(content);
    out["refusal"] = nullptr;
    return out;
}

Json CompletionLogprobs(const std::vector<TokenLogprob>& tokens, Pieces& pieces, size_t* offset) {
    Json text = Json::array(), lps = Json::array(), tops = Json::array(), offsets = Json::array();
    for (const TokenLogprob& t : tokens) {
        const std::string piece = pieces.Text(t.token);
        text.push_back(piece);
        lps.push_back(t.logprob);
        Json top = Json::object();
        for (const auto& [id, lp] : t.top) {
            const std::string alt = pieces.Text(id);
            if (!top.contains(alt)) top[alt] = lp;   // best first: a piece that repeats keeps its best
        }
        tops.push_back(std::move(top));
        offsets.push_back(*offset);
        *offset += CodePoints(piece);
    }
    Json out = Json::object();
    out["tokens"] = std::move(text);
    out["token_logprobs"] = std::move(lps);
    out["top_logprobs"] = std::move(tops);
    out["text_offset"] = std::move(offsets);
    return out;
}

Json UsageJson(const UsageTotals& u) {
    Json usage = Json::object();
    usage["prompt_tokens"] = u.prompt_tokens;
    usage["completion_tokens"] = u.completion_tokens;
    usage["total_tokens"] = u.prompt_tokens + u.completion_tokens;
    usage["prompt_tokens_details"] = Json::object({{"cached_tokens", u.cached_tokens}});
    usage["completion_tokens_details"] = Json::object({{"reasoning_tokens", u.reasoning_tokens}});
    return usage;
}

size_t CodePoints(std::string_view s) {
    size_t n = 0;
    for (const char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

std::string NewId(const char* prefix) {
    static std::mutex mu;
    static std::mt19937_64 rng{std::random_device{}()};
    uint64_t a, b;
    {
        std::lock_guard<std::mutex> lock(mu);
        a = rng();
        b = rng();
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%016llx%08llx", static_cast<unsigned long long>(a),
                  static_cast<unsigned long long>(b & 0xffffffffULL));
    return std::string(prefix) + buf;
}

}  // namespace prepackd::http

#include "openai/response.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <random>
#include <string_view>

namespace prepack::openai {

const std::string& Pieces::Bytes(int32_t id) {
    auto it = cache_.find(id);
    if (it != cache_.end()) return it->second;
    return cache_.emplace(id, detokenize_({id})).first->second;
}

std::string Pieces::Text(int32_t id) { return ToValidUtf8(Bytes(id)); }

std::string Pieces::TextAfter(int32_t first, int32_t id) {
    const std::string& alone = Bytes(first);
    const std::string both = detokenize_({first, id});
    if (both.compare(0, alone.size(), alone) != 0) return Text(id);
    return ToValidUtf8(both.substr(alone.size()));
}

namespace {

Json ByteList(const std::string& bytes) {
    Json list = Json::array();
    for (const char c : bytes) list.push_back(static_cast<int>(static_cast<unsigned char>(c)));
    return list;
}

}  // namespace

std::vector<TokenLogprob> EchoedPrompt(int32_t first, std::vector<TokenLogprob> scored) {
    TokenLogprob unscored;
    unscored.token = first;
    unscored.unscored = true;
    scored.insert(scored.begin(), std::move(unscored));
    return scored;
}

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
    for (size_t i = 0; i < tokens.size(); ++i) {
        const TokenLogprob& t = tokens[i];
        // The echoed prompt's second token as it reads after the first.
        const std::string piece =
            i > 0 && tokens[i - 1].unscored ? pieces.TextAfter(tokens[i - 1].token, t.token) : pieces.Text(t.token);
        text.push_back(piece);
        offsets.push_back(*offset);
        *offset += CodePoints(piece);
        if (t.unscored) {   // OpenAI's shape for the prompt's first token
            lps.push_back(nullptr);
            tops.push_back(nullptr);
            continue;
        }
        lps.push_back(t.logprob);
        Json top = Json::object();
        for (const auto& [id, lp] : t.top) {
            const std::string alt = pieces.Text(id);
            if (!top.contains(alt)) top[alt] = lp;   // best first: a piece that repeats keeps its best
        }
        tops.push_back(std::move(top));
    }
    Json out = Json::object();
    out["tokens"] = std::move(text);
    out["token_logprobs"] = std::move(lps);
    out["top_logprobs"] = std::move(tops);
    out["text_offset"] = std::move(offsets);
    return out;
}

Json ToolCallDeltasJson(const std::vector<ToolCallDelta>& deltas) {
    Json list = Json::array();
    for (const ToolCallDelta& d : deltas) {
        Json call = Json::object();
        call["index"] = d.index;
        Json function = Json::object();
        // A call's first piece is the one with its name (and id).
        if (!d.name.empty()) {
            call["id"] = d.id;
            call["type"] = "function";
            function["name"] = ToValidUtf8(d.name);
        }
        function["arguments"] = ToValidUtf8(d.arguments);
        call["function"] = std::move(function);
        list.push_back(std::move(call));
    }
    return list;
}

Json ToolCallsJson(const std::vector<ToolCall>& calls) {
    Json list = Json::array();
    for (const ToolCall& c : calls) {
        Json function = Json::object();
        function["name"] = ToValidUtf8(c.name);
        function["arguments"] = ToValidUtf8(c.arguments);
        Json call = Json::object();
        call["id"] = c.id;
        call["type"] = "function";
        call["function"] = std::move(function);
        list.push_back(std::move(call));
    }
    return list;
}

void AddToolCallDeltas(const std::vector<ToolCallDelta>& deltas, std::vector<ToolCall>* calls) {
    for (const ToolCallDelta& d : deltas) {
        if (d.index < 0 || static_cast<size_t>(d.index) > calls->size()) continue;
        if (static_cast<size_t>(d.index) == calls->size()) {
            calls->push_back(ToolCall{d.id, d.name, ""});
        }
        (*calls)[static_cast<size_t>(d.index)].arguments += d.arguments;
    }
}

const char* ChoiceFinishReason(const Choice& c) {
    const bool cut_short = std::string_view(c.finish_reason) == "length";
    return !c.tool_calls.empty() && !cut_short ? "tool_calls" : c.finish_reason;
}

UsageTotals SumUsage(const std::vector<Choice>& choices, int n) {
    UsageTotals u;
    const size_t per = static_cast<size_t>(std::max(n, 1));
    for (size_t first = 0; first < choices.size(); first += per) {
        int64_t cached = -1;
        for (size_t k = first; k < std::min(first + per, choices.size()); ++k) {
            const Choice& c = choices[k];
            if (k == first) u.prompt_tokens += c.prompt_tokens;
            cached = cached < 0 ? c.cached_tokens : std::min(cached, c.cached_tokens);
            u.completion_tokens += c.completion_tokens;
            u.reasoning_tokens += c.reasoning_tokens;
        }
        u.cached_tokens += std::max<int64_t>(cached, 0);
    }
    return u;
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

Json Envelope(const ResponseHead& head, const char* object) {
    Json j = Json::object();
    j["id"] = head.id;
    j["object"] = object;
    j["created"] = head.created;
    j["model"] = head.model;
    return j;
}

Json ResponseBody(const ApiRequest& request, const ResponseHead& head, std::vector<Choice>& choices,
                  Pieces& pieces) {
    const bool chat = request.api == Api::kChat;
    Json j = Envelope(head, chat ? "chat.completion" : "text_completion");
    Json list = Json::array();
    for (size_t k = 0; k < choices.size(); ++k) {
        Choice& c = choices[k];
        Json choice = Json::object();
        choice["index"] = k;
        if (chat) {
            Json message = Json::object();
            message["role"] = "assistant";
            // Only calls: no content at all (OpenAI's null), not "".
            message["content"] = c.tool_calls.empty() || !c.text.empty() ? Json(ToValidUtf8(c.text)) : Json(nullptr);
            if (!c.reasoning.empty()) message["reasoning_content"] = ToValidUtf8(c.reasoning);
            if (!c.tool_calls.empty()) message["tool_calls"] = ToolCallsJson(c.tool_calls);
            choice["message"] = std::move(message);
            choice["logprobs"] = request.logprobs ? ChatLogprobs(c.logprobs, pieces) : Json(nullptr);
        } else {
            choice["text"] = ToValidUtf8(c.text);
            choice["logprobs"] = request.logprobs ? CompletionLogprobs(c.logprobs, pieces, &c.offset) : Json(nullptr);
        }
        choice["finish_reason"] = ChoiceFinishReason(c);
        list.push_back(std::move(choice));
    }
    j["choices"] = std::move(list);
    j["usage"] = UsageJson(SumUsage(choices, request.n));
    return j;
}

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

HttpError ToHttpError(const absl::Status& s, int http_status) {
    const std::string message(s.message());
    // "FIELD: why", FIELD a JSON path (no spaces).
    std::string param;
    if (const size_t colon = message.find(": "); colon != std::string::npos && colon > 0) {
        const std::string head = message.substr(0, colon);
        if (head.find(' ') == std::string::npos && head != "body") param = head;
    }
    HttpError e;
    std::string code;
    switch (s.code()) {
        case absl::StatusCode::kInvalidArgument:
        case absl::StatusCode::kFailedPrecondition: e.status = 400; break;
        case absl::StatusCode::kOutOfRange:
            e.status = 400;
            code = "context_length_exceeded";
            break;
        case absl::StatusCode::kUnauthenticated:
            e.status = 401;
            code = "invalid_api_key";
            break;
        case absl::StatusCode::kNotFound:
            e.status = 404;
            if (param == "model") code = "model_not_found";
            break;
        case absl::StatusCode::kResourceExhausted:
            e.status = 429;
            code = "rate_limit_exceeded";
            e.retry_after_s = 1;
            break;
        case absl::StatusCode::kUnavailable:
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

}  // namespace prepack::openai

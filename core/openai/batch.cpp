#include "openai/batch.h"

#include <ctime>

#include "fields.h"

namespace prepack::openai {
namespace {

using namespace fields;

// {"id", "custom_id", "response", "error"}, in OpenAI's order.
Json OutputLine(const std::optional<std::string>& custom_id, Json response, Json error) {
    Json j = Json::object();
    j["id"] = NewId("batch_req_");
    j["custom_id"] = custom_id ? Json(*custom_id) : Json(nullptr);
    j["response"] = std::move(response);
    j["error"] = std::move(error);
    return j;
}

Json Response(int status_code, Json body) {
    Json r = Json::object();
    r["status_code"] = status_code;
    r["request_id"] = NewId("req_");
    r["body"] = std::move(body);
    return r;
}

// The envelope of a line: custom_id, method, url, body.
absl::Status ParseEnvelope(const Json& j, BatchEntry* out, const Json** body) {
    if (const Json* id = Get(j, "custom_id")) {
        if (!id->is_string()) return WrongType("custom_id", "a string", *id);
        out->custom_id = id->get<std::string>();
    } else {
        return Invalid("custom_id", "required (a string that names the request in the output)");
    }
    OPENAI_TRY(OnlyKnown(j, {"custom_id", "method", "url", "body"}, ""));
    std::optional<std::string> method, url;
    OPENAI_TRY(GetString(j, "method", &method));
    if (!method) return Invalid("method", "required: \"POST\"");
    if (*method != "POST") return Invalid("method", "\"" + *method + "\" is not \"POST\"");
    OPENAI_TRY(GetString(j, "url", &url));
    if (!url) return Invalid("url", "required: \"/v1/chat/completions\" or \"/v1/completions\"");
    if (*url == "/v1/chat/completions" || *url == "/chat/completions") {
        out->request.api = Api::kChat;
    } else if (*url == "/v1/completions" || *url == "/completions") {
        out->request.api = Api::kCompletions;
    } else {
        return Invalid("url", "\"" + *url + "\" is not an endpoint prepack runs in a batch (\"/v1/chat/completions\""
                                            " or \"/v1/completions\")");
    }
    *body = Get(j, "body");
    if (*body == nullptr) return Invalid("body", "required (the request's JSON object)");
    if (!(*body)->is_object()) return WrongType("body", "an object", **body);
    return absl::OkStatus();
}

absl::Status ParseRequest(const Json& body, const BatchModel& model, ApiRequest* out) {
    OPENAI_TRY(CheckModel(body, model.id));
    OPENAI_TRY(out->api == Api::kChat ? ParseChat(body, model.max_choices, out)
                                      : ParseCompletion(body, model.vocab_size, model.max_choices, out));
    if (out->stream) return Invalid("stream", "not supported in a batch (each output line is a whole response)");
    return absl::OkStatus();
}

}  // namespace

bool IsBatchLine(const Json& object) {
    return object.is_object() && (object.contains("custom_id") || object.contains("url") || object.contains("body"));
}

BatchEntry ParseBatchLine(std::string_view text, size_t line, const BatchModel& model) {
    BatchEntry e;
    e.line = line;
    Json j;
    e.status = ParseObject(text, "", &j);
    if (!e.status.ok()) return e;
    const Json* body = nullptr;
    e.status = ParseEnvelope(j, &e, &body);
    if (!e.status.ok()) return e;
    e.status = ParseRequest(*body, model, &e.request);
    e.body_error = !e.status.ok();
    return e;
}

Json BatchErrorLine(const BatchEntry& entry, const absl::Status& status, bool body_error, int http_status) {
    const std::string where = "line " + std::to_string(entry.line) + ": ";
    Json error = Json::object();
    if (!body_error) {
        error["code"] = "invalid_batch_line";
        error["message"] = where + std::string(status.message());
        return OutputLine(entry.custom_id, nullptr, std::move(error));
    }
    // What the endpoint would have answered, and the same as `error`.
    HttpError http = ToHttpError(status, http_status);
    const Json& e = http.body["error"];
    error["code"] = e["code"].is_null() ? e["type"] : e["code"];
    error["message"] = where + e["message"].get<std::string>();
    return OutputLine(entry.custom_id, Response(http.status, std::move(http.body)), std::move(error));
}

BatchLineRun::BatchLineRun(BatchEntry entry)
    : entry_(std::move(entry)),
      choices_(static_cast<size_t>(entry_.request.choices())),
      pending_(choices_.size()) {}

void BatchLineRun::Echo(const std::vector<std::string>& per_prompt) {
    if (!entry_.request.echo) return;
    const size_t n = static_cast<size_t>(entry_.request.n);
    for (size_t k = 0; k < choices_.size(); ++k) choices_[k].text = per_prompt[k / n];
}

std::optional<Json> BatchLineRun::End(const absl::Status& status, const std::string& model_id, Pieces& pieces,
                                      int http_status) {
    if (answered_) return std::nullopt;
    if (!status.ok()) {
        answered_ = true;
        return BatchErrorLine(entry_, status, /*body_error=*/true, http_status);
    }
    if (--pending_ > 0) return std::nullopt;
    answered_ = true;
    ResponseHead head;
    head.id = NewId(entry_.request.api == Api::kChat ? "chatcmpl-" : "cmpl-");
    head.created = static_cast<int64_t>(std::time(nullptr));
    head.model = model_id;
    return OutputLine(entry_.custom_id, Response(200, ResponseBody(entry_.request, head, choices_, pieces)), nullptr);
}

}  // namespace prepack::openai

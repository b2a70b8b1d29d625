#include "cli/batch_io.h"

#include <fstream>
#include <vector>

namespace prepack::cli {
namespace {

// Reads an optional number field into `out`, checking its JSON type.
template <typename T>
absl::Status Field(const nlohmann::json& j, const char* key, T* out, size_t line) {
    if (!j.contains(key)) return absl::OkStatus();
    const nlohmann::json& v = j[key];
    bool ok = false;
    if constexpr (std::is_same_v<T, std::string>) {
        ok = v.is_string();
    } else if constexpr (std::is_same_v<T, bool>) {
        ok = v.is_boolean();
    } else {
        ok = std::is_floating_point_v<T> ? v.is_number() : v.is_number_integer();
    }
    if (!ok) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line, ": field '", key, "' has the wrong type"));
    }
    *out = v.get<T>();
    return absl::OkStatus();
}

// Structured output: at most one of "json_schema" (a schema object),
// "json_object" (true), "regex" (a string) and "grammar" (GBNF text). The
// spec itself is checked when the request is submitted, so a bad one fails
// that request only.
absl::Status GrammarFields(const nlohmann::json& j, size_t line, grammar::GrammarSpec* spec) {
    using Kind = grammar::GrammarSpec::Kind;
    std::vector<std::string> given;
    for (const char* key : {"json_schema", "json_object", "regex", "grammar"}) {
        if (j.contains(key)) given.push_back(key);
    }
    if (given.size() > 1) {
        return absl::InvalidArgumentError(absl::StrCat("line ", line, ": '", given[0], "' and '", given[1],
                                                       "' conflict: the output can follow one grammar only"));
    }
    if (given.empty()) return absl::OkStatus();
    const nlohmann::json& v = j[given[0]];
    if (given[0] == "json_schema") {
        if (!v.is_object() && !v.is_boolean()) {
            return absl::InvalidArgumentError(absl::StrCat("line ", line, ": 'json_schema' must be a JSON Schema object"));
        }
        *spec = {Kind::kJsonSchema, v.dump()};
    } else if (given[0] == "json_object") {
        if (!v.is_boolean()) {
            return absl::InvalidArgumentError(absl::StrCat("line ", line, ": field 'json_object' has the wrong type"));
        }
        if (v.get<bool>()) *spec = {Kind::kJsonObject, ""};
    } else {
        if (!v.is_string()) {
            return absl::InvalidArgumentError(absl::StrCat("line ", line, ": field '", given[0], "' has the wrong type"));
        }
        *spec = {given[0] == "regex" ? Kind::kRegex : Kind::kGbnf, v.get<std::string>()};
    }
    return absl::OkStatus();
}

}  // namespace

std::string IdKey(const nlohmann::json& id) { return id.dump(); }

absl::StatusOr<BatchItem> ParseRequestLine(const std::string& line, size_t n) {
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) {
        return absl::InvalidArgumentError(absl::StrCat("line ", n, ": not a JSON object"));
    }
    BatchItem item;
    item.id = j.contains("id") ? j["id"] : nlohmann::json(n);
    if (!item.id.is_string() && !item.id.is_number_integer()) {
        return absl::InvalidArgumentError(absl::StrCat("line ", n, ": 'id' must be a string or an integer"));
    }
    Request& r = item.request;
    if (j.contains("prompt_tokens")) {
        if (!j["prompt_tokens"].is_array()) {
            return absl::InvalidArgumentError(absl::StrCat("line ", n, ": 'prompt_tokens' must be an array of ids"));
        }
        for (const auto& t : j["prompt_tokens"]) {
            if (!t.is_number_integer()) {
                return absl::InvalidArgumentError(absl::StrCat("line ", n, ": 'prompt_tokens' must hold integers"));
            }
            r.prompt_tokens.push_back(t.get<int32_t>());
        }
    } else if (j.contains("prompt") && j["prompt"].is_string()) {
        r.prompt = j["prompt"].get<std::string>();
    } else {
        return absl::InvalidArgumentError(absl::StrCat("line ", n, ": needs 'prompt' (string) or 'prompt_tokens'"));
    }
    PP_RETURN_IF_ERROR(Field(j, "max_tokens", &r.max_tokens, n));
    PP_RETURN_IF_ERROR(Field(j, "temperature", &r.sampling.temperature, n));
    PP_RETURN_IF_ERROR(Field(j, "top_k", &r.sampling.top_k, n));
    PP_RETURN_IF_ERROR(Field(j, "top_p", &r.sampling.top_p, n));
    PP_RETURN_IF_ERROR(Field(j, "min_p", &r.sampling.min_p, n));
    PP_RETURN_IF_ERROR(Field(j, "repetition_penalty", &r.sampling.repetition_penalty, n));
    PP_RETURN_IF_ERROR(Field(j, "seed", &r.sampling.seed, n));
    PP_RETURN_IF_ERROR(Field(j, "ignore_eos", &r.ignore_eos, n));
    PP_RETURN_IF_ERROR(Field(j, "logprobs", &r.logprobs, n));
    PP_RETURN_IF_ERROR(Field(j, "lazy", &r.lazy, n));
    PP_RETURN_IF_ERROR(Field(j, "lazy_schedule", &r.lazy_schedule, n));
    PP_RETURN_IF_ERROR(Field(j, "lazy_revive_limit", &r.lazy_revive_limit, n));
    PP_RETURN_IF_ERROR(GrammarFields(j, n, &r.grammar));
    if (j.contains("stop")) {
        if (!j["stop"].is_array()) return absl::InvalidArgumentError(absl::StrCat("line ", n, ": 'stop' must be an array"));
        for (const auto& s : j["stop"]) {
            if (!s.is_string()) return absl::InvalidArgumentError(absl::StrCat("line ", n, ": 'stop' must hold strings"));
            r.stop.push_back(s.get<std::string>());
        }
    }
    return item;
}

nlohmann::json ResultJson(const nlohmann::json& id, const BatchResult& r) {
    nlohmann::json j = {
        {"id", id},
        {"tokens", r.tokens},
        {"text", r.text},
        {"finish_reason", FinishReasonName(r.finish_reason)},
        {"usage",
         {{"prompt_tokens", r.usage.prompt_tokens},
          {"completion_tokens", r.usage.completion_tokens},
          {"ttft_ms", r.usage.time_to_first_token * 1e3},
          {"total_ms", r.usage.total_seconds * 1e3},
          {"cached_prompt_tokens", r.usage.cached_prompt_tokens},
          {"pruned_fraction", r.usage.pruned_fraction}}},
    };
    if (!r.status.ok()) j["error"] = std::string(r.status.message());
    return j;
}

std::set<std::string> DoneIds(const std::string& path) {
    std::set<std::string> done;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        // A line cut short by a kill is not a result: that request runs again.
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (!j.is_discarded() && j.is_object() && j.contains("id")) done.insert(IdKey(j["id"]));
    }
    return done;
}

void EndPartialLine(const std::string& path) {
    std::ifstream in(path, std::ios::binary | std::ios::ate);
    if (!in || in.tellg() <= 0) return;
    in.seekg(-1, std::ios::end);
    char last = 0;
    in.get(last);
    if (last != '\n') std::ofstream(path, std::ios::app) << '\n';
}

}  // namespace prepack::cli

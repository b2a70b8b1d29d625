// The JSON-lines formats of `prepack batch`: one request per input line, one
// result per output line carrying the request's id.
//
// Request: {"id": "q1", "prompt": "..."} or {"id": 7, "prompt_tokens": [1, 2]},
// optional "max_tokens", "temperature", "top_k", "top_p", "min_p",
// "repetition_penalty", "seed", "stop": [..], "ignore_eos", "logprobs", and
// structured output: one of "json_schema": {schema}, "json_object": true,
// "regex": "RE", "grammar": "GBNF text".
// A line without "id" gets its line number (1-based) as id.
// Result: {"id", "tokens", "text", "finish_reason", "usage": {...}} plus
// "error": "..." when the request failed.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/batch_runner.h"
#include "core/request/request.h"

namespace prepack::cli {

struct BatchItem {
    nlohmann::json id;
    Request        request;
};

// Parses one input line; INVALID_ARGUMENT names the line and field.
absl::StatusOr<BatchItem> ParseRequestLine(const std::string& line, size_t line_number);
nlohmann::json ResultJson(const nlohmann::json& id, const BatchResult& r);
// Ids already present in an existing results file (for resuming).
std::set<std::string> DoneIds(const std::string& path);
// Makes sure lines appended to the results file start on a line of their
// own, even after a previous run was killed halfway through writing one.
void EndPartialLine(const std::string& path);
// The canonical text of an id, used to match requests and results.
std::string IdKey(const nlohmann::json& id);

}  // namespace prepack::cli

// OpenAI batch files, as OpenAI's Batch API and vLLM's run_batch take them:
// one request per input line,
//   {"custom_id": "req-1", "method": "POST", "url": "/v1/chat/completions",
//    "body": {<a /v1/chat/completions or /v1/completions request>}}
// and one output line per request,
//   {"id": "batch_req_...", "custom_id": "req-1",
//    "response": {"status_code": 200, "request_id": "req_...", "body": <the response object>},
//    "error": null}
// A request the endpoint refuses gets its HTTP status and OpenAI's error
// envelope as `response`, and `error` {"code", "message"} whose message
// names the input line; a line that is no request at all (not JSON, no
// custom_id, another url) gets `"response": null` and the error. The body
// is exactly what the HTTP API answers (response.h), parsed by the same
// code (request.h). Shared by `prepack batch` and prepackd's GenerateBatch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "openai/json_text.h"
#include "openai/request.h"
#include "openai/response.h"

namespace prepack::openai {

// Whether a line's JSON object is in this format (has custom_id, url or
// body), rather than prepack's own batch format.
bool IsBatchLine(const Json& object);

// What parsing a line needs to know of the model that serves it.
struct BatchModel {
    std::string id;                         // what `body.model` must say
    int64_t     vocab_size = 0;             // token-id prompts must be below it
    int         max_choices = kMaxChoices;  // choices one line may ask for
};

// One input line, parsed as far as it goes.
struct BatchEntry {
    size_t                     line = 0;      // 1-based, in the input
    std::optional<std::string> custom_id;     // when the line gives one (also on errors)
    ApiRequest                 request;       // when status is OK
    absl::Status               status;        // why the line cannot run ("FIELD: why")
    bool                       body_error = false;   // status is the endpoint's answer to the body
};

// Parses line `line` of a file. A line that is not an object with a string
// custom_id, method "POST", a url of /v1/chat/completions or
// /v1/completions (with or without the /v1) and an object body fails with
// body_error false; a body the endpoint refuses (stream is refused too:
// a batch answers whole responses) with body_error true.
BatchEntry ParseBatchLine(std::string_view text, size_t line, const BatchModel& model);

// The output line of a line that failed with `status`; `http_status` as
// ToHttpError takes it.
Json BatchErrorLine(const BatchEntry& entry, const absl::Status& status, bool body_error, int http_status = 0);

// A line's choices while they run (choice k is choice k % n of prompt
// k / n), and its output line once they are done.
class BatchLineRun {
public:
    explicit BatchLineRun(BatchEntry entry);

    const BatchEntry& entry() const { return entry_; }
    size_t            choices() const { return choices_.size(); }
    // The choice to fill before it ends.
    Choice& choice(size_t k) { return choices_[k]; }
    // With echo, each choice's text starts with its prompt's (`per_prompt`).
    void Echo(const std::vector<std::string>& per_prompt);
    bool    answered() const { return answered_; }

    // A choice ended: with `status` OK its result is in choice(k), else the
    // line fails. Returns the line's output line when this ends it (its
    // last choice, or its first error), nothing otherwise; later ends of a
    // failed line return nothing.
    std::optional<Json> End(const absl::Status& status, const std::string& model_id, Pieces& pieces,
                            int http_status = 0);

private:
    BatchEntry          entry_;
    std::vector<Choice> choices_;
    size_t              pending_;
    bool                answered_ = false;
};

}  // namespace prepack::openai

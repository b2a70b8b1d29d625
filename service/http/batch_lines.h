// GenerateBatch's OpenAI batch lines (openai/batch.h): each line parsed as
// the HTTP API parses a body (openai_request.h), prepared as it prepares
// one (api_request_builder.h: one engine request per choice), and its
// choices' results, as the batch reactor gathers them (GenerateResult),
// turned into the line's output line, with the same response body the
// HTTP API and `prepack batch` give. A line's state lives from Parse() to
// the output line. One thread (the reactor's pump) uses it.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/api_request_builder.h"
#include "http/openai_request.h"
#include "http/openai_response.h"
#include "openai/batch.h"
#include "prepack/prepack.h"
#include "prepack/v1/prepack.pb.h"

namespace prepackd::http {

class BatchLines {
public:
    // `model_id` is what each body's "model" must name; a line may ask for
    // at most `max_choices` choices (the call's window of admission slots).
    BatchLines(const prepack_engine* engine, const prepack_model_desc& model, std::string model_id, int max_choices,
               uint64_t max_prompt_bytes);

    // The output line of a line that cannot run, and why (for the log).
    struct Refusal {
        std::string  line;
        grpc::Status status;
    };

    // Parses line `index` (0-based; its messages say index + 1) once: the
    // refusal of a line that cannot run, else nothing (choices() then says
    // how many engine requests it needs).
    std::optional<Refusal> Parse(uint32_t index, const std::string& text);
    int  choices(uint32_t index) const;
    bool logprobs(uint32_t index) const;

    // Prepares a parsed line: its choices' engine requests into *requests
    // (valid until the line ends), or its refusal when it cannot run (a
    // prompt past the context, a template error).
    std::optional<Refusal> Prepare(uint32_t index, std::chrono::system_clock::time_point deadline,
                                   std::vector<prepack_request>* requests);

    // Choice `choice` of line `index` ended with `result`. The line's
    // output line when this ends the line (its last choice, or its first
    // error), else nothing.
    std::optional<std::string> End(uint32_t index, size_t choice, const prepack::v1::GenerateResult& result);

private:
    struct Line {
        std::unique_ptr<prepack::openai::BatchLineRun> run;
        ApiRequest                                     request;    // the prepared requests borrow its strings
        PreparedApiRequest                             prepared;
    };

    const prepack_engine* const  engine_;
    const prepack_model_desc     model_;
    const prepack::openai::BatchModel batch_model_;
    const uint64_t               max_prompt_bytes_;
    Pieces                       pieces_;
    std::map<uint32_t, Line>     lines_;   // parsed and not yet answered
};

}  // namespace prepackd::http

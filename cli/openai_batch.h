// `prepack batch` on an OpenAI batch file (openai/batch.h: the lines of
// OpenAI's Batch API and vLLM's run_batch). Every line is parsed first and
// a bad one answered at once with an error line naming it; the others are
// submitted as one batch, so that under BatchLLM the prefix tree is built
// over the whole file's rendered prompts (a system prompt shared by every
// conversation is computed once). Each line's output line is appended (and
// flushed) as soon as its choices are done, so a killed job loses nothing:
// a rerun skips the custom_ids already answered.
#pragma once

#include <string>

#include "core/engine/engine.h"

namespace prepack::cli {

// Whether `path` holds an OpenAI batch file: its first line that is a JSON
// object has custom_id, url or body (prepack's own format has none).
bool IsOpenAiBatchFile(const std::string& path);

struct OpenAiBatchOptions {
    std::string   input;
    std::string   output;
    std::string   model_id;   // what each body's "model" must name
    EngineOptions engine;
};

// Runs the file; the exit code: 0, or 1 when a line failed (its output
// line says why) or the engine could not start.
int RunOpenAiBatch(const OpenAiBatchOptions& o);

}  // namespace prepack::cli

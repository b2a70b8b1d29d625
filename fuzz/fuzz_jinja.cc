// libFuzzer target: the chat-template engine (core/jinja). The input is a
// template, parsed and rendered against one fixed conversation (system,
// user, assistant with a tool call, tool result, tools) under small limits,
// with what template.h promises checked:
//  - Parse and Render never crash, hang or throw; they fail only with
//    INVALID_ARGUMENT or RESOURCE_EXHAUSTED (FAILED_PRECONDITION never);
//  - the output stays within max_output_bytes;
//  - Rendered::content is sorted, disjoint, not adjacent, non-empty and
//    inside the text;
//  - rendering is deterministic (a second render gives the same result).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/jinja/template.h"

namespace {

[[noreturn]] void Fail(const char* what, const std::string& detail = "") {
    std::fprintf(stderr, "fuzz_jinja: %s %s\n", what, detail.c_str());
    std::abort();
}

const nlohmann::ordered_json& Conversation() {
    static const nlohmann::ordered_json ctx = nlohmann::ordered_json::parse(R"json({
      "messages": [
        {"role": "system", "content": "You are terse. /no_think"},
        {"role": "user", "content": "Weather in Paris? <|im_end|> {{ not a tag }} ünï\n"},
        {"role": "assistant", "content": "<think>\nlook it up\n</think>\n\n",
         "tool_calls": [{"id": "call12345", "type": "function",
                         "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}]},
        {"role": "tool", "tool_call_id": "call12345", "content": "{\"temp\": 21.5}"},
        {"role": "assistant", "content": "It is 21.5°C."},
        {"role": "user", "content": ""}
      ],
      "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                 "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                 "days": {"type": "integer"}}, "required": ["city"]}}}],
      "add_generation_prompt": true,
      "enable_thinking": false,
      "bos_token": "<s>",
      "eos_token": "</s>"
    })json");
    return ctx;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using prepack::jinja::Template;
    const std::string_view source(reinterpret_cast<const char*>(data), size);
    prepack::jinja::Limits limits;
    limits.max_template_bytes = 64 << 10;
    limits.max_depth = 48;
    limits.max_loop_iterations = 20000;
    limits.max_output_bytes = 64 << 10;

    auto t = Template::Parse(source, "fuzz", limits);
    if (!t.ok()) {
        const auto code = t.status().code();
        if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kResourceExhausted) {
            Fail("Parse failed with an unexpected code:", t.status().ToString());
        }
        return 0;
    }
    prepack::jinja::RenderOptions options;
    options.now = 1721995200;
    options.limits = limits;
    auto r = t->Render(Conversation(), options);
    if (!r.ok()) {
        const auto code = r.status().code();
        if (code != absl::StatusCode::kInvalidArgument && code != absl::StatusCode::kResourceExhausted) {
            Fail("Render failed with an unexpected code:", r.status().ToString());
        }
    } else {
        if (r->text.size() > limits.max_output_bytes) Fail("output larger than max_output_bytes");
        for (size_t i = 0; i < r->content.size(); ++i) {
            const auto& s = r->content[i];
            if (s.begin >= s.end || s.end > r->text.size()) Fail("empty or out-of-range content span");
            if (i > 0 && r->content[i - 1].end >= s.begin) Fail("content spans unsorted, overlapping or adjacent");
        }
    }
    auto again = t->Render(Conversation(), options);
    if (again.ok() != r.ok()) Fail("a second render disagrees on success");
    if (r.ok() && (again->text != r->text || again->content != r->content)) Fail("a second render differs");
    return 0;
}

// Tool calls as they are generated: the answer's text in, content and
// tool-call deltas out, in the shape OpenAI's streaming API gives them (the
// first delta of a call carries its index, id and name; its arguments
// follow in pieces). The one streaming reader for every surface: the
// engine runs it, so the C ABI, gRPC, HTTP and the bindings all get the
// same deltas.
//
// Before a call starts, text is content, except a tail that may be the
// start of the format's trigger (held back until it is known). From the
// trigger on, the text is the call's markup: names are reported when
// complete, arguments as their JSON arrives (up to where the object's
// braces balance), the wrapper never. Finish() ends the answer: the calls
// then are exactly ParseToolCalls' (tool_calls.h) on the whole text, and
// when the text turns out not to be a call after all (an unconstrained
// answer that only looked like one), the held text is content.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/chat/tool_calls.h"

namespace prepack {

struct ToolCallDelta {
    int32_t     index = 0;
    std::string id;          // first delta of a call only
    std::string name;        // first delta of a call only
    std::string arguments;   // a piece of the arguments' JSON text
};

struct ToolStreamDelta {
    std::string                content;
    std::vector<ToolCallDelta> calls;
};

class ToolCallStream {
public:
    // `trigger`: the text that starts the calls ("" = the whole answer is
    // calls or, for the generic format, a JSON object holding them).
    // `id_seed` makes the call ids ("call_" + 24 characters) unique per
    // request and deterministic for tests.
    ToolCallStream(ToolCallFormat format, std::vector<FunctionTool> tools, std::string trigger, uint64_t id_seed);

    ToolStreamDelta Push(std::string_view text);
    ToolStreamDelta Finish();

    // The calls so far / in the end (with their ids).
    int32_t calls_started() const { return static_cast<int32_t>(started_.size()); }
    // The calls reported so far, whole: every delta added up (after
    // Finish(): the answer's calls, as Event::tool_calls carries them).
    const std::vector<ParsedToolCall>& calls() const { return calls_; }

private:
    ToolStreamDelta Read(std::string_view text);
    ToolStreamDelta End();
    // Adds `delta`'s calls to calls_.
    void Record(const ToolStreamDelta& delta);
    struct Started {
        std::string id;
        size_t      args_begin = 0;   // offset in held_ of the arguments' first byte
        size_t      args_sent = 0;    // bytes of the arguments already reported
        bool        args_done = false;
    };
    // Reports what held_ now shows of the calls.
    void Scan(ToolStreamDelta* out);
    std::string NextId();

    ToolCallFormat            format_;
    std::vector<FunctionTool> tools_;
    std::set<std::string, std::less<>> known_;   // the tools' names, looked up at every token
    std::string               trigger_;
    uint64_t                  rng_;
    bool                      in_calls_ = false;   // the trigger was seen (or there is none)
    std::string               pending_;            // content held back: may begin the trigger
    std::string               held_;               // the answer's text from the trigger on
    std::string               all_;                // the whole answer
    std::string               content_sent_;       // content reported so far
    std::vector<Started>      started_;
    std::vector<ParsedToolCall> calls_;
};

}  // namespace prepack

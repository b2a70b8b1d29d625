// Tool calls: a request's tool_choice fields into the engine's ToolChoice,
// an event's calls into their C views, and batch results' extras (the
// calls and the reasoning), kept in a block in front of the results array
// because prepack_result's layout can never change.
#include <cstddef>
#include <cstdint>
#include <new>

#include "capi/capi_internal.h"

namespace prepack::capi {
namespace {

using Mode = ToolChoice::Mode;

const char* ModeName(Mode m) {
    switch (m) {
        case Mode::kNone: return "NONE";
        case Mode::kAuto: return "AUTO";
        case Mode::kRequired: return "REQUIRED";
        case Mode::kFunction: return "FUNCTION";
    }
    return "?";
}

bool HasTools(const Request& r) {
    return r.chat != nullptr && r.chat->tools.is_array() && !r.chat->tools.empty();
}

}  // namespace

absl::StatusOr<ToolChoice> RequestToolChoice(const prepack_request& r, size_t caller_struct_size) {
    ToolChoice choice;
    // A caller built before these fields knew tools only as text for the
    // template: they stay that.
    if (caller_struct_size < offsetof(prepack_request, parallel_tool_calls) + sizeof r.parallel_tool_calls) {
        choice.mode = Mode::kNone;
        return choice;
    }
    const int64_t mode = RawEnum(r.tool_choice);
    switch (mode) {
        case PREPACK_TOOL_CHOICE_NONE: choice.mode = Mode::kNone; break;
        case PREPACK_TOOL_CHOICE_AUTO: choice.mode = Mode::kAuto; break;
        case PREPACK_TOOL_CHOICE_REQUIRED: choice.mode = Mode::kRequired; break;
        case PREPACK_TOOL_CHOICE_FUNCTION: choice.mode = Mode::kFunction; break;
        default:
            return absl::InvalidArgumentError(
                absl::StrCat("tool_choice ", mode, " is unknown (0 NONE, 1 AUTO, 2 REQUIRED, 3 FUNCTION)"));
    }
    if (choice.mode == Mode::kFunction) {
        if (r.tool_choice_function == nullptr || r.tool_choice_function[0] == '\0') {
            return absl::InvalidArgumentError("tool_choice is FUNCTION but tool_choice_function is NULL or empty "
                                              "(the name of the tool to call)");
        }
        choice.function = r.tool_choice_function;
    } else if (r.tool_choice_function != nullptr) {
        // A name here would be silently unused: refused, as its caller meant something by it.
        return absl::InvalidArgumentError(absl::StrCat("tool_choice_function is set but tool_choice is ",
                                                       ModeName(choice.mode), ", which takes no function"));
    }
    choice.parallel = r.parallel_tool_calls != 0;
    return choice;
}

absl::Status CheckToolChoice(Request* r) {
    ToolChoice& c = r->tool_choice;
    if (!HasTools(*r)) {
        if (c.mode == Mode::kRequired || c.mode == Mode::kFunction) {
            return absl::InvalidArgumentError(absl::StrCat("tool_choice is ", ModeName(c.mode),
                                                           " but the request has no tools to call (a chat whose "
                                                           "tools_json lists them)"));
        }
        c.mode = Mode::kNone;   // AUTO with nothing to call: plain text
        return absl::OkStatus();
    }
    if (c.mode == Mode::kNone) return absl::OkStatus();
    if (r->grammar.active()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "grammar_kind conflicts with tool_choice ", ModeName(c.mode),
            ": the tool-call format decides the answer's shape (with tool_choice NONE the tools are only shown "
            "to the model)"));
    }
    if (r->ignore_eos) {
        return absl::InvalidArgumentError(absl::StrCat("ignore_eos conflicts with tool_choice ", ModeName(c.mode),
                                                       ": the tool-call format decides where the answer may end"));
    }
    return absl::OkStatus();
}

void FillToolCalls(prepack_stream* s, prepack_event* ev) {
    const Event& e = s->current;
    s->tool_call_deltas.clear();
    s->tool_calls.clear();
    for (const ToolCallDelta& d : e.tool_call_deltas) {
        s->tool_call_deltas.push_back({d.index, d.id.empty() ? nullptr : d.id.c_str(),
                                       d.name.empty() ? nullptr : d.name.c_str(), d.arguments.c_str(),
                                       d.arguments.size()});
    }
    for (const ParsedToolCall& c : e.tool_calls) {
        s->tool_calls.push_back({c.id.c_str(), c.name.c_str(), c.arguments.c_str(), c.arguments.size()});
    }
    ev->tool_call_deltas = s->tool_call_deltas.empty() ? nullptr : s->tool_call_deltas.data();
    ev->n_tool_call_deltas = s->tool_call_deltas.size();
    ev->tool_calls = s->tool_calls.empty() ? nullptr : s->tool_calls.data();
    ev->n_tool_calls = s->tool_calls.size();
}

// ------------------------------------------------------------ batch results

namespace {

// In front of the results array; kHeaderBytes keeps the array aligned.
struct ResultsHeader {
    uint64_t     magic;
    size_t       n;
    ResultExtra* extras;   // n of them
};
constexpr uint64_t kResultsMagic = 0x7072657061636b52ULL;   // "prepackR"
constexpr size_t   kAlign = alignof(std::max_align_t);
constexpr size_t   kHeaderBytes = (sizeof(ResultsHeader) + kAlign - 1) / kAlign * kAlign;
static_assert(alignof(prepack_result) <= kAlign);

ResultsHeader* HeaderOf(const prepack_result* results) {
    return reinterpret_cast<ResultsHeader*>(
        const_cast<char*>(reinterpret_cast<const char*>(results)) - kHeaderBytes);
}

}  // namespace

prepack_result* AllocateResults(size_t n) {
    if (n > (SIZE_MAX - kHeaderBytes) / sizeof(prepack_result)) return nullptr;
    void* block = std::calloc(1, kHeaderBytes + n * sizeof(prepack_result));
    if (block == nullptr) return nullptr;
    auto* extras = new (std::nothrow) ResultExtra[n];
    if (extras == nullptr) {
        std::free(block);
        return nullptr;
    }
    new (block) ResultsHeader{kResultsMagic, n, extras};
    return reinterpret_cast<prepack_result*>(static_cast<char*>(block) + kHeaderBytes);
}

ResultExtra* ResultExtras(const prepack_result* results, size_t i) {
    if (results == nullptr) return nullptr;
    const ResultsHeader* h = HeaderOf(results);
    if (h->magic != kResultsMagic || i >= h->n) return nullptr;
    return &h->extras[i];
}

void FreeResults(prepack_result* results, size_t n) {
    if (results == nullptr) return;
    for (size_t i = 0; i < n; ++i) {
        std::free(results[i].tokens);
        std::free(results[i].text);
        std::free(results[i].message);
    }
    ResultsHeader* h = HeaderOf(results);
    delete[] h->extras;
    std::free(h);
}

}  // namespace prepack::capi

using namespace prepack::capi;

extern "C" {

prepack_status prepack_result_tool_calls(const prepack_result* results, size_t i, const prepack_tool_call** calls,
                                         size_t* n) {
    return Guard([&] {
        if (results == nullptr || calls == nullptr || n == nullptr) {
            return Fail(PREPACK_INVALID_ARGUMENT, "results, calls or n is NULL");
        }
        ResultExtra* x = ResultExtras(results, i);
        if (x == nullptr) {
            return Fail(PREPACK_INVALID_ARGUMENT,
                        absl::StrCat("result ", i, " is out of range (or results is not prepack_generate_batch's)"));
        }
        *calls = x->views.empty() ? nullptr : x->views.data();
        *n = x->views.size();
        return PREPACK_OK;
    });
}

prepack_status prepack_result_reasoning(const prepack_result* results, size_t i, const char** reasoning,
                                        size_t* reasoning_len) {
    return Guard([&] {
        if (results == nullptr || reasoning == nullptr || reasoning_len == nullptr) {
            return Fail(PREPACK_INVALID_ARGUMENT, "results, reasoning or reasoning_len is NULL");
        }
        ResultExtra* x = ResultExtras(results, i);
        if (x == nullptr) {
            return Fail(PREPACK_INVALID_ARGUMENT,
                        absl::StrCat("result ", i, " is out of range (or results is not prepack_generate_batch's)"));
        }
        *reasoning = x->reasoning.c_str();
        *reasoning_len = x->reasoning.size();
        return PREPACK_OK;
    });
}

}  // extern "C"

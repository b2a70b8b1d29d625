// A Jinja template engine for chat templates, written for prepack
// (clean-room: no Jinja library is packaged for Debian's C++).
//
// It renders as Hugging Face transformers' `apply_chat_template` does, i.e.
// Python jinja2's ImmutableSandboxedEnvironment(trim_blocks=True,
// lstrip_blocks=True) with the loopcontrols extension, transformers' own
// `tojson` filter (keys in their order, ensure_ascii=False, ", " / ": "
// separators, optional indent), and the globals `raise_exception(msg)` and
// `strftime_now(fmt)`. Where a template depends on Python semantics
// (printing a list as its repr, `none` apart from undefined, string and dict
// methods, slicing) the output is Python's. Anything a template uses that
// this engine does not implement is an error naming the line and column,
// never a silently different rendering.
//
// Content tracking: every string that comes from the render context (the
// caller's messages, tools, kwargs), except the keys named in
// RenderOptions::trusted_keys, is "content". The renderer follows content
// through string operations (concatenation, slicing, strip, split, ...; an
// operation whose mapping it does not follow marks its whole result as
// content) and reports which output bytes are content, so the tokenizer can
// turn the template's own markup into control tokens and never the text a
// user wrote.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/status.h"

namespace prepack::jinja {

// Bounds that keep a hostile template from hanging or exhausting a server.
// Exceeding one ends the render with RESOURCE_EXHAUSTED naming the bound.
// Besides these, jinja2's sandbox bound applies: range() of more than
// 100000 items fails (as it does in jinja2, here as RESOURCE_EXHAUSTED), and
// the C++ stack a render uses is measured, so no nesting can overflow it.
struct Limits {
    size_t  max_template_bytes = 1 << 20;     // source size
    // Nesting of blocks and expressions in the source (parentheses, unary
    // operators, a long `a + b + c ...` chain: the height of the expression
    // tree), of macro calls (and recursive loop calls) at render, and of
    // lists and dicts built or passed in the context.
    int     max_depth = 200;
    // Summed over every loop iteration, loop-filter test and macro call of
    // one render.
    int64_t max_loop_iterations = 1'000'000;
    // The rendered text, and any one string or list built (a list counts 16
    // bytes an item). The bytes one render builds, copies and scans in all
    // are bounded too, by 32 x max_output_bytes, so that an expensive
    // operation repeated in a loop ends quickly.
    size_t  max_output_bytes = 16 << 20;
};

struct RenderOptions {
    // What `strftime_now` formats (seconds since the epoch, UTC, as
    // datetime.now() on a UTC machine). 0 = the current time.
    std::time_t now = 0;
    // Top-level context keys whose strings are template markup, not content.
    std::vector<std::string> trusted_keys = {"bos_token", "eos_token", "pad_token", "unk_token"};
    Limits limits;
};

// A byte range [begin, end) of rendered text.
struct Span {
    size_t begin = 0;
    size_t end = 0;
    bool operator==(const Span&) const = default;
};

struct Rendered {
    std::string       text;
    // The bytes of `text` that came from content strings: sorted, disjoint,
    // adjacent ranges merged, none empty.
    std::vector<Span> content;
};

class Template {
public:
    // Parses `source` (template newlines normalised to "\n", one trailing
    // newline dropped, as jinja2 does by default). INVALID_ARGUMENT on a
    // syntax error or an unknown tag, filter or test, with
    // "<name>:LINE:COLUMN: message"; RESOURCE_EXHAUSTED past max_template_bytes.
    static absl::StatusOr<Template> Parse(std::string_view source, std::string_view name = "template",
                                          const Limits& limits = {});

    // Renders with `context` (a JSON object, or null for none: its keys are
    // the template's variables; key order is kept, so `tojson` and `.items()`
    // see the caller's order). Thread-safe: a Template may be rendered from
    // several threads at once. Errors: INVALID_ARGUMENT for a runtime error
    // ("<name>:LINE:COLUMN: message", e.g. an unknown method or filter
    // argument); INVALID_ARGUMENT too for `raise_exception(msg)`, whose
    // message is msg itself, so callers show the template's own words (a
    // template raises on conversations it does not accept);
    // RESOURCE_EXHAUSTED for a limit.
    absl::StatusOr<Rendered> Render(const nlohmann::ordered_json& context,
                                    const RenderOptions& options = {}) const;

    Template(Template&&) noexcept;
    Template& operator=(Template&&) noexcept;
    ~Template();

private:
    struct Impl;
    explicit Template(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace prepack::jinja

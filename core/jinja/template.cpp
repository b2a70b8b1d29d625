// The public API: source normalisation as jinja2 does it, and the border
// where internal errors become absl::Status (nothing is thrown past here).
#include "core/jinja/template.h"

#include <new>
#include <string>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/ast.h"
#include "core/jinja/budget.h"
#include "core/jinja/error.h"
#include "core/jinja/parser.h"
#include "core/jinja/render.h"
#include "core/jinja/text.h"

namespace prepack::jinja {

struct Template::Impl {
    std::string name;
    std::string source;  // normalised
    Body body;
    FrameLocals locals;
};

namespace {

// "\r\n" and "\r" become "\n"; one trailing newline is dropped
// (keep_trailing_newline=False).
std::string Normalise(std::string_view src) {
    std::string out;
    out.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
        if (src[i] == '\r') {
            out.push_back('\n');
            if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
        } else {
            out.push_back(src[i]);
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

absl::Status ToStatus(const Error& e, std::string_view name, std::string_view source) {
    if (e.verbatim) return absl::Status(e.code, e.message);
    if (e.offset == kNoOffset) return absl::Status(e.code, Cat(name, ": ", e.message));
    const size_t offset = std::min(e.offset, source.size());
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
        if (source[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    const size_t column = CodePointCount(source.substr(line_start, offset - line_start)) + 1;
    return absl::Status(e.code, Cat(name, ":", line, ":", column, ": ", e.message));
}

}  // namespace

Template::Template(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

absl::StatusOr<Template> Template::Parse(std::string_view source, std::string_view name, const Limits& limits) {
    if (source.size() > limits.max_template_bytes) {
        return absl::ResourceExhaustedError(Cat(name, ": the template is ", source.size(),
                                                         " bytes, more than max_template_bytes (",
                                                         limits.max_template_bytes, ")"));
    }
    auto impl = std::make_unique<Impl>();
    impl->name = std::string(name);
    try {
        impl->source = Normalise(source);
        ParsedTemplate parsed = ParseTemplate(impl->source, limits);
        impl->body = std::move(parsed.body);
        impl->locals = std::move(parsed.locals);
    } catch (const Error& e) {
        return ToStatus(e, name, impl->source);
    } catch (const std::bad_alloc&) {
        return absl::ResourceExhaustedError(Cat(name, ": out of memory while parsing"));
    } catch (const std::exception& e) {
        return absl::InternalError(Cat(name, ": ", e.what()));
    }
    return Template(std::move(impl));
}

absl::StatusOr<Rendered> Template::Render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
    if (!impl_) return absl::FailedPreconditionError("jinja::Template: moved-from template");
    try {
        Budget budget(options.limits);
        BudgetScope scope(&budget);
        return RenderBody(impl_->body, impl_->locals, impl_->source, context, options);
    } catch (const Error& e) {
        return ToStatus(e, impl_->name, impl_->source);
    } catch (const std::bad_alloc&) {
        return absl::ResourceExhaustedError(Cat(impl_->name, ": out of memory while rendering"));
    } catch (const std::exception& e) {
        return absl::InternalError(Cat(impl_->name, ": ", e.what()));
    }
}

}  // namespace prepack::jinja

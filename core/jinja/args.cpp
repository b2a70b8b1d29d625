// Python-style argument binding for the builtins.
#include <algorithm>

#include "core/jinja/cat.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"

namespace prepack::jinja {

ArgBinder::ArgBinder(std::string_view what, const Args& args, std::initializer_list<std::string_view> params)
    : what_(what), params_(params), bound_(params.size(), nullptr) {
    if (args.pos.size() > params_.size()) {
        Fail(Cat(what_, "() takes at most ", params_.size(), " argument", params_.size() == 1 ? "" : "s",
                          " (", args.pos.size(), " given)"));
    }
    for (size_t i = 0; i < args.pos.size(); ++i) bound_[i] = &args.pos[i];
    for (const auto& [name, value] : args.kw) {
        auto it = std::find(params_.begin(), params_.end(), name);
        if (it == params_.end()) {
            Fail(Cat(what_, "() got an unexpected keyword argument '", name, "'"));
        }
        const size_t i = static_cast<size_t>(it - params_.begin());
        if (bound_[i] != nullptr) Fail(Cat(what_, "() got multiple values for argument '", name, "'"));
        bound_[i] = &value;
    }
}

const Value& ArgBinder::Required(size_t i) const {
    if (bound_[i] == nullptr) {
        Fail(Cat(what_, "() missing required argument '", params_[i], "'"));
    }
    return *bound_[i];
}

void NoArgs(std::string_view what, const Args& args) {
    if (!args.pos.empty() || !args.kw.empty()) Fail(Cat(what, "() takes no arguments"));
}

int64_t ArgInt(const Value& v, std::string_view what) {
    if (v.is_undefined()) FailUndefined(v);
    if (!v.is_integral()) {
        Fail(Cat(what, ": '", TypeName(v), "' object cannot be interpreted as an integer"));
    }
    return v.i();
}

const Text& ArgStr(const Value& v, std::string_view what) {
    if (v.is_undefined()) FailUndefined(v);
    if (!v.is_str()) Fail(Cat(what, ": must be str, not ", TypeName(v)));
    return v.str();
}

}  // namespace prepack::jinja

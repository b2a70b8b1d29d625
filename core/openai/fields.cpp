#include "fields.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace prepack::openai::fields {
namespace {

const char* TypeName(const Json& v) {
    if (v.is_number_integer()) return "integer";
    if (v.is_number()) return "number";
    return v.type_name();
}

}  // namespace

absl::Status Invalid(const std::string& field, const std::string& why) {
    return absl::InvalidArgumentError(field + ": " + why);
}

absl::Status WrongType(const std::string& field, const char* want, const Json& v) {
    return Invalid(field, std::string("must be ") + want + ", got " + TypeName(v));
}

std::string Num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
}

const Json* Get(const Json& o, const char* key) {
    const auto it = o.find(key);
    if (it == o.end() || it->is_null()) return nullptr;
    return &*it;
}

absl::Status GetBool(const Json& o, const char* key, std::optional<bool>* out, const std::string& at) {
    const Json* v = Get(o, key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_boolean()) return WrongType(at + key, "a boolean", *v);
    *out = v->get<bool>();
    return absl::OkStatus();
}

absl::Status GetInt(const Json& o, const char* key, std::optional<int64_t>* out, const std::string& at) {
    const Json* v = Get(o, key);
    if (v == nullptr) return absl::OkStatus();
    if (v->is_number_unsigned()) {
        const uint64_t u = v->get<uint64_t>();
        if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return Invalid(at + key, "out of range");
        *out = static_cast<int64_t>(u);
    } else if (v->is_number_integer()) {
        *out = v->get<int64_t>();
    } else if (v->is_number_float()) {
        const double d = v->get<double>();
        if (!(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)) {
            return WrongType(at + key, "an integer", *v);
        }
        *out = static_cast<int64_t>(d);
    } else {
        return WrongType(at + key, "an integer", *v);
    }
    return absl::OkStatus();
}

absl::Status GetNumber(const Json& o, const char* key, std::optional<double>* out, const std::string& at) {
    const Json* v = Get(o, key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_number()) return WrongType(at + key, "a number", *v);
    *out = v->get<double>();
    return absl::OkStatus();
}

absl::Status GetString(const Json& o, const char* key, std::optional<std::string>* out, const std::string& at) {
    const Json* v = Get(o, key);
    if (v == nullptr) return absl::OkStatus();
    if (!v->is_string()) return WrongType(at + key, "a string", *v);
    *out = v->get<std::string>();
    return absl::OkStatus();
}

absl::Status OnlyKnown(const Json& o, const std::set<std::string_view>& known, const std::string& at) {
    for (auto it = o.begin(); it != o.end(); ++it) {
        if (known.count(it.key()) == 0) {
            return Invalid(at + it.key(), "unrecognized request argument (not implemented by prepack)");
        }
    }
    return absl::OkStatus();
}

}  // namespace prepack::openai::fields

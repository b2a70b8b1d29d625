// String concatenation for messages. absl::StrCat would do, but this
// Debian build of Abseil has its own string_view type that StrCat does not
// take a std::string_view for, and the engine uses std::string_view
// throughout.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace prepack::jinja {
namespace cat_detail {
inline void Put(std::string& s, std::string_view v) { s.append(v); }
template <typename T>
    requires(std::is_integral_v<T> && !std::is_same_v<T, bool> && !std::is_same_v<T, char>)
void Put(std::string& s, T v) {
    s += std::to_string(v);
}
}  // namespace cat_detail

template <typename... T>
std::string Cat(const T&... parts) {
    std::string s;
    (cat_detail::Put(s, parts), ...);
    return s;
}

}  // namespace prepack::jinja

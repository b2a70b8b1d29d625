// strftime_now: Python's datetime.now().strftime(fmt) for a UTC time.
// CPython formats %f, %z and %Z itself (a naive datetime has no offset or
// zone name: both print nothing) and hands the rest of the format to the C
// library's strftime, so glibc's directives and flags (%-d, %_H, %^a, ...)
// are part of what templates see. So does this, through strftime_l in the
// "C" locale, so that the host's LC_TIME cannot change a rendering.
#include <locale.h>

#include <ctime>
#include <string>
#include <vector>

#include "core/jinja/builtins.h"
#include "core/jinja/error.h"

namespace prepack::jinja {
namespace {

// The "C" locale, made once (newlocale is not cheap; the object is immutable).
locale_t CLocale() {
    static const locale_t c = newlocale(LC_ALL_MASK, "C", static_cast<locale_t>(nullptr));
    return c;
}

// CPython's own directives, replaced before the C library sees the format.
std::string PythonDirectives(std::string_view fmt) {
    std::string out;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%' || i + 1 >= fmt.size()) {
            out.push_back(fmt[i]);
            continue;
        }
        const char c = fmt[++i];
        if (c == 'f') {
            out += "000000";   // whole seconds: no microseconds
        } else if (c == 'z' || c == 'Z') {
            // naive datetime: nothing
        } else {
            out.push_back('%');
            out.push_back(c);
        }
    }
    return out;
}

}  // namespace

std::string StrftimeUtc(std::string_view fmt, std::time_t now) {
    // The C library sees the format as a C string: it ends at a NUL.
    fmt = fmt.substr(0, fmt.find('\0'));
    std::tm t{};
    if (gmtime_r(&now, &t) == nullptr) Fail("strftime_now: time out of range");
    const std::string c_fmt = PythonDirectives(fmt);
    if (c_fmt.empty()) return "";
    if (CLocale() == static_cast<locale_t>(nullptr)) Fail("strftime_now: the C locale is unavailable");
    // A directive expands to at most a few dozen bytes; grow until it fits.
    // strftime returns 0 both for "no room" and for an empty result, so the
    // probe stops once the buffer is far larger than any expansion could be.
    for (size_t cap = 64 + 4 * c_fmt.size();; cap *= 4) {
        std::vector<char> buf(cap);
        const size_t n = strftime_l(buf.data(), buf.size(), c_fmt.c_str(), &t, CLocale());
        if (n > 0 || cap > 64 * (c_fmt.size() + 64)) return std::string(buf.data(), n);
    }
}

}  // namespace prepack::jinja

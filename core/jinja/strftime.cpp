// strftime_now: Python's datetime.strftime in the "C" locale, for a UTC
// time. Implemented here rather than with the C library so that the host's
// locale (LC_TIME) cannot change a rendering.
#include <cstdio>
#include <ctime>
#include <string>

#include "core/jinja/builtins.h"
#include "core/jinja/error.h"

namespace prepack::jinja {
namespace {

constexpr const char* kDays[] = {"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"};
constexpr const char* kMonths[] = {"January", "February", "March",     "April",   "May",      "June",
                                   "July",    "August",   "September", "October", "November", "December"};

std::string Num(long v, int width, char pad = '0') {
    char buf[32];
    if (pad == '0') {
        std::snprintf(buf, sizeof buf, "%0*ld", width, v);
    } else {
        std::snprintf(buf, sizeof buf, "%*ld", width, v);
    }
    return buf;
}

// ISO 8601 week-based year and week number.
void IsoWeek(const std::tm& t, long& year, int& week) {
    const int wday = (t.tm_wday + 6) % 7;  // Monday = 0
    year = t.tm_year + 1900L;
    week = (t.tm_yday - wday + 10) / 7;
    auto weeks_in = [](long y) {
        auto p = [](long x) { return (x + x / 4 - x / 100 + x / 400) % 7; };
        return p(y) == 4 || p(y - 1) == 3 ? 53 : 52;
    };
    if (week < 1) {
        --year;
        week = weeks_in(year);
    } else if (week > weeks_in(year)) {
        ++year;
        week = 1;
    }
}

void Format(std::string& out, std::string_view fmt, const std::tm& t, std::time_t now, int depth);

void Directive(std::string& out, char c, const std::tm& t, std::time_t now, int depth) {
    const long year = t.tm_year + 1900L;
    const int hour12 = t.tm_hour % 12 == 0 ? 12 : t.tm_hour % 12;
    switch (c) {
        case 'a': out += std::string(kDays[t.tm_wday]).substr(0, 3); return;
        case 'A': out += kDays[t.tm_wday]; return;
        case 'b':
        case 'h': out += std::string(kMonths[t.tm_mon]).substr(0, 3); return;
        case 'B': out += kMonths[t.tm_mon]; return;
        case 'c': Format(out, "%a %b %e %H:%M:%S %Y", t, now, depth); return;
        case 'C': out += Num(year / 100, 2); return;
        case 'd': out += Num(t.tm_mday, 2); return;
        case 'D': Format(out, "%m/%d/%y", t, now, depth); return;
        case 'e': out += Num(t.tm_mday, 2, ' '); return;
        case 'f': out += "000000"; return;  // whole seconds
        case 'F': Format(out, "%Y-%m-%d", t, now, depth); return;
        case 'g':
        case 'G':
        case 'V': {
            long iy;
            int week;
            IsoWeek(t, iy, week);
            if (c == 'g') out += Num(iy % 100, 2);
            if (c == 'G') out += std::to_string(iy);
            if (c == 'V') out += Num(week, 2);
            return;
        }
        case 'H': out += Num(t.tm_hour, 2); return;
        case 'I': out += Num(hour12, 2); return;
        case 'j': out += Num(t.tm_yday + 1, 3); return;
        case 'k': out += Num(t.tm_hour, 2, ' '); return;
        case 'l': out += Num(hour12, 2, ' '); return;
        case 'm': out += Num(t.tm_mon + 1, 2); return;
        case 'M': out += Num(t.tm_min, 2); return;
        case 'n': out += "\n"; return;
        case 'p': out += t.tm_hour < 12 ? "AM" : "PM"; return;
        case 'P': out += t.tm_hour < 12 ? "am" : "pm"; return;
        case 'r': Format(out, "%I:%M:%S %p", t, now, depth); return;
        case 'R': Format(out, "%H:%M", t, now, depth); return;
        case 's': out += std::to_string(static_cast<long long>(now)); return;
        case 'S': out += Num(t.tm_sec, 2); return;
        case 't': out += "\t"; return;
        case 'T': Format(out, "%H:%M:%S", t, now, depth); return;
        case 'u': out += std::to_string(t.tm_wday == 0 ? 7 : t.tm_wday); return;
        case 'U': out += Num((t.tm_yday + 7 - t.tm_wday) / 7, 2); return;
        case 'w': out += std::to_string(t.tm_wday); return;
        case 'W': out += Num((t.tm_yday + 7 - (t.tm_wday + 6) % 7) / 7, 2); return;
        case 'x': Format(out, "%m/%d/%y", t, now, depth); return;
        case 'X': Format(out, "%H:%M:%S", t, now, depth); return;
        case 'y': out += Num(year % 100, 2); return;
        case 'Y': out += std::to_string(year); return;
        case 'z':
        case 'Z': return;  // datetime.now() is naive: no offset, no zone name
        case '%': out += "%"; return;
        default:  // glibc keeps an unknown directive as it is
            out.push_back('%');
            out.push_back(c);
            return;
    }
}

void Format(std::string& out, std::string_view fmt, const std::tm& t, std::time_t now, int depth) {
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] != '%') {
            out.push_back(fmt[i]);
            continue;
        }
        if (i + 1 >= fmt.size()) {
            out.push_back('%');  // a trailing '%' is kept, as glibc does
            continue;
        }
        Directive(out, fmt[++i], t, now, depth + 1);
    }
}

}  // namespace

std::string StrftimeUtc(std::string_view fmt, std::time_t now) {
    std::tm t{};
    if (gmtime_r(&now, &t) == nullptr) Fail("strftime_now: time out of range");
    std::string out;
    Format(out, fmt, t, now, 0);
    return out;
}

}  // namespace prepack::jinja

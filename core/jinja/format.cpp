// Python's string formatting: `fmt % args` (printf style, also the
// |format filter), str.format with the format-spec mini-language, and
// markupsafe.escape. Formatting rewrites its inputs, so a result is content
// as a whole when the format or any argument carried content.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/budget.h"
#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/number.h"
#include "core/jinja/ops.h"

namespace prepack::jinja {
namespace {

bool AnyContent(const Value& v, int depth) {
    if (depth > 64) return true;  // deeper than anything printable: assume content
    switch (v.kind()) {
        case Kind::Str: return v.str().has_content();
        case Kind::List:
            for (const Value& x : v.list().items) {
                if (AnyContent(x, depth + 1)) return true;
            }
            return false;
        case Kind::Dict:
            for (const auto& [k, x] : v.dict().items) {
                if (AnyContent(k, depth + 1) || AnyContent(x, depth + 1)) return true;
            }
            return false;
        case Kind::Namespace:
            for (const auto& [k, x] : v.ns().attrs) {
                if (AnyContent(k, depth + 1) || AnyContent(x, depth + 1)) return true;
            }
            return false;
        default: return false;
    }
}

std::string ReprOf(const Value& v) {
    TextBuilder b;
    AppendRepr(b, v);
    return std::string(b.view());
}

// Pads s (UTF-8) to `width` code points.
std::string Pad(std::string s, int64_t width, char align, std::string_view fill, size_t sign_len = 0) {
    const auto len = static_cast<int64_t>(CodePointCount(s));
    if (width <= len) return s;
    const auto n = static_cast<size_t>(width - len);
    GrowBy(s.size(), n * fill.size());
    // Padding before (left_n) and after the text, or after the sign ('=').
    const size_t left_n = align == '<' ? 0 : align == '^' ? n / 2 : n;
    std::string out;
    const size_t split = align == '=' ? sign_len : 0;
    out.append(s, 0, split);
    for (size_t i = 0; i < left_n; ++i) out.append(fill);
    out.append(s, split, std::string::npos);
    for (size_t i = left_n; i < n; ++i) out.append(fill);
    return out;
}

std::string IntDigits(int64_t v, int base, bool upper) {
    if (v == 0) return "0";
    uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    std::string d;
    while (u > 0) {
        const int r = static_cast<int>(u % static_cast<uint64_t>(base));
        d.insert(d.begin(), static_cast<char>(r < 10 ? '0' + r : (upper ? 'A' : 'a') + r - 10));
        u /= static_cast<uint64_t>(base);
    }
    return d;
}

std::string CFloat(double v, char type, int precision, bool alt) {
    char fmt[16];
    std::snprintf(fmt, sizeof fmt, "%%%s.%d%c", alt ? "#" : "", precision, type);
    const int n = std::snprintf(nullptr, 0, fmt, v);
    if (n < 0) Fail("cannot format the number");
    GrowBy(0, static_cast<size_t>(n));
    std::string out(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(out.data(), out.size(), fmt, v);
    out.pop_back();
    return out;
}

// Groups the integer digits of `digits` (no sign) with sep every n digits.
std::string Group(const std::string& digits, char sep, size_t n) {
    const size_t end = digits.find_first_not_of("0123456789abcdefABCDEF");
    const std::string intpart = digits.substr(0, end);
    const std::string rest = end == std::string::npos ? "" : digits.substr(end);
    std::string out;
    for (size_t i = 0; i < intpart.size(); ++i) {
        if (i > 0 && (intpart.size() - i) % n == 0) out.push_back(sep);
        out.push_back(intpart[i]);
    }
    return out + rest;
}

// ---- printf style ----

std::string PercentOne(const Value& v, char type, const std::string& flags, int64_t width, int64_t precision) {
    const bool left = flags.find('-') != std::string::npos;
    const bool zero = flags.find('0') != std::string::npos && !left;
    const bool plus = flags.find('+') != std::string::npos;
    const bool space = flags.find(' ') != std::string::npos;
    const bool alt = flags.find('#') != std::string::npos;
    std::string body;
    std::string_view sign;
    bool numeric = true;
    switch (type) {
        case 's':
        case 'r': {
            body = type == 's' ? std::string(ToText(v).bytes) : ReprOf(v);
            if (precision >= 0) {
                const std::vector<size_t> starts = CodePointStarts(body);
                if (static_cast<size_t>(precision) + 1 < starts.size()) body.resize(starts[static_cast<size_t>(precision)]);
            }
            numeric = false;
            break;
        }
        case 'd':
        case 'i':
        case 'u':
        case 'x':
        case 'X':
        case 'o': {
            int64_t i;
            if (v.kind() == Kind::BigInt && (type == 'd' || type == 'i' || type == 'u')) {
                const std::string d = v.big().ToString();
                body = d[0] == '-' ? d.substr(1) : d;
                if (precision >= 0 && static_cast<int64_t>(body.size()) < precision) {
                    body.insert(0, static_cast<size_t>(precision) - body.size(), '0');
                }
                sign = d[0] == '-' ? "-" : plus ? "+" : space ? " " : "";
                break;
            }
            if (v.is_integral()) {
                i = v.i();
            } else if (v.kind() == Kind::Float && (type == 'd' || type == 'i' || type == 'u')) {
                if (!std::isfinite(v.f())) Fail("cannot convert float infinity or NaN to integer");
                if (std::fabs(v.f()) >= 9.2e18) Fail("integer overflow: more than 64 bits is not supported");
                i = static_cast<int64_t>(v.f());
            } else {
                if (v.is_undefined()) FailUndefined(v);
                Fail(Cat("%", std::string(1, type), " format: ",
                                  type == 'x' || type == 'X' || type == 'o' ? "an integer" : "a real number",
                                  " is required, not ", TypeName(v)));
            }
            const int base = type == 'x' || type == 'X' ? 16 : type == 'o' ? 8 : 10;
            body = IntDigits(i, base, type == 'X');
            if (precision >= 0 && static_cast<int64_t>(body.size()) < precision) {
                body.insert(0, static_cast<size_t>(precision) - body.size(), '0');
            }
            if (alt && base == 16) body.insert(0, type == 'X' ? "0X" : "0x");
            if (alt && base == 8) body.insert(0, "0o");
            sign = i < 0 ? "-" : plus ? "+" : space ? " " : "";
            break;
        }
        case 'e':
        case 'E':
        case 'f':
        case 'F':
        case 'g':
        case 'G': {
            if (v.is_undefined()) FailUndefined(v);
            if (!v.is_number()) Fail(Cat("must be real number, not ", TypeName(v)));
            const double d = v.f();
            body = CFloat(std::fabs(d), type, precision < 0 ? 6 : static_cast<int>(std::min<int64_t>(precision, 400)), alt);
            sign = std::signbit(d) && !std::isnan(d) ? "-" : plus ? "+" : space ? " " : "";
            if (!std::isfinite(d)) numeric = false;  // inf and nan are never zero-padded
            break;
        }
        case 'c': {
            if (v.is_integral()) {
                if (v.i() < 0 || v.i() > 0x10FFFF) Fail("%c arg not in range(0x110000)");
                AppendUtf8(body, static_cast<uint32_t>(v.i()));
            } else if (v.is_str() && CodePointCount(v.str().bytes) == 1) {
                body = v.str().bytes;
            } else {
                Fail("%c requires int or char");
            }
            numeric = false;
            break;
        }
        default:
            Fail(Cat("unsupported format character '", std::string(1, type), "'"));
    }
    std::string s(sign);
    s += body;
    if (zero && numeric) {
        size_t prefix = sign.size();
        if (alt && (type == 'x' || type == 'X' || type == 'o')) prefix += 2;
        return Pad(s, width, '=', "0", prefix);
    }
    return Pad(s, width, left ? '<' : '>', " ");
}

}  // namespace

Value PercentFormat(const Text& fmt, const Value& args) {
    if (args.is_undefined()) FailUndefined(args);
    std::vector<Value> items;
    const bool is_tuple = args.is_list_kind(ListKind::Tuple);
    if (is_tuple) {
        items = args.list().items;
    } else {
        items.push_back(args);
    }
    // Python treats any non-tuple, non-str object with __getitem__ as a
    // mapping here (it then never complains about unused arguments).
    const bool mapping_like = !is_tuple && (args.kind() == Kind::Dict || args.kind() == Kind::List);
    const std::string& f = fmt.bytes;
    std::string out;
    size_t idx = 0;
    auto next_arg = [&]() -> const Value& {
        if (idx >= items.size()) Fail("not enough arguments for format string");
        return items[idx++];
    };
    for (size_t i = 0; i < f.size();) {
        const char c = f[i++];
        if (c != '%') {
            out.push_back(c);
            continue;
        }
        if (i >= f.size()) Fail("incomplete format");
        const Value* value = nullptr;
        Value keyed;
        if (f[i] == '(') {
            if (args.kind() != Kind::Dict) Fail("format requires a mapping");
            int depth = 1;
            const size_t start = ++i;
            while (i < f.size() && depth > 0) {
                if (f[i] == '(') ++depth;
                if (f[i] == ')') --depth;
                ++i;
            }
            if (depth > 0) Fail("incomplete format key");
            const Value* found = args.dict().FindStr(std::string_view(f).substr(start, i - 1 - start));
            if (found == nullptr) Fail(Cat("'", f.substr(start, i - 1 - start), "'"));
            keyed = *found;
            value = &keyed;
        }
        std::string flags;
        while (i < f.size() && (f[i] == '-' || f[i] == '+' || f[i] == ' ' || f[i] == '#' || f[i] == '0')) {
            flags.push_back(f[i++]);
        }
        int64_t width = -1, precision = -1;
        if (i < f.size() && f[i] == '*') {
            ++i;
            width = ArgInt(next_arg(), "* wants int");
            if (width < 0) {
                flags.push_back('-');
                width = -width;
            }
        } else {
            while (i < f.size() && f[i] >= '0' && f[i] <= '9') {
                width = std::max<int64_t>(width, 0) * 10 + (f[i++] - '0');
                if (width > 100000000) Fail("width too big");
            }
        }
        if (i < f.size() && f[i] == '.') {
            ++i;
            precision = 0;
            if (i < f.size() && f[i] == '*') {
                ++i;
                precision = ArgInt(next_arg(), "* wants int");
            } else {
                while (i < f.size() && f[i] >= '0' && f[i] <= '9') {
                    precision = precision * 10 + (f[i++] - '0');
                    if (precision > 100000000) Fail("precision too big");
                }
            }
        }
        while (i < f.size() && (f[i] == 'h' || f[i] == 'l' || f[i] == 'L')) ++i;
        if (i >= f.size()) Fail("incomplete format");
        const char type = f[i++];
        if (type == '%') {
            out.push_back('%');
            continue;
        }
        if (value == nullptr) value = &next_arg();
        std::string piece;
        if (fmt.markup && (type == 's' || type == 'r')) {
            // Markup % x escapes what it inserts.
            const Value text = Value::Str(type == 's' ? ToText(*value) : MakeText(ReprOf(*value)));
            piece = PercentOne(Escape(text), 's', flags, width, precision);
        } else {
            piece = PercentOne(*value, type, flags, width, precision);
        }
        GrowBy(out.size(), piece.size());
        out += piece;
    }
    if (idx < items.size() && !mapping_like && args.kind() != Kind::Dict) {
        Fail("not all arguments converted during string formatting");
    }
    bool content = fmt.has_content() || AnyContent(args, 0);
    GrowBy(0, out.size());
    Text t = MakeText(std::move(out), content);
    t.markup = fmt.markup;
    return Value::Str(std::move(t));
}

namespace {

// format(value, spec) for the builtin types.
std::string FormatSpec(const Value& v, std::string_view spec) {
    if (spec.empty()) return std::string(ToText(v).bytes);
    size_t i = 0;
    std::string_view fill = " ";
    char align = 0;
    // [[fill]align]
    {
        size_t p = 0;
        DecodeUtf8(spec, p);
        if (p < spec.size() && (spec[p] == '<' || spec[p] == '>' || spec[p] == '^' || spec[p] == '=')) {
            fill = spec.substr(0, p);
            align = spec[p];
            i = p + 1;
        } else if (spec[0] == '<' || spec[0] == '>' || spec[0] == '^' || spec[0] == '=') {
            align = spec[0];
            i = 1;
        }
    }
    char sign = 0;
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
    bool alt = false;
    if (i < spec.size() && spec[i] == '#') {
        alt = true;
        ++i;
    }
    if (i < spec.size() && spec[i] == '0') {
        if (align == 0) {
            fill = "0";
            align = '=';
        }
        ++i;
    }
    int64_t width = -1;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
        width = std::max<int64_t>(width, 0) * 10 + (spec[i++] - '0');
        if (width > 100000000) Fail("Too many decimal digits in format string");
    }
    char grouping = 0;
    if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
    int64_t precision = -1;
    if (i < spec.size() && spec[i] == '.') {
        ++i;
        precision = 0;
        if (i >= spec.size() || spec[i] < '0' || spec[i] > '9') Fail("Format specifier missing precision");
        while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
            precision = precision * 10 + (spec[i++] - '0');
            if (precision > 100000000) Fail("Too many decimal digits in format string");
        }
    }
    char type = 0;
    if (i < spec.size()) type = spec[i++];
    if (i != spec.size()) Fail("Invalid format specifier");

    if (v.is_str()) {
        if (type != 0 && type != 's') {
            Fail(Cat("Unknown format code '", std::string(1, type), "' for object of type 'str'"));
        }
        if (sign != 0) Fail("Sign not allowed in string format specifier");
        if (alt) Fail("Alternate form (#) not allowed in string format specifier");
        if (align == '=') Fail("'=' alignment not allowed in string format specifier");
        if (grouping != 0) Fail(Cat("Cannot specify '", std::string(1, grouping), "' with 's'."));
        std::string s = v.str().bytes;
        if (precision >= 0) {
            const std::vector<size_t> starts = CodePointStarts(s);
            if (static_cast<size_t>(precision) + 1 < starts.size()) s.resize(starts[static_cast<size_t>(precision)]);
        }
        return Pad(std::move(s), width, align == 0 ? '<' : align, fill);
    }
    if (!v.is_number()) {
        if (v.is_undefined()) FailUndefined(v);
        Fail(Cat("unsupported format string passed to ", TypeName(v), ".__format__"));
    }
    const bool int_type = type == 0 || type == 'd' || type == 'n' || type == 'b' || type == 'o' || type == 'x' ||
                          type == 'X' || type == 'c';
    std::string body;
    bool negative = false;
    if (v.kind() == Kind::BigInt && (type == 0 || type == 'd' || type == 'n')) {
        const std::string d = v.big().ToString();
        negative = d[0] == '-';
        body = negative ? d.substr(1) : d;
        if (grouping != 0) body = Group(body, grouping, 3);
    } else if (v.kind() == Kind::BigInt && int_type) {
        Fail("formatting a 64-bit-overflowing int in that format is not supported");
    } else if (v.is_integral() && int_type) {
        if (precision >= 0) Fail("Precision not allowed in integer format specifier");
        const int64_t x = v.i();
        negative = x < 0;
        if (type == 'c') {
            if (x < 0 || x > 0x10FFFF) Fail("%c arg not in range(0x110000)");
            AppendUtf8(body, static_cast<uint32_t>(x));
        } else {
            const int base = type == 'b' ? 2 : type == 'o' ? 8 : type == 'x' || type == 'X' ? 16 : 10;
            body = IntDigits(x, base, type == 'X');
            if (grouping != 0) body = Group(body, grouping, base == 10 ? 3 : 4);
            if (alt && base != 10) body.insert(0, base == 2 ? "0b" : base == 8 ? "0o" : type == 'X' ? "0X" : "0x");
        }
    } else {
        if (type != 0 && type != 'e' && type != 'E' && type != 'f' && type != 'F' && type != 'g' && type != 'G' &&
            type != '%' && type != 'n') {
            Fail(Cat("Unknown format code '", std::string(1, type), "' for object of type '", TypeName(v), "'"));
        }
        double d = v.f();
        negative = std::signbit(d) && !std::isnan(d);
        d = std::fabs(d);
        if (type == 0 && precision < 0) {
            body = FloatRepr(d);
        } else if (type == 0 || type == 'n') {
            // Like 'g', but a fixed-point result keeps a digit after the point.
            body = CFloat(d, 'g', precision < 0 ? 6 : static_cast<int>(std::min<int64_t>(precision, 400)), alt);
            if (type == 0 && std::isfinite(d) && body.find_first_of(".e") == std::string::npos) body += ".0";
        } else if (type == '%') {
            body = CFloat(d * 100, 'f', precision < 0 ? 6 : static_cast<int>(std::min<int64_t>(precision, 400)), alt) + "%";
        } else {
            body = CFloat(d, type, precision < 0 ? 6 : static_cast<int>(std::min<int64_t>(precision, 400)), alt);
        }
        if (grouping != 0 && std::isfinite(d)) body = Group(body, grouping, 3);
    }
    const std::string_view sgn = negative ? "-" : sign == '+' ? "+" : sign == ' ' ? " " : "";
    std::string text(sgn);
    text += body;
    return Pad(std::move(text), width, align == 0 ? '>' : align, fill, sgn.size());
}

}  // namespace

Value StrFormat(const Text& fmt, const Args& args) {
    const std::string& f = fmt.bytes;
    std::string out;
    bool content = fmt.has_content();
    int mode = 0;  // 0: none yet, 1: automatic numbering, 2: manual
    size_t auto_idx = 0;
    for (size_t i = 0; i < f.size();) {
        const char c = f[i];
        if (c == '}') {
            if (i + 1 < f.size() && f[i + 1] == '}') {
                out.push_back('}');
                i += 2;
                continue;
            }
            Fail("Single '}' encountered in format string");
        }
        if (c != '{') {
            out.push_back(c);
            ++i;
            continue;
        }
        if (i + 1 < f.size() && f[i + 1] == '{') {
            out.push_back('{');
            i += 2;
            continue;
        }
        const size_t close = f.find('}', i + 1);
        if (close == std::string::npos) Fail("expected '}' before end of string");
        const std::string field = f.substr(i + 1, close - i - 1);
        if (field.find('{') != std::string::npos) Fail("nested replacement fields in str.format are not supported");
        i = close + 1;
        std::string name = field, spec, conv;
        const size_t colon = field.find(':');
        const size_t bang = field.find('!');
        if (bang != std::string::npos && (colon == std::string::npos || bang < colon)) {
            name = field.substr(0, bang);
            conv = field.substr(bang + 1, colon == std::string::npos ? std::string::npos : colon - bang - 1);
            if (colon != std::string::npos) spec = field.substr(colon + 1);
        } else if (colon != std::string::npos) {
            name = field.substr(0, colon);
            spec = field.substr(colon + 1);
        }
        // The first part: index, keyword or empty (automatic).
        const size_t part_end = name.find_first_of(".[");
        const std::string first = name.substr(0, part_end);
        Value value;
        if (first.empty() || std::all_of(first.begin(), first.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
            size_t index;
            if (first.empty()) {
                if (mode == 2) Fail("cannot switch from manual field specification to automatic field numbering");
                mode = 1;
                index = auto_idx++;
            } else {
                if (mode == 1) Fail("cannot switch from automatic field numbering to manual field specification");
                mode = 2;
                if (first.size() > 9) Fail("Too many decimal digits in format string");
                index = static_cast<size_t>(std::stoul(first));
            }
            if (index >= args.pos.size()) {
                Fail("tuple index out of range");
            }
            value = args.pos[index];
        } else {
            const Value* found = nullptr;
            for (const auto& [k, v] : args.kw) {
                if (k == first) found = &v;
            }
            if (found == nullptr) Fail(Cat("'", first, "'"));
            value = *found;
        }
        // .attr and [key] parts, through the sandbox's lookups.
        for (size_t p = part_end; p != std::string::npos && p < name.size();) {
            if (name[p] == '.') {
                const size_t e = name.find_first_of(".[", p + 1);
                value = GetAttr(value, name.substr(p + 1, e == std::string::npos ? std::string::npos : e - p - 1));
                p = e;
            } else {
                const size_t e = name.find(']', p);
                if (e == std::string::npos) Fail("Missing ']' in format string");
                const std::string key = name.substr(p + 1, e - p - 1);
                const bool digits = !key.empty() && key.size() < 10 &&
                                    std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
                value = GetItem(value, digits ? Value::Int(std::stoll(key)) : Value::Str(key));
                p = e + 1;
                if (p < name.size() && name[p] != '.' && name[p] != '[') {
                    Fail("Only '.' or '[' may follow ']' in format field specifier");
                }
            }
        }
        content = content || AnyContent(value, 0);
        std::string piece;
        if (conv.empty()) {
            piece = FormatSpec(value, spec);
        } else if (conv == "r" || conv == "s") {
            const std::string s = conv == "r" ? ReprOf(value) : std::string(ToText(value).bytes);
            piece = FormatSpec(Value::Str(s), spec);
        } else {
            Fail(Cat("Unknown conversion specifier ", conv));
        }
        GrowBy(out.size(), piece.size());
        out += piece;
    }
    GrowBy(0, out.size());
    Text t = MakeText(std::move(out), content);
    t.markup = fmt.markup;
    return Value::Str(std::move(t));
}

Value Escape(const Value& v) {
    if (v.is_str() && v.str().markup) return v;
    const Text s = ToText(v);
    ChargeBytes(s.size());
    TextBuilder out;
    size_t run = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        const char* rep = nullptr;
        switch (s.bytes[i]) {
            case '&': rep = "&amp;"; break;
            case '<': rep = "&lt;"; break;
            case '>': rep = "&gt;"; break;
            case '"': rep = "&#34;"; break;
            case '\'': rep = "&#39;"; break;
            default: break;
        }
        if (rep == nullptr) continue;
        out.AppendRange(s, run, i);
        out.Append(rep, s.ContentIn(i, i + 1));
        run = i + 1;
    }
    out.AppendRange(s, run, s.size());
    Text t = out.Finish();
    t.markup = true;
    return Value::Str(std::move(t));
}

}  // namespace prepack::jinja

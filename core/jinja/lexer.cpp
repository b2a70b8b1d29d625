#include "core/jinja/lexer.h"

#include <charconv>
#include <cstdio>
#include <utility>

#include "core/jinja/cat.h"
#include "core/jinja/error.h"
#include "core/jinja/number.h"
#include "core/jinja/text.h"

namespace prepack::jinja {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool IsNameChar(char c) { return IsNameStart(c) || IsDigit(c); }

// Length of the Python whitespace (regex \s) starting at pos.
size_t WhitespaceRun(std::string_view s, size_t pos) {
    size_t p = pos;
    while (p < s.size()) {
        size_t next = p;
        if (!IsPyWhitespace(DecodeUtf8(s, next))) break;
        p = next;
    }
    return p - pos;
}

// Whether all of s is Python whitespace.
bool AllWhitespace(std::string_view s) { return WhitespaceRun(s, 0) == s.size(); }

// str.rstrip() with no argument.
std::string_view RstripWhitespace(std::string_view s) {
    size_t e = s.size();
    while (e > 0) {
        size_t start = e - 1;
        while (start > 0 && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) --start;
        size_t pos = start;
        if (!IsPyWhitespace(DecodeUtf8(s, pos)) || pos != e) break;
        e = start;
    }
    return s.substr(0, e);
}

// Python's "unicode-escape" decoding of a string literal's body, applied
// (as jinja2 does) after non-ASCII characters were turned into backslash
// escapes, so a backslash before a non-ASCII character behaves as there.
std::string DecodeStringLiteral(std::string_view raw, size_t offset) {
    if (raw.find('\\') == std::string_view::npos) return std::string(raw);
    std::string esc;  // raw with non-ASCII as backslashreplace escapes
    for (size_t pos = 0; pos < raw.size();) {
        const size_t start = pos;
        const uint32_t cp = DecodeUtf8(raw, pos);
        if (cp < 0x80) {
            esc.push_back(static_cast<char>(cp));
            continue;
        }
        if (cp >= 0xDC80 && cp <= 0xDCFF) {  // invalid byte: keep
            esc.append(raw.substr(start, pos - start));
            continue;
        }
        AppendPyEscape(esc, cp);
    }
    std::string out;
    out.reserve(esc.size());
    auto hex = [&](size_t& i, int n, const char* what) {
        uint32_t v = 0;
        for (int k = 0; k < n; ++k) {
            if (i >= esc.size() || !std::isxdigit(static_cast<unsigned char>(esc[i]))) {
                FailAt(offset, Cat("truncated ", what, " escape"));
            }
            const char c = esc[i++];
            v = v * 16 + static_cast<uint32_t>(IsDigit(c) ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return v;
    };
    for (size_t i = 0; i < esc.size();) {
        const char c = esc[i++];
        if (c != '\\') {
            out.push_back(c);
            continue;
        }
        if (i >= esc.size()) FailAt(offset, "\\ at end of string");
        const char e = esc[i++];
        switch (e) {
            case '\n': break;  // line continuation
            case '\\': out.push_back('\\'); break;
            case '\'': out.push_back('\''); break;
            case '"': out.push_back('"'); break;
            case 'a': out.push_back('\a'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'v': out.push_back('\v'); break;
            case 'x': AppendUtf8(out, hex(i, 2, "\\xXX")); break;
            case 'u': AppendUtf8(out, hex(i, 4, "\\uXXXX")); break;
            case 'U': {
                const uint32_t cp = hex(i, 8, "\\UXXXXXXXX");
                if (cp > 0x10FFFF) FailAt(offset, "illegal Unicode character");
                AppendUtf8(out, cp);
                break;
            }
            case 'N': FailAt(offset, "\\N{...} escapes in string literals are not supported");
            default:
                if (e >= '0' && e <= '7') {
                    uint32_t v = static_cast<uint32_t>(e - '0');
                    for (int k = 0; k < 2 && i < esc.size() && esc[i] >= '0' && esc[i] <= '7'; ++k) {
                        v = v * 8 + static_cast<uint32_t>(esc[i++] - '0');
                    }
                    AppendUtf8(out, v);
                } else {
                    out.push_back('\\');  // unknown escapes stay as they are
                    out.push_back(e);
                }
        }
    }
    // Surrogates from \u escapes cannot be valid UTF-8 (Python would keep a
    // lone surrogate); AppendUtf8 wrote them as 3-byte sequences, which is
    // what Python's surrogatepass would give.
    return out;
}

class Lexer {
public:
    explicit Lexer(std::string_view src) : s_(src) {}

    std::vector<Token> Run() {
        while (pos_ < s_.size()) Root();
        Push(Tok::Eof, s_.size());
        return std::move(tokens_);
    }

private:
    void Push(Tok type, size_t offset, std::string value = {}) {
        Token t;
        t.type = type;
        t.offset = offset;
        t.value = std::move(value);
        tokens_.push_back(std::move(t));
    }

    bool At(size_t p, std::string_view what) const { return s_.substr(p, what.size()) == what; }

    // The text before a tag, with the tag's whitespace control applied.
    void EmitText(size_t begin, size_t end, char sign, bool lstrip_applies) {
        std::string_view text = s_.substr(begin, end - begin);
        if (sign == '-') {
            text = RstripWhitespace(text);
        } else if (sign != '+' && lstrip_applies) {
            const size_t nl = text.rfind('\n');
            const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && AllWhitespace(text.substr(l_pos))) text = text.substr(0, l_pos);
        }
        if (!text.empty()) Push(Tok::Data, begin, std::string(text));
    }

    // Matches `{%[-+]?\s*raw\s*(-%}\s*|%})` at p; returns the end or npos.
    size_t MatchRawBegin(size_t p, std::string_view word, bool trim_newline) const {
        size_t q = p + 2;
        if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ++q;
        q += WhitespaceRun(s_, q);
        if (!At(q, word)) return std::string_view::npos;
        q += word.size();
        q += WhitespaceRun(s_, q);
        if (trim_newline && At(q, "+%}")) return q + 3;
        if (At(q, "-%}")) {
            q += 3;
            return q + WhitespaceRun(s_, q);
        }
        if (At(q, "%}")) {
            q += 2;
            if (trim_newline && q < s_.size() && s_[q] == '\n') ++q;
            return q;
        }
        return std::string_view::npos;
    }

    void Root() {
        // The next tag opener.
        size_t p = pos_;
        while (true) {
            p = s_.find('{', p);
            if (p == std::string_view::npos || p + 1 >= s_.size()) {
                // Only text is left.
                Push(Tok::Data, pos_, std::string(s_.substr(pos_)));
                pos_ = s_.size();
                return;
            }
            const char k = s_[p + 1];
            if (k == '{' || k == '%' || k == '#') break;
            ++p;
        }
        const char kind = s_[p + 1];
        const char sign = p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+') ? s_[p + 2] : 0;
        size_t raw_end = std::string_view::npos;
        if (kind == '%') raw_end = MatchRawBegin(p, "raw", false);
        EmitText(pos_, p, sign, kind != '{');
        const size_t open_len = 2 + (sign != 0 ? 1 : 0);
        if (raw_end != std::string_view::npos) {
            line_starting_ = s_[raw_end - 1] == '\n';
            Raw(raw_end, p);
        } else if (kind == '#') {
            Comment(p + open_len, p);
        } else {
            Push(kind == '{' ? Tok::VarBegin : Tok::BlockBegin, p);
            pos_ = p + open_len;
            line_starting_ = false;
            Inside(kind == '{');
        }
    }

    void Comment(size_t from, size_t open) {
        // jinja2's lexer stops at the end of the source before it looks for
        // the end of a comment (or raw block) that starts right there.
        if (from >= s_.size()) {
            pos_ = s_.size();
            return;
        }
        for (size_t p = from; p + 1 < s_.size(); ++p) {
            if (At(p, "+#}")) {
                pos_ = p + 3;
                line_starting_ = false;
                return;
            }
            if (At(p, "-#}")) {
                pos_ = p + 3 + WhitespaceRun(s_, p + 3);
                line_starting_ = s_[pos_ - 1] == '\n';
                return;
            }
            if (At(p, "#}")) {
                pos_ = p + 2;
                if (pos_ < s_.size() && s_[pos_] == '\n') ++pos_;
                line_starting_ = s_[pos_ - 1] == '\n';
                return;
            }
        }
        FailAt(open, "Missing end of comment tag");
    }

    void Raw(size_t from, size_t open) {
        if (from >= s_.size()) {
            pos_ = s_.size();
            return;
        }
        for (size_t p = s_.find("{%", from); p != std::string_view::npos; p = s_.find("{%", p + 1)) {
            const size_t end = MatchRawBegin(p, "endraw", true);
            if (end == std::string_view::npos) continue;
            const char sign = s_[p + 2] == '-' || s_[p + 2] == '+' ? s_[p + 2] : 0;
            EmitText(from, p, sign, true);
            pos_ = end;
            line_starting_ = s_[pos_ - 1] == '\n';
            return;
        }
        FailAt(open, "Missing end of raw directive");
    }

    // Tokens inside {{ }} (variable) or {% %}.
    void Inside(bool variable) {
        std::vector<char> balancing;  // expected closers
        while (pos_ < s_.size()) {
            if (balancing.empty()) {
                if (variable) {
                    if (At(pos_, "-}}")) {
                        Push(Tok::VarEnd, pos_);
                        pos_ += 3;
                        pos_ += WhitespaceRun(s_, pos_);
                        line_starting_ = s_[pos_ - 1] == '\n';
                        return;
                    }
                    if (At(pos_, "}}")) {
                        Push(Tok::VarEnd, pos_);
                        pos_ += 2;
                        line_starting_ = false;
                        return;
                    }
                } else {
                    if (At(pos_, "+%}")) {
                        Push(Tok::BlockEnd, pos_);
                        pos_ += 3;
                        line_starting_ = false;
                        return;
                    }
                    if (At(pos_, "-%}")) {
                        Push(Tok::BlockEnd, pos_);
                        pos_ += 3;
                        pos_ += WhitespaceRun(s_, pos_);
                        line_starting_ = s_[pos_ - 1] == '\n';
                        return;
                    }
                    if (At(pos_, "%}")) {
                        Push(Tok::BlockEnd, pos_);
                        pos_ += 2;
                        if (pos_ < s_.size() && s_[pos_] == '\n') ++pos_;  // trim_blocks
                        line_starting_ = s_[pos_ - 1] == '\n';
                        return;
                    }
                }
            }
            const size_t ws = WhitespaceRun(s_, pos_);
            if (ws > 0) {
                pos_ += ws;
                continue;
            }
            const char c = s_[pos_];
            if (IsDigit(c) && Number()) continue;
            if (IsNameStart(c)) {
                size_t e = pos_;
                while (e < s_.size() && IsNameChar(s_[e])) ++e;
                Push(Tok::Name, pos_, std::string(s_.substr(pos_, e - pos_)));
                pos_ = e;
                continue;
            }
            if (c == '\'' || c == '"') {
                String(c);
                continue;
            }
            Operator(balancing);
        }
        // End of the source inside a tag: the parser reports what it expected.
    }

    void String(char quote) {
        size_t p = pos_ + 1;
        while (p < s_.size() && s_[p] != quote) {
            if (s_[p] == '\\') ++p;
            ++p;
        }
        if (p >= s_.size()) FailAt(pos_, quote == '\'' ? "unexpected char \"'\"" : "unexpected char '\"'");
        Token t;
        t.type = Tok::String;
        t.offset = pos_;
        t.value = DecodeStringLiteral(s_.substr(pos_ + 1, p - pos_ - 1), pos_);
        tokens_.push_back(std::move(t));
        pos_ = p + 1;
    }

    // Digits with single underscores between them, from p; returns the end
    // (p when there is no digit).
    size_t DigitRun(size_t p, bool (*digit)(char)) const {
        size_t q = p;
        if (q >= s_.size() || !digit(s_[q])) return p;
        ++q;
        while (q < s_.size()) {
            if (digit(s_[q])) {
                ++q;
            } else if (s_[q] == '_' && q + 1 < s_.size() && digit(s_[q + 1])) {
                q += 2;
            } else {
                break;
            }
        }
        return q;
    }

    bool Number() {
        const size_t start = pos_;
        // Float: digits ('.' digits)? exponent, or digits '.' digits; not
        // right after a '.' (so `x.0.1` is two subscripts).
        const bool after_dot = start > 0 && s_[start - 1] == '.';
        const size_t int_end = DigitRun(start, IsDigit);
        if (!after_dot) {
            size_t q = int_end;
            bool is_float = false;
            if (q < s_.size() && s_[q] == '.') {
                const size_t f = DigitRun(q + 1, IsDigit);
                if (f > q + 1) {
                    q = f;
                    is_float = true;
                }
            }
            if (q < s_.size() && (s_[q] == 'e' || s_[q] == 'E')) {
                size_t e = q + 1;
                if (e < s_.size() && (s_[e] == '+' || s_[e] == '-')) ++e;
                const size_t ee = DigitRun(e, IsDigit);
                if (ee > e) {
                    q = ee;
                    is_float = true;
                }
            }
            if (is_float) {
                std::string clean;
                for (char c : s_.substr(start, q - start)) {
                    if (c != '_') clean.push_back(c);
                }
                Token t;
                t.type = Tok::Float;
                t.offset = start;
                t.fval = ParsePyFloat(clean).value_or(0.0);
                tokens_.push_back(std::move(t));
                pos_ = q;
                return true;
            }
        }
        // Integer: 0b / 0o / 0x, [1-9] digits, or zeros.
        size_t q = start;
        int base = 10;
        if (s_[start] == '0' && start + 2 <= s_.size()) {
            const char p = start + 1 < s_.size() ? static_cast<char>(s_[start + 1] | 0x20) : 0;
            auto digit_for = [](int b) -> bool (*)(char) {
                if (b == 2) return [](char c) { return c == '0' || c == '1'; };
                if (b == 8) return [](char c) { return c >= '0' && c <= '7'; };
                return [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; };
            };
            base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 10;
            if (base != 10) {
                size_t d = start + 2;
                if (d < s_.size() && s_[d] == '_') ++d;
                const size_t e = DigitRun(d, digit_for(base));
                if (e == d) {
                    base = 10;
                } else {
                    q = e;
                }
            }
            if (base == 10) {
                // "0(_?0)*"
                q = start + 1;
                while (q < s_.size()) {
                    if (s_[q] == '0') {
                        ++q;
                    } else if (s_[q] == '_' && q + 1 < s_.size() && s_[q + 1] == '0') {
                        q += 2;
                    } else {
                        break;
                    }
                }
            }
        } else {
            q = int_end;
        }
        std::string_view digits = s_.substr(start, q - start);
        std::optional<int64_t> v;
        bool big = false;
        std::string big_digits;
        try {
            v = ParsePyInt(digits, base == 10 ? 10 : 0, &big, &big_digits);
        } catch (const Error&) {
            FailAt(start, "integer literal too large (more than 64 bits)");
        }
        Token t;
        t.type = Tok::Int;
        t.offset = start;
        t.ival = v.value_or(0);
        if (big) t.value = big_digits;  // a Python int past 64 bits, for the parser
        tokens_.push_back(std::move(t));
        pos_ = q;
        return true;
    }

    void Operator(std::vector<char>& balancing) {
        static constexpr std::string_view kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*",
                                                    "%",  "~",  "[",  "]",  "(",  ")",  "{", "}", "=", ".",
                                                    ":",  "|",  ",",  ";",  ">",  "<"};
        for (std::string_view op : kOps) {
            if (!At(pos_, op)) continue;
            if (op == "(" || op == "[" || op == "{") {
                balancing.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
            } else if (op == ")" || op == "]" || op == "}") {
                if (balancing.empty()) FailAt(pos_, Cat("unexpected '", op, "'"));
                if (balancing.back() != op[0]) {
                    FailAt(pos_, Cat("unexpected '", op, "', expected '", std::string(1, balancing.back()),
                                              "'"));
                }
                balancing.pop_back();
            }
            Push(Tok::Op, pos_, std::string(op));
            pos_ += op.size();
            return;
        }
        size_t end = pos_;
        DecodeUtf8(s_, end);
        FailAt(pos_, Cat("unexpected char '", s_.substr(pos_, end - pos_), "'"));
    }

    std::string_view s_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Tokenize(std::string_view source) { return Lexer(source).Run(); }

std::string DescribeToken(const Token& t) {
    switch (t.type) {
        case Tok::Data: return "template data / text";
        case Tok::VarBegin: return "begin of print statement";
        case Tok::VarEnd: return "end of print statement";
        case Tok::BlockBegin: return "begin of statement block";
        case Tok::BlockEnd: return "end of statement block";
        case Tok::Name: return t.value;
        case Tok::String: return "string";
        case Tok::Int: return "integer";
        case Tok::Float: return "float";
        case Tok::Op: return t.value;
        case Tok::Eof: return "end of template";
    }
    return "token";
}

}  // namespace prepack::jinja

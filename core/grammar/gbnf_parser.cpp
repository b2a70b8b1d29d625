#include "core/grammar/gbnf_parser.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace prepack::grammar::gbnf {
namespace {

bool IsNameChar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
}
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

int HexValue(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Recursive descent over the text, one method per construct, mirroring
// llama.cpp's grammar parser so that whatever it accepts parses alike
// (where spaces and newlines may go, how `-` in classes reads, ...).
class Parser {
public:
    Parser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

    absl::StatusOr<Ast> Run() {
        PP_RETURN_IF_ERROR(CheckText());
        SkipSpace(/*newline_ok=*/true);
        while (!AtEnd()) {
            PP_RETURN_IF_ERROR(ParseRule());
        }
        PP_RETURN_IF_ERROR(CheckAllRulesDefined());
        return std::move(ast_);
    }

private:
    bool AtEnd() const { return pos_ >= text_.size(); }
    char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

    absl::Status Error(size_t offset, const std::string& message) const {
        return absl::InvalidArgumentError(absl::StrCat("GBNF ", LineColumn(text_, offset), ": ", message));
    }
    absl::Status Exhausted(size_t offset, const std::string& message) const {
        return absl::ResourceExhaustedError(absl::StrCat("GBNF ", LineColumn(text_, offset), ": ", message));
    }

    // What sits at pos_, for "expecting X, found Y" messages.
    std::string Found() const {
        if (AtEnd()) return "the end of the grammar";
        const char c = Peek();
        if (c == '\n' || c == '\r') return "the end of the line";
        size_t end = pos_;
        uint32_t cp = 0;
        DecodeUtf8(text_, &end, &cp);
        return absl::StrCat("'", std::string(text_.substr(pos_, std::max<size_t>(end - pos_, 1))), "'");
    }

    // The whole text must be UTF-8 without NUL bytes: literals and classes
    // read code points from it, and llama.cpp reads a NUL as the end.
    absl::Status CheckText() const {
        if (text_.size() > limits_.max_text_bytes) {
            return absl::ResourceExhaustedError(absl::StrFormat(
                "GBNF text is %d bytes, over the limit of %d", text_.size(), limits_.max_text_bytes));
        }
        size_t offset = 0;
        while (offset < text_.size()) {
            uint32_t cp = 0;
            if (!DecodeUtf8(text_, &offset, &cp)) return Error(offset, "invalid UTF-8 in the grammar text");
            if (cp == 0) return Error(offset - 1, "NUL byte in the grammar text");
        }
        return absl::OkStatus();
    }

    // Spaces, tabs and `#` comments; newlines too where the syntax lets a
    // rule go on (inside groups, after `::=` and `|`, between rules).
    void SkipSpace(bool newline_ok) {
        while (!AtEnd()) {
            const char c = Peek();
            if (c == '#') {
                while (!AtEnd() && Peek() != '\n' && Peek() != '\r') ++pos_;
            } else if (c == ' ' || c == '\t' || (newline_ok && (c == '\n' || c == '\r'))) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    int32_t AddNode(AstNode node) {
        ast_.nodes.push_back(std::move(node));
        return static_cast<int32_t>(ast_.nodes.size() - 1);
    }

    absl::StatusOr<int32_t> RuleIndex(std::string_view name, size_t offset) {
        auto it = ast_.rule_index.find(std::string(name));
        if (it != ast_.rule_index.end()) return it->second;
        if (static_cast<int64_t>(ast_.rules.size()) >= limits_.max_rules) {
            return Exhausted(offset, absl::StrCat("more than ", limits_.max_rules, " rule names"));
        }
        const int32_t index = static_cast<int32_t>(ast_.rules.size());
        ast_.rules.push_back(AstRule{std::string(name), -1, offset});
        ast_.rule_index.emplace(std::string(name), index);
        return index;
    }

    std::string_view ParseName() {
        const size_t start = pos_;
        while (IsNameChar(Peek())) ++pos_;
        return text_.substr(start, pos_ - start);
    }

    // name ::= choice, ending at a line end or the end of the text.
    absl::Status ParseRule() {
        const size_t start = pos_;
        const std::string_view name = ParseName();
        if (name.empty()) {
            return Error(pos_, absl::StrCat("expecting a rule name ([a-zA-Z0-9-]+), found ", Found()));
        }
        SkipSpace(/*newline_ok=*/false);
        if (text_.substr(pos_, 3) != "::=") {
            return Error(pos_, absl::StrCat("expecting '::=' after the rule name '", std::string(name), "', found ", Found()));
        }
        pos_ += 3;
        SkipSpace(/*newline_ok=*/true);
        PP_ASSIGN_OR_RETURN(const int32_t rule, RuleIndex(name, start));
        PP_ASSIGN_OR_RETURN(const int32_t body, ParseChoice(/*nested=*/false, /*depth=*/0));
        // Last definition wins, as in llama.cpp.
        ast_.rules[rule].body = body;
        if (Peek() == '\r') {
            ++pos_;
            if (Peek() == '\n') ++pos_;
        } else if (Peek() == '\n') {
            ++pos_;
        } else if (!AtEnd()) {
            if (Peek() == ')') return Error(pos_, "unmatched ')'");
            return Error(pos_, absl::StrCat("expecting an item, '|' or the end of the line in rule '", std::string(name),
                                            "', found ", Found()));
        }
        SkipSpace(/*newline_ok=*/true);
        return absl::OkStatus();
    }

    // sequence ('|' sequence)*; a kChoice node of kSequence nodes.
    absl::StatusOr<int32_t> ParseChoice(bool nested, int32_t depth) {
        AstNode choice;
        choice.kind = AstNode::Kind::kChoice;
        choice.span.begin = pos_;
        while (true) {
            PP_ASSIGN_OR_RETURN(const int32_t sequence, ParseSequence(nested, depth));
            choice.children.push_back(sequence);
            choice.nesting = std::max(choice.nesting, ast_.nodes[sequence].nesting);
            if (Peek() != '|') break;
            ++pos_;
            SkipSpace(/*newline_ok=*/true);
        }
        choice.span.end = pos_;
        return AddNode(std::move(choice));
    }

    absl::StatusOr<int32_t> ParseSequence(bool nested, int32_t depth) {
        AstNode sequence;
        sequence.kind = AstNode::Kind::kSequence;
        sequence.span.begin = pos_;
        std::vector<int32_t>& items = sequence.children;
        while (!AtEnd()) {
            const char c = Peek();
            const size_t item_start = pos_;
            if (c == '"') {
                PP_ASSIGN_OR_RETURN(const int32_t literal, ParseLiteral());
                items.push_back(literal);
            } else if (c == '[') {
                PP_ASSIGN_OR_RETURN(const int32_t klass, ParseClass());
                items.push_back(klass);
            } else if (c == '.') {
                ++pos_;
                AstNode any;
                any.kind = AstNode::Kind::kClass;
                any.span = {item_start, pos_};
                any.ranges = ComplementScalarRanges({});
                items.push_back(AddNode(std::move(any)));
            } else if (IsNameChar(c)) {
                const std::string_view name = ParseName();
                AstNode ref;
                ref.kind = AstNode::Kind::kRuleRef;
                ref.span = {item_start, pos_};
                PP_ASSIGN_OR_RETURN(ref.rule, RuleIndex(name, item_start));
                items.push_back(AddNode(std::move(ref)));
            } else if (c == '(') {
                if (depth + 1 > limits_.max_nesting) {
                    return Exhausted(pos_, absl::StrCat("groups nested deeper than ", limits_.max_nesting));
                }
                ++pos_;
                SkipSpace(/*newline_ok=*/true);
                PP_ASSIGN_OR_RETURN(const int32_t group, ParseChoice(/*nested=*/true, depth + 1));
                if (Peek() != ')') {
                    return Error(pos_, absl::StrCat("expecting ')' to close the group opened at ",
                                                    LineColumn(text_, item_start), ", found ", Found()));
                }
                ++pos_;
                AstNode& node = ast_.nodes[group];
                node.span = {item_start, pos_};
                node.nesting += 1;
                if (node.nesting > limits_.max_nesting) {
                    return Exhausted(item_start, absl::StrCat("groups and repetitions nested deeper than ",
                                                              limits_.max_nesting));
                }
                items.push_back(group);
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (items.empty()) {
                    return Error(pos_, absl::StrCat("'", std::string(1, c), "' has nothing before it to repeat"));
                }
                PP_ASSIGN_OR_RETURN(items.back(), ParseRepetition(items.back(), nested));
            } else if (c == '<') {
                return Error(pos_, "token references like <[123]> or <name> are not supported");
            } else if (c == '!') {
                return Error(pos_, "negated token references like !<[123]> are not supported");
            } else {
                break;
            }
            SkipSpace(nested);
        }
        for (int32_t item : items) sequence.nesting = std::max(sequence.nesting, ast_.nodes[item].nesting);
        sequence.span.end = pos_;
        return AddNode(std::move(sequence));
    }

    // `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` or `{,n}` after `item`.
    absl::StatusOr<int32_t> ParseRepetition(int32_t item, bool nested) {
        const size_t start = pos_;
        int32_t min = 0;
        int32_t max = AstNode::kUnbounded;
        const char op = Peek();
        ++pos_;
        if (op == '+') {
            min = 1;
        } else if (op == '?') {
            max = 1;
        } else if (op == '{') {
            SkipSpace(nested);
            const bool has_min = IsDigit(Peek());
            if (has_min) {
                PP_ASSIGN_OR_RETURN(min, ParseCount());
                SkipSpace(nested);
            } else if (Peek() != ',') {
                return Error(pos_, absl::StrCat("expecting a number after '{', found ", Found()));
            }
            if (has_min && Peek() == '}') {
                max = min;
            } else if (Peek() == ',') {
                ++pos_;
                SkipSpace(nested);
                if (IsDigit(Peek())) {
                    PP_ASSIGN_OR_RETURN(max, ParseCount());
                    SkipSpace(nested);
                } else if (!has_min) {
                    return Error(pos_, absl::StrCat("expecting the upper bound of '{,n}', found ", Found()));
                }
                if (Peek() != '}') return Error(pos_, absl::StrCat("expecting '}', found ", Found()));
            } else {
                return Error(pos_, absl::StrCat("expecting ',' or '}' in a repetition, found ", Found()));
            }
            ++pos_;
            if (max != AstNode::kUnbounded && max < min) {
                return Error(start, absl::StrFormat("repetition {%d,%d} has its upper bound below its lower one",
                                                    min, max));
            }
        }
        AstNode repeat;
        repeat.kind = AstNode::Kind::kRepeat;
        repeat.span = {ast_.nodes[item].span.begin, pos_};
        repeat.children = {item};
        repeat.min = min;
        repeat.max = max;
        repeat.nesting = ast_.nodes[item].nesting + 1;
        if (repeat.nesting > limits_.max_nesting) {
            return Exhausted(start, absl::StrCat("groups and repetitions nested deeper than ", limits_.max_nesting));
        }
        return AddNode(std::move(repeat));
    }

    absl::StatusOr<int32_t> ParseCount() {
        const size_t start = pos_;
        int64_t value = 0;
        while (IsDigit(Peek())) {
            value = std::min<int64_t>(value * 10 + (Peek() - '0'), int64_t{1} << 40);
            ++pos_;
        }
        if (value > limits_.max_repeat) {
            return Exhausted(start, absl::StrCat("repetition count ", std::string(text_.substr(start, pos_ - start)),
                                                 " is over the limit of ", limits_.max_repeat));
        }
        return static_cast<int32_t>(value);
    }

    // One character of a literal or class: an escape or a UTF-8 code point.
    absl::StatusOr<uint32_t> ParseChar() {
        const size_t start = pos_;
        if (Peek() != '\\') {
            uint32_t cp = 0;
            DecodeUtf8(text_, &pos_, &cp);   // CheckText() made the text valid UTF-8
            return cp;
        }
        const char kind = Peek(1);
        int digits = 0;
        switch (kind) {
            case 'x': digits = 2; break;
            case 'u': digits = 4; break;
            case 'U': digits = 8; break;
            case 't': pos_ += 2; return uint32_t{'\t'};
            case 'r': pos_ += 2; return uint32_t{'\r'};
            case 'n': pos_ += 2; return uint32_t{'\n'};
            case '\\': case '"': case '[': case ']':
                pos_ += 2;
                return static_cast<uint32_t>(kind);
            default:
                return Error(start, absl::StrCat("unknown escape '\\", AtEnd() ? "" : std::string(1, kind),
                                                 "' (known: \\x \\u \\U \\t \\n \\r \\\\ \\\" \\[ \\])"));
        }
        pos_ += 2;
        uint64_t value = 0;
        for (int i = 0; i < digits; ++i) {
            const int hex = HexValue(Peek());
            if (hex < 0) {
                return Error(pos_, absl::StrCat("expecting ", digits, " hex digits after '\\", std::string(1, kind),
                                                "', found ", Found()));
            }
            value = value * 16 + hex;
            ++pos_;
        }
        if (value > kMaxCodePoint) {
            return Error(start, absl::StrFormat("code point U+%X is past U+10FFFF", value));
        }
        return static_cast<uint32_t>(value);
    }

    absl::StatusOr<int32_t> ParseLiteral() {
        AstNode literal;
        literal.kind = AstNode::Kind::kLiteral;
        literal.span.begin = pos_;
        ++pos_;
        while (Peek() != '"') {
            if (AtEnd()) return Error(literal.span.begin, "unterminated string literal");
            const size_t char_start = pos_;
            PP_ASSIGN_OR_RETURN(const uint32_t cp, ParseChar());
            if (cp >= kFirstSurrogate && cp <= kLastSurrogate) {
                return Error(char_start, absl::StrFormat("surrogate U+%X has no UTF-8 form", cp));
            }
            literal.code_points.push_back(cp);
        }
        ++pos_;
        literal.span.end = pos_;
        return AddNode(std::move(literal));
    }

    absl::StatusOr<int32_t> ParseClass() {
        AstNode klass;
        klass.kind = AstNode::Kind::kClass;
        klass.span.begin = pos_;
        ++pos_;
        const bool negated = Peek() == '^';
        if (negated) ++pos_;
        std::vector<CodePointRange> ranges;
        while (Peek() != ']') {
            if (AtEnd()) return Error(klass.span.begin, "unterminated character class");
            const size_t range_start = pos_;
            PP_ASSIGN_OR_RETURN(const uint32_t first, ParseChar());
            uint32_t last = first;
            // As in llama.cpp, '-' right before ']' is a plain '-'.
            if (Peek() == '-' && Peek(1) != ']') {
                ++pos_;
                if (AtEnd()) return Error(klass.span.begin, "unterminated character class");
                PP_ASSIGN_OR_RETURN(last, ParseChar());
                if (last < first) {
                    return Error(range_start, absl::StrCat("character range ", std::string(text_.substr(range_start, pos_ - range_start)),
                                                           " ends before it starts"));
                }
            }
            ranges.push_back({first, last});
        }
        ++pos_;
        klass.span.end = pos_;
        klass.ranges = NormalizeScalarRanges(std::move(ranges));
        if (negated) klass.ranges = ComplementScalarRanges(klass.ranges);
        if (klass.ranges.empty()) {
            return Error(klass.span.begin,
                         absl::StrCat("character class ", std::string(text_.substr(klass.span.begin, pos_ - klass.span.begin)),
                                      " matches no character"));
        }
        return AddNode(std::move(klass));
    }

    absl::Status CheckAllRulesDefined() const {
        const AstRule* first_undefined = nullptr;
        for (const AstRule& rule : ast_.rules) {
            if (rule.body >= 0) continue;
            if (first_undefined == nullptr || rule.first_reference < first_undefined->first_reference) {
                first_undefined = &rule;
            }
        }
        if (first_undefined == nullptr) return absl::OkStatus();
        return Error(first_undefined->first_reference, absl::StrCat("undefined rule '", first_undefined->name, "'"));
    }

    std::string_view  text_;
    const GbnfLimits& limits_;
    size_t            pos_ = 0;
    Ast               ast_;
};

}  // namespace

std::string LineColumn(std::string_view text, size_t offset) {
    offset = std::min(offset, text.size());
    int64_t line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
        // "\r\n" counts once: the '\n' ends the line.
        if (text[i] == '\n' || (text[i] == '\r' && (i + 1 >= text.size() || text[i + 1] != '\n'))) {
            ++line;
            line_start = i + 1;
        }
    }
    return absl::StrCat(line, ":", offset - line_start + 1);
}

absl::StatusOr<Ast> ParseAst(std::string_view text, const GbnfLimits& limits) {
    return Parser(text, limits).Run();
}

}  // namespace prepack::grammar::gbnf

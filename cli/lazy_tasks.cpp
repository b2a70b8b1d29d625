#include "cli/lazy_tasks.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/chat/conversation.h"

namespace prepack::cli {
namespace {

absl::Status Bad(const std::string& where, const std::string& problem) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", problem));
}

// A required non-empty string field.
absl::StatusOr<std::string> StringField(const nlohmann::json& j, const char* key, const std::string& where) {
    if (!j.contains(key)) return Bad(where, absl::StrCat("missing field '", key, "'"));
    if (!j[key].is_string() || j[key].get_ref<const std::string&>().empty()) {
        return Bad(where, absl::StrCat("field '", key, "' must be a non-empty string"));
    }
    return j[key].get<std::string>();
}

// A required integer field in [min, max].
absl::StatusOr<int64_t> IntField(const nlohmann::json& j, const char* key, int64_t min, int64_t max,
                                 const std::string& where) {
    if (!j.contains(key)) return Bad(where, absl::StrCat("missing field '", key, "'"));
    const nlohmann::json& v = j[key];
    // JSON's non-negative integers parse as unsigned.
    const bool in_range = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(max) && int64_t(v.get<uint64_t>()) >= min
                          : v.is_number_integer() ? v.get<int64_t>() >= min && v.get<int64_t>() <= max
                                                  : false;
    if (!in_range) return Bad(where, absl::StrCat("field '", key, "' must be an integer in [", min, ", ", max, "]"));
    return v.get<int64_t>();
}

absl::StatusOr<std::vector<std::vector<std::string>>> Answers(const nlohmann::json& j, const std::string& where) {
    if (!j.contains("answers")) return Bad(where, "missing field 'answers'");
    const nlohmann::json& a = j["answers"];
    const std::string shape = "field 'answers' must be a non-empty list of non-empty strings or lists of them";
    if (!a.is_array() || a.empty()) return Bad(where, shape);
    std::vector<std::vector<std::string>> out;
    for (const nlohmann::json& entry : a) {
        std::vector<std::string> all;
        if (entry.is_string()) {
            all.push_back(entry.get<std::string>());
        } else if (entry.is_array() && !entry.empty()) {
            for (const nlohmann::json& s : entry) {
                if (!s.is_string()) return Bad(where, shape);
                all.push_back(s.get<std::string>());
            }
        } else {
            return Bad(where, shape);
        }
        for (const std::string& s : all) {
            if (s.empty()) return Bad(where, shape);
        }
        out.push_back(std::move(all));
    }
    return out;
}

absl::StatusOr<std::vector<LazyFact>> Facts(const nlohmann::json& j, const std::string& kind,
                                            const std::string& where) {
    std::vector<LazyFact> facts;
    if (!j.contains("facts")) {
        if (kind == "qa") return facts;
        return Bad(where, absl::StrCat("missing field 'facts' (a ", kind, " task plants at least one)"));
    }
    const nlohmann::json& f = j["facts"];
    if (!f.is_array()) return Bad(where, "field 'facts' must be a list of {\"depth\", \"sentence\"}");
    if (f.empty() && kind != "qa") {
        return Bad(where, absl::StrCat("field 'facts' is empty (a ", kind, " task plants at least one)"));
    }
    for (size_t i = 0; i < f.size(); ++i) {
        const nlohmann::json& x = f[i];
        const std::string at = absl::StrCat("facts[", i, "]");
        if (!x.is_object()) return Bad(where, absl::StrCat(at, " must be an object {\"depth\", \"sentence\"}"));
        if (!x.contains("depth") || !x["depth"].is_number() || !(x["depth"].get<double>() >= 0.0) ||
            !(x["depth"].get<double>() <= 1.0)) {
            return Bad(where, absl::StrCat(at, ".depth must be a number in [0, 1]"));
        }
        if (!x.contains("sentence") || !x["sentence"].is_string() ||
            x["sentence"].get_ref<const std::string&>().empty()) {
            return Bad(where, absl::StrCat(at, ".sentence must be a non-empty string"));
        }
        facts.push_back({x["depth"].get<double>(), x["sentence"].get<std::string>()});
    }
    return facts;
}

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v'; }
bool IsUpper(char c) { return c >= 'A' && c <= 'Z'; }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlpha(char c) { return IsUpper(c) || (c >= 'a' && c <= 'z'); }
bool IsCloser(char c) { return c == '"' || c == '\'' || c == ')' || c == ']'; }
bool IsOpener(char c) { return c == '"' || c == '\'' || c == '(' || c == '['; }

bool IsAbbreviation(std::string_view word) {
    static const std::set<std::string_view> kWords = {"Mr",  "Mrs", "Ms", "Dr",   "St",  "Jr",  "Sr",  "Prof", "Mt",
                                                      "No",  "vs",  "etc", "Capt", "Col", "Gen", "Rev", "Messrs"};
    return kWords.count(word) > 0 || (word.size() == 1 && IsUpper(word[0]));
}

std::string Lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (IsUpper(c)) c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

// The document of the first `n` sentences (ending at ends[n - 1]) with the
// facts placed, and where each fact landed.
struct Composed {
    std::string         text;
    std::vector<size_t> fact_bytes;
    size_t              haystack = 0;
};

Composed Compose(const LazyTask& task, std::string_view text, size_t start, const std::vector<size_t>& ends,
                 size_t n) {
    const std::string_view hay = text.substr(start, ends[n - 1] - start);
    // The places a fact may go: the start, each boundary inside, the end.
    std::vector<size_t> points = {0};
    for (size_t k = 0; k + 1 < n; ++k) points.push_back(ends[k] - start);
    points.push_back(hay.size());
    std::vector<size_t> at(task.facts.size());   // index into points
    for (size_t f = 0; f < task.facts.size(); ++f) {
        const double want = task.facts[f].depth * double(hay.size());
        size_t best = 0;
        for (size_t p = 1; p < points.size(); ++p) {
            if (std::fabs(double(points[p]) - want) < std::fabs(double(points[best]) - want)) best = p;
        }
        at[f] = best;
    }
    // Facts at one place go in order of depth, then of the task's list.
    std::vector<size_t> order(task.facts.size());
    for (size_t f = 0; f < order.size(); ++f) order[f] = f;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return at[a] != at[b] ? at[a] < at[b] : task.facts[a].depth < task.facts[b].depth;
    });
    Composed c;
    c.haystack = hay.size();
    c.fact_bytes.resize(task.facts.size());
    size_t copied = 0;
    for (size_t f : order) {
        const size_t p = points[at[f]];
        c.text.append(hay.substr(copied, p - copied));
        copied = p;
        if (!c.text.empty() && !IsSpace(c.text.back())) c.text += ' ';
        c.fact_bytes[f] = c.text.size();
        c.text += task.facts[f].sentence;
        // A fact before the first sentence needs a space after it; one at a
        // boundary is followed by the boundary's own whitespace.
        if (p == 0 && !hay.empty()) c.text += ' ';
    }
    c.text.append(hay.substr(copied));
    return c;
}

}  // namespace

absl::StatusOr<LazyTask> ParseLazyTaskLine(const std::string& line, const std::string& where,
                                           const std::string& base_dir) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
        return Bad(where, absl::StrCat("malformed JSON (", e.what(), ")"));
    }
    if (!j.is_object()) return Bad(where, "not a JSON object");
    LazyTask t;
    t.where = where;
    PP_ASSIGN_OR_RETURN(t.id, StringField(j, "id", where));
    PP_ASSIGN_OR_RETURN(t.kind, StringField(j, "kind", where));
    if (t.kind != "needle" && t.kind != "multi" && t.kind != "qa") {
        return Bad(where, absl::StrCat("unknown kind '", t.kind, "' (needle, multi or qa)"));
    }
    PP_ASSIGN_OR_RETURN(const std::string text, StringField(j, "text", where));
    const std::filesystem::path p(text);
    t.text_path = p.is_absolute() || base_dir.empty() ? text : (std::filesystem::path(base_dir) / p).string();
    PP_ASSIGN_OR_RETURN(t.start_byte, IntField(j, "start_byte", 0, int64_t{1} << 40, where));
    PP_ASSIGN_OR_RETURN(const int64_t tokens, IntField(j, "tokens", 1, int64_t{1} << 24, where));
    t.tokens = static_cast<int32_t>(tokens);
    PP_ASSIGN_OR_RETURN(t.facts, Facts(j, t.kind, where));
    PP_ASSIGN_OR_RETURN(t.question, StringField(j, "question", where));
    PP_ASSIGN_OR_RETURN(t.answers, Answers(j, where));
    if (j.contains("evidence")) {
        PP_ASSIGN_OR_RETURN(t.evidence, StringField(j, "evidence", where));
    }
    return t;
}

absl::StatusOr<std::vector<LazyTask>> LoadLazyTasks(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
        return absl::NotFoundError(absl::StrCat("cannot read the tasks file ", path, " (not a readable file)"));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read the tasks file ", path));
    const std::string base_dir = std::filesystem::path(path).parent_path().string();
    std::vector<LazyTask> tasks;
    std::map<std::string, size_t> seen;   // id -> line
    std::string line;
    for (size_t n = 1; std::getline(in, line); ++n) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (std::all_of(line.begin(), line.end(), IsSpace)) continue;
        const std::string where = absl::StrCat(path, ":", n);
        PP_ASSIGN_OR_RETURN(LazyTask t, ParseLazyTaskLine(line, where, base_dir));
        if (auto [it, fresh] = seen.emplace(t.id, n); !fresh) {
            return Bad(where, absl::StrCat("id '", t.id, "' repeats the one of line ", it->second));
        }
        tasks.push_back(std::move(t));
    }
    if (tasks.empty()) return absl::InvalidArgumentError(absl::StrCat("the tasks file ", path, " holds no tasks"));
    return tasks;
}

absl::StatusOr<const std::string*> LazyTextCache::Get(const LazyTask& task) {
    auto it = texts_.find(task.text_path);
    if (it != texts_.end()) return &it->second;
    std::error_code ec;
    std::ifstream in(task.text_path, std::ios::binary);
    if (!std::filesystem::is_regular_file(task.text_path, ec) || !in) {
        return absl::NotFoundError(absl::StrCat(task.where, ": cannot read the text file ", task.text_path));
    }
    std::stringstream ss;
    ss << in.rdbuf();
    return &texts_.emplace(task.text_path, ss.str()).first->second;
}

std::vector<SentenceBoundary> SentenceBoundaries(std::string_view text, size_t from) {
    std::vector<SentenceBoundary> out;
    const size_t n = text.size();
    size_t i = from;
    while (i < n) {
        const char c = text[i];
        if (c == '.' || c == '!' || c == '?') {
            size_t j = i + 1;
            while (j < n && IsCloser(text[j])) ++j;
            if (j < n && IsSpace(text[j])) {
                size_t k = j;
                while (k < n && IsSpace(text[k])) ++k;
                bool ok = k < n && (IsUpper(text[k]) || IsDigit(text[k]) || IsOpener(text[k]));
                if (ok && c == '.') {
                    size_t w = i;
                    while (w > 0 && IsAlpha(text[w - 1])) --w;
                    if (IsAbbreviation(text.substr(w, i - w))) ok = false;
                }
                if (ok) out.push_back({j, k});
                i = k;
                continue;
            }
        }
        ++i;
    }
    return out;
}

absl::StatusOr<LazyDocument> BuildLazyDocument(const LazyTask& task, std::string_view text,
                                               const Tokenizer& tokenizer) {
    if (task.start_byte >= static_cast<int64_t>(text.size())) {
        return Bad(task.where, absl::StrCat("start_byte ", task.start_byte, " is past the end of ", task.text_path,
                                            " (", text.size(), " bytes)"));
    }
    size_t start = static_cast<size_t>(task.start_byte);
    if ((static_cast<unsigned char>(text[start]) & 0xC0) == 0x80) {
        return Bad(task.where, absl::StrCat("start_byte ", start, " is inside a UTF-8 character of ", task.text_path));
    }
    while (start < text.size() && IsSpace(text[start])) ++start;
    // Where each sentence ends: at each boundary, and the text's last one at
    // its end (trailing whitespace left out).
    std::vector<size_t> ends;
    for (const SentenceBoundary& b : SentenceBoundaries(text, start)) ends.push_back(b.end);
    size_t last = text.size();
    while (last > start && IsSpace(text[last - 1])) --last;
    if (last > start && (ends.empty() || ends.back() < last)) ends.push_back(last);
    if (ends.empty()) return Bad(task.where, absl::StrCat("the text ", task.text_path, " is blank from start_byte ", start));

    auto count = [&](size_t n) -> absl::StatusOr<int32_t> {
        const Composed c = Compose(task, text, start, ends, n);
        absl::StatusOr<std::vector<int32_t>> ids = tokenizer.Encode(c.text, /*add_special=*/false);
        if (!ids.ok()) return Bad(task.where, absl::StrCat("cannot tokenize the document: ", ids.status().message()));
        return static_cast<int32_t>(ids->size());
    };
    // The fewest sentences that reach the target: doubling, then bisecting.
    size_t hi = 1;
    PP_ASSIGN_OR_RETURN(int32_t hi_tokens, count(hi));
    while (hi_tokens < task.tokens && hi < ends.size()) {
        hi = std::min(2 * hi, ends.size());
        PP_ASSIGN_OR_RETURN(hi_tokens, count(hi));
    }
    if (hi_tokens < task.tokens) {
        return Bad(task.where, absl::StrCat("the text ", task.text_path, " from byte ", start, " gives only ", hi_tokens,
                                            " tokens, fewer than the task's ", task.tokens));
    }
    size_t lo = hi / 2;   // count(lo) < target (lo = 0: no sentence)
    while (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        PP_ASSIGN_OR_RETURN(const int32_t t, count(mid));
        if (t >= task.tokens) {
            hi = mid;
            hi_tokens = t;
        } else {
            lo = mid;
        }
    }
    Composed c = Compose(task, text, start, ends, hi);
    if (!task.evidence.empty() && c.text.find(task.evidence) == std::string::npos) {
        return Bad(task.where, absl::StrCat("the document (", hi_tokens, " tokens from byte ", start,
                                            ") does not contain the evidence \"", task.evidence,
                                            "\": this tokenizer spends more tokens on the text than the task set "
                                            "assumed, or start_byte is wrong"));
    }
    LazyDocument d;
    d.text = std::move(c.text);
    d.tokens = hi_tokens;
    d.fact_bytes = std::move(c.fact_bytes);
    d.haystack_bytes = c.haystack;
    return d;
}

std::string LazyTaskMessage(const LazyTask& task, const std::string& document) {
    return absl::StrCat(document, "\n\nAnswer briefly from the text above. ", task.question);
}

absl::StatusOr<std::vector<int32_t>> LazyTaskPrompt(const LazyTask& task, const std::string& document,
                                                    const Tokenizer& tokenizer, const ChatTemplates& templates) {
    if (templates.empty()) {
        return tokenizer.Encode(absl::StrCat(document, "\n\nQuestion: ", task.question, "\nAnswer:"),
                                /*add_special=*/true);
    }
    Conversation conv;
    conv.messages.push_back({{"role", "user"}, {"content", LazyTaskMessage(task, document)}});
    absl::StatusOr<ChatPrompt> p = templates.Apply(tokenizer, conv, /*add_special=*/true);
    if (!p.ok()) return Bad(task.where, absl::StrCat("chat template: ", p.status().message()));
    return std::move(p->ids);
}

bool LazyAnswerCorrect(const LazyTask& task, std::string_view answer) {
    const std::string a = Lower(answer);
    for (const std::vector<std::string>& entry : task.answers) {
        bool all = true;
        for (const std::string& s : entry) all = all && a.find(Lower(s)) != std::string::npos;
        if (all) return true;
    }
    return false;
}

}  // namespace prepack::cli

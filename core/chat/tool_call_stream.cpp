#include "core/chat/tool_call_stream.h"

#include <set>

namespace prepack {
namespace {

constexpr std::string_view kIdAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

size_t SkipSpace(std::string_view s, size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) ++i;
    return i;
}

// The end (one past the closing quote) of the JSON string starting at
// s[i] == '"'; npos while it is incomplete.
size_t StringEnd(std::string_view s, size_t i) {
    for (size_t k = i + 1; k < s.size(); ++k) {
        if (s[k] == '\\') {
            ++k;
        } else if (s[k] == '"') {
            return k + 1;
        }
    }
    return std::string_view::npos;
}

// The end of the JSON value starting at s[i] (an object, array, string or
// scalar), or npos while it is incomplete. Scalars end at the first byte
// that cannot continue them, which must already be there.
size_t ValueEnd(std::string_view s, size_t i) {
    if (i >= s.size()) return std::string_view::npos;
    if (s[i] == '"') return StringEnd(s, i);
    if (s[i] == '{' || s[i] == '[') {
        int depth = 0;
        for (size_t k = i; k < s.size(); ++k) {
            const char c = s[k];
            if (c == '"') {
                k = StringEnd(s, k);
                if (k == std::string_view::npos) return k;
                --k;
            } else if (c == '{' || c == '[') {
                ++depth;
            } else if (c == '}' || c == ']') {
                if (--depth == 0) return k + 1;
            }
        }
        return std::string_view::npos;
    }
    size_t k = i;
    while (k < s.size() && std::string_view(",}] \t\r\n").find(s[k]) == std::string_view::npos) ++k;
    return k < s.size() ? k : std::string_view::npos;
}

}  // namespace

ToolCallStream::ToolCallStream(ToolCallFormat format, std::vector<FunctionTool> tools, std::string trigger,
                               uint64_t id_seed)
    : format_(format), tools_(std::move(tools)), trigger_(std::move(trigger)), rng_(id_seed | 1) {
    for (const FunctionTool& t : tools_) known_.insert(t.name);
    in_calls_ = trigger_.empty();
}

std::string ToolCallStream::NextId() {
    std::string id = "call_";
    for (int i = 0; i < 24; ++i) {
        // xorshift64: ids need to be unique within a request, not secret.
        rng_ ^= rng_ << 13;
        rng_ ^= rng_ >> 7;
        rng_ ^= rng_ << 17;
        id += kIdAlphabet[rng_ % kIdAlphabet.size()];
    }
    return id;
}

ToolStreamDelta ToolCallStream::Push(std::string_view text) {
    ToolStreamDelta out = Read(text);
    Record(out);
    return out;
}

ToolStreamDelta ToolCallStream::Finish() {
    ToolStreamDelta out = End();
    Record(out);
    return out;
}

void ToolCallStream::Record(const ToolStreamDelta& delta) {
    for (const ToolCallDelta& d : delta.calls) {
        // A call's first delta has its index == the calls so far (the
        // stream numbers calls in order, from 0).
        if (d.index < 0 || static_cast<size_t>(d.index) > calls_.size()) continue;   // never: indices come in order
        if (static_cast<size_t>(d.index) == calls_.size()) {
            calls_.push_back(ParsedToolCall{d.id, d.name, ""});
        }
        calls_[static_cast<size_t>(d.index)].arguments += d.arguments;
    }
}

ToolStreamDelta ToolCallStream::Read(std::string_view text) {
    ToolStreamDelta out;
    all_ += text;
    if (!in_calls_) {
        pending_ += text;
        const size_t at = pending_.find(trigger_);
        if (at != std::string::npos) {
            out.content = pending_.substr(0, at);
            held_ = pending_.substr(at);
            pending_.clear();
            in_calls_ = true;
        } else {
            // Keep back the longest tail that is a prefix of the trigger.
            size_t keep = std::min(pending_.size(), trigger_.size() - 1);
            while (keep > 0 && pending_.compare(pending_.size() - keep, keep, trigger_, 0, keep) != 0) --keep;
            out.content = pending_.substr(0, pending_.size() - keep);
            pending_.erase(0, pending_.size() - keep);
        }
        content_sent_ += out.content;
        if (!in_calls_) return out;
    } else {
        held_ += text;
    }
    Scan(&out);
    return out;
}

void ToolCallStream::Scan(ToolStreamDelta* out) {
    const std::string_view s = held_;
    // Where to look for the next call: past the last one's arguments.
    size_t from = 0;
    if (!started_.empty()) {
        Started& last = started_.back();
        if (!last.args_done) {
            const size_t end = ValueEnd(s, last.args_begin);
            const size_t upto = end == std::string_view::npos ? s.size() : end;
            // An unfinished number or literal may still grow: report
            // objects and arrays as they come, scalars when complete.
            const bool structured = s[last.args_begin] == '{' || s[last.args_begin] == '[';
            if (structured || end != std::string_view::npos) {
                if (upto > last.args_begin + last.args_sent) {
                    ToolCallDelta d;
                    d.index = static_cast<int32_t>(started_.size()) - 1;
                    d.arguments = std::string(s.substr(last.args_begin + last.args_sent,
                                                       upto - last.args_begin - last.args_sent));
                    last.args_sent = upto - last.args_begin;
                    out->calls.push_back(std::move(d));
                }
            }
            if (end == std::string_view::npos) return;
            last.args_done = true;
        }
        from = last.args_begin + last.args_sent;
    }
    for (;;) {
        // A call object: {"name": "N", then "arguments" or "parameters".
        const size_t key = s.find("\"name\"", from);
        if (key == std::string_view::npos) return;
        size_t i = SkipSpace(s, key + 6);
        if (i >= s.size()) return;
        if (s[i] != ':') { from = key + 6; continue; }
        i = SkipSpace(s, i + 1);
        if (i >= s.size()) return;
        if (s[i] != '"') { from = i; continue; }
        const size_t name_end = StringEnd(s, i);
        if (name_end == std::string_view::npos) return;
        const std::string_view name = s.substr(i + 1, name_end - i - 2);
        i = SkipSpace(s, name_end);
        if (i >= s.size()) return;
        if (s[i] != ',' || !known_.count(name)) { from = name_end; continue; }
        i = SkipSpace(s, i + 1);
        const size_t k2 = i;
        const size_t k2_end = i < s.size() && s[i] == '"' ? StringEnd(s, i) : std::string_view::npos;
        if (k2_end == std::string_view::npos) {
            if (i >= s.size() || s[i] == '"') return;   // the key is still coming
            from = i;
            continue;
        }
        const std::string_view key2 = s.substr(k2 + 1, k2_end - k2 - 2);
        if (key2 != "arguments" && key2 != "parameters") { from = k2_end; continue; }
        i = SkipSpace(s, k2_end);
        if (i >= s.size()) return;
        if (s[i] != ':') { from = k2_end; continue; }
        i = SkipSpace(s, i + 1);
        if (i >= s.size()) return;
        Started st;
        st.id = NextId();
        st.args_begin = i;
        started_.push_back(st);
        ToolCallDelta d;
        d.index = static_cast<int32_t>(started_.size()) - 1;
        d.id = st.id;
        d.name = std::string(name);
        out->calls.push_back(std::move(d));
        // Its arguments so far, by the same path as later pushes.
        Scan(out);
        return;
    }
}

ToolStreamDelta ToolCallStream::End() {
    ToolStreamDelta out;
    const ParsedAnswer parsed = ParseToolCalls(format_, all_, tools_);
    if (started_.empty()) {
        // No call was streamed: whatever is held is content, unless the
        // whole answer parses as calls (the generic format's object).
        for (size_t i = 0; i < parsed.calls.size(); ++i) {
            ToolCallDelta d;
            d.index = static_cast<int32_t>(i);
            d.id = NextId();
            d.name = parsed.calls[i].name;
            d.arguments = parsed.calls[i].arguments;
            out.calls.push_back(std::move(d));
        }
        // The content the whole answer holds, less what was sent.
        const std::string& content = parsed.content;
        if (content.compare(0, content_sent_.size(), content_sent_) == 0) {
            out.content = content.substr(content_sent_.size());
        } else {
            out.content = pending_ + (in_calls_ ? held_ : "");
        }
        pending_.clear();
        return out;
    }
    // Calls were streamed: what their arguments still hold back (a
    // trailing scalar), and no more.
    Scan(&out);
    if (!started_.back().args_done) {
        Started& last = started_.back();
        const size_t sent = last.args_begin + last.args_sent;
        if (held_.size() > sent) {
            ToolCallDelta d;
            d.index = static_cast<int32_t>(started_.size()) - 1;
            d.arguments = held_.substr(sent);
            last.args_sent = held_.size() - last.args_begin;
            out.calls.push_back(std::move(d));
        }
    }
    return out;
}

}  // namespace prepack

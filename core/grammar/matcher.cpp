// Matcher: one sequence's Earley chart over a CompiledGrammar, the history
// of accepted tokens for rollback, and the token mask (cached per-lexeme
// halves from MaskCache, plus a parser walk over the trie subtrees where a
// lexeme may end inside a token).
#include "core/grammar/matcher.h"

#include <algorithm>
#include <bit>
#include <optional>
#include <utility>

#include "core/grammar/compiled_grammar.h"

namespace prepack::grammar {

std::shared_ptr<const TokenVocabulary> ByteVocabulary() {
    static const std::shared_ptr<const TokenVocabulary> vocab = [] {
        VocabularyInfo info;
        for (int b = 0; b < 256; ++b) info.token_bytes.emplace_back(1, static_cast<char>(b));
        info.token_bytes.emplace_back();   // the end token has no bytes
        info.end_tokens.push_back(kByteVocabularyEndToken);
        return std::make_shared<const TokenVocabulary>(std::move(info));
    }();
    return vocab;
}

int32_t TokenMask::Count() const {
    int32_t n = 0;
    for (uint64_t w : words_) n += std::popcount(w);
    return n;
}

struct Matcher::State {
    explicit State(std::shared_ptr<const CompiledGrammar> g) : grammar(std::move(g)) {
        if (grammar == nullptr) {
            status = absl::InvalidArgumentError("Matcher needs a compiled grammar");
            return;
        }
        impl = &grammar->impl();
        chart.emplace(&impl->tables, &impl->dfas);
    }

    absl::Status DfaLimitError(int32_t lexeme) const {
        return absl::ResourceExhaustedError(absl::StrCat(
            lexeme >= 0 ? absl::StrCat("lexeme '", impl->grammar.lexemes[lexeme].name, "'") : std::string("a lexeme"),
            " needs more than CompileLimits::max_dfa_states_per_lexeme = ", impl->limits.max_dfa_states_per_lexeme,
            " DFA states"));
    }

    // Feeds `bytes`; on any failure the chart is as before.
    bool Feed(std::string_view bytes) {
        const int32_t before = chart->num_sets();
        for (char c : bytes) {
            const EarleyChart::Step step = chart->Feed(static_cast<uint8_t>(c));
            if (step == EarleyChart::Step::kAccepted) continue;
            if (step == EarleyChart::Step::kOverflow) status = DfaLimitError(-1);
            chart->Truncate(before);
            return false;
        }
        return true;
    }

    bool WalkBoundaries(TokenMask* mask);
    void SetTokensEndingAt(int32_t node, TokenMask* mask) const {
        const auto& trie = impl->vocabulary->impl();
        const int32_t first = trie.first_token[node];
        for (int32_t k = first; k < first + trie.num_ending[node]; ++k) mask->Set(trie.sorted_tokens[k]);
    }

    struct Accepted {
        int32_t num_sets_before;
        bool    end_token;
    };

    std::shared_ptr<const CompiledGrammar> grammar;
    const CompiledGrammar::Impl*           impl = nullptr;
    std::optional<EarleyChart>             chart;
    std::vector<Accepted>                  history;
    bool                                   ended = false;
    absl::Status                           status;
    // Scratch buffers reused by every mask.
    std::vector<std::pair<int32_t, int32_t>> lexeme_states;
    std::vector<int32_t>                     roots;
    std::string                              fed;
};

// Checks every token under the boundary subtrees by running the parser
// along the trie: one Earley step per trie edge, rolled back on the way up,
// and a dead byte skips its whole subtree. False on a DFA overflow.
bool Matcher::State::WalkBoundaries(TokenMask* mask) {
    const auto& trie = impl->vocabulary->impl();
    std::sort(roots.begin(), roots.end());
    const int32_t base = chart->num_sets();
    fed.clear();
    bool step_overflowed = false;
    auto rewind = [&](size_t length) {
        if (fed.size() > length) {
            chart->Truncate(base + static_cast<int32_t>(length));
            fed.resize(length);
        }
    };
    // kAccepted: `byte` appended to `fed`.
    auto feed = [&](uint8_t byte) {
        const EarleyChart::Step step = chart->Feed(byte);
        if (step == EarleyChart::Step::kAccepted) fed.push_back(static_cast<char>(byte));
        if (step == EarleyChart::Step::kOverflow) step_overflowed = true;
        return step;
    };
    int32_t covered_until = 0;   // roots inside an earlier root's subtree are already walked
    for (int32_t root : roots) {
        if (root < covered_until) continue;
        covered_until = trie.subtree_end[root];
        const std::string& path = trie.PathBytes(root);
        const size_t depth = static_cast<size_t>(trie.node_depth[root]);
        size_t common = 0;
        while (common < fed.size() && common < depth && fed[common] == path[common]) ++common;
        rewind(common);
        EarleyChart::Step step = EarleyChart::Step::kAccepted;
        for (size_t d = common; d < depth && step == EarleyChart::Step::kAccepted; ++d) {
            step = feed(static_cast<uint8_t>(path[d]));
        }
        if (step == EarleyChart::Step::kOverflow) break;
        if (step == EarleyChart::Step::kRejected) continue;
        SetTokensEndingAt(root, mask);
        for (int32_t node = root + 1; node < covered_until;) {
            rewind(static_cast<size_t>(trie.node_depth[node] - 1));
            step = feed(trie.node_byte[node]);
            if (step == EarleyChart::Step::kOverflow) break;
            if (step == EarleyChart::Step::kRejected) {
                node = trie.subtree_end[node];
                continue;
            }
            SetTokensEndingAt(node, mask);
            ++node;
        }
        if (step == EarleyChart::Step::kOverflow) break;
    }
    rewind(0);
    if (step_overflowed) status = DfaLimitError(-1);
    return status.ok();
}

Matcher::Matcher(std::shared_ptr<const CompiledGrammar> grammar) : s_(std::make_unique<State>(std::move(grammar))) {}
Matcher::~Matcher() = default;
Matcher::Matcher(Matcher&&) noexcept = default;
Matcher& Matcher::operator=(Matcher&&) noexcept = default;

void Matcher::FillNextTokenMask(TokenMask* mask) {
    State& s = *s_;
    const int32_t size = s.grammar ? s.grammar->vocabulary().size() : 0;
    if (mask->size() != size) {
        *mask = TokenMask(size);
    } else {
        mask->ClearAll();
    }
    if (s.ended || !s.status.ok()) return;
    const auto& trie = s.impl->vocabulary->impl();
    s.lexeme_states.clear();
    for (const EarleyItem* it = s.chart->scan_begin(); it != s.chart->scan_end(); ++it) {
        const std::pair<int32_t, int32_t> key{s.impl->tables.positions[it->pos].next_lexeme, it->dfa};
        if (std::find(s.lexeme_states.begin(), s.lexeme_states.end(), key) == s.lexeme_states.end()) {
            s.lexeme_states.push_back(key);
        }
    }
    s.roots.clear();
    auto& words = mask->words();
    for (const auto& [lexeme, state] : s.lexeme_states) {
        absl::StatusOr<const MaskEntry*> entry = s.impl->mask_cache.Get(lexeme, state, *s.impl->dfas[lexeme], trie);
        if (!entry.ok()) {
            s.status = s.DfaLimitError(lexeme);
            mask->ClearAll();
            return;
        }
        const MaskEntry& e = **entry;
        if (!e.inside_words.empty()) {
            for (size_t w = 0; w < words.size(); ++w) words[w] |= e.inside_words[w];
        } else {
            for (int32_t id : e.inside_ids) mask->Set(id);
        }
        s.roots.insert(s.roots.end(), e.boundary_roots.begin(), e.boundary_roots.end());
    }
    s.WalkBoundaries(mask);
    if (!s.status.ok()) {
        mask->ClearAll();
        return;
    }
    if (s.chart->CanEnd()) {
        for (int32_t id : trie.end_tokens) mask->Set(id);
    }
}

bool Matcher::AcceptToken(int32_t id) {
    State& s = *s_;
    if (!s.chart || s.ended || !s.status.ok() || id < 0 || id >= s.grammar->vocabulary().size()) return false;
    const auto& trie = s.impl->vocabulary->impl();
    if (trie.is_end[id]) {
        if (!s.chart->CanEnd()) return false;
        s.history.push_back({s.chart->num_sets(), true});
        s.ended = true;
        return true;
    }
    const std::string& bytes = trie.info.token_bytes[id];
    if (bytes.empty()) return false;
    return AcceptBytes(bytes);
}

bool Matcher::AcceptBytes(std::string_view bytes) {
    State& s = *s_;
    if (!s.chart || s.ended || !s.status.ok()) return false;
    const int32_t before = s.chart->num_sets();
    if (!s.Feed(bytes)) return false;
    s.history.push_back({before, false});
    return true;
}

void Matcher::Rollback(int32_t n) {
    State& s = *s_;
    n = std::clamp(n, 0, static_cast<int32_t>(s.history.size()));
    for (; n > 0; --n) {
        const State::Accepted undone = s.history.back();
        s.history.pop_back();
        if (s.chart) s.chart->Truncate(undone.num_sets_before);
        if (undone.end_token) s.ended = false;
    }
}

bool Matcher::CanEnd() const { return s_->chart && s_->chart->CanEnd(); }
bool Matcher::IsTerminated() const { return CanEnd() && s_->chart->scan_begin() == s_->chart->scan_end(); }
bool Matcher::ended() const { return s_->ended; }
int32_t Matcher::num_accepted() const { return static_cast<int32_t>(s_->history.size()); }
const absl::Status& Matcher::status() const { return s_->status; }

}  // namespace prepack::grammar

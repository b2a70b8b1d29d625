#include "core/grammar/lexeme_dfa.h"

#include <algorithm>
#include <bit>
#include <set>
#include <utility>

namespace prepack::grammar {

namespace {

int64_t SaturatingAdd(int64_t a, int64_t b, int64_t cap) { return std::min(cap, a + b); }
int64_t SaturatingMul(int64_t a, int64_t b, int64_t cap) {
    if (a == 0 || b == 0) return 0;
    return a > cap / b ? cap : std::min(cap, a * b);
}

// Thompson construction: every fragment has one entry and one exit state.
class NfaBuilder {
public:
    explicit NfaBuilder(const std::vector<RegexNode>& regex) : regex_(regex) {}

    struct Fragment {
        int32_t in, out;
    };

    Fragment Build(int32_t index) {
        const RegexNode& node = regex_[index];
        switch (node.kind) {
            case RegexNode::Kind::kEmpty: {
                const int32_t s = NewState();
                return {s, s};
            }
            case RegexNode::Kind::kByteSet: {
                const int32_t in = NewState(), out = NewState();
                states_[in].byte_target = out;
                states_[in].bytes = node.bytes;
                return {in, out};
            }
            case RegexNode::Kind::kConcat: {
                Fragment whole{NewState(), -1};
                whole.out = whole.in;
                for (int32_t child : node.children) {
                    const Fragment f = Build(child);
                    Epsilon(whole.out, f.in);
                    whole.out = f.out;
                }
                return whole;
            }
            case RegexNode::Kind::kAlt: {
                const int32_t in = NewState(), out = NewState();
                for (int32_t child : node.children) {
                    const Fragment f = Build(child);
                    Epsilon(in, f.in);
                    Epsilon(f.out, out);
                }
                return {in, out};
            }
            case RegexNode::Kind::kRepeat: {
                const int32_t in = NewState();
                int32_t cur = in;
                for (int32_t i = 0; i < node.min; ++i) {
                    const Fragment f = Build(node.children[0]);
                    Epsilon(cur, f.in);
                    cur = f.out;
                }
                if (node.max == RegexNode::kUnbounded) {
                    // The loop state is also the exit: zero or more further copies.
                    const Fragment f = Build(node.children[0]);
                    Epsilon(cur, f.in);
                    Epsilon(f.out, cur);
                    return {in, cur};
                }
                const int32_t out = NewState();
                for (int32_t i = node.min; i < node.max; ++i) {
                    const Fragment f = Build(node.children[0]);
                    Epsilon(cur, out);   // stop before this optional copy
                    Epsilon(cur, f.in);
                    cur = f.out;
                }
                Epsilon(cur, out);
                return {in, out};
            }
        }
        return {NewState(), NewState()};   // unreachable: every kind handled above
    }

    std::vector<LexemeNfa::State> TakeStates() { return std::move(states_); }

private:
    int32_t NewState() {
        states_.emplace_back();
        return static_cast<int32_t>(states_.size()) - 1;
    }
    void Epsilon(int32_t from, int32_t to) { states_[from].epsilon.push_back(to); }

    const std::vector<RegexNode>& regex_;
    std::vector<LexemeNfa::State> states_;
};

bool AnyByte(const std::array<uint64_t, 4>& bytes) { return (bytes[0] | bytes[1] | bytes[2] | bytes[3]) != 0; }
bool HasByte(const std::array<uint64_t, 4>& bytes, uint8_t b) { return (bytes[b >> 6] >> (b & 63)) & 1; }

// Drops every state (edge) that cannot reach the accepting state, so that a
// non-empty DFA subset always means "the lexeme can still be completed".
void PruneDeadEnds(LexemeNfa* nfa) {
    const size_t n = nfa->states.size();
    std::vector<std::vector<int32_t>> reverse(n);
    for (size_t s = 0; s < n; ++s) {
        for (int32_t t : nfa->states[s].epsilon) reverse[t].push_back(static_cast<int32_t>(s));
        if (nfa->states[s].byte_target >= 0 && AnyByte(nfa->states[s].bytes)) {
            reverse[nfa->states[s].byte_target].push_back(static_cast<int32_t>(s));
        }
    }
    std::vector<char> live(n, 0);
    std::vector<int32_t> stack{nfa->accept};
    live[nfa->accept] = 1;
    while (!stack.empty()) {
        const int32_t s = stack.back();
        stack.pop_back();
        for (int32_t p : reverse[s]) {
            if (!live[p]) {
                live[p] = 1;
                stack.push_back(p);
            }
        }
    }
    for (auto& state : nfa->states) {
        std::erase_if(state.epsilon, [&](int32_t t) { return !live[t]; });
        if (state.byte_target >= 0 && (!live[state.byte_target] || !AnyByte(state.bytes))) {
            state.byte_target = -1;
            state.bytes = {};
        }
    }
    if (!live[nfa->start]) nfa->start = -1;
}

}  // namespace

int64_t CountNfaStates(const std::vector<RegexNode>& regex, int32_t index, int64_t cap, std::vector<int64_t>* memo) {
    if (memo->size() != regex.size()) memo->assign(regex.size(), -1);
    if ((*memo)[index] >= 0) return (*memo)[index];
    const RegexNode& node = regex[index];
    int64_t count = cap;
    switch (node.kind) {
        case RegexNode::Kind::kEmpty: count = 1; break;
        case RegexNode::Kind::kByteSet: count = 2; break;
        case RegexNode::Kind::kConcat:
        case RegexNode::Kind::kAlt:
            count = 2;
            for (int32_t child : node.children) count = SaturatingAdd(count, CountNfaStates(regex, child, cap, memo), cap);
            break;
        case RegexNode::Kind::kRepeat: {
            const int64_t copies = node.max == RegexNode::kUnbounded ? int64_t{node.min} + 1 : int64_t{node.max};
            count = SaturatingAdd(2, SaturatingMul(copies, CountNfaStates(regex, node.children[0], cap, memo), cap), cap);
            break;
        }
    }
    (*memo)[index] = count;
    return count;
}

LexemeNfa BuildLexemeNfa(const std::vector<RegexNode>& regex, int32_t root) {
    NfaBuilder builder(regex);
    const NfaBuilder::Fragment f = builder.Build(root);
    LexemeNfa nfa;
    nfa.states = builder.TakeStates();
    nfa.start = f.in;
    nfa.accept = f.out;
    PruneDeadEnds(&nfa);
    return nfa;
}

size_t LexemeDfa::SubsetHash::operator()(const std::vector<int32_t>& v) const {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ v.size();
    for (int32_t x : v) h = (h ^ static_cast<uint32_t>(x)) * 0x100000001b3ull, h ^= h >> 29;
    return static_cast<size_t>(h);
}

LexemeDfa::LexemeDfa(LexemeNfa nfa, int32_t max_states) : nfa_(std::move(nfa)), max_states_(std::max(max_states, 2)) {
    // Byte classes: bytes that every byte edge treats alike share one column
    // of the transition table (a JSON string lexeme needs a handful, not 256).
    std::array<int32_t, 256> cls{};
    int32_t num = 1;
    std::set<std::array<uint64_t, 4>> seen_sets;
    for (const auto& state : nfa_.states) {
        if (state.byte_target < 0) continue;
        if (!seen_sets.insert(state.bytes).second) continue;
        // Split every class by membership in this set, renumbering densely.
        std::array<int32_t, 512> renumber;
        renumber.fill(-1);
        int32_t next = 0;
        for (int b = 0; b < 256; ++b) {
            const int32_t key = cls[b] * 2 + (HasByte(state.bytes, static_cast<uint8_t>(b)) ? 1 : 0);
            if (renumber[key] < 0) renumber[key] = next++;
            cls[b] = renumber[key];
        }
        num = next;
    }
    num_classes_ = num;
    for (int b = 255; b >= 0; --b) {
        byte_class_[b] = static_cast<uint8_t>(cls[b]);
        class_rep_[cls[b]] = static_cast<uint8_t>(b);
    }
    std::lock_guard<std::mutex> lock(mu_);
    Intern({});   // state 0: the dead state
    if (nfa_.start >= 0) {
        std::vector<int32_t> subset{nfa_.start};
        EpsilonClose(&subset);
        start_ = Intern(std::move(subset));
        if (start_ == kOverflow) start_ = kDead;   // unreachable: max_states_ >= 2
    }
}

int32_t LexemeDfa::num_states() const { return num_states_.load(std::memory_order_acquire); }

void LexemeDfa::Locate(int32_t state, int* chunk, int32_t* offset) {
    const uint32_t index = static_cast<uint32_t>(state / kChunk0) + 1;
    *chunk = 31 - std::countl_zero(index);
    *offset = state - kChunk0 * ((int32_t{1} << *chunk) - 1);
}

const std::atomic<int32_t>* LexemeDfa::Row(int32_t state) const {
    int chunk;
    int32_t offset;
    Locate(state, &chunk, &offset);
    return chunks_[chunk].load(std::memory_order_acquire)->next.get() + static_cast<size_t>(offset) * num_classes_;
}

uint8_t LexemeDfa::Flags(int32_t state) const {
    int chunk;
    int32_t offset;
    Locate(state, &chunk, &offset);
    return chunks_[chunk].load(std::memory_order_acquire)->flags[offset];
}

void LexemeDfa::EpsilonClose(std::vector<int32_t>* subset) const {
    std::vector<int32_t> stack = *subset;
    std::vector<char> seen(nfa_.states.size(), 0);
    for (int32_t s : *subset) seen[s] = 1;
    while (!stack.empty()) {
        const int32_t s = stack.back();
        stack.pop_back();
        for (int32_t t : nfa_.states[s].epsilon) {
            if (!seen[t]) {
                seen[t] = 1;
                subset->push_back(t);
                stack.push_back(t);
            }
        }
    }
    std::sort(subset->begin(), subset->end());
}

int32_t LexemeDfa::Intern(std::vector<int32_t> subset) const {
    if (auto it = ids_.find(subset); it != ids_.end()) return it->second;
    const int32_t id = static_cast<int32_t>(subsets_.size());
    if (id >= max_states_) return kOverflow;
    int chunk;
    int32_t offset;
    Locate(id, &chunk, &offset);
    if (offset == 0) {
        auto fresh = std::make_unique<Chunk>();
        const size_t capacity = static_cast<size_t>(kChunk0) << chunk;
        fresh->next = std::make_unique<std::atomic<int32_t>[]>(capacity * num_classes_);
        fresh->flags = std::make_unique<uint8_t[]>(capacity);
        chunks_[chunk].store(fresh.get(), std::memory_order_release);
        owned_chunks_.push_back(std::move(fresh));
    }
    Chunk* c = chunks_[chunk].load(std::memory_order_relaxed);
    uint8_t flags = 0;
    for (int32_t s : subset) {
        if (s == nfa_.accept) flags |= kAccepting;
        if (nfa_.states[s].byte_target >= 0) flags |= kHasExits;
    }
    c->flags[offset] = flags;
    // The dead state's row is known (dead again); every other row is filled
    // on demand.
    const int32_t initial = id == kDead ? kDead : kUnknown;
    for (int32_t k = 0; k < num_classes_; ++k) {
        c->next[static_cast<size_t>(offset) * num_classes_ + k].store(initial, std::memory_order_relaxed);
    }
    ids_.emplace(subset, id);
    subsets_.push_back(std::move(subset));
    // Publishes the row and flags before any transition names this id.
    num_states_.store(id + 1, std::memory_order_release);
    return id;
}

int32_t LexemeDfa::BuildNext(int32_t state, int32_t cls) const {
    std::lock_guard<std::mutex> lock(mu_);
    const std::atomic<int32_t>* row = Row(state);
    const int32_t known = row[cls].load(std::memory_order_relaxed);
    if (known != kUnknown) return known;
    const uint8_t byte = class_rep_[cls];
    std::vector<int32_t> next;
    for (int32_t s : subsets_[state]) {
        const auto& nfa_state = nfa_.states[s];
        if (nfa_state.byte_target >= 0 && HasByte(nfa_state.bytes, byte)) next.push_back(nfa_state.byte_target);
    }
    std::sort(next.begin(), next.end());
    next.erase(std::unique(next.begin(), next.end()), next.end());
    EpsilonClose(&next);
    const int32_t id = Intern(std::move(next));
    if (id == kOverflow) return kOverflow;   // not stored: a later call reports it again
    const_cast<std::atomic<int32_t>*>(row)[cls].store(id, std::memory_order_release);
    return id;
}

}  // namespace prepack::grammar

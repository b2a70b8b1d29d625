// One lexeme's regular expression as a byte automaton: a Thompson NFA built
// once, and a DFA whose states are built lazily by subset construction the
// first time a (state, byte) transition is asked for.
//
// Why lazy: a lexeme such as a JSON string has few reachable states, but a
// regex like (a|b)*a(a|b){20} has millions; only the states the text (and
// the token trie walks) actually reach are ever built, up to a limit.
//
// Thread-safe: the CompiledGrammar that owns these DFAs is shared by
// matchers on several threads. Reading a known transition takes no lock
// (atomics in storage that never moves); building a new one takes the DFA's
// mutex.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/base/status.h"
#include "core/grammar/grammar_ir.h"

namespace prepack::grammar {

// The NFA: state 0 is the start, `accept` the single accepting state.
// Byte edges carry a set of byte classes (see LexemeDfa); epsilon edges
// none. States that cannot reach `accept` are removed (with their edges), so
// every state in a non-empty subset can still complete the lexeme.
struct LexemeNfa {
    struct State {
        std::vector<int32_t> epsilon;       // targets of epsilon edges
        int32_t              byte_target = -1;
        std::array<uint64_t, 4> bytes{};    // the bytes of the byte edge, if any
    };
    std::vector<State> states;
    int32_t            start = 0;
    int32_t            accept = 0;
};

// Counts the NFA states `node` expands to (repeats copy their body),
// saturating at `cap` so that nested counted repeats cannot overflow.
// `memo` (resized to the pool, -1 = unknown) makes shared subtrees cost once.
int64_t CountNfaStates(const std::vector<RegexNode>& regex, int32_t node, int64_t cap, std::vector<int64_t>* memo);

// Builds the NFA of regex node `root`. The caller has validated the tree
// (indices in range, no cycles, bounded depth and size).
LexemeNfa BuildLexemeNfa(const std::vector<RegexNode>& regex, int32_t root);

class LexemeDfa {
public:
    static constexpr int32_t kDead = 0;        // the empty subset: no continuation
    static constexpr int32_t kOverflow = -2;   // the state limit was reached

    LexemeDfa(LexemeNfa nfa, int32_t max_states);
    LexemeDfa(const LexemeDfa&) = delete;
    LexemeDfa& operator=(const LexemeDfa&) = delete;

    // The state before any byte; kDead when the lexeme's language is empty.
    int32_t start() const { return start_; }
    // The state after `byte`, kDead, or kOverflow when building it would
    // pass the limit.
    int32_t Next(int32_t state, uint8_t byte) const {
        const int32_t cls = byte_class_[byte];
        const int32_t known = Row(state)[cls].load(std::memory_order_acquire);
        return known != kUnknown ? known : BuildNext(state, cls);
    }
    // The lexeme may end here.
    bool accepting(int32_t state) const { return Flags(state) & kAccepting; }
    // Some byte leads to a live state (every live state can complete).
    bool has_exits(int32_t state) const { return Flags(state) & kHasExits; }
    int32_t num_states() const;

private:
    static constexpr int32_t kUnknown = -1;
    static constexpr uint8_t kAccepting = 1, kHasExits = 2;
    // States live in chunks that double in size and never move, so readers
    // can index them without the lock: chunk k holds states
    // [kChunk0 * (2^k - 1), kChunk0 * (2^(k+1) - 1)).
    static constexpr int32_t kChunk0 = 16;
    static constexpr int kMaxChunks = 28;
    struct Chunk {
        std::unique_ptr<std::atomic<int32_t>[]> next;   // num_classes_ per state
        std::unique_ptr<uint8_t[]>             flags;
    };
    static void Locate(int32_t state, int* chunk, int32_t* offset);
    const std::atomic<int32_t>* Row(int32_t state) const;
    uint8_t Flags(int32_t state) const;
    int32_t BuildNext(int32_t state, int32_t cls) const;
    // Under mu_: the id of a closed NFA subset, adding a state if new;
    // kOverflow past the limit.
    int32_t Intern(std::vector<int32_t> subset) const;
    void EpsilonClose(std::vector<int32_t>* subset) const;

    LexemeNfa nfa_;
    int32_t   max_states_;
    int32_t   start_ = kDead;
    int32_t   num_classes_ = 0;
    std::array<uint8_t, 256> byte_class_{};
    std::array<uint8_t, 256> class_rep_{};   // one byte of each class

    mutable std::mutex mu_;
    mutable std::array<std::atomic<Chunk*>, kMaxChunks> chunks_{};
    mutable std::vector<std::unique_ptr<Chunk>> owned_chunks_;
    mutable std::vector<std::vector<int32_t>> subsets_;   // state -> sorted NFA states
    struct SubsetHash {
        size_t operator()(const std::vector<int32_t>& v) const;
    };
    mutable std::unordered_map<std::vector<int32_t>, int32_t, SubsetHash> ids_;
    mutable std::atomic<int32_t> num_states_{0};
};

}  // namespace prepack::grammar

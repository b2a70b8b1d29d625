// The Earley parser over lexeme terminals, advanced one byte at a time.
//
// An item is a dotted alternative (a "position": rule, alternative, dot)
// with its origin set; an item whose next symbol is a lexeme also carries
// the DFA state reached inside that lexeme (a "scanning" item). The chart
// keeps one set per consumed byte, so rolling back is truncating the chart.
//
// Per byte, every scanning item's DFA takes the byte; dead states drop out;
// a state with exits stays a scanning item, an accepting state also
// completes the lexeme (the item's dot moves past it) and the new set is
// closed under prediction and completion. Nullable symbols are stepped over
// when predicted (Aycock & Horspool), which makes completions within one
// set unnecessary to revisit; left recursion needs nothing special.
//
// Exactness: rules and lexemes that derive no string are pruned when the
// tables are built and every DFA state kept can still complete its lexeme,
// so a non-empty set means the bytes so far are a prefix of some sentence.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/base/status.h"
#include "core/grammar/grammar_ir.h"
#include "core/grammar/lexeme_dfa.h"

namespace prepack::grammar {

// A dotted alternative. Positions of one alternative are consecutive, so
// moving the dot past a symbol is position + 1.
struct DottedPosition {
    int32_t rule = -1;
    int32_t next_rule = -1;     // the symbol after the dot is this rule, or
    int32_t next_lexeme = -1;   // this lexeme; both -1: the dot is at the end
    bool complete() const { return next_rule < 0 && next_lexeme < 0; }
};

struct EarleyTables {
    std::vector<DottedPosition>       positions;
    std::vector<std::vector<int32_t>> rule_alternatives;   // first position of each alternative kept
    std::vector<char>                 rule_nullable;
    int32_t                           start_rule = 0;
};

// INVALID_ARGUMENT when the start rule derives no string at all.
absl::StatusOr<EarleyTables> BuildEarleyTables(const Grammar& grammar,
                                               const std::vector<std::unique_ptr<LexemeDfa>>& dfas);

struct EarleyItem {
    int32_t pos;
    int32_t origin;   // the set the item's alternative started in
    int32_t dfa;      // scanning items: the state inside the next lexeme; else -1
};

class EarleyChart {
public:
    enum class Step { kAccepted, kRejected, kOverflow };

    EarleyChart(const EarleyTables* tables, const std::vector<std::unique_ptr<LexemeDfa>>* dfas);

    // Back to the single set before any byte.
    void Reset();
    // Adds the set after `byte`. kRejected (no set added) when no sentence
    // continues with it; kOverflow when a lexeme's DFA hit its state limit.
    Step Feed(uint8_t byte);
    // Keeps the first `num_sets` sets (>= 1).
    void Truncate(int32_t num_sets);
    int32_t num_sets() const { return static_cast<int32_t>(sets_.size()); }

    // The bytes so far are a sentence.
    bool CanEnd() const { return sets_.back().can_end; }
    // The current set's scanning items.
    const EarleyItem* scan_begin() const { return scans_.data() + sets_.back().scan_begin; }
    const EarleyItem* scan_end() const { return scans_.data() + scans_.size(); }
    const EarleyTables& tables() const { return *tables_; }

private:
    struct SetInfo {
        int32_t item_begin;
        int32_t scan_begin;
        bool    can_end;
    };
    void BeginSet();
    void AddItem(int32_t pos, int32_t origin);
    void AddScan(int32_t pos, int32_t origin, int32_t dfa);
    bool Insert(int32_t pos, int32_t origin, int32_t dfa);   // false if already in the set
    void Close();

    const EarleyTables*                            tables_;
    const std::vector<std::unique_ptr<LexemeDfa>>* dfas_;
    std::vector<SetInfo>    sets_;
    std::vector<EarleyItem> items_;   // non-scanning items of all sets
    std::vector<EarleyItem> scans_;   // scanning items of all sets

    // The current set's items, for de-duplication: open addressing, entries
    // from older sets are recognised by their generation.
    struct Slot {
        int32_t  pos, origin, dfa;
        uint32_t generation;
    };
    std::vector<Slot> slots_;
    uint32_t          generation_ = 0;
    int32_t           set_size_ = 0;
};

}  // namespace prepack::grammar

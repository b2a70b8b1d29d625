#include "core/grammar/earley.h"

#include <utility>

namespace prepack::grammar {

absl::StatusOr<EarleyTables> BuildEarleyTables(const Grammar& grammar,
                                               const std::vector<std::unique_ptr<LexemeDfa>>& dfas) {
    const size_t num_rules = grammar.rules.size();
    std::vector<char> productive(num_rules, 0), nullable(num_rules, 0);
    auto symbol_productive = [&](const Symbol& s) {
        return s.is_lexeme ? dfas[s.index]->start() != LexemeDfa::kDead : productive[s.index] != 0;
    };
    auto symbol_nullable = [&](const Symbol& s) {
        if (!s.is_lexeme) return nullable[s.index] != 0;
        const LexemeDfa& dfa = *dfas[s.index];
        return dfa.start() != LexemeDfa::kDead && dfa.accepting(dfa.start());
    };
    // Least fixpoints: a rule derives some string (is productive) / derives
    // "" (is nullable) once one alternative's symbols all do.
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t r = 0; r < num_rules; ++r) {
            for (const auto& alternative : grammar.rules[r].alternatives) {
                bool all_productive = true, all_nullable = true;
                for (const Symbol& s : alternative) {
                    all_productive = all_productive && symbol_productive(s);
                    all_nullable = all_nullable && symbol_nullable(s);
                }
                if (all_productive && !productive[r]) productive[r] = 1, changed = true;
                if (all_nullable && !nullable[r]) nullable[r] = 1, changed = true;
            }
        }
    }
    if (!productive[grammar.start]) {
        return absl::InvalidArgumentError(absl::StrCat("the start rule '", grammar.rules[grammar.start].name,
                                                       "' derives no string (every alternative needs a rule or "
                                                       "lexeme that matches nothing)"));
    }
    EarleyTables tables;
    tables.start_rule = grammar.start;
    tables.rule_nullable = std::move(nullable);
    tables.rule_alternatives.resize(num_rules);
    for (size_t r = 0; r < num_rules; ++r) {
        for (const auto& alternative : grammar.rules[r].alternatives) {
            bool keep = true;
            for (const Symbol& s : alternative) keep = keep && symbol_productive(s);
            // An alternative with a symbol that derives nothing can never
            // complete; keeping it would let the parser accept dead prefixes.
            if (!keep) continue;
            tables.rule_alternatives[r].push_back(static_cast<int32_t>(tables.positions.size()));
            for (const Symbol& s : alternative) {
                DottedPosition p;
                p.rule = static_cast<int32_t>(r);
                (s.is_lexeme ? p.next_lexeme : p.next_rule) = s.index;
                tables.positions.push_back(p);
            }
            DottedPosition end;
            end.rule = static_cast<int32_t>(r);
            tables.positions.push_back(end);
        }
    }
    return tables;
}

EarleyChart::EarleyChart(const EarleyTables* tables, const std::vector<std::unique_ptr<LexemeDfa>>* dfas)
    : tables_(tables), dfas_(dfas), slots_(64, Slot{0, 0, 0, 0}) {
    Reset();
}

void EarleyChart::Reset() {
    sets_.clear();
    items_.clear();
    scans_.clear();
    BeginSet();
    for (int32_t first : tables_->rule_alternatives[tables_->start_rule]) AddItem(first, 0);
    Close();
}

void EarleyChart::BeginSet() {
    sets_.push_back({static_cast<int32_t>(items_.size()), static_cast<int32_t>(scans_.size()), false});
    set_size_ = 0;
    if (++generation_ == 0) {   // wrapped: forget every old entry explicitly
        for (Slot& slot : slots_) slot.generation = 0;
        generation_ = 1;
    }
}

void EarleyChart::Truncate(int32_t num_sets) {
    if (num_sets >= this->num_sets() || num_sets < 1) return;
    items_.resize(sets_[num_sets].item_begin);
    scans_.resize(sets_[num_sets].scan_begin);
    sets_.resize(num_sets);
}

bool EarleyChart::Insert(int32_t pos, int32_t origin, int32_t dfa) {
    if (static_cast<size_t>(set_size_ + 1) * 2 > slots_.size()) {
        std::vector<Slot> old(slots_.size() * 2, Slot{0, 0, 0, 0});
        old.swap(slots_);
        const size_t mask = slots_.size() - 1;
        for (const Slot& slot : old) {
            if (slot.generation != generation_) continue;
            size_t h = (static_cast<uint64_t>(slot.pos) * 0x9E3779B97F4A7C15ull ^
                        static_cast<uint64_t>(slot.origin) * 0xC2B2AE3D27D4EB4Full ^
                        static_cast<uint64_t>(static_cast<uint32_t>(slot.dfa)) * 0x165667B19E3779F9ull) >> 20;
            while (slots_[h & mask].generation == generation_) ++h;
            slots_[h & mask] = slot;
        }
    }
    const size_t mask = slots_.size() - 1;
    size_t h = (static_cast<uint64_t>(pos) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(origin) * 0xC2B2AE3D27D4EB4Full ^
                static_cast<uint64_t>(static_cast<uint32_t>(dfa)) * 0x165667B19E3779F9ull) >> 20;
    for (;; ++h) {
        Slot& slot = slots_[h & mask];
        if (slot.generation != generation_) {
            slot = Slot{pos, origin, dfa, generation_};
            ++set_size_;
            return true;
        }
        if (slot.pos == pos && slot.origin == origin && slot.dfa == dfa) return false;
    }
}

void EarleyChart::AddScan(int32_t pos, int32_t origin, int32_t dfa) {
    if (Insert(pos, origin, dfa)) scans_.push_back({pos, origin, dfa});
}

void EarleyChart::AddItem(int32_t pos, int32_t origin) {
    for (;;) {
        const DottedPosition& p = tables_->positions[pos];
        if (p.next_lexeme < 0) {
            if (Insert(pos, origin, -1)) items_.push_back({pos, origin, -1});
            return;
        }
        // A lexeme is next: wait for its first byte, and step over it at
        // once when it may be empty.
        const LexemeDfa& dfa = *(*dfas_)[p.next_lexeme];
        const int32_t start = dfa.start();
        if (dfa.has_exits(start)) AddScan(pos, origin, start);
        if (!dfa.accepting(start)) return;
        ++pos;
    }
}

void EarleyChart::Close() {
    const int32_t current = num_sets() - 1;
    const auto& positions = tables_->positions;
    for (size_t i = sets_.back().item_begin; i < items_.size(); ++i) {
        const EarleyItem item = items_[i];
        const DottedPosition& p = positions[item.pos];
        if (p.complete()) {
            if (p.rule == tables_->start_rule && item.origin == 0) sets_.back().can_end = true;
            // A rule completed in the set it started in is nullable: every
            // item here waiting on it was already stepped over it.
            if (item.origin == current) continue;
            const int32_t end = sets_[item.origin + 1].item_begin;
            for (int32_t j = sets_[item.origin].item_begin; j < end; ++j) {
                const EarleyItem waiting = items_[j];
                if (positions[waiting.pos].next_rule == p.rule) AddItem(waiting.pos + 1, waiting.origin);
            }
        } else {
            for (int32_t first : tables_->rule_alternatives[p.next_rule]) AddItem(first, current);
            if (tables_->rule_nullable[p.next_rule]) AddItem(item.pos + 1, item.origin);
        }
    }
}

EarleyChart::Step EarleyChart::Feed(uint8_t byte) {
    const int32_t scan_from = sets_.back().scan_begin;
    const int32_t scan_to = static_cast<int32_t>(scans_.size());
    BeginSet();
    for (int32_t i = scan_from; i < scan_to; ++i) {
        const EarleyItem item = scans_[i];
        const LexemeDfa& dfa = *(*dfas_)[tables_->positions[item.pos].next_lexeme];
        const int32_t next = dfa.Next(item.dfa, byte);
        if (next == LexemeDfa::kOverflow) {
            Truncate(num_sets() - 1);
            return Step::kOverflow;
        }
        if (next == LexemeDfa::kDead) continue;
        if (dfa.has_exits(next)) AddScan(item.pos, item.origin, next);
        if (dfa.accepting(next)) AddItem(item.pos + 1, item.origin);
    }
    Close();
    if (set_size_ == 0) {
        Truncate(num_sets() - 1);
        return Step::kRejected;
    }
    return Step::kAccepted;
}

}  // namespace prepack::grammar

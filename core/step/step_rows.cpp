#include "core/step/step_rows.h"

#include "core/kv/kv_cache.h"

namespace prepack {

void InitStepRows(const StepPlan& plan, std::vector<int32_t>* pos, std::vector<int32_t>* slot,
                  std::vector<SeqRows>* seqs) {
    *pos = plan.positions;
    slot->assign(plan.tokens.size(), -1);
    seqs->clear();
    for (const SeqStep& s : plan.seqs) {
        const int32_t rows = s.n_tokens + s.n_pad;
        for (int32_t i = 0; i < rows; ++i) (*slot)[s.token_begin + i] = s.kv->num_tokens() + i;
        seqs->push_back({s.token_begin, rows});
    }
}

}  // namespace prepack

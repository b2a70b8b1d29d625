#include "core/lazyllm/lazy_state.h"

namespace prepack {

LazyState::LazyState(KvBlockPool& pool, int32_t n_layers, int32_t dim, LazySchedule schedule, int32_t computed)
    : n_layers_(n_layers), schedule_(std::move(schedule)), aux_(pool, dim), prompt_work_(n_layers, 0) {
    depth_.assign(computed, static_cast<int16_t>(n_layers - 1));
    first_ = computed;
}

void LazyState::Reserve(int32_t slots) {
    if (slots > static_cast<int32_t>(depth_.size())) depth_.resize(slots, -1);
}

void LazyState::Computed(int32_t slot, int32_t layer) {
    Reserve(slot + 1);
    // Layers are computed in order, so a token reaching `layer` again means
    // it was computed twice there.
    if (depth_[slot] >= layer) ++recomputed_;
    depth_[slot] = static_cast<int16_t>(layer);
    if (slot >= first_ && slot < n_prompt_) ++prompt_work_[layer];
}

double LazyState::PromptWorkFraction() const {
    if (n_prompt_ <= first_) return 1.0;
    int64_t sum = 0;
    for (int64_t w : prompt_work_) sum += w;
    return double(sum) / (double(n_prompt_ - first_) * n_layers_);
}

std::vector<double> LazyState::PromptLayerFractions() const {
    std::vector<double> out(n_layers_, 0.0);
    for (int32_t s = first_; s < n_prompt_ && s < static_cast<int32_t>(depth_.size()); ++s) {
        for (int32_t l = 0; l <= depth_[s]; ++l) out[l] += 1.0;
    }
    for (double& f : out) f = n_prompt_ > first_ ? f / (n_prompt_ - first_) : 1.0;
    return out;
}

}  // namespace prepack

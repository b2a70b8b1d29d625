#include "core/lazyllm/lazy_state.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"

namespace prepack {

absl::StatusOr<int32_t> ResolveReviveLimit(int32_t requested) {
    if (requested < -1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "lazy revive limit must be -1 (no bound), 0 (the default) or a count > 0, got ", requested));
    }
    return requested == 0 ? kDefaultLazyReviveLimit : requested;
}

LazyState::LazyState(KvBlockPool& pool, int32_t n_layers, int32_t dim, LazySchedule schedule, int32_t computed)
    : n_layers_(n_layers), schedule_(std::move(schedule)), aux_(pool, dim), prompt_work_(n_layers, 0) {
    depth_.assign(computed, static_cast<int16_t>(n_layers - 1));
    first_ = computed;
}

void LazyState::Reserve(int32_t slots) {
    if (slots > static_cast<int32_t>(depth_.size())) depth_.resize(slots, -1);
}

void LazyState::BeginStep() {
    revived_in_step_ = 0;
    ++steps_;
}

int32_t LazyState::revive_room(int32_t layer) const {
    if (revive_limit_ < 0) return std::numeric_limits<int32_t>::max();
    const int64_t cost = std::max(1, n_layers_ - 1 - layer);   // token-layers one revival adds
    const int64_t share = static_cast<int64_t>(kLazyReviveShare * static_cast<double>(skipped_work_));
    const int64_t affordable = std::max<int64_t>(0, share - revived_work_) / cost;
    return static_cast<int32_t>(std::min<int64_t>(affordable, std::max(0, revive_limit_ - revived_in_step_)));
}

void LazyState::Stopped(int32_t layer) { skipped_work_ += std::max(0, n_layers_ - 1 - layer); }

void LazyState::Revived(int32_t n, int32_t layer) {
    revived_in_step_ += n;
    revived_ += n;
    revived_work_ += static_cast<int64_t>(n) * std::max(0, n_layers_ - 1 - layer);
    max_revived_in_step_ = std::max(max_revived_in_step_, revived_in_step_);
}

bool LazyState::HasStoppedAt(int32_t layer, int32_t end) const {
    if (aux_.size() == 0) return false;
    const int32_t n = std::min(end, static_cast<int32_t>(depth_.size()));
    for (int32_t j = 0; j < n; ++j) {
        if (depth_[j] == layer && aux_.Get(j) != nullptr) return true;
    }
    return false;
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

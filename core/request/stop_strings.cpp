#include "core/request/stop_strings.h"

#include <algorithm>

namespace prepack {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
    for (std::string& s : stops) {
        if (!s.empty()) stops_.push_back(std::move(s));
    }
}

std::string StopMatcher::Push(std::string_view text) {
    if (stopped_) return "";
    held_.append(text);
    // Earliest complete stop string wins.
    size_t cut = std::string::npos;
    for (const std::string& s : stops_) cut = std::min(cut, held_.find(s));
    if (cut != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, cut);
        held_.clear();
        return out;
    }
    // Hold back the longest tail that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n) {
            if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
                keep = n;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
}

std::string StopMatcher::Flush() {
    std::string out;
    if (!stopped_) out.swap(held_);
    return out;
}

}  // namespace prepack

// Stop-string matching over streamed text. Text that could still turn out to
// be the start of a stop string is held back, so a stop string is never
// emitted, not even partially.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace prepack {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops);

    // Adds generated text; returns the text that is now safe to emit.
    // After a stop string is seen, stopped() is true and the returned text
    // ends right before it.
    std::string Push(std::string_view text);
    // Releases held-back text at the end of generation (not after a stop).
    std::string Flush();
    bool stopped() const { return stopped_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace prepack

// For the grammar front ends' tests: a GBNF text through the real engine
// (ParseGbnf, Compile over the byte vocabulary, a Matcher), answering "is
// this text a whole sentence of the grammar?".
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "core/grammar/gbnf.h"
#include "core/grammar/matcher.h"

namespace prepack::grammar {

class Sentences {
public:
    explicit Sentences(const std::string& gbnf) {
        absl::StatusOr<Grammar> g = ParseGbnf(gbnf);
        EXPECT_TRUE(g.ok()) << g.status() << "\n" << gbnf;
        if (!g.ok()) return;
        absl::StatusOr<std::shared_ptr<const CompiledGrammar>> c = Compile(*std::move(g), ByteVocabulary());
        EXPECT_TRUE(c.ok()) << c.status();
        if (c.ok()) matcher_ = std::make_unique<Matcher>(*std::move(c));
    }
    bool ok() const { return matcher_ != nullptr; }
    // False (and a test failure already reported) when the grammar did not compile.
    bool Accepts(std::string_view text) {
        if (!matcher_) return false;
        matcher_->Rollback(matcher_->num_accepted());
        const bool accepted = matcher_->AcceptBytes(text) && matcher_->CanEnd();
        EXPECT_TRUE(matcher_->status().ok()) << matcher_->status();
        return accepted;
    }

private:
    std::unique_ptr<Matcher> matcher_;
};

}  // namespace prepack::grammar

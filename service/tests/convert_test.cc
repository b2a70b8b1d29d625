// The UTF-8 guard in front of protobuf string fields: valid text passes
// unchanged, anything else becomes U+FFFD (protobuf would otherwise fail
// to parse the whole message on the client).
#include <gtest/gtest.h>

#include "convert.h"

namespace prepackd {
namespace {

const std::string kBad = "\xEF\xBF\xBD";

TEST(ToValidUtf8Test, ValidTextIsUnchanged) {
    for (const std::string s : {"", "hello", "caf\xC3\xA9", "\xE2\x82\xAC 5", "\xF0\x9F\x98\x80!", "\n\t\"x\""}) {
        EXPECT_EQ(ToValidUtf8(s), s);
    }
}

TEST(ToValidUtf8Test, InvalidBytesBecomeReplacementCharacters) {
    EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a" + kBad + "b");                // never valid
    EXPECT_EQ(ToValidUtf8("\xC3"), kBad);                                 // truncated
    EXPECT_EQ(ToValidUtf8("\xE2\x82"), kBad + kBad);                      // truncated, byte by byte
    EXPECT_EQ(ToValidUtf8("\xC0\xAF"), kBad + kBad);                      // overlong '/'
    EXPECT_EQ(ToValidUtf8("\xED\xA0\x80"), kBad + kBad + kBad);           // a surrogate
    EXPECT_EQ(ToValidUtf8("\xF4\x90\x80\x80"), kBad + kBad + kBad + kBad);   // past U+10FFFF
    EXPECT_EQ(ToValidUtf8("\x80" "ok"), kBad + "ok");                       // a lone continuation byte
}

}  // namespace
}  // namespace prepackd

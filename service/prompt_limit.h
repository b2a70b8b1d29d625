// The longest prompt text worth tokenizing. Tokenizing is linear in the
// text (seconds for megabytes) and happens before the context check, so a
// hostile client could make the server tokenize 15 MB only to refuse it. A
// token never covers more input bytes than the longest piece of the
// vocabulary, so text longer than context_length x that many bytes cannot
// fit the context and is refused (OUT_OF_RANGE) before any tokenizing.
#pragma once

#include <cstdint>

#include "prepack/prepack.h"

namespace prepackd {

// The input bytes one token can stand for, at most: the longest token as
// it decodes alone (its leading space included: Decode keeps every byte
// without a BOS), plus one byte of margin, and never less than
// kControlTokenBytes (control
// tokens decode to nothing through the C ABI, yet with parse_special their
// text, e.g. "<|reserved_special_token_250|>", is one token).
constexpr int32_t kControlTokenBytes = 32;
int32_t MaxBytesPerToken(const prepack_engine* engine, const prepack_model_desc& model);

// The default --max-prompt-bytes: context_length x MaxBytesPerToken.
uint64_t DerivedPromptByteLimit(const prepack_engine* engine, const prepack_model_desc& model);

}  // namespace prepackd

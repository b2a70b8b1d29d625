// The long-context task sets of `prepack eval lazy --tasks FILE`: parsing
// their JSON lines, building each task's document and prompt with the
// model's own tokenizer and chat template, and scoring an answer against the
// known ones. scripts/make_lazy_eval_tasks.py writes such files from any
// text; tests/data/lazy_eval/botchan_tasks.jsonl is the repo's.
//
// A task line (one JSON object; blank lines are skipped):
//   {"id": "needle-1k-d10", "kind": "needle" | "multi" | "qa",
//    "text": "botchan.txt",        the haystack, relative to the tasks file
//    "start_byte": 18211,          where the document starts (UTF-8 bytes)
//    "tokens": 1000,               the document's length in tokens, at least
//    "facts": [{"depth": 0.1, "sentence": "The secret number of ... is 7468."}],
//    "question": "What is the secret number of ...?",
//    "answers": ["7468", "7,468"],
//    "evidence": "..."}            optional: a phrase the document must hold
// `facts` is required (non-empty) for needle and multi, optional for qa.
// `answers`: any one entry suffices; an entry that is a list of strings is
// met only when the answer holds all of them (two values asked at once).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/base/status.h"
#include "core/chat/chat_template.h"
#include "core/model/tokenizer.h"

namespace prepack::cli {

struct LazyFact {
    double      depth = 0.0;   // where in the document, as a fraction of its bytes, in [0, 1]
    std::string sentence;
};

struct LazyTask {
    std::string                           where;        // "FILE:LINE", for messages
    std::string                           id, kind;
    std::string                           text_path;    // resolved against the tasks file's folder
    int64_t                               start_byte = 0;
    int32_t                               tokens = 0;   // the document's target length
    std::vector<LazyFact>                 facts;
    std::string                           question;
    std::vector<std::vector<std::string>> answers;      // any entry, all of its strings
    std::string                           evidence;     // "" when none
};

// One line of a tasks file: INVALID_ARGUMENT "WHERE: PROBLEM" for malformed
// JSON, a missing field, a field of the wrong type or out of range, or an
// unknown kind. `base_dir` resolves `text`.
absl::StatusOr<LazyTask> ParseLazyTaskLine(const std::string& line, const std::string& where,
                                           const std::string& base_dir);

// Every task of `path`, in order. NOT_FOUND when it cannot be read,
// INVALID_ARGUMENT as ParseLazyTaskLine (naming PATH:LINE), for a repeated
// id, or for a file without tasks.
absl::StatusOr<std::vector<LazyTask>> LoadLazyTasks(const std::string& path);

// The texts tasks point at, each read once.
class LazyTextCache {
public:
    // The text of `task.text_path`: NOT_FOUND naming the task's line and the
    // file when it cannot be read.
    absl::StatusOr<const std::string*> Get(const LazyTask& task);

private:
    std::map<std::string, std::string> texts_;
};

// A sentence boundary: the sentence ends at `end` (after its '.', '!' or '?'
// and any closing quotes or brackets) and the next begins at `next`, after
// the whitespace between them. The rule (scripts/make_lazy_eval_tasks.py has
// the same one): a terminator, closers, whitespace, then an upper-case ASCII
// letter, a digit or an opening quote or bracket; not after an abbreviation
// ("Mr.") or a single capital (an initial).
struct SentenceBoundary {
    size_t end = 0, next = 0;
};
// The boundaries of `text` from byte `from` on, in order.
std::vector<SentenceBoundary> SentenceBoundaries(std::string_view text, size_t from = 0);

struct LazyDocument {
    std::string         text;
    int32_t             tokens = 0;     // Encode(text) without BOS/EOS
    std::vector<size_t> fact_bytes;     // where each fact (in the task's order) begins in `text`
    size_t              haystack_bytes = 0;   // of the text's own sentences
};

// The task's document: whole sentences of `text` from start_byte until the
// document (facts included) reaches `tokens` tokens, each fact inserted at
// the sentence boundary nearest its depth. INVALID_ARGUMENT naming the task
// for a start_byte outside the text or inside a UTF-8 character, a text too
// short for the target, or a document that lacks the evidence.
absl::StatusOr<LazyDocument> BuildLazyDocument(const LazyTask& task, std::string_view text,
                                               const Tokenizer& tokenizer);

// The user's message: the document, then the instruction and the question.
std::string LazyTaskMessage(const LazyTask& task, const std::string& document);

// The prompt's ids: the message as the one user turn of a conversation in
// the model's chat template, as `prepack chat` renders it; for a model
// without one, the plain text "DOCUMENT\n\nQuestion: Q\nAnswer:" with BOS as
// the vocabulary says. Errors are the template's.
absl::StatusOr<std::vector<int32_t>> LazyTaskPrompt(const LazyTask& task, const std::string& document,
                                                    const Tokenizer& tokenizer, const ChatTemplates& templates);

// Whether `answer` holds an accepted answer: for some entry of task.answers,
// every string of it, compared without regard to ASCII case.
bool LazyAnswerCorrect(const LazyTask& task, std::string_view answer);

}  // namespace prepack::cli

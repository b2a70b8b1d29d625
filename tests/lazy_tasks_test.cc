// The task sets of `prepack eval lazy --tasks` (cli/lazy_tasks.h): lines
// parsed or refused by line number, documents built to their token target
// with the facts at their depths and on sentence boundaries, prompts in the
// model's chat template or plain, and answers scored by containment.
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/lazy_tasks.h"
#include "core/model/gguf.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using cli::BuildLazyDocument;
using cli::LazyDocument;
using cli::LazyTask;

const std::string kBotchan = std::string(PREPACK_SOURCE_DIR) + "/tests/data/lazy_eval/botchan.txt";

std::string TempFile(const std::string& name, const std::string& content) {
    const std::string path = ::testing::TempDir() + std::to_string(getpid()) + "_" + name;
    std::ofstream(path, std::ios::binary) << content;
    return path;
}

std::string NeedleLine(const std::string& id = "n1") {
    return nlohmann::json{{"id", id},
                          {"kind", "needle"},
                          {"text", "botchan.txt"},
                          {"start_byte", 0},
                          {"tokens", 300},
                          {"facts", {{{"depth", 0.5}, {"sentence", "The secret number of the blue lantern is 7468."}}}},
                          {"question", "What is the secret number of the blue lantern?"},
                          {"answers", {"7468", "7,468"}}}
        .dump();
}

// The vocabularies at hand: stories260K's (SentencePiece) and the fetched
// SmolLM2-135M-Instruct's (byte-level BPE, with a chat template).
struct NamedTokenizer {
    std::string name;
    std::unique_ptr<Tokenizer> tok;
};

std::vector<NamedTokenizer> Tokenizers() {
    std::vector<NamedTokenizer> out;
    const std::vector<std::pair<std::string, std::string>> files = {
        {"stories260K", testing::StoriesDir() + "/stories260K.gguf"}, {"SmolLM2", testing::ChatModelPath()}};
    for (const auto& [name, path] : files) {
        if (!testing::FileExists(path)) continue;
        auto file = GgufFile::Open(path);
        if (!file.ok()) continue;
        auto tok = Tokenizer::FromGguf(**file);
        if (!tok.ok()) continue;
        out.push_back({name, std::make_unique<Tokenizer>(std::move(*tok))});
    }
    return out;
}

#define REQUIRE_TOKENIZERS(toks)                                                                        \
    do {                                                                                                \
        if ((toks).empty()) {                                                                           \
            GTEST_SKIP() << "neither stories260K (" << testing::StoriesDir() << ") nor SmolLM2 ("        \
                         << testing::ChatModelPath() << ") is here: no tokenizer to build documents with"; \
        }                                                                                               \
    } while (0)

TEST(LazyTasks, ParsesAGoodLine) {
    auto t = cli::ParseLazyTaskLine(NeedleLine(), "f.jsonl:1", "/data/sets");
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->where, "f.jsonl:1");
    EXPECT_EQ(t->id, "n1");
    EXPECT_EQ(t->kind, "needle");
    EXPECT_EQ(t->text_path, "/data/sets/botchan.txt");
    EXPECT_EQ(t->start_byte, 0);
    EXPECT_EQ(t->tokens, 300);
    ASSERT_EQ(t->facts.size(), 1u);
    EXPECT_DOUBLE_EQ(t->facts[0].depth, 0.5);
    ASSERT_EQ(t->answers.size(), 2u);
    EXPECT_EQ(t->answers[1], std::vector<std::string>{"7,468"});
    EXPECT_TRUE(t->evidence.empty());

    // An absolute text path stays; qa needs no facts; a two-value answer.
    nlohmann::json qa = {{"id", "q"}, {"kind", "qa"}, {"text", "/abs/t.txt"}, {"start_byte", 5}, {"tokens", 10},
                         {"question", "Who?"}, {"answers", {{"a", "b"}, "c"}}, {"evidence", "x y"}};
    auto q = cli::ParseLazyTaskLine(qa.dump(), "f:2", "/data");
    ASSERT_TRUE(q.ok()) << q.status();
    EXPECT_EQ(q->text_path, "/abs/t.txt");
    EXPECT_TRUE(q->facts.empty());
    EXPECT_EQ(q->answers[0], (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(q->evidence, "x y");
}

TEST(LazyTasks, NamesEachBadLineAndItsProblem) {
    const nlohmann::json good = nlohmann::json::parse(NeedleLine());
    auto without = [&](const char* key) {
        nlohmann::json j = good;
        j.erase(key);
        return j.dump();
    };
    auto with = [&](const char* key, nlohmann::json v) {
        nlohmann::json j = good;
        j[key] = std::move(v);
        return j.dump();
    };
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"{\"id\": \"x\", ", "malformed JSON"},
        {"[1, 2]", "not a JSON object"},
        {without("id"), "missing field 'id'"},
        {without("question"), "missing field 'question'"},
        {without("answers"), "missing field 'answers'"},
        {without("text"), "missing field 'text'"},
        {without("tokens"), "missing field 'tokens'"},
        {without("facts"), "missing field 'facts'"},
        {with("kind", "summary"), "unknown kind 'summary'"},
        {with("id", 7), "field 'id' must be a non-empty string"},
        {with("tokens", 0), "field 'tokens' must be an integer"},
        {with("tokens", "1000"), "field 'tokens' must be an integer"},
        {with("start_byte", -1), "field 'start_byte' must be an integer"},
        {with("answers", nlohmann::json::array()), "field 'answers' must be a non-empty list"},
        {with("answers", {1}), "field 'answers' must be a non-empty list"},
        {with("answers", {""}), "field 'answers' must be a non-empty list"},
        {with("facts", nlohmann::json::array()), "field 'facts' is empty"},
        {with("facts", {{{"depth", 1.5}, {"sentence", "s"}}}), "facts[0].depth must be a number in [0, 1]"},
        {with("facts", {{{"depth", 0.5}}}), "facts[0].sentence must be a non-empty string"},
        {with("evidence", 3), "field 'evidence' must be a non-empty string"},
    };
    for (const auto& [line, problem] : cases) {
        // The bad line is the third, after a good one and a blank one.
        const std::string path = TempFile("bad.jsonl", NeedleLine("ok") + "\n\n" + line + "\n");
        auto tasks = cli::LoadLazyTasks(path);
        ASSERT_FALSE(tasks.ok()) << line;
        EXPECT_EQ(tasks.status().code(), absl::StatusCode::kInvalidArgument) << line;
        const std::string msg(tasks.status().message());
        EXPECT_NE(msg.find(path + ":3: "), std::string::npos) << msg;
        EXPECT_NE(msg.find(problem), std::string::npos) << msg;
    }
}

TEST(LazyTasks, RefusesRepeatedIdsEmptyAndMissingFiles) {
    auto twice = cli::LoadLazyTasks(TempFile("twice.jsonl", NeedleLine("a") + "\n" + NeedleLine("a") + "\n"));
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.status().message().find(":2: id 'a' repeats the one of line 1"), std::string::npos)
        << twice.status();
    auto empty = cli::LoadLazyTasks(TempFile("empty.jsonl", "\n  \n"));
    ASSERT_FALSE(empty.ok());
    EXPECT_NE(empty.status().message().find("holds no tasks"), std::string::npos) << empty.status();
    auto missing = cli::LoadLazyTasks("/nonexistent/tasks.jsonl");
    ASSERT_FALSE(missing.ok());
    EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
    EXPECT_NE(missing.status().message().find("/nonexistent/tasks.jsonl"), std::string::npos);

    // A text that cannot be read is named with the task's line.
    auto t = cli::ParseLazyTaskLine(NeedleLine(), "sets/f.jsonl:4", "/nonexistent");
    ASSERT_TRUE(t.ok());
    cli::LazyTextCache texts;
    auto text = texts.Get(*t);
    ASSERT_FALSE(text.ok());
    EXPECT_NE(text.status().message().find("sets/f.jsonl:4: cannot read the text file /nonexistent/botchan.txt"),
              std::string::npos)
        << text.status();
}

TEST(LazyTasks, SplitsSentencesButNotAbbreviationsOrInitials) {
    const std::string text =
        "Mr. Koga came. He left! \"Yes,\" she said. J. R. Kennedy wrote 3.5 pages. The end. "
        "(It rained.) Then e.g. dogs. 12 men went.";
    std::vector<std::string> starts;
    for (const cli::SentenceBoundary& b : cli::SentenceBoundaries(text)) {
        EXPECT_TRUE(text[b.end - 1] == '.' || text[b.end - 1] == '!' || text[b.end - 1] == ')' ||
                    text[b.end - 1] == '"')
            << b.end;
        starts.push_back(text.substr(b.next, 4));
    }
    EXPECT_EQ(starts, (std::vector<std::string>{"He l", "\"Yes", "J. R", "The ", "(It ", "Then", "12 m"}));
}

TEST(LazyTasks, ScoresByCaseInsensitiveContainment) {
    LazyTask t;
    t.answers = {{"Kiyo"}, {"7468", "2291"}};
    EXPECT_TRUE(cli::LazyAnswerCorrect(t, "Her name is KIYO."));
    EXPECT_TRUE(cli::LazyAnswerCorrect(t, "kiyo"));
    EXPECT_FALSE(cli::LazyAnswerCorrect(t, "Kiy o"));
    EXPECT_FALSE(cli::LazyAnswerCorrect(t, "The numbers are 7468 and 2290."));   // both, or it does not count
    EXPECT_TRUE(cli::LazyAnswerCorrect(t, "2291, then 7468"));
    EXPECT_FALSE(cli::LazyAnswerCorrect(t, ""));
}

// A sentence start some 20 KB into Botchan.
int64_t SentenceStart() {
    static const int64_t start = [] {
        const std::string text = testing::ReadFile(kBotchan);
        const auto b = cli::SentenceBoundaries(text, 20000);
        return b.empty() ? int64_t{0} : static_cast<int64_t>(b.front().next);
    }();
    return start;
}

LazyTask Task(int32_t tokens, std::vector<cli::LazyFact> facts, int64_t start = -1) {
    if (start < 0) start = SentenceStart();
    LazyTask t;
    t.where = "t.jsonl:1";
    t.id = "t";
    t.kind = facts.empty() ? "qa" : "multi";
    t.text_path = kBotchan;
    t.start_byte = start;
    t.tokens = tokens;
    t.facts = std::move(facts);
    t.question = "What is the secret number of the blue lantern?";
    t.answers = {{"7468"}};
    return t;
}

TEST(LazyTasks, DocumentReachesItsTargetWithFactsAtTheirDepths) {
    const auto toks = Tokenizers();
    REQUIRE_TOKENIZERS(toks);
    const std::string text = testing::ReadFile(kBotchan);
    ASSERT_GT(text.size(), 200000u);
    const std::vector<cli::LazyFact> facts = {{0.1, "The secret number of the blue lantern is 7468."},
                                              {0.5, "The red kettle was made by a craftsman named Tavrin."},
                                              {0.9, "The secret number of the green clock is 2291."}};
    for (const NamedTokenizer& nt : toks) {
        for (int32_t target : {300, 1000, 2000}) {
            SCOPED_TRACE(nt.name + ", " + std::to_string(target) + " tokens");
            const LazyTask t = Task(target, facts);
            auto d = BuildLazyDocument(t, text, *nt.tok);
            ASSERT_TRUE(d.ok()) << d.status();
            auto ids = nt.tok->Encode(d->text, false);
            ASSERT_TRUE(ids.ok());
            EXPECT_EQ(d->tokens, static_cast<int32_t>(ids->size()));
            // Reaches the target, by at most one sentence more.
            EXPECT_GE(d->tokens, target);
            EXPECT_LE(d->tokens, target + 120);
            // Ends at the end of a sentence.
            const char last = d->text.back();
            EXPECT_TRUE(last == '.' || last == '!' || last == '?' || last == '"' || last == '\'') << last;
            ASSERT_EQ(d->fact_bytes.size(), 3u);
            for (size_t f = 0; f < facts.size(); ++f) {
                const size_t at = d->fact_bytes[f];
                EXPECT_EQ(d->text.compare(at, facts[f].sentence.size(), facts[f].sentence), 0) << f;
                // Near its depth: half a sentence or so either way (a short
                // document's sentences are a large share of it).
                EXPECT_NEAR(double(at) / double(d->text.size()), facts[f].depth, target >= 1000 ? 0.04 : 0.25) << f;
                // On a boundary: at the start, or after a sentence's end and a
                // space; before whitespace.
                if (at > 0) {
                    ASSERT_GE(at, 2u);
                    EXPECT_EQ(d->text[at - 1], ' ');
                    const char end = d->text[at - 2];
                    EXPECT_TRUE(end == '.' || end == '!' || end == '?' || end == '"' || end == '\'' || end == ')')
                        << f << ": " << d->text.substr(at - 40, 80);
                }
                const size_t after = at + facts[f].sentence.size();
                EXPECT_TRUE(after == d->text.size() || std::isspace(static_cast<unsigned char>(d->text[after]))) << f;
            }
            // Without facts, the document is the text itself from start_byte.
            auto plain = BuildLazyDocument(Task(target, {}), text, *nt.tok);
            ASSERT_TRUE(plain.ok()) << plain.status();
            EXPECT_EQ(text.compare(t.start_byte, plain->text.size(), plain->text), 0);
            EXPECT_EQ(plain->haystack_bytes, plain->text.size());
            // Deterministic.
            auto again = BuildLazyDocument(t, text, *nt.tok);
            ASSERT_TRUE(again.ok());
            EXPECT_EQ(again->text, d->text);
        }
    }
}

TEST(LazyTasks, FactsAtTheEdgesAndTogether) {
    const auto toks = Tokenizers();
    REQUIRE_TOKENIZERS(toks);
    const std::string text = testing::ReadFile(kBotchan);
    const LazyTask t = Task(200, {{1.0, "Last fact."}, {0.0, "First fact."}, {0.0, "Second fact."}});
    auto d = BuildLazyDocument(t, text, *toks.front().tok);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(d->text.rfind("First fact. Second fact. ", 0), 0u) << d->text.substr(0, 80);
    EXPECT_EQ(d->fact_bytes[1], 0u);
    EXPECT_EQ(d->fact_bytes[2], 12u);
    // After the last sentence's end (a closing quote or bracket may follow it).
    ASSERT_GT(d->text.size(), 12u);
    EXPECT_EQ(d->text.substr(d->text.size() - 11), " Last fact.");
    const char end = d->text[d->text.size() - 12];
    EXPECT_TRUE(end == '.' || end == '!' || end == '?' || end == '"' || end == '\'' || end == ')') << end;
}

TEST(LazyTasks, RefusesDocumentsTheTextCannotGive) {
    const auto toks = Tokenizers();
    REQUIRE_TOKENIZERS(toks);
    const Tokenizer& tok = *toks.front().tok;
    const std::string text = testing::ReadFile(kBotchan);
    auto expect_error = [&](const LazyTask& t, const std::string& problem) {
        auto d = BuildLazyDocument(t, text, tok);
        ASSERT_FALSE(d.ok()) << problem;
        EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
        const std::string msg(d.status().message());
        EXPECT_EQ(msg.rfind("t.jsonl:1: ", 0), 0u) << msg;
        EXPECT_NE(msg.find(problem), std::string::npos) << msg;
    };
    expect_error(Task(100, {}, int64_t(text.size())), "is past the end of");
    expect_error(Task(5000, {}, int64_t(text.size()) - 3000), "fewer than the task's 5000");
    LazyTask qa = Task(100, {});
    qa.evidence = "But our maid Kiyo, who had been with us for ten years";
    expect_error(qa, "does not contain the evidence");
    // The evidence inside the window: built.
    qa.tokens = 300;
    qa.start_byte = static_cast<int64_t>(text.rfind(". ", text.find(qa.evidence) - 20)) + 2;
    auto d = BuildLazyDocument(qa, text, tok);
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_NE(d->text.find("Kiyo"), std::string::npos);
    // A start inside a UTF-8 character.
    const std::string accented = "Caf\xc3\xa9 au lait. It is good. It is hot.";
    LazyTask mid = Task(2, {}, 4);
    auto bad = BuildLazyDocument(mid, accented, tok);
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.status().message().find("inside a UTF-8 character"), std::string::npos) << bad.status();
}

TEST(LazyTasks, CommittedTaskSetParsesAndBuilds) {
    const std::string path = std::string(PREPACK_SOURCE_DIR) + "/tests/data/lazy_eval/botchan_tasks.jsonl";
    auto tasks = cli::LoadLazyTasks(path);
    ASSERT_TRUE(tasks.ok()) << tasks.status();
    EXPECT_GE(tasks->size(), 24u);
    std::map<std::string, int> kinds;
    for (const LazyTask& t : *tasks) ++kinds[t.kind];
    EXPECT_GE(kinds["needle"], 12);
    EXPECT_GE(kinds["multi"], 4);
    EXPECT_GE(kinds["qa"], 8);
    if (!testing::FileExists(testing::ChatModelPath())) {
        GTEST_SKIP() << testing::ChatModelPath() << " is absent: the documents are not built";
    }
    auto file = GgufFile::Open(testing::ChatModelPath());
    ASSERT_TRUE(file.ok());
    auto tok = Tokenizer::FromGguf(**file);
    ASSERT_TRUE(tok.ok());
    const ChatTemplates templates = ChatTemplates::Load(*tok);
    cli::LazyTextCache texts;
    for (const LazyTask& t : *tasks) {
        SCOPED_TRACE(t.id);
        auto text = texts.Get(t);
        ASSERT_TRUE(text.ok()) << text.status();
        auto d = BuildLazyDocument(t, **text, *tok);
        ASSERT_TRUE(d.ok()) << d.status();
        // A qa document holds an accepted answer.
        if (t.kind == "qa") {
            EXPECT_TRUE(cli::LazyAnswerCorrect(t, d->text));
        }
        auto prompt = cli::LazyTaskPrompt(t, d->text, *tok, templates);
        ASSERT_TRUE(prompt.ok()) << prompt.status();
        EXPECT_LT(prompt->size() + 32, 8192u);
    }
}

TEST(LazyTasks, PromptIsTheChatTemplateOrPlainText) {
    const auto toks = Tokenizers();
    REQUIRE_TOKENIZERS(toks);
    LazyTask t = Task(10, {});
    t.question = "Who is Kiyo?";
    for (const NamedTokenizer& nt : toks) {
        SCOPED_TRACE(nt.name);
        const ChatTemplates templates = ChatTemplates::Load(*nt.tok);
        auto ids = cli::LazyTaskPrompt(t, "Kiyo was the maid.", *nt.tok, templates);
        ASSERT_TRUE(ids.ok()) << ids.status();
        const std::string text = nt.tok->Decode(*ids);
        if (templates.empty()) {
            EXPECT_NE(text.find("Kiyo was the maid.\n\nQuestion: Who is Kiyo?\nAnswer:"), std::string::npos) << text;
            EXPECT_EQ(text.substr(text.size() - 7), "Answer:");
            if (nt.tok->add_bos()) {
                EXPECT_EQ(ids->front(), nt.tok->bos_id());
            }
        } else {
            // As `prepack chat` renders one user turn.
            Conversation conv;
            conv.messages.push_back({{"role", "user"}, {"content", cli::LazyTaskMessage(t, "Kiyo was the maid.")}});
            auto want = templates.Apply(*nt.tok, conv, true);
            ASSERT_TRUE(want.ok());
            EXPECT_EQ(*ids, want->ids);
            EXPECT_NE(want->text.find("Kiyo was the maid.\n\nAnswer briefly from the text above. Who is Kiyo?"),
                      std::string::npos)
                << want->text;
        }
    }
}

}  // namespace
}  // namespace prepack

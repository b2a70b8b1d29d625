// `prepack batch` on OpenAI batch files (openai/batch.h): each line's
// response body holds what the same request run alone gives (`prepack
// generate`, greedy, on the prompt; for chat on the prompt the model's own
// template renders), in OpenAI's output format; a bad line gets an error
// line naming its line number while the rest run; a rerun after a kill
// skips the lines already answered; and under BatchLLM a system prompt
// every conversation shares is computed once.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace prepack {
namespace {

using Json = nlohmann::json;

std::string Temp(const std::string& name) {
    return (std::filesystem::temp_directory_path() / (std::to_string(::getpid()) + "_" + name)).string();
}

std::string Quote(const std::string& s) {
    std::string q = "'";
    for (const char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string StoriesModel() { return testing::StoriesDir() + "/stories260K.gguf"; }

// The custom_id of question i ("q0", ...).
std::string QuestionId(size_t i) {
    std::string id = std::to_string(i);
    id.insert(id.begin(), 'q');
    return id;
}

Json Request(const std::string& custom_id, const std::string& url, Json body) {
    return Json{{"custom_id", custom_id}, {"method", "POST"}, {"url", url}, {"body", std::move(body)}};
}

void WriteLines(const std::string& path, const std::vector<std::string>& lines) {
    std::ofstream f(path);
    for (const std::string& l : lines) f << l << "\n";
}

// The output file's lines, parsed (a line cut short is left out).
std::vector<Json> ReadOutput(const std::string& path) {
    std::vector<Json> out;
    std::ifstream f(path);
    std::string line;
    while (std::getline(f, line)) {
        Json j = Json::parse(line, nullptr, false);
        if (!j.is_discarded()) out.push_back(std::move(j));
    }
    return out;
}

std::map<std::string, Json> ByCustomId(const std::vector<Json>& lines) {
    std::map<std::string, Json> m;
    for (const Json& j : lines) {
        if (j["custom_id"].is_string()) m[j["custom_id"].get<std::string>()] = j;
    }
    return m;
}

// The error line whose message names input line `n` (nullptr when none).
const Json* ErrorOfLine(const std::vector<Json>& lines, int n) {
    const std::string prefix = "line " + std::to_string(n) + ": ";
    for (const Json& j : lines) {
        if (j["error"].is_object() && j["error"]["message"].get<std::string>().rfind(prefix, 0) == 0) return &j;
    }
    return nullptr;
}

// OpenAI's output line: exactly id, custom_id, response, error; a response
// with status_code, request_id and body.
void ExpectOutputShape(const Json& j) {
    ASSERT_TRUE(j.is_object()) << j;
    EXPECT_EQ(j.size(), 4u) << j;
    EXPECT_EQ(j["id"].get<std::string>().rfind("batch_req_", 0), 0u) << j;
    EXPECT_TRUE(j.contains("custom_id") && j.contains("response") && j.contains("error")) << j;
    if (j["response"].is_object()) {
        EXPECT_TRUE(j["response"]["status_code"].is_number_integer()) << j;
        EXPECT_FALSE(j["response"]["request_id"].get<std::string>().empty()) << j;
        EXPECT_TRUE(j["response"]["body"].is_object()) << j;
    }
}

// `prepack generate` alone, greedy: what a line's answer must be.
struct Alone {
    std::string text;
    size_t      prompt_tokens = 0;
    size_t      completion_tokens = 0;
    std::string finish_reason;   // OpenAI's: the model's end and stop strings are "stop"
};

Alone Generate(const std::string& model, const std::string& prompt, int max_tokens, bool parse_special = false) {
    int code = 0;
    const std::string out = testing::RunCli("generate --model " + Quote(model) + " --threads 1 --temperature 0 --json" +
                                                " --max-tokens " + std::to_string(max_tokens) +
                                                (parse_special ? " --parse-special" : "") + " --prompt " + Quote(prompt),
                                            &code);
    EXPECT_EQ(code, 0) << out;
    const Json j = Json::parse(out, nullptr, false);
    if (j.is_discarded()) {
        ADD_FAILURE() << "generate printed no JSON: " << out;
        return {};
    }
    const std::string finish = j["finish_reason"];
    return {j["text"], j["prompt_tokens"].size(), j["tokens"].size(), finish == "length" ? "length" : "stop"};
}

// `batch` on `in`; *log gets what it printed (progress and summary).
int RunBatch(const std::string& model, const std::string& in, const std::string& out, std::string* log,
             const std::string& extra = "") {
    int code = 0;
    *log = testing::RunCli("batch --model " + Quote(model) + " --threads 1 --input " + in + " --output " + out + " " +
                               extra,
                           &code, /*merge_stderr=*/true);
    return code;
}

// "batch: done; X of Y prompt tokens computed ...": X and Y.
std::pair<long, long> ComputedOfTotal(const std::string& log) {
    long computed = -1, total = -1;
    const size_t at = log.find("batch: done; ");
    if (at != std::string::npos) std::sscanf(log.c_str() + at, "batch: done; %ld of %ld", &computed, &total);
    return {computed, total};
}

const std::string kShared =
    "The little robot walked along the river bank and looked at the stars above the quiet town";

// The completions file: good lines among bad ones (1-based line numbers in the comments).
std::vector<std::string> CompletionLines() {
    const Json greedy = {{"model", "stories260K"}, {"temperature", 0}};
    auto body = [&](Json more) {
        Json b = greedy;
        b.update(more);
        return b;
    };
    return {
        Request("c1", "/v1/completions", body({{"prompt", kShared + " and then"}, {"max_tokens", 10}})).dump(),   // 1
        Request("c2", "/v1/completions", body({{"prompt", kShared + " while the cat"}, {"max_tokens", 8}})).dump(),
        "{\"custom_id\": \"broken\", \"method\": ",                                                               // 3
        Request("c3", "/v1/completions",
                body({{"prompt", {kShared + " so", kShared + " but"}}, {"n", 2}, {"max_tokens", 6}}))
            .dump(),
        Request("c4", "/v1/embeddings", body({{"input", "x"}})).dump(),                                          // 5
        Request("c5", "/v1/completions", body({{"prompt", "x"}, {"top_p", 9}})).dump(),
        Request("c6", "/v1/completions", body({{"prompt", "x"}, {"model", "gpt-4o-mini"}})).dump(),               // 7
        R"({"id": "x", "prompt": "a line in prepack's own format"})",
        Request("c7", "/completions", body({{"prompt", "Once upon a time"}, {"echo", true}, {"max_tokens", 4}})).dump(),
    };
}

void ExpectChoice(const Json& choice, const Alone& alone, size_t index, const std::string& echo = "") {
    EXPECT_EQ(choice["index"], index);
    EXPECT_EQ(choice["text"], echo + alone.text);
    EXPECT_EQ(choice["finish_reason"], alone.finish_reason);
    EXPECT_TRUE(choice["logprobs"].is_null());
}

TEST(OpenAiBatchCli, CompletionsEqualTheirRequestsAloneAndBadLinesAreNamed) {
    PREPACK_REQUIRE_STORIES();
    const std::string in = Temp("openai_completions_in.jsonl"), out = Temp("openai_completions_out.jsonl");
    WriteLines(in, CompletionLines());
    std::remove(out.c_str());
    std::string log;
    EXPECT_EQ(RunBatch(StoriesModel(), in, out, &log), 1) << "bad lines make the run report a failure\n" << log;
    const std::vector<Json> lines = ReadOutput(out);
    ASSERT_EQ(lines.size(), 9u) << log;
    for (const Json& j : lines) ExpectOutputShape(j);
    const auto by_id = ByCustomId(lines);

    // The good lines: 200, the body of /v1/completions, each choice what generate gives alone.
    for (const auto& [id, prompt, max_tokens] : std::vector<std::tuple<std::string, std::string, int>>{
             {"c1", kShared + " and then", 10}, {"c2", kShared + " while the cat", 8}}) {
        SCOPED_TRACE(id);
        ASSERT_TRUE(by_id.count(id));
        const Json& line = by_id.at(id);
        EXPECT_TRUE(line["error"].is_null());
        EXPECT_EQ(line["response"]["status_code"], 200);
        const Json& body = line["response"]["body"];
        EXPECT_EQ(body["object"], "text_completion");
        EXPECT_EQ(body["model"], "stories260K");
        EXPECT_EQ(body["id"].get<std::string>().rfind("cmpl-", 0), 0u);
        ASSERT_EQ(body["choices"].size(), 1u);
        const Alone alone = Generate(StoriesModel(), prompt, max_tokens);
        ExpectChoice(body["choices"][0], alone, 0);
        EXPECT_EQ(body["usage"]["prompt_tokens"], alone.prompt_tokens);
        EXPECT_EQ(body["usage"]["completion_tokens"], alone.completion_tokens);
        EXPECT_EQ(body["usage"]["total_tokens"], alone.prompt_tokens + alone.completion_tokens);
    }
    {   // Two prompts x n = 2: four choices, a prompt's usage counted once.
        SCOPED_TRACE("c3");
        const Json& body = by_id.at("c3")["response"]["body"];
        ASSERT_EQ(body["choices"].size(), 4u);
        const Alone so = Generate(StoriesModel(), kShared + " so", 6), but = Generate(StoriesModel(), kShared + " but", 6);
        for (size_t k = 0; k < 4; ++k) ExpectChoice(body["choices"][k], k < 2 ? so : but, k);
        EXPECT_EQ(body["usage"]["prompt_tokens"], so.prompt_tokens + but.prompt_tokens);
        EXPECT_EQ(body["usage"]["completion_tokens"], 2 * (so.completion_tokens + but.completion_tokens));
    }
    {   // echo: the prompt first (the url without /v1 is the same endpoint).
        SCOPED_TRACE("c7");
        const Json& body = by_id.at("c7")["response"]["body"];
        ASSERT_EQ(body["choices"].size(), 1u);
        ExpectChoice(body["choices"][0], Generate(StoriesModel(), "Once upon a time", 4), 0, "Once upon a time");
    }

    // The bad lines, each named by its line number; the ones with a body
    // carry the HTTP API's status and error envelope.
    for (const int n : {3, 5, 6, 7, 8}) {
        SCOPED_TRACE("line " + std::to_string(n));
        const Json* e = ErrorOfLine(lines, n);
        ASSERT_NE(e, nullptr);
        EXPECT_FALSE((*e)["error"]["code"].get<std::string>().empty());
    }
    EXPECT_TRUE((*ErrorOfLine(lines, 3))["response"].is_null());
    EXPECT_TRUE((*ErrorOfLine(lines, 3))["custom_id"].is_null());
    EXPECT_EQ((*ErrorOfLine(lines, 5))["custom_id"], "c4");
    EXPECT_TRUE((*ErrorOfLine(lines, 5))["response"].is_null());
    EXPECT_NE((*ErrorOfLine(lines, 5))["error"]["message"].get<std::string>().find("url"), std::string::npos);
    const Json& top_p = (*ErrorOfLine(lines, 6))["response"];
    EXPECT_EQ(top_p["status_code"], 400);
    EXPECT_EQ(top_p["body"]["error"]["param"], "top_p");
    EXPECT_EQ(top_p["body"]["error"]["type"], "invalid_request_error");
    const Json& model = (*ErrorOfLine(lines, 7))["response"];
    EXPECT_EQ(model["status_code"], 404);
    EXPECT_EQ(model["body"]["error"]["code"], "model_not_found");
    EXPECT_NE((*ErrorOfLine(lines, 8))["error"]["message"].get<std::string>().find("custom_id"), std::string::npos);
    std::remove(in.c_str());
    std::remove(out.c_str());
}

TEST(OpenAiBatchCli, AKilledRunResumesWithoutRepeatingALine) {
    PREPACK_REQUIRE_STORIES();
    const std::string in = Temp("openai_resume_in.jsonl"), full = Temp("openai_resume_full.jsonl"),
                      out = Temp("openai_resume_out.jsonl");
    WriteLines(in, CompletionLines());
    std::remove(full.c_str());
    std::string log;
    RunBatch(StoriesModel(), in, full, &log);
    const std::vector<Json> complete = ReadOutput(full);
    ASSERT_EQ(complete.size(), 9u) << log;

    // Killed after the error lines and one answer, halfway through the next.
    {
        std::ofstream f(out);
        for (const Json& j : complete) {
            if (!j["error"].is_null()) f << j.dump() << "\n";
        }
        f << ByCustomId(complete).at("c2").dump() << "\n" << R"({"id": "batch_req_1", "custom_id": "c1", "resp)";
    }
    EXPECT_EQ(RunBatch(StoriesModel(), in, out, &log), 0) << "nothing failed in this run\n" << log;
    EXPECT_NE(log.find("3 OpenAI batch lines to run, 6 already"), std::string::npos) << log;
    const std::vector<Json> lines = ReadOutput(out);
    EXPECT_EQ(lines.size(), complete.size()) << "every line answered exactly once";
    std::map<std::string, int> seen;
    for (const Json& j : lines) ++seen[j["custom_id"].is_string() ? j["custom_id"].get<std::string>()
                                                                  : j["error"]["message"].get<std::string>()];
    for (const auto& [key, n] : seen) EXPECT_EQ(n, 1) << key << " written " << n << " times";
    const auto before = ByCustomId(complete), after = ByCustomId(lines);
    for (const char* id : {"c1", "c3", "c7"}) {
        EXPECT_EQ(after.at(id)["response"]["body"]["choices"], before.at(id)["response"]["body"]["choices"]) << id;
    }
    std::remove(in.c_str());
    std::remove(full.c_str());
    std::remove(out.c_str());
}

// The conversations a chat file holds: one long system prompt, a question
// each. (Their greedy answers have clear margins: computing the shared
// prefix apart changes the rounding a little, which a near tie would show.)
const std::string kSystem =
    "You are a helpful assistant who answers questions about animals, plants and the weather in short, friendly "
    "sentences. Always be precise, kind and brief, and never invent facts you are unsure about.";
const std::vector<std::string> kQuestions = {"What do cats eat?", "Why is the sky blue?",
                                             "How tall do sunflowers grow?", "Where does rain come from?"};

Json Conversation(const std::string& question) {
    return Json::array({{{"role", "system"}, {"content", kSystem}}, {{"role", "user"}, {"content", question}}});
}

// The model's template on `messages`, as `chat-template render` gives it: text and ids.
std::pair<std::string, std::vector<int32_t>> Render(const std::string& model, const Json& messages) {
    const std::string conv = Temp("openai_conv.json");
    std::ofstream(conv) << Json{{"messages", messages}, {"add_generation_prompt", true}}.dump();
    int code = 0;
    const std::string out =
        testing::RunCli("chat-template render --json --model " + Quote(model) + " --input " + conv, &code);
    std::remove(conv.c_str());
    EXPECT_EQ(code, 0) << out;
    const Json j = Json::parse(out, nullptr, false);
    if (j.is_discarded()) return {};
    return {j["text"], j["ids"].get<std::vector<int32_t>>()};
}

TEST(OpenAiBatchCli, ChatEqualsItsRenderedPromptAloneAndTheSystemPromptIsComputedOnce) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const std::string model = testing::ChatModelPath();
    const std::string id = std::filesystem::path(model).stem().string();   // SmolLM2-135M-Instruct.Q4_1
    const std::string in = Temp("openai_chat_in.jsonl"), out = Temp("openai_chat_out.jsonl");
    std::vector<std::string> lines;
    for (size_t i = 0; i < kQuestions.size(); ++i) {
        lines.push_back(Request(QuestionId(i), "/v1/chat/completions",
                                {{"model", id}, {"messages", Conversation(kQuestions[i])}, {"max_tokens", 12},
                                 {"temperature", 0}})
                            .dump());
    }
    // A bad message among them (line 5): the rest run regardless.
    lines.push_back(Request("bad", "/v1/chat/completions",
                            {{"model", id}, {"messages", {{{"role", "robot"}, {"content", "beep"}}}}})
                        .dump());
    WriteLines(in, lines);
    std::remove(out.c_str());
    std::string log;
    EXPECT_EQ(RunBatch(model, in, out, &log, "--policy batchllm"), 1) << log;
    const std::vector<Json> output = ReadOutput(out);
    ASSERT_EQ(output.size(), kQuestions.size() + 1) << log;
    const auto by_id = ByCustomId(output);

    size_t total = 0, shared = 0, prefix_tree = 0;   // tokens: every prompt's, their common prefix's, the trie's
    std::set<std::vector<int32_t>> prefixes;
    std::vector<int32_t> common;
    for (size_t i = 0; i < kQuestions.size(); ++i) {
        const std::string cid = QuestionId(i);
        SCOPED_TRACE(cid);
        ASSERT_TRUE(by_id.count(cid));
        const Json& line = by_id.at(cid);
        ExpectOutputShape(line);
        EXPECT_TRUE(line["error"].is_null());
        EXPECT_EQ(line["response"]["status_code"], 200);
        const Json& body = line["response"]["body"];
        EXPECT_EQ(body["object"], "chat.completion");
        EXPECT_EQ(body["model"], id);
        ASSERT_EQ(body["choices"].size(), 1u);
        const Json& choice = body["choices"][0];
        EXPECT_EQ(choice["message"]["role"], "assistant");
        // Alone: generate on the prompt the template renders (its markup
        // read as control tokens), the same ids as the chat request's.
        const auto [text, ids] = Render(model, Conversation(kQuestions[i]));
        const Alone alone = Generate(model, text, 12, /*parse_special=*/true);
        EXPECT_EQ(alone.prompt_tokens, ids.size());
        EXPECT_EQ(choice["message"]["content"], alone.text);
        EXPECT_EQ(choice["finish_reason"], alone.finish_reason);
        EXPECT_EQ(body["usage"]["prompt_tokens"], ids.size());
        EXPECT_EQ(body["usage"]["completion_tokens"], alone.completion_tokens);
        total += ids.size();
        for (size_t k = 1; k <= ids.size(); ++k) prefixes.insert(std::vector<int32_t>(ids.begin(), ids.begin() + k));
        if (i == 0) {
            common = ids;
        } else {
            const auto diff = std::mismatch(common.begin(), common.end(), ids.begin(), ids.end());
            common.erase(diff.first, common.end());
        }
    }
    shared = common.size();
    prefix_tree = prefixes.size();
    ASSERT_GT(shared, 40u) << "the conversations should share the system prompt";
    const Json* bad = ErrorOfLine(output, 5);
    ASSERT_NE(bad, nullptr);
    EXPECT_EQ((*bad)["response"]["status_code"], 400);
    EXPECT_EQ((*bad)["response"]["body"]["error"]["param"], "messages[0].role");

    // Computed once: at most the shared prefix once plus every suffix, and
    // no less than the prefix tree of the prompts holds.
    const auto [computed, submitted] = ComputedOfTotal(log);
    EXPECT_EQ(submitted, static_cast<long>(total)) << log;
    EXPECT_LE(computed, static_cast<long>(total - (kQuestions.size() - 1) * shared)) << log;
    EXPECT_GE(computed, static_cast<long>(prefix_tree)) << log;
    std::remove(in.c_str());
    std::remove(out.c_str());
}

}  // namespace
}  // namespace prepack

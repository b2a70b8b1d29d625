// openai/batch.h without a model: which lines are requests, what each bad
// line's output says, and when a line's output is due (its last choice, or
// its first error, once).
#include <gtest/gtest.h>

#include "openai/batch.h"

namespace prepack::openai {
namespace {

const BatchModel kModel{"m", 100, kMaxChoices};

std::string LineText(const Json& body, const std::string& url = "/v1/completions") {
    return Json{{"custom_id", "r"}, {"method", "POST"}, {"url", url}, {"body", body}}.dump();
}

TEST(OpenAiBatchLine, TellsTheFormatsApart) {
    EXPECT_TRUE(IsBatchLine(Json::parse(R"({"custom_id": "a"})")));
    EXPECT_TRUE(IsBatchLine(Json::parse(R"({"url": "/v1/completions"})")));
    EXPECT_FALSE(IsBatchLine(Json::parse(R"({"id": "a", "prompt": "x"})")));   // prepack's own
}

TEST(OpenAiBatchLine, ParsesBothEndpoints) {
    const BatchEntry chat = ParseBatchLine(
        LineText({{"model", "m"}, {"messages", {{{"role", "user"}, {"content", "hi"}}}}}, "/v1/chat/completions"), 1,
        kModel);
    ASSERT_TRUE(chat.status.ok()) << chat.status;
    EXPECT_EQ(chat.custom_id, "r");
    EXPECT_EQ(chat.request.api, Api::kChat);
    ASSERT_EQ(chat.request.chat.messages.size(), 1u);
    EXPECT_EQ(chat.request.chat.messages[0].content, "hi");
    const BatchEntry text =
        ParseBatchLine(LineText({{"model", "m"}, {"prompt", {1, 2, 3}}, {"n", 2}}, "/completions"), 2, kModel);
    ASSERT_TRUE(text.status.ok()) << text.status;
    EXPECT_EQ(text.request.api, Api::kCompletions);
    EXPECT_EQ(text.request.choices(), 2);
    EXPECT_EQ(text.request.prompts[0].ids, (std::vector<int32_t>{1, 2, 3}));
}

TEST(OpenAiBatchLine, EachBadLineSaysWhyAndWhere) {
    struct Case {
        std::string text;
        bool        body_error;   // the HTTP API's answer to the body
        std::string field;        // what the message names
        int         status;       // the response's status (0: none)
    };
    const std::vector<Case> cases = {
        {"{\"custom_id\": ", false, "not valid JSON", 0},
        {"[1]", false, "must be a JSON object", 0},
        {R"({"method": "POST", "url": "/v1/completions", "body": {}})", false, "custom_id", 0},
        {R"({"custom_id": "r", "method": "GET", "url": "/v1/completions", "body": {}})", false, "method", 0},
        {LineText({{"model", "m"}}, "/v1/embeddings"), false, "url", 0},
        {R"({"custom_id": "r", "method": "POST", "url": "/v1/completions", "body": "x"})", false, "body", 0},
        {LineText({{"model", "m"}, {"prompt", "x"}, {"stream", true}}), true, "stream", 400},
        {LineText({{"model", "gpt-4o"}, {"prompt", "x"}}), true, "model", 404},
        {LineText({{"model", "m"}, {"prompt", {1, 100}}}), true, "prompt[1]", 400},
        {LineText({{"model", "m"}, {"prompt", "x"}, {"logit_bias", {{"1", 2}}}}), true, "logit_bias", 400},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const Case& c = cases[i];
        SCOPED_TRACE(c.text);
        const BatchEntry e = ParseBatchLine(c.text, i + 7, kModel);
        ASSERT_FALSE(e.status.ok());
        EXPECT_EQ(e.body_error, c.body_error);
        const Json out = BatchErrorLine(e, e.status, e.body_error);
        const std::string message = out["error"]["message"];
        EXPECT_EQ(message.rfind("line " + std::to_string(i + 7) + ": ", 0), 0u) << message;
        EXPECT_NE(message.find(c.field), std::string::npos) << message;
        if (c.status == 0) {
            EXPECT_TRUE(out["response"].is_null());
            EXPECT_EQ(out["error"]["code"], "invalid_batch_line");
        } else {
            EXPECT_EQ(out["response"]["status_code"], c.status);
            EXPECT_EQ(out["response"]["body"]["error"]["param"], c.field);
        }
    }
}

TEST(OpenAiBatchLine, ALineIsAnsweredOnceItsLastChoiceOrFirstErrorEnds) {
    Pieces pieces([](const std::vector<int32_t>& ids) {
        std::string text;
        for (int32_t id : ids) text += static_cast<char>('a' + id);
        return text;
    });
    BatchEntry e = ParseBatchLine(LineText({{"model", "m"}, {"prompt", {"x", "y"}}, {"n", 2}}), 1, kModel);
    ASSERT_TRUE(e.status.ok()) << e.status;
    BatchLineRun ok(e);
    ASSERT_EQ(ok.choices(), 4u);
    for (size_t k = 0; k < 4; ++k) {
        Choice& c = ok.choice(k);
        c.text = std::to_string(k);
        c.prompt_tokens = k < 2 ? 3 : 5;   // per prompt, whatever n
        c.completion_tokens = 2;
        const std::optional<Json> line = ok.End(absl::OkStatus(), "m", pieces);
        ASSERT_EQ(line.has_value(), k == 3);
        if (!line) continue;
        EXPECT_EQ((*line)["custom_id"], "r");
        EXPECT_TRUE((*line)["error"].is_null());
        const Json& body = (*line)["response"]["body"];
        EXPECT_EQ(body["object"], "text_completion");
        EXPECT_EQ(body["choices"][3]["text"], "3");
        EXPECT_EQ(body["usage"]["prompt_tokens"], 8);
        EXPECT_EQ(body["usage"]["completion_tokens"], 8);
    }
    BatchLineRun failing(e);
    const std::optional<Json> first = failing.End(absl::DeadlineExceededError("deadline exceeded"), "m", pieces);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ((*first)["response"]["status_code"], 500);
    EXPECT_FALSE(failing.End(absl::OkStatus(), "m", pieces).has_value()) << "answered once";
}

}  // namespace
}  // namespace prepack::openai

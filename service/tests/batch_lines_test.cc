// GenerateBatch with OpenAI batch lines (http/batch_lines.h): each line is
// answered by its OpenAI batch output line, whose body holds what the same
// request sent alone gives (Generate / Chat, greedy); a bad line gets an
// error line naming its line number while the others run; under BatchLLM
// the system prompt every conversation shares is computed once.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client_util.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

using Json = nlohmann::json;

const std::string kSmol = PREPACK_CHAT_MODEL;
const std::string kStories = std::string(PREPACK_MODELS_DIR) + "/stories260K/stories260K.gguf";

std::string Line(const std::string& custom_id, const std::string& url, const Json& body) {
    return Json{{"custom_id", custom_id}, {"method", "POST"}, {"url", url}, {"body", body}}.dump();
}

// Runs the lines as one GenerateBatch; the output lines by line index.
grpc::Status RunLines(prepack::v1::Prepack::Stub& stub, const std::vector<std::string>& lines,
                      std::map<uint32_t, Json>* out) {
    prepack::v1::GenerateBatchRequest batch;
    for (const std::string& l : lines) batch.add_openai_batch_lines(l);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub.GenerateBatch(&ctx, batch);
    prepack::v1::GenerateBatchResponse resp;
    while (reader->Read(&resp)) {
        EXPECT_FALSE(resp.has_result()) << "a line is answered by its output line only";
        EXPECT_EQ(out->count(resp.index()), 0u) << "line " << resp.index() << " answered twice";
        (*out)[resp.index()] = Json::parse(resp.openai_batch_line());
    }
    return reader->Finish();
}

// An answered line: OpenAI's output shape, 200 and the response body.
const Json& BodyOf(const Json& line) {
    EXPECT_EQ(line.size(), 4u) << line;
    EXPECT_EQ(line["id"].get<std::string>().rfind("batch_req_", 0), 0u) << line;
    EXPECT_TRUE(line["error"].is_null()) << line;
    EXPECT_EQ(line["response"]["status_code"], 200) << line;
    EXPECT_FALSE(line["response"]["request_id"].get<std::string>().empty()) << line;
    return line["response"]["body"];
}

TEST(BatchLinesTest, CompletionsEqualGenerateAloneAndBadLinesAreNamed) {
    if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found";
    auto server = StartModel(kStories, {"--policy", "batchllm"});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    const std::string shared = "The little robot walked along the river bank and looked at the stars above the town";
    const std::vector<std::string> prompts = {shared + " and then", shared + " while the cat"};
    const Json greedy = {{"model", "stories260K"}, {"temperature", 0}, {"max_tokens", 9}};
    auto with = [&](Json more) {
        Json b = greedy;
        b.update(more);
        return b;
    };
    const std::vector<std::string> lines = {
        Line("a", "/v1/completions", with({{"prompt", prompts[0]}})),
        Line("b", "/v1/completions", with({{"prompt", prompts[1]}, {"n", 2}})),
        "{not json",                                                                     // line 3
        Line("c", "/v1/completions", with({{"prompt", "x"}, {"presence_penalty", 1}})),   // line 4
        Line("d", "/v1/embeddings", with({{"input", "x"}})),                              // line 5
    };
    std::map<uint32_t, Json> out;
    const grpc::Status st = RunLines(*stub, lines, &out);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(out.size(), lines.size());

    for (size_t i = 0; i < 2; ++i) {
        SCOPED_TRACE("line " + std::to_string(i + 1));
        EXPECT_EQ(out[i]["custom_id"], i == 0 ? "a" : "b");
        const Json& body = BodyOf(out[i]);
        EXPECT_EQ(body["object"], "text_completion");
        EXPECT_EQ(body["model"], "stories260K");
        const Generated alone = RunGenerate(*stub, Greedy(prompts[i], 9));
        ASSERT_TRUE(alone.status.ok()) << alone.status.error_message();
        const size_t n = i == 0 ? 1 : 2;
        ASSERT_EQ(body["choices"].size(), n);
        for (size_t k = 0; k < n; ++k) {
            EXPECT_EQ(body["choices"][k]["index"], k);
            EXPECT_EQ(body["choices"][k]["text"], alone.text);
            EXPECT_EQ(body["choices"][k]["finish_reason"],
                      alone.finish == prepack::v1::FINISH_REASON_LENGTH ? "length" : "stop");
        }
        EXPECT_EQ(body["usage"]["prompt_tokens"], alone.usage.prompt_tokens());
        EXPECT_EQ(body["usage"]["completion_tokens"], n * alone.ids.size());
    }
    // Bad lines: named by their 1-based number; a body the HTTP API would
    // refuse carries its status and envelope.
    for (const uint32_t i : {2u, 3u, 4u}) {
        SCOPED_TRACE("line " + std::to_string(i + 1));
        const std::string message = out[i]["error"]["message"];
        EXPECT_EQ(message.rfind("line " + std::to_string(i + 1) + ": ", 0), 0u) << message;
    }
    EXPECT_TRUE(out[2]["response"].is_null());
    EXPECT_EQ(out[3]["response"]["status_code"], 400);
    EXPECT_EQ(out[3]["response"]["body"]["error"]["param"], "presence_penalty");
    EXPECT_EQ(out[4]["custom_id"], "d");
    EXPECT_TRUE(out[4]["response"].is_null());

    // One call carries requests or lines, not both.
    prepack::v1::GenerateBatchRequest both;
    *both.add_requests() = Greedy("x", 2);
    both.add_openai_batch_lines(lines[0]);
    grpc::ClientContext ctx;
    auto reader = stub->GenerateBatch(&ctx, both);
    prepack::v1::GenerateBatchResponse resp;
    while (reader->Read(&resp)) {
    }
    const grpc::Status refused = reader->Finish();
    EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(refused.error_message().find("openai_batch_lines"), std::string::npos) << refused.error_message();
}

TEST(BatchLinesTest, ChatEqualsTheNativeBatchAndTheSharedSystemPromptIsComputedOnce) {
    if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << kSmol << " not found: fetch it with scripts/get_models.sh";
    auto server = StartModel(kSmol, {"--policy", "batchllm"});
    ASSERT_NE(server, nullptr);
    auto stub = prepack::v1::Prepack::NewStub(server->Channel());
    const std::string model_id = std::filesystem::path(kSmol).stem().string();
    const std::string& system = kLibrarySystem;
    const std::vector<std::string>& questions = kLibraryQuestions;
    std::vector<std::string> lines;
    std::vector<prepack::v1::ChatRequest> alone;
    for (size_t i = 0; i < questions.size(); ++i) {
        const Json messages = {{{"role", "system"}, {"content", system}}, {{"role", "user"}, {"content", questions[i]}}};
        lines.push_back(Line(std::string("q").append(std::to_string(i)), "/v1/chat/completions",
                             {{"model", model_id}, {"messages", messages}, {"max_tokens", 12}, {"temperature", 0}}));
        prepack::v1::ChatRequest c;
        for (const auto& [role, content] : {std::pair{"system", system}, std::pair{"user", questions[i]}}) {
            prepack::v1::ChatMessage* m = c.mutable_conversation()->add_messages();
            m->set_role(role);
            m->set_content(content);
        }
        c.mutable_sampling()->set_max_tokens(12);
        c.mutable_sampling()->set_temperature(0.0f);
        alone.push_back(std::move(c));
    }
    std::map<uint32_t, Json> out;
    const grpc::Status st = RunLines(*stub, lines, &out);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(out.size(), lines.size());
    // The engine's counters now hold this batch alone.
    const prepack::v1::Stats stats = Stats(*stub);

    std::vector<std::vector<int32_t>> rendered;
    int64_t total = 0;
    prepack::v1::GenerateBatchRequest native;
    std::vector<std::string> answers;
    std::vector<int> completion_tokens;
    for (size_t i = 0; i < questions.size(); ++i) {
        SCOPED_TRACE(questions[i]);
        const Json& body = BodyOf(out[static_cast<uint32_t>(i)]);
        EXPECT_EQ(body["object"], "chat.completion");
        EXPECT_EQ(body["choices"][0]["message"]["role"], "assistant");
        prepack::v1::RenderChatRequest rr;
        *rr.mutable_conversation() = alone[i].conversation();
        prepack::v1::RenderChatResponse rendering;
        grpc::ClientContext ctx;
        ASSERT_TRUE(stub->RenderChat(&ctx, rr, &rendering).ok());
        rendered.emplace_back(rendering.token_ids().begin(), rendering.token_ids().end());
        total += rendering.token_ids_size();
        EXPECT_EQ(body["usage"]["prompt_tokens"], rendering.token_ids_size());
        // Against the same conversations as one native GenerateBatch (below):
        // the same grouping and steps, so the same tokens. (Against each chat
        // alone a near-tie may part: the batch reads the system prompt's KV,
        // the lone request computes it, on other kernels.)
        prepack::v1::GenerateRequest g;
        *g.mutable_chat() = alone[i].conversation();
        *g.mutable_sampling() = alone[i].sampling();
        *native.add_requests() = g;
        answers.push_back(body["choices"][0]["message"]["content"].get<std::string>());
        completion_tokens.push_back(body["usage"]["completion_tokens"].get<int>());
    }
    size_t shared = rendered[0].size();
    for (const auto& ids : rendered) {
        size_t k = 0;
        while (k < shared && k < ids.size() && ids[k] == rendered[0][k]) ++k;
        shared = k;
    }
    ASSERT_GE(shared, 40u) << "the system prompt should be long enough to share";
    EXPECT_EQ(static_cast<int64_t>(stats.prompt_tokens()), total);
    // The shared prefix once, not four times.
    const int64_t once = total - static_cast<int64_t>(questions.size() - 1) * static_cast<int64_t>(shared);
    EXPECT_LE(static_cast<int64_t>(stats.prompt_tokens_computed()), once)
        << "computed " << stats.prompt_tokens_computed() << " of " << total << "; shared prefix " << shared;

    std::map<uint32_t, prepack::v1::GenerateResult> results;
    ASSERT_TRUE(RunBatch(*stub, native, &results).ok());
    ASSERT_EQ(results.size(), answers.size());
    for (size_t i = 0; i < answers.size(); ++i) {
        EXPECT_EQ(results[static_cast<uint32_t>(i)].status_code(), 0);
        EXPECT_FALSE(answers[i].empty());
        EXPECT_EQ(answers[i], results[static_cast<uint32_t>(i)].text()) << "line " << i;
        EXPECT_EQ(completion_tokens[i], results[static_cast<uint32_t>(i)].token_ids_size()) << "line " << i;
    }
}

}  // namespace
}  // namespace prepackd_test

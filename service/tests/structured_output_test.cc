// Structured output in prepackd (GenerateRequest.structured_output):
//  - StructuredOutputBuildTest: the conversions, no server: an OpenAI body's
//    response_format into its GenerateRequests, the shape checks naming
//    structured_output's fields, Chat's request carrying it over, and errors
//    renamed to the body's field.
//  - StructuredOutputServerTest (stories260K): Generate under a regex, a
//    JSON Schema and GBNF gives text of that language (checked here by
//    std::regex and by hand against the schema); a bad grammar or kind is
//    INVALID_ARGUMENT before the stream starts, naming the field; in a
//    GenerateBatch a bad member fails alone; OpenAI batch lines with
//    response_format.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "client_util.h"
#include "http/openai_request.h"
#include "request_builder.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

using Json = nlohmann::json;
using prepack::v1::GenerateRequest;
using prepack::v1::StructuredOutput;

const std::string kStories = std::string(PREPACK_MODELS_DIR) + "/stories260K/stories260K.gguf";

// Every value from a closed set: whatever stories260K picks is short and ends.
const char* kMoodSchema = R"({"type": "object", "properties": {"mood": {"enum": ["happy", "sad"]},
    "count": {"enum": [1, 2, 3]}, "ok": {"type": "boolean"}}, "required": ["mood", "count", "ok"],
    "additionalProperties": false})";

// `text` is JSON valid under kMoodSchema, checked key by key.
::testing::AssertionResult IsMood(const std::string& text) {
    const Json j = Json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return ::testing::AssertionFailure() << "not a JSON object: " << text;
    if (j.size() != 3) return ::testing::AssertionFailure() << "not exactly 3 properties: " << text;
    const bool mood = j.contains("mood") && (j["mood"] == "happy" || j["mood"] == "sad");
    const bool count = j.contains("count") && j["count"].is_number_integer() && j["count"] >= 1 && j["count"] <= 3;
    const bool ok = j.contains("ok") && j["ok"].is_boolean();
    if (mood && count && ok) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "not valid under the schema: " << text;
}

GenerateRequest Constrained(prepack::v1::GrammarKind kind, const std::string& text, uint64_t seed) {
    GenerateRequest r;
    r.set_text("Once upon a time");
    r.mutable_sampling()->set_max_tokens(120);
    r.mutable_sampling()->set_temperature(1.0f);
    r.mutable_sampling()->set_seed(seed);
    r.mutable_structured_output()->set_kind(kind);
    r.mutable_structured_output()->set_text(text);
    return r;
}

bool EndedByItself(const Generated& g) {
    return g.status.ok() &&
           (g.finish == prepack::v1::FINISH_REASON_EOS || g.finish == prepack::v1::FINISH_REASON_STOP);
}

// ------------------------------------------------------------- conversions

prepack_model_desc Desc() {
    prepack_model_desc d;
    prepack_model_desc_init(&d);
    d.vocab_size = 512;
    d.context_length = 512;
    return d;
}

TEST(StructuredOutputBuildTest, ResponseFormatBecomesEveryPromptsStructuredOutput) {
    const Json body = {{"model", "m"}, {"prompt", {"a", "b"}},
                       {"response_format", {{"type", "json_schema"},
                                            {"json_schema", {{"name", "m"}, {"schema", Json::parse(kMoodSchema)}}}}}};
    prepackd::http::ApiRequest r;
    const grpc::Status s = prepackd::http::ParseApiRequest(prepack::openai::Api::kCompletions, body, Desc(), 64, &r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    ASSERT_EQ(r.requests.size(), 2u);
    for (const GenerateRequest& g : r.requests) {
        EXPECT_EQ(g.structured_output().kind(), prepack::v1::GRAMMAR_KIND_JSON_SCHEMA);
        EXPECT_EQ(Json::parse(g.structured_output().text()), Json::parse(kMoodSchema));
    }
    // json_object: its kind and no text; none: no structured_output at all.
    const Json obj = {{"model", "m"}, {"prompt", "a"}, {"response_format", {{"type", "json_object"}}}};
    prepackd::http::ApiRequest o;
    ASSERT_TRUE(prepackd::http::ParseApiRequest(prepack::openai::Api::kCompletions, obj, Desc(), 64, &o).ok());
    EXPECT_EQ(o.requests[0].structured_output().kind(), prepack::v1::GRAMMAR_KIND_JSON_OBJECT);
    EXPECT_TRUE(o.requests[0].structured_output().text().empty());
    const Json plain = {{"model", "m"}, {"prompt", "a"}, {"guided_regex", "x+"}};
    prepackd::http::ApiRequest p;
    ASSERT_TRUE(prepackd::http::ParseApiRequest(prepack::openai::Api::kCompletions, plain, Desc(), 64, &p).ok());
    EXPECT_EQ(p.requests[0].structured_output().kind(), prepack::v1::GRAMMAR_KIND_REGEX);
    EXPECT_EQ(p.requests[0].structured_output().text(), "x+");
}

TEST(StructuredOutputBuildTest, ShapeChecksNameTheField) {
    StructuredOutput so;
    EXPECT_TRUE(prepackd::CheckStructuredOutput(so, "structured_output").ok());   // NONE
    so.set_kind(prepack::v1::GRAMMAR_KIND_REGEX);
    grpc::Status s = prepackd::CheckStructuredOutput(so, "requests[2].structured_output");
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(s.error_message().rfind("requests[2].structured_output.text: required", 0), 0u) << s.error_message();
    so.set_text(std::string("a\0b", 3));
    s = prepackd::CheckStructuredOutput(so, "structured_output");
    EXPECT_EQ(s.error_message().rfind("structured_output.text: contains a NUL", 0), 0u) << s.error_message();
    so.set_kind(prepack::v1::GRAMMAR_KIND_JSON_OBJECT);
    so.set_text("{}");
    s = prepackd::CheckStructuredOutput(so, "structured_output");
    EXPECT_EQ(s.error_message().rfind("structured_output.text: must be empty", 0), 0u) << s.error_message();
    so.set_kind(static_cast<prepack::v1::GrammarKind>(9));
    s = prepackd::CheckStructuredOutput(so, "structured_output");
    EXPECT_EQ(s.error_message().rfind("structured_output.kind: unknown value 9", 0), 0u) << s.error_message();
}

TEST(StructuredOutputBuildTest, ChatCarriesItAndErrorsGetTheBodysNames) {
    prepack::v1::ChatRequest chat;
    chat.mutable_structured_output()->set_kind(prepack::v1::GRAMMAR_KIND_GBNF);
    chat.mutable_structured_output()->set_text("root ::= \"x\"");
    const GenerateRequest g = prepackd::ToGenerateRequest(&chat);
    EXPECT_EQ(g.structured_output().kind(), prepack::v1::GRAMMAR_KIND_GBNF);
    EXPECT_EQ(g.structured_output().text(), "root ::= \"x\"");

    const grpc::Status err(grpc::StatusCode::INVALID_ARGUMENT, "structured_output.text: /properties/x: bad");
    const grpc::Status named = prepackd::http::WithJsonNames(err, prepack::openai::Api::kCompletions, 1,
                                                             "response_format.json_schema.schema");
    // Named once for all prompts: they share it.
    EXPECT_EQ(named.error_message(), "response_format.json_schema.schema: /properties/x: bad");
    const grpc::Status other(grpc::StatusCode::INVALID_ARGUMENT, "sampling.max_tokens: must be >= 1");
    EXPECT_EQ(prepackd::http::WithJsonNames(other, prepack::openai::Api::kCompletions, -1, "guided_json")
                  .error_message(),
              "max_tokens: must be >= 1");
}

// ----------------------------------------------------------- a live server

class StructuredOutputServerTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!std::filesystem::exists(kStories)) GTEST_SKIP() << kStories << " not found";
        server_ = StartModel(kStories);
        ASSERT_NE(server_, nullptr);
        stub_ = prepack::v1::Prepack::NewStub(server_->Channel());
    }
    std::unique_ptr<ServerProcess>              server_;
    std::unique_ptr<prepack::v1::Prepack::Stub> stub_;
};

TEST_F(StructuredOutputServerTest, GenerateHoldsToRegexSchemaAndGbnf) {
    const std::regex code("[0-9]{3}-[a-z]{2}");
    for (uint64_t seed = 1; seed <= 3; ++seed) {
        const Generated g =
            RunGenerate(*stub_, Constrained(prepack::v1::GRAMMAR_KIND_REGEX, "[0-9]{3}-[a-z]{2}", seed));
        EXPECT_TRUE(EndedByItself(g)) << g.status.error_message();
        EXPECT_TRUE(std::regex_match(g.text, code)) << g.text;
        EXPECT_FALSE(g.tokens_after_finish);
    }
    for (uint64_t seed = 1; seed <= 2; ++seed) {
        const Generated g = RunGenerate(*stub_, Constrained(prepack::v1::GRAMMAR_KIND_JSON_SCHEMA, kMoodSchema, seed));
        EXPECT_TRUE(EndedByItself(g)) << g.status.error_message();
        EXPECT_TRUE(IsMood(g.text));
    }
    const Generated yes_no =
        RunGenerate(*stub_, Constrained(prepack::v1::GRAMMAR_KIND_GBNF, "root ::= \"yes\" | \"no\"", 4));
    EXPECT_TRUE(EndedByItself(yes_no));
    EXPECT_TRUE(yes_no.text == "yes" || yes_no.text == "no") << yes_no.text;
}

TEST_F(StructuredOutputServerTest, BadGrammarsAreRefusedBeforeTheStreamNamingTheField) {
    struct Case {
        GenerateRequest request;
        std::string     prefix;
    };
    GenerateRequest ignore_eos = Constrained(prepack::v1::GRAMMAR_KIND_REGEX, "a+", 1);
    ignore_eos.mutable_sampling()->set_ignore_eos(true);
    const std::vector<Case> cases = {
        {Constrained(prepack::v1::GRAMMAR_KIND_JSON_SCHEMA, R"({"type": "strin"})", 1), "structured_output.text: "},
        {Constrained(prepack::v1::GRAMMAR_KIND_REGEX, "(a", 1), "structured_output.text: "},
        {Constrained(prepack::v1::GRAMMAR_KIND_GBNF, "root ::= \"a", 1), "structured_output.text: "},
        {Constrained(prepack::v1::GRAMMAR_KIND_REGEX, "", 1), "structured_output.text: required"},
        {Constrained(static_cast<prepack::v1::GrammarKind>(7), "x", 1), "structured_output.kind: "},
        {ignore_eos, "sampling.ignore_eos: "},
    };
    for (const Case& c : cases) {
        const Generated g = RunGenerate(*stub_, c.request);
        EXPECT_EQ(g.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.prefix;
        EXPECT_EQ(g.status.error_message().rfind(c.prefix, 0), 0u) << g.status.error_message();
        EXPECT_EQ(g.messages, 0) << "refused before any message";
    }
}

TEST_F(StructuredOutputServerTest, BatchMembersFailAloneAndBatchLinesTakeResponseFormat) {
    prepack::v1::GenerateBatchRequest batch;
    *batch.add_requests() = Constrained(prepack::v1::GRAMMAR_KIND_REGEX, "[0-9]{3}-[a-z]{2}", 1);
    *batch.add_requests() = Constrained(prepack::v1::GRAMMAR_KIND_JSON_SCHEMA, R"({"type": "strin"})", 2);
    *batch.add_requests() = Constrained(prepack::v1::GRAMMAR_KIND_JSON_SCHEMA, kMoodSchema, 3);
    std::map<uint32_t, prepack::v1::GenerateResult> results;
    const grpc::Status st = RunBatch(*stub_, batch, &results);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(results.size(), 3u);
    EXPECT_EQ(results[0].status_code(), 0) << results[0].status_message();
    EXPECT_TRUE(std::regex_match(results[0].text(), std::regex("[0-9]{3}-[a-z]{2}"))) << results[0].text();
    EXPECT_EQ(results[1].status_code(), static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
    EXPECT_EQ(results[1].status_message().rfind("requests[1].structured_output.text: ", 0), 0u)
        << results[1].status_message();
    EXPECT_EQ(results[2].status_code(), 0) << results[2].status_message();
    EXPECT_TRUE(IsMood(results[2].text()));

    // OpenAI batch lines: response_format as the HTTP API takes it.
    prepack::v1::GenerateBatchRequest lines;
    const Json format = {{"type", "json_schema"},
                         {"json_schema", {{"name", "m"}, {"schema", Json::parse(kMoodSchema)}}}};
    lines.add_openai_batch_lines(Json{{"custom_id", "ok"}, {"method", "POST"}, {"url", "/v1/completions"},
                                      {"body", {{"model", "stories260K"}, {"prompt", "Once"}, {"max_tokens", 120},
                                                {"response_format", format}}}}
                                     .dump());
    lines.add_openai_batch_lines(Json{{"custom_id", "bad"}, {"method", "POST"}, {"url", "/v1/completions"},
                                      {"body", {{"model", "stories260K"}, {"prompt", "Once"},
                                                {"guided_json", {{"type", "strin"}}}}}}
                                     .dump());
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub_->GenerateBatch(&ctx, lines);
    prepack::v1::GenerateBatchResponse resp;
    std::map<uint32_t, Json> out;
    while (reader->Read(&resp)) out[resp.index()] = Json::parse(resp.openai_batch_line());
    ASSERT_TRUE(reader->Finish().ok());
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0]["response"]["status_code"], 200) << out[0];
    EXPECT_TRUE(IsMood(out[0]["response"]["body"]["choices"][0]["text"].get<std::string>()));
    // The bad line's error names the body's field.
    EXPECT_NE(out[1].dump().find("guided_json: "), std::string::npos) << out[1];
}

}  // namespace
}  // namespace prepackd_test

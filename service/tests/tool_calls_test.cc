// Tool calls in prepackd (ChatRequest/GenerateRequest.tool_choice;
// GenerateResponse.tool_call_deltas and tool_calls; GenerateResult.tool_calls):
//  - ToolCallsBuildTest: the conversions, no server: an OpenAI body's
//    tools, tool_choice and parallel_tool_calls into its GenerateRequest,
//    Chat's request carrying tool_choice over, the checks naming
//    tool_choice's fields, errors renamed to the body's fields.
//  - SmolToolCallsTest (SmolLM2-135M-Instruct; its template has no tool
//    section, so prepack's generic format applies): Chat with REQUIRED and
//    FUNCTION streams calls as deltas that add up (assembled here) to the
//    last response's calls, of the tool asked for, their arguments a JSON
//    object of the tool's schema (checked by hand here); no tool_choice is
//    NONE (text, as before tool calling); a function that is not one of the
//    tools, a tool choice with structured_output and a bad parameters
//    schema are INVALID_ARGUMENT before the stream starts; GenerateBatch
//    results and OpenAI batch lines carry the calls.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client_util.h"
#include "http/openai_request.h"
#include "request_builder.h"
#include "server_process.h"

namespace prepackd_test {
namespace {

using Json = nlohmann::json;
using prepack::v1::ChatRequest;
using prepack::v1::GenerateRequest;
using prepack::v1::ToolChoice;

const std::string kSmol = PREPACK_CHAT_MODEL;

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
   "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
                  "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "get_time", "description": "The time in a timezone",
   "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                  "required": ["zone"], "additionalProperties": false}}}])";

prepack::v1::Conversation Weather(const std::string& tools_json = kTools) {
    prepack::v1::Conversation c;
    prepack::v1::ChatMessage* m = c.add_messages();
    m->set_role("user");
    m->set_content("What is the weather in Paris?");
    c.set_tools_json(tools_json);
    return c;
}

ChatRequest ToolChat(prepack::v1::ToolChoiceMode mode, const std::string& function = "") {
    ChatRequest r;
    *r.mutable_conversation() = Weather();
    r.mutable_sampling()->set_max_tokens(160);
    r.mutable_sampling()->set_temperature(0.0f);
    r.mutable_tool_choice()->set_mode(mode);
    r.mutable_tool_choice()->set_function(function);
    r.mutable_tool_choice()->set_parallel_tool_calls(false);
    return r;
}

// ------------------------------------------------------------- conversions

prepack_model_desc Desc() {
    prepack_model_desc d;
    prepack_model_desc_init(&d);
    d.vocab_size = 512;
    d.context_length = 512;
    return d;
}

prepackd::http::ApiRequest ParsedChat(const Json& extra) {
    Json body = {{"model", "m"}, {"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})}};
    for (auto it = extra.begin(); it != extra.end(); ++it) body[it.key()] = it.value();
    prepackd::http::ApiRequest r;
    const grpc::Status s =
        prepackd::http::ParseApiRequest(prepackd::http::Api::kChat, prepack::openai::Json::parse(body.dump()), Desc(),
                                        64, &r);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return r;
}

TEST(ToolCallsBuildTest, OpenAiToolChoiceBecomesTheRequests) {
    const Json tools = Json::parse(kTools);
    auto r = ParsedChat({{"tools", tools}});
    ASSERT_EQ(r.requests.size(), 1u);
    EXPECT_EQ(r.requests[0].tool_choice().mode(), prepack::v1::TOOL_CHOICE_MODE_AUTO);
    EXPECT_TRUE(r.requests[0].tool_choice().parallel_tool_calls());
    EXPECT_EQ(Json::parse(r.requests[0].chat().tools_json()), tools);

    r = ParsedChat({{"tools", tools},
                    {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}},
                    {"parallel_tool_calls", false}});
    EXPECT_EQ(r.requests[0].tool_choice().mode(), prepack::v1::TOOL_CHOICE_MODE_FUNCTION);
    EXPECT_EQ(r.requests[0].tool_choice().function(), "get_time");
    ASSERT_TRUE(r.requests[0].tool_choice().has_parallel_tool_calls());
    EXPECT_FALSE(r.requests[0].tool_choice().parallel_tool_calls());

    r = ParsedChat({{"tools", tools}, {"tool_choice", "required"}});
    EXPECT_EQ(r.requests[0].tool_choice().mode(), prepack::v1::TOOL_CHOICE_MODE_REQUIRED);
    // "none": the tools only rendered, which is what no tool_choice means on gRPC.
    r = ParsedChat({{"tools", tools}, {"tool_choice", "none"}});
    EXPECT_FALSE(r.requests[0].has_tool_choice());
    EXPECT_FALSE(r.requests[0].chat().tools_json().empty());
}

TEST(ToolCallsBuildTest, ChatCarriesToolChoiceOver) {
    ChatRequest chat = ToolChat(prepack::v1::TOOL_CHOICE_MODE_FUNCTION, "get_time");
    const GenerateRequest g = prepackd::ToGenerateRequest(&chat);
    EXPECT_EQ(g.tool_choice().mode(), prepack::v1::TOOL_CHOICE_MODE_FUNCTION);
    EXPECT_EQ(g.tool_choice().function(), "get_time");
    EXPECT_FALSE(g.tool_choice().parallel_tool_calls());
}

TEST(ToolCallsBuildTest, ChecksNameTheField) {
    auto field = [](const GenerateRequest& g) {
        const grpc::Status s = prepackd::CheckRequest(g, "requests[1].", Desc(), 1 << 20);
        if (s.ok()) return std::string("(accepted)");
        EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
        return s.error_message().substr(0, s.error_message().find(": "));
    };
    auto chat = [](prepack::v1::ToolChoiceMode mode, const std::string& function) {
        ChatRequest c = ToolChat(mode, function);
        return prepackd::ToGenerateRequest(&c);
    };
    EXPECT_EQ(field(chat(prepack::v1::TOOL_CHOICE_MODE_FUNCTION, "")), "requests[1].tool_choice.function");
    EXPECT_EQ(field(chat(prepack::v1::TOOL_CHOICE_MODE_AUTO, "get_time")), "requests[1].tool_choice.function");
    EXPECT_EQ(field(chat(prepack::v1::TOOL_CHOICE_MODE_NONE, "get_time")), "requests[1].tool_choice.function");
    EXPECT_EQ(field(chat(prepack::v1::TOOL_CHOICE_MODE_FUNCTION, std::string("get\0time", 8))),
              "requests[1].tool_choice.function");
    EXPECT_EQ(field(chat(static_cast<prepack::v1::ToolChoiceMode>(7), "")), "requests[1].tool_choice.mode");
    GenerateRequest g = chat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED, "");
    g.mutable_structured_output()->set_kind(prepack::v1::GRAMMAR_KIND_JSON_OBJECT);
    EXPECT_EQ(field(g), "requests[1].tool_choice.mode");
    g = chat(prepack::v1::TOOL_CHOICE_MODE_AUTO, "");
    g.mutable_sampling()->set_ignore_eos(true);
    EXPECT_EQ(field(g), "requests[1].tool_choice.mode");
    // REQUIRED and FUNCTION need tools; AUTO without any is plain text.
    GenerateRequest text = Greedy("Once", 4);
    text.mutable_tool_choice()->set_mode(prepack::v1::TOOL_CHOICE_MODE_REQUIRED);
    EXPECT_EQ(field(text), "requests[1].tool_choice.mode");
    text.mutable_tool_choice()->set_mode(prepack::v1::TOOL_CHOICE_MODE_AUTO);
    EXPECT_EQ(field(text), "(accepted)");
    g = chat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED, "");
    g.mutable_chat()->clear_tools_json();
    EXPECT_EQ(field(g), "requests[1].tool_choice.mode");
    // NONE with a grammar: the tools are only shown.
    g = chat(prepack::v1::TOOL_CHOICE_MODE_NONE, "");
    g.mutable_structured_output()->set_kind(prepack::v1::GRAMMAR_KIND_JSON_OBJECT);
    EXPECT_EQ(field(g), "(accepted)");
}

TEST(ToolCallsBuildTest, ErrorsGetTheBodysNames) {
    const grpc::Status s(grpc::StatusCode::INVALID_ARGUMENT,
                         "tool_choice.function: \"x\" is not one of the tools (get_weather)");
    EXPECT_EQ(prepackd::http::WithJsonNames(s, prepackd::http::Api::kChat, -1).error_message(),
              "tool_choice.function.name: \"x\" is not one of the tools (get_weather)");
    const grpc::Status m(grpc::StatusCode::INVALID_ARGUMENT, "tool_choice.mode: REQUIRED needs tools");
    EXPECT_EQ(prepackd::http::WithJsonNames(m, prepackd::http::Api::kChat, -1).error_message(),
              "tool_choice: REQUIRED needs tools");
    const grpc::Status p(grpc::StatusCode::INVALID_ARGUMENT,
                         "tools[2].function.parameters (tool \"f\"): unknown type \"x\" at the root");
    EXPECT_EQ(prepackd::http::WithJsonNames(p, prepackd::http::Api::kChat, -1).error_message(),
              "tools[2].function.parameters: tool \"f\": unknown type \"x\" at the root");
}

// ------------------------------------------------------------- SmolLM2

// Everything one Chat call streamed.
struct Streamed {
    std::vector<prepack::v1::GenerateResponse> responses;
    grpc::Status                               status;

    std::string Text() const {
        std::string t;
        for (const auto& r : responses) t += r.text();
        return t;
    }
    // The deltas added up, as a client would: a new index starts a call
    // (with its id and name), the others append arguments. `in_order` turns
    // false for a delta that skips an index or names a call twice.
    std::vector<prepack::v1::ToolCall> FromDeltas(bool* in_order) const {
        std::vector<prepack::v1::ToolCall> calls;
        *in_order = true;
        for (const auto& r : responses) {
            for (const auto& d : r.tool_call_deltas()) {
                const size_t index = static_cast<size_t>(d.index());
                if (d.index() < 0 || index > calls.size()) {
                    *in_order = false;
                    continue;
                }
                if (index == calls.size()) {
                    calls.emplace_back();
                    calls.back().set_id(d.id());
                    calls.back().set_name(d.name());
                    if (d.id().empty() || d.name().empty()) *in_order = false;
                } else if (!d.id().empty() || !d.name().empty()) {
                    *in_order = false;
                }
                calls[index].mutable_arguments_json()->append(d.arguments());
            }
        }
        return calls;
    }
    const prepack::v1::GenerateResponse& Last() const { return responses.back(); }
};

Streamed RunToolChat(prepack::v1::Prepack::Stub& stub, const ChatRequest& request) {
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub.Chat(&ctx, request);
    Streamed s;
    prepack::v1::GenerateResponse r;
    while (reader->Read(&r)) s.responses.push_back(r);
    s.status = reader->Finish();
    return s;
}

// `arguments` is a JSON object with exactly the string property `key`, whose value is in `allowed` (any
// string when empty) and at most 20 characters.
::testing::AssertionResult ArgumentsAre(const std::string& arguments, const std::string& key,
                                        const std::set<std::string>& allowed = {}) {
    const Json j = Json::parse(arguments, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return ::testing::AssertionFailure() << "not an object: " << arguments;
    if (j.size() != 1 || !j.contains(key) || !j[key].is_string()) {
        return ::testing::AssertionFailure() << "not {\"" << key << "\": string}: " << arguments;
    }
    const std::string v = j[key];
    if (!allowed.empty() && allowed.count(v) == 0) return ::testing::AssertionFailure() << "not allowed: " << v;
    if (v.size() > 20) return ::testing::AssertionFailure() << "longer than maxLength: " << v;
    return ::testing::AssertionSuccess();
}

bool IsCallId(const std::string& id) {
    if (id.size() != 29 || id.rfind("call_", 0) != 0) return false;
    for (size_t i = 5; i < id.size(); ++i) {
        if (!std::isalnum(static_cast<unsigned char>(id[i]))) return false;
    }
    return true;
}

class SmolToolCallsTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << kSmol << " not found: fetch it with scripts/get_models.sh";
        server_ = StartModel(kSmol);
        ASSERT_NE(server_, nullptr);
        stub_ = prepack::v1::Prepack::NewStub(server_->Channel());
    }

    // A finished call of `name`, its deltas adding up to it, no text.
    void ExpectOneCall(const Streamed& s, const std::string& name, const std::string& key,
                       const std::set<std::string>& allowed = {}) {
        ASSERT_TRUE(s.status.ok()) << s.status.error_message();
        ASSERT_FALSE(s.responses.empty());
        const auto& last = s.Last();
        EXPECT_TRUE(last.finish_reason() == prepack::v1::FINISH_REASON_EOS ||
                    last.finish_reason() == prepack::v1::FINISH_REASON_STOP)
            << prepack::v1::FinishReason_Name(last.finish_reason());
        ASSERT_EQ(last.tool_calls_size(), 1);   // parallel_tool_calls false
        bool in_order = false;
        const auto assembled = s.FromDeltas(&in_order);
        EXPECT_TRUE(in_order);
        ASSERT_EQ(assembled.size(), 1u);
        EXPECT_EQ(assembled[0].id(), last.tool_calls(0).id());
        EXPECT_EQ(assembled[0].name(), last.tool_calls(0).name());
        EXPECT_EQ(assembled[0].arguments_json(), last.tool_calls(0).arguments_json());
        EXPECT_EQ(last.tool_calls(0).name(), name);
        EXPECT_TRUE(IsCallId(last.tool_calls(0).id())) << last.tool_calls(0).id();
        EXPECT_TRUE(ArgumentsAre(last.tool_calls(0).arguments_json(), key, allowed));
        EXPECT_EQ(s.Text(), "");   // the generic format's answer is all call
        EXPECT_EQ(last.tool_call_deltas_size(), 0);
        for (size_t i = 0; i + 1 < s.responses.size(); ++i) EXPECT_EQ(s.responses[i].tool_calls_size(), 0);
    }

    std::unique_ptr<ServerProcess>              server_;
    std::unique_ptr<prepack::v1::Prepack::Stub> stub_;
};

TEST_F(SmolToolCallsTest, RequiredAndFunctionStreamTheirCalls) {
    ExpectOneCall(RunToolChat(*stub_, ToolChat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED)), "get_weather", "city");
    ExpectOneCall(RunToolChat(*stub_, ToolChat(prepack::v1::TOOL_CHOICE_MODE_FUNCTION, "get_time")), "get_time",
                  "zone", {"UTC", "CET"});
    // Generate with the same conversation: the same call (greedy), a new id.
    ChatRequest chat = ToolChat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED);
    const Streamed first = RunToolChat(*stub_, chat);
    const GenerateRequest g = prepackd::ToGenerateRequest(&chat);
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub_->Generate(&ctx, g);
    Streamed second;
    prepack::v1::GenerateResponse r;
    while (reader->Read(&r)) second.responses.push_back(r);
    second.status = reader->Finish();
    ExpectOneCall(second, "get_weather", "city");
    ASSERT_FALSE(first.responses.empty());
    ASSERT_EQ(first.Last().tool_calls_size(), 1);
    ASSERT_EQ(second.Last().tool_calls_size(), 1);
    EXPECT_EQ(first.Last().tool_calls(0).arguments_json(), second.Last().tool_calls(0).arguments_json());
    EXPECT_NE(first.Last().tool_calls(0).id(), second.Last().tool_calls(0).id());
}

TEST_F(SmolToolCallsTest, NoToolChoiceIsNoneTheToolsOnlyRendered) {
    ChatRequest r = ToolChat(prepack::v1::TOOL_CHOICE_MODE_NONE);
    r.clear_tool_choice();
    r.mutable_sampling()->set_max_tokens(24);
    const Streamed s = RunToolChat(*stub_, r);
    ASSERT_TRUE(s.status.ok()) << s.status.error_message();
    EXPECT_FALSE(s.Text().empty());
    for (const auto& resp : s.responses) {
        EXPECT_EQ(resp.tool_call_deltas_size(), 0);
        EXPECT_EQ(resp.tool_calls_size(), 0);
    }
}

TEST_F(SmolToolCallsTest, BadToolRequestsAreRefusedBeforeTheStream) {
    auto refused = [&](const ChatRequest& r, const std::string& prefix) {
        const Streamed s = RunToolChat(*stub_, r);
        EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.status.error_message();
        EXPECT_EQ(s.status.error_message().rfind(prefix, 0), 0u) << s.status.error_message();
        EXPECT_TRUE(s.responses.empty()) << "refused before any message";
    };
    refused(ToolChat(prepack::v1::TOOL_CHOICE_MODE_FUNCTION, "get_stock"),
            "tool_choice.function: \"get_stock\" is not one of the tools (get_weather, get_time)");
    ChatRequest r = ToolChat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED);
    r.mutable_structured_output()->set_kind(prepack::v1::GRAMMAR_KIND_JSON_OBJECT);
    refused(r, "tool_choice.mode: REQUIRED conflicts with structured_output");
    r = ToolChat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED);
    *r.mutable_conversation() =
        Weather(R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "frobnicate"}}}])");
    const Streamed s = RunToolChat(*stub_, r);
    EXPECT_EQ(s.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.status.error_message().find("tools[0]"), std::string::npos) << s.status.error_message();
    EXPECT_TRUE(s.responses.empty());
}

TEST_F(SmolToolCallsTest, BatchResultsAndBatchLinesCarryTheCalls) {
    ChatRequest required = ToolChat(prepack::v1::TOOL_CHOICE_MODE_REQUIRED);
    const Streamed streamed = RunToolChat(*stub_, required);
    ASSERT_TRUE(streamed.status.ok());
    ASSERT_EQ(streamed.Last().tool_calls_size(), 1);

    prepack::v1::GenerateBatchRequest batch;
    *batch.add_requests() = prepackd::ToGenerateRequest(&required);
    ChatRequest none = ToolChat(prepack::v1::TOOL_CHOICE_MODE_NONE);
    none.mutable_sampling()->set_max_tokens(16);
    *batch.add_requests() = prepackd::ToGenerateRequest(&none);
    std::map<uint32_t, prepack::v1::GenerateResult> results;
    const grpc::Status st = RunBatch(*stub_, batch, &results);
    ASSERT_TRUE(st.ok()) << st.error_message();
    ASSERT_EQ(results.size(), 2u);
    ASSERT_EQ(results[0].tool_calls_size(), 1) << results[0].status_message();
    EXPECT_EQ(results[0].tool_calls(0).name(), streamed.Last().tool_calls(0).name());
    EXPECT_EQ(results[0].tool_calls(0).arguments_json(), streamed.Last().tool_calls(0).arguments_json());
    EXPECT_TRUE(IsCallId(results[0].tool_calls(0).id()));
    EXPECT_EQ(results[0].text(), "");
    EXPECT_EQ(results[1].tool_calls_size(), 0);
    EXPECT_FALSE(results[1].text().empty());

    // An OpenAI batch line with tools: the HTTP API's body.
    prepack::v1::GenerateBatchRequest lines;
    const Json body = {{"model", "SmolLM2-135M-Instruct.Q4_1"},
                       {"messages", Json::array({{{"role", "user"}, {"content", "What is the weather in Paris?"}}})},
                       {"tools", Json::parse(kTools)},
                       {"tool_choice", "required"},
                       {"parallel_tool_calls", false},
                       {"temperature", 0},
                       {"max_tokens", 160}};
    lines.add_openai_batch_lines(
        Json{{"custom_id", "t"}, {"method", "POST"}, {"url", "/v1/chat/completions"}, {"body", body}}.dump());
    grpc::ClientContext ctx;
    ctx.set_deadline(In(std::chrono::seconds(120)));
    auto reader = stub_->GenerateBatch(&ctx, lines);
    prepack::v1::GenerateBatchResponse resp;
    std::vector<Json> out;
    while (reader->Read(&resp)) out.push_back(Json::parse(resp.openai_batch_line()));
    ASSERT_TRUE(reader->Finish().ok());
    ASSERT_EQ(out.size(), 1u);
    const Json& choice = out[0]["response"]["body"]["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls") << out[0];
    EXPECT_TRUE(choice["message"]["content"].is_null()) << out[0];
    ASSERT_EQ(choice["message"]["tool_calls"].size(), 1u) << out[0];
    const Json& call = choice["message"]["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_TRUE(IsCallId(call["id"].get<std::string>()));
    EXPECT_EQ(call["function"]["name"], streamed.Last().tool_calls(0).name());
    EXPECT_EQ(call["function"]["arguments"], streamed.Last().tool_calls(0).arguments_json());
}

}  // namespace
}  // namespace prepackd_test

// Tool calling in the openai library (openai/request.h: Chat::tool_choice;
// openai/response.h: tool calls in responses and stream chunks):
//  - request bodies: tools, tool_choice and parallel_tool_calls read into
//    ToolChoice, and every malformed shape refused naming its JSON field;
//  - responses: message.tool_calls, null content, finish_reason
//    "tool_calls"; stream deltas in the shape the openai SDK's stream helper
//    adds up, checked by a re-implementation of that helper's rule here
//    (openai-python's accumulate_delta: strings join, "index" and "type"
//    are replaced, list entries merge by their "index").
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai/request.h"
#include "openai/response.h"

namespace prepack::openai {
namespace {

using Mode = ToolChoice::Mode;

const Json kWeather = Json::parse(R"({"type": "function", "function": {"name": "get_weather",
    "description": "The weather in a city", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}}, "required": ["city"]}, "strict": true}})");
const Json kTime = Json::parse(R"({"type": "function", "function": {"name": "get-time_2"}})");

Json Chat(Json extra) {
    Json b = Json::object();
    b["model"] = "m";
    b["messages"] = Json::array({Json{{"role", "user"}, {"content", "hi"}}});
    for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
    return b;
}

// The request a chat body with `extra` parses to; fails the test when refused.
ApiRequest Parsed(const Json& extra) {
    ApiRequest r;
    const absl::Status s = ParseChat(Chat(extra), 64, &r);
    EXPECT_TRUE(s.ok()) << s << " for " << extra.dump();
    return r;
}

// The field a refused body's error names ("FIELD: why").
std::string RefusedField(const Json& extra) {
    ApiRequest r;
    const absl::Status s = ParseChat(Chat(extra), 64, &r);
    if (s.ok()) return "(accepted)";
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    const std::string m(s.message());
    return m.substr(0, m.find(": "));
}

TEST(OpenAiToolsTest, ToolsWithoutToolChoiceMeanAuto) {
    const ApiRequest r = Parsed({{"tools", Json::array({kWeather, kTime})}});
    EXPECT_EQ(r.chat.tool_choice.mode, Mode::kAuto);
    EXPECT_TRUE(r.chat.tool_choice.parallel);
    EXPECT_TRUE(r.chat.tool_choice.function.empty());
    // The tools go on to the template as given.
    EXPECT_EQ(Json::parse(r.chat.tools_json), Json::array({kWeather, kTime}));
}

TEST(OpenAiToolsTest, EachToolChoiceIsItsMode) {
    const Json tools = Json::array({kWeather, kTime});
    EXPECT_EQ(Parsed({{"tools", tools}, {"tool_choice", "none"}}).chat.tool_choice.mode, Mode::kNone);
    EXPECT_EQ(Parsed({{"tools", tools}, {"tool_choice", "auto"}}).chat.tool_choice.mode, Mode::kAuto);
    EXPECT_EQ(Parsed({{"tools", tools}, {"tool_choice", "required"}}).chat.tool_choice.mode, Mode::kRequired);
    const Json named = {{"type", "function"}, {"function", {{"name", "get-time_2"}}}};
    const ToolChoice c = Parsed({{"tools", tools}, {"tool_choice", named}}).chat.tool_choice;
    EXPECT_EQ(c.mode, Mode::kFunction);
    EXPECT_EQ(c.function, "get-time_2");
    EXPECT_FALSE(Parsed({{"tools", tools}, {"parallel_tool_calls", false}}).chat.tool_choice.parallel);
    EXPECT_TRUE(Parsed({{"tools", tools}, {"parallel_tool_calls", true}}).chat.tool_choice.parallel);
    // "none" keeps the tools for the template (the model reads them).
    EXPECT_FALSE(Parsed({{"tools", tools}, {"tool_choice", "none"}}).chat.tools_json.empty());
}

TEST(OpenAiToolsTest, WithoutToolsNothingIsCalled) {
    EXPECT_EQ(Parsed({}).chat.tool_choice.mode, Mode::kNone);
    EXPECT_EQ(Parsed({{"tool_choice", "auto"}}).chat.tool_choice.mode, Mode::kNone);
    EXPECT_EQ(Parsed({{"tool_choice", "none"}}).chat.tool_choice.mode, Mode::kNone);
    const ApiRequest empty = Parsed({{"tools", Json::array()}});
    EXPECT_EQ(empty.chat.tool_choice.mode, Mode::kNone);
    EXPECT_TRUE(empty.chat.tools_json.empty());
    // OpenAI's clients send null for "not given".
    EXPECT_EQ(Parsed({{"tools", nullptr}, {"tool_choice", nullptr}}).chat.tool_choice.mode, Mode::kNone);
}

TEST(OpenAiToolsTest, BadShapesAreRefusedNamingTheField) {
    auto with_function = [](Json f) { return Json{{"type", "function"}, {"function", std::move(f)}}; };
    const Json one = Json::array({kWeather});
    std::vector<Json> many(kMaxTools + 1);
    for (size_t i = 0; i < many.size(); ++i) many[i] = with_function({{"name", "f" + std::to_string(i)}});
    const struct {
        Json        extra;
        std::string field;
    } cases[] = {
        {{{"tools", "get_weather"}}, "tools"},
        {{{"tools", Json::array({1})}}, "tools[0]"},
        {{{"tools", Json::array({kWeather, Json{{"function", {{"name", "f"}}}}})}}, "tools[1].type"},
        {{{"tools", Json::array({Json{{"type", "custom"}, {"custom", {{"name", "f"}}}}})}}, "tools[0].type"},
        {{{"tools", Json::array({Json{{"type", "function"}, {"function", {{"name", "f"}}}, {"x", 1}}})}}, "tools[0].x"},
        {{{"tools", Json::array({Json{{"type", "custom"}}})}}, "tools[0].type"},
        {{{"tools", Json::array({Json{{"type", "function"}}})}}, "tools[0].function"},
        {{{"tools", Json::array({Json{{"type", "function"}, {"function", "f"}}})}}, "tools[0].function"},
        {{{"tools", Json::array({with_function({{"description", "no name"}})})}}, "tools[0].function.name"},
        {{{"tools", Json::array({with_function({{"name", "get weather"}})})}}, "tools[0].function.name"},
        {{{"tools", Json::array({with_function({{"name", std::string(65, 'a')}})})}}, "tools[0].function.name"},
        {{{"tools", Json::array({with_function({{"name", ""}})})}}, "tools[0].function.name"},
        {{{"tools", Json::array({with_function({{"name", 7}})})}}, "tools[0].function.name"},
        {{{"tools", Json::array({with_function({{"name", "f"}, {"parameters", "{}"}})})}},
         "tools[0].function.parameters"},
        {{{"tools", Json::array({with_function({{"name", "f"}, {"strict", "yes"}})})}}, "tools[0].function.strict"},
        {{{"tools", Json::array({with_function({{"name", "f"}, {"description", 3}})})}},
         "tools[0].function.description"},
        {{{"tools", Json::array({with_function({{"name", "f"}, {"examples", Json::array()}})})}},
         "tools[0].function.examples"},
        {{{"tools", Json::array({kWeather, kTime, kWeather})}}, "tools[2].function.name"},
        {{{"tools", many}}, "tools"},
        {{{"tools", one}, {"tool_choice", "always"}}, "tool_choice"},
        {{{"tools", one}, {"tool_choice", 1}}, "tool_choice"},
        {{{"tools", one}, {"tool_choice", {{"type", "function"}}}}, "tool_choice.function"},
        {{{"tools", one}, {"tool_choice", {{"function", {{"name", "get_weather"}}}}}}, "tool_choice.type"},
        {{{"tools", one}, {"tool_choice", {{"type", "allowed_tools"}}}}, "tool_choice.type"},
        {{{"tools", one}, {"tool_choice", {{"type", "function"}, {"function", Json::object()}}}}, "tool_choice.function.name"},
        {{{"tools", one}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}},
         "tool_choice.function.name"},
        {{{"tools", one}, {"tool_choice", {{"type", "function"}, {"function", {{"name", "f"}, {"x", 1}}}}}},
         "tool_choice.function.x"},
        {{{"tool_choice", "required"}}, "tool_choice"},
        {{{"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}, "tool_choice"},
        {{{"tools", one}, {"parallel_tool_calls", "yes"}}, "parallel_tool_calls"},
        {{{"tools", one}, {"response_format", {{"type", "json_object"}}}}, "response_format"},
        {{{"tools", one}, {"guided_regex", "[a-z]+"}}, "guided_regex"},
        {{{"tools", one}, {"ignore_eos", true}}, "ignore_eos"},
    };
    for (const auto& c : cases) EXPECT_EQ(RefusedField(c.extra), c.field) << c.extra.dump();
}

TEST(OpenAiToolsTest, ToolChoiceNoneLeavesRoomForOtherConstraints) {
    // With "none" nothing is called: response_format and ignore_eos apply as without tools.
    const Json one = Json::array({kWeather});
    const ApiRequest r = Parsed({{"tools", one}, {"tool_choice", "none"}, {"response_format", {{"type", "json_object"}}}});
    EXPECT_EQ(r.response_format.kind, ResponseFormat::Kind::kJsonObject);
    EXPECT_TRUE(Parsed({{"tools", one}, {"tool_choice", "none"}, {"ignore_eos", true}}).sampling.ignore_eos);
}

TEST(OpenAiToolsTest, RefusalsSayWhatIsWrong) {
    ApiRequest r;
    absl::Status s = ParseChat(Chat({{"tools", Json::array({kWeather, kTime})},
                                     {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_time"}}}}}}),
                               64, &r);
    EXPECT_EQ(s.message(), "tool_choice.function.name: \"get_time\" is not one of the tools (get_weather, get-time_2)");
    s = ParseChat(Chat({{"tools", Json::array({kWeather, kWeather})}}), 64, &r);
    EXPECT_EQ(s.message(), "tools[1].function.name: \"get_weather\" is already the name of tools[0] (names must be "
                           "unique)");
}

// ------------------------------------------------------------ responses

// openai-python's accumulate_delta (lib/streaming/chat/_completions.py), the
// rule its stream helper builds a message from chunks' deltas by.
void Accumulate(Json& acc, const Json& delta) {
    for (auto it = delta.begin(); it != delta.end(); ++it) {
        const std::string& key = it.key();
        const Json& value = it.value();
        if (!acc.contains(key) || acc[key].is_null()) {
            acc[key] = value;
        } else if (key == "index" || key == "type") {
            acc[key] = value;
        } else if (acc[key].is_string() && value.is_string()) {
            acc[key] = acc[key].get<std::string>() + value.get<std::string>();
        } else if (acc[key].is_object() && value.is_object()) {
            Accumulate(acc[key], value);
        } else if (acc[key].is_array() && value.is_array()) {
            for (const Json& entry : value) {
                const size_t index = entry.at("index").get<size_t>();
                if (index >= acc[key].size()) {
                    acc[key].push_back(entry);
                } else {
                    Accumulate(acc[key][index], entry);
                }
            }
        } else {
            acc[key] = value;
        }
    }
}

// The calls' deltas as the engine streams them: each call's first piece
// with its name and id, then its arguments in pieces of `piece` bytes.
std::vector<std::vector<ToolCallDelta>> Chunked(const std::vector<ToolCall>& calls, size_t piece) {
    std::vector<std::vector<ToolCallDelta>> chunks;
    for (size_t i = 0; i < calls.size(); ++i) {
        const int32_t index = static_cast<int32_t>(i);
        chunks.push_back({ToolCallDelta{index, calls[i].id, calls[i].name, ""}});
        for (size_t at = 0; at < calls[i].arguments.size(); at += piece) {
            chunks.push_back({ToolCallDelta{index, "", "", calls[i].arguments.substr(at, piece)}});
        }
    }
    return chunks;
}

const std::vector<ToolCall> kCalls = {
    {"call_aaaaaaaaaaaaaaaaaaaaaaaa", "get_weather", R"({"city": "Paris, \"FR\""})"},
    {"call_bbbbbbbbbbbbbbbbbbbbbbbb", "get-time_2", "{}"},
};

TEST(OpenAiToolResponseTest, DeltaShapes) {
    const Json first = ToolCallDeltasJson({ToolCallDelta{1, "call_x", "f", "{\"a"}});
    EXPECT_EQ(first, Json::parse(R"([{"index": 1, "id": "call_x", "type": "function",
                                      "function": {"name": "f", "arguments": "{\"a"}}])"));
    const Json later = ToolCallDeltasJson({ToolCallDelta{1, "", "", "\": 1}"}});
    EXPECT_EQ(later, Json::parse(R"([{"index": 1, "function": {"arguments": "\": 1}"}}])"));
    EXPECT_EQ(ToolCallsJson(kCalls), Json::parse(R"([
        {"id": "call_aaaaaaaaaaaaaaaaaaaaaaaa", "type": "function",
         "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris, \\\"FR\\\"\"}"}},
        {"id": "call_bbbbbbbbbbbbbbbbbbbbbbbb", "type": "function",
         "function": {"name": "get-time_2", "arguments": "{}"}}])"));
}

TEST(OpenAiToolResponseTest, TheSdkAddsDeltasUpToTheCalls) {
    for (const size_t piece : {size_t{1}, size_t{3}, size_t{100}}) {
        Json message = Json::parse(R"({"role": "assistant", "content": null})");
        std::vector<ToolCall> added;
        for (const auto& chunk : Chunked(kCalls, piece)) {
            Accumulate(message, Json{{"tool_calls", ToolCallDeltasJson(chunk)}});
            AddToolCallDeltas(chunk, &added);
        }
        // The SDK's message is the non-streamed one (its calls with their index).
        Json want = ToolCallsJson(kCalls);
        for (size_t i = 0; i < want.size(); ++i) want[i]["index"] = i;
        // (as values: the SDK's objects have no key order)
        EXPECT_EQ(nlohmann::json::parse(message["tool_calls"].dump()), nlohmann::json::parse(want.dump()))
            << "pieces of " << piece;
        EXPECT_TRUE(message["content"].is_null());
        ASSERT_EQ(added.size(), kCalls.size());
        for (size_t i = 0; i < added.size(); ++i) {
            EXPECT_EQ(added[i].id, kCalls[i].id);
            EXPECT_EQ(added[i].name, kCalls[i].name);
            EXPECT_EQ(added[i].arguments, kCalls[i].arguments);
        }
    }
}

TEST(OpenAiToolResponseTest, DeltasOutOfOrderAreDropped) {
    std::vector<ToolCall> calls;
    AddToolCallDeltas({ToolCallDelta{1, "call_b", "b", "{}"}, ToolCallDelta{-1, "", "", "x"}}, &calls);
    EXPECT_TRUE(calls.empty());
    AddToolCallDeltas({ToolCallDelta{0, "call_a", "a", "{"}, ToolCallDelta{0, "", "", "}"}}, &calls);
    ASSERT_EQ(calls.size(), 1u);
    EXPECT_EQ(calls[0].arguments, "{}");
}

Json Body(std::vector<Choice> choices) {
    ApiRequest r;
    r.api = Api::kChat;
    r.n = static_cast<int>(choices.size());
    Pieces pieces([](const std::vector<int32_t>&) { return std::string(); });
    return ResponseBody(r, ResponseHead{"chatcmpl-1", 1, "m"}, choices, pieces);
}

TEST(OpenAiToolResponseTest, MessageWithCalls) {
    Choice only_calls;
    only_calls.tool_calls = kCalls;
    only_calls.finish_reason = "stop";
    Choice with_text = only_calls;
    with_text.text = "Let me look.";
    Choice cut = only_calls;
    cut.finish_reason = "length";
    Choice plain;
    plain.text = "Hello.";
    const Json b = Body({only_calls, with_text, cut, plain});
    const Json& c = b["choices"];
    EXPECT_TRUE(c[0]["message"]["content"].is_null());
    EXPECT_EQ(c[0]["message"]["tool_calls"], ToolCallsJson(kCalls));
    EXPECT_EQ(c[0]["finish_reason"], "tool_calls");
    EXPECT_EQ(c[1]["message"]["content"], "Let me look.");
    EXPECT_EQ(c[1]["message"]["tool_calls"], ToolCallsJson(kCalls));
    EXPECT_EQ(c[1]["finish_reason"], "tool_calls");
    EXPECT_EQ(c[2]["finish_reason"], "length");   // cut short: the calls may be incomplete
    EXPECT_EQ(c[3]["message"]["content"], "Hello.");
    EXPECT_FALSE(c[3]["message"].contains("tool_calls"));
    EXPECT_EQ(c[3]["finish_reason"], "stop");
    EXPECT_EQ(ChoiceFinishReason(only_calls), std::string("tool_calls"));
    EXPECT_EQ(ChoiceFinishReason(plain), std::string("stop"));
}

}  // namespace
}  // namespace prepack::openai

// Tool calls: each family's format as its own chat template writes it (the
// templates in ../shared/models/chat-templates are the independent
// reference), the grammar that constrains a call accepting exactly what the
// template writes, and the streamed deltas adding up to the parsed calls.
#include <fstream>
#include <random>
#include <sstream>

#include <gtest/gtest.h>

#include "core/chat/chat_template.h"
#include "core/chat/tool_call_stream.h"
#include "core/chat/tool_calls.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/matcher.h"

namespace prepack {
namespace {

using Json = nlohmann::ordered_json;

std::string ReadTemplate(const std::string& file) {
    std::ifstream in(std::string(PREPACK_MODELS_DIR) + "/chat-templates/" + file);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::vector<FunctionTool> WeatherTools() {
    const Json tools = Json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                       "required": ["city", "days"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
        "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["zone"]}}}
    ])");
    absl::StatusOr<std::vector<FunctionTool>> t = ParseFunctionTools(tools);
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
}

// The assistant turn a template renders for `calls` (name, arguments).
absl::StatusOr<std::string> RenderAssistantCalls(const std::string& source,
                                                 const std::vector<std::pair<std::string, Json>>& calls) {
    Json msgs = Json::array();
    msgs.push_back({{"role", "user"}, {"content", "What is the weather?"}});
    Json tool_calls = Json::array();
    int n = 0;
    for (const auto& [name, args] : calls) {
        tool_calls.push_back({{"id", "abcDEF12" + std::to_string(n++)},
                              {"type", "function"},
                              {"function", {{"name", name}, {"arguments", args}}}});
    }
    msgs.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", tool_calls}});
    Json ctx = {{"messages", msgs}, {"add_generation_prompt", false}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
    ctx["tools"] = Json::parse(R"([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}])");
    ChatTemplates t = ChatTemplates::FromSource(source, "test");
    PP_ASSIGN_OR_RETURN(jinja::Rendered r, t.RenderContext(nullptr, ctx));
    return r.text;
}

struct Family {
    const char*    file;
    ToolCallFormat format;
    // The assistant's part of the rendered conversation: after `begin`'s last
    // occurrence, up to `end` (or the end).
    const char*    begin;
    const char*    end;
};

const Family kFamilies[] = {
    {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes, "<|im_start|>assistant", "<|im_end|>"},
    {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermes, "<|im_start|>assistant", "<|im_end|>"},
    {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3, "<|start_header_id|>assistant<|end_header_id|>",
     "<|eot_id|>"},
    {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3, "<|start_header_id|>assistant<|end_header_id|>",
     "<|eot_id|>"},
    {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral, "[/INST]", "</s>"},
};

std::string AssistantPart(const std::string& text, const Family& f) {
    size_t b = text.rfind(f.begin);
    if (b == std::string::npos) return "";
    b += std::string(f.begin).size();
    size_t e = text.find(f.end, b);
    std::string part = text.substr(b, e == std::string::npos ? std::string::npos : e - b);
    // A reasoning template's (empty) thinking is not the answer: the engine's
    // reasoning splitter takes it out before tool calls are read.
    if (size_t think = part.find("</think>"); think != std::string::npos) {
        part = part.substr(think + 8);
        part = part.substr(std::min(part.size(), part.find_first_not_of('\n')));
    }
    return part;
}

TEST(ToolCalls, FormatIsReadFromEachTemplate) {
    int seen = 0;
    for (const Family& f : kFamilies) {
        const std::string src = ReadTemplate(f.file);
        if (src.empty()) continue;
        ++seen;
        EXPECT_EQ(DetectToolCallFormat(src), f.format) << f.file;
    }
    for (const char* file : {"google-gemma-2-2b-it.jinja", "microsoft-Phi-3.5-mini-instruct.jinja"}) {
        const std::string src = ReadTemplate(file);
        if (src.empty()) continue;
        ++seen;
        EXPECT_EQ(DetectToolCallFormat(src), ToolCallFormat::kGeneric) << file;
    }
    if (seen == 0) GTEST_SKIP() << "no chat templates in " << PREPACK_MODELS_DIR << "/chat-templates";
}

// What each template writes for a call parses back to that call.
TEST(ToolCalls, ParsesWhatEachTemplateWrites) {
    const std::vector<FunctionTool> tools = WeatherTools();
    int seen = 0;
    for (const Family& f : kFamilies) {
        const std::string src = ReadTemplate(f.file);
        if (src.empty()) continue;
        ++seen;
        const Json args = {{"city", "Paris \"Ville\""}, {"days", 3}};
        absl::StatusOr<std::string> text = RenderAssistantCalls(src, {{"get_weather", args}});
        ASSERT_TRUE(text.ok()) << f.file << ": " << text.status();
        const std::string part = AssistantPart(*text, f);
        ParsedAnswer p = ParseToolCalls(f.format, part, tools);
        ASSERT_EQ(p.calls.size(), 1u) << f.file << ": " << part;
        EXPECT_EQ(p.calls[0].name, "get_weather");
        EXPECT_EQ(nlohmann::json::parse(p.calls[0].arguments), nlohmann::json::parse(args.dump()));
        EXPECT_EQ(p.content, "") << f.file;
    }
    if (seen == 0) GTEST_SKIP() << "no chat templates";
}

TEST(ToolCalls, TextThatIsNotACallStaysContent) {
    const std::vector<FunctionTool> tools = WeatherTools();
    for (ToolCallFormat f : {ToolCallFormat::kHermes, ToolCallFormat::kLlama3, ToolCallFormat::kMistral,
                             ToolCallFormat::kGeneric}) {
        for (const char* text : {"It is sunny.", "{\"name\": \"unknown_tool\", \"arguments\": {}}",
                                 "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa",
                                 "[{\"name\": \"nope\"}]"}) {
            ParsedAnswer p = ParseToolCalls(f, text, tools);
            EXPECT_TRUE(p.calls.empty()) << ToolCallFormatName(f) << ": " << text;
            EXPECT_EQ(p.content, text) << ToolCallFormatName(f);
        }
    }
    ParsedAnswer g = ParseToolCalls(ToolCallFormat::kGeneric, "{\"response\": \"Hi \\\"you\\\"\"}", tools);
    EXPECT_TRUE(g.calls.empty());
    EXPECT_EQ(g.content, "Hi \"you\"");
    ParsedAnswer h = ParseToolCalls(ToolCallFormat::kHermes,
                                    "Let me check.\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n"
                                    "</tool_call>\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                                    "\"{\\\"city\\\": \\\"Oslo\\\", \\\"days\\\": 1}\"}\n</tool_call>",
                                    tools);
    ASSERT_EQ(h.calls.size(), 2u);
    EXPECT_EQ(h.content, "Let me check.");
    EXPECT_EQ(h.calls[0].name, "get_time");
    EXPECT_EQ(h.calls[1].arguments, "{\"city\":\"Oslo\",\"days\":1}");   // a JSON string holding the object, unwrapped
}

TEST(ToolCalls, ToolsAreChecked) {
    EXPECT_EQ(ParseFunctionTools(Json::parse(R"([{"type": "retrieval"}])")).status().message(),
              "tools[0].type: must be \"function\"");
    EXPECT_EQ(ParseFunctionTools(Json::parse(R"([{"type": "function", "function": {"name": "a b"}}])")).status().message(),
              "tools[0].function.name: must be 1-64 characters of a-z, A-Z, 0-9, _ and -");
    EXPECT_EQ(ParseFunctionTools(Json::parse(R"([{"type": "function", "function": {"name": "f"}},
                                                 {"type": "function", "function": {"name": "f"}}])"))
                  .status()
                  .message(),
              "tools[1].function.name: \"f\" is listed twice");
    EXPECT_EQ(ParseFunctionTools(Json::parse(R"([{"type": "function", "function": {"name": "f", "parameters": 3}}])"))
                  .status()
                  .message(),
              "tools[0].function.parameters: must be an object");
    ToolChoice named{ToolChoice::Mode::kFunction, "missing", true};
    EXPECT_EQ(PlanToolCalls(ToolCallFormat::kHermes, WeatherTools(), named).status().message(),
              "tool_choice: names the function \"missing\", which is not in tools");
}

// Streams `text` in random pieces and returns the deltas added up.
struct Assembled {
    std::string content;
    std::vector<std::string> ids, names, arguments;
};

Assembled StreamInPieces(ToolCallFormat f, const std::string& trigger, const std::string& text, uint32_t seed) {
    ToolCallStream s(f, WeatherTools(), trigger, 42);
    Assembled a;
    auto add = [&](const ToolStreamDelta& d) {
        a.content += d.content;
        for (const ToolCallDelta& c : d.calls) {
            if (c.index == static_cast<int32_t>(a.names.size())) {
                EXPECT_FALSE(c.id.empty());
                EXPECT_FALSE(c.name.empty());
                a.ids.push_back(c.id);
                a.names.push_back(c.name);
                a.arguments.emplace_back();
            } else {
                EXPECT_TRUE(c.id.empty() && c.name.empty()) << "id and name in the first delta of a call only";
            }
            ASSERT_LT(c.index, static_cast<int32_t>(a.names.size()));
            a.arguments[c.index] += c.arguments;
        }
    };
    std::mt19937 rng(seed);
    size_t at = 0;
    while (at < text.size()) {
        const size_t n = std::min(text.size() - at, size_t{1} + rng() % 7);
        add(s.Push(text.substr(at, n)));
        at += n;
    }
    add(s.Finish());
    // The stream's own account of the calls is the deltas added up.
    EXPECT_EQ(s.calls().size(), a.names.size());
    for (size_t i = 0; i < std::min(s.calls().size(), a.names.size()); ++i) {
        EXPECT_EQ(s.calls()[i].id, a.ids[i]);
        EXPECT_EQ(s.calls()[i].name, a.names[i]);
        EXPECT_EQ(s.calls()[i].arguments, a.arguments[i]);
    }
    return a;
}

TEST(ToolCallStream, DeltasAddUpToTheCallsInAnyPieces) {
    struct Case {
        ToolCallFormat format;
        std::string    trigger;
        std::string    text;
        std::string    content;
        std::vector<std::pair<std::string, std::string>> calls;   // name, raw arguments
    };
    const std::vector<Case> cases = {
        {ToolCallFormat::kHermes, "<tool_call>",
         "Checking <tool the weather.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"P}a\\\"ris\", "
         "\"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>",
         "Checking <tool the weather.\n",
         {{"get_weather", "{\"city\": \"P}a\\\"ris\", \"days\": 2}"}, {"get_time", "{\"zone\": \"UTC\"}"}}},
        {ToolCallFormat::kHermes, "<tool_call>", "No tools needed: <tool_ca", "No tools needed: <tool_ca", {}},
        {ToolCallFormat::kLlama3, "{\"name\"", "{\"name\": \"get_time\", \"parameters\": {\"zone\": \"CET\"}}", "",
         {{"get_time", "{\"zone\": \"CET\"}"}}},
        {ToolCallFormat::kMistral, "", "[{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}, {\"name\": "
         "\"get_weather\", \"arguments\": {\"city\": \"Rome\", \"days\": 10}}]", "",
         {{"get_time", "{\"zone\": \"CET\"}"}, {"get_weather", "{\"city\": \"Rome\", \"days\": 10}"}}},
        {ToolCallFormat::kGeneric, "",
         "{\"tool_calls\": [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\", \"days\": 1}}]}", "",
         {{"get_weather", "{\"city\": \"Oslo\", \"days\": 1}"}}},
        {ToolCallFormat::kGeneric, "", "{\"response\": \"It is \\\"sunny\\\".\"}", "It is \"sunny\".", {}},
    };
    for (const Case& c : cases) {
        for (uint32_t seed = 0; seed < 40; ++seed) {
            Assembled a = StreamInPieces(c.format, c.trigger, c.text, seed);
            EXPECT_EQ(a.content, c.content) << ToolCallFormatName(c.format) << " seed " << seed;
            ASSERT_EQ(a.names.size(), c.calls.size()) << c.text;
            for (size_t i = 0; i < c.calls.size(); ++i) {
                EXPECT_EQ(a.names[i], c.calls[i].first);
                EXPECT_EQ(a.arguments[i], c.calls[i].second) << "seed " << seed;
            }
            if (a.ids.size() == 2) {
                EXPECT_NE(a.ids[0], a.ids[1]);
            }
        }
    }
}

// The grammar for each format accepts the call as the family's template
// writes it, and its plain-text lead-in only where the choice allows it.
TEST(ToolCalls, GrammarAcceptsWhatTheTemplateWrites) {
    const std::vector<FunctionTool> tools = WeatherTools();
    const auto vocab = grammar::ByteVocabulary();
    int seen = 0;
    for (const Family& f : kFamilies) {
        const std::string src = ReadTemplate(f.file);
        if (src.empty()) continue;
        ++seen;
        absl::StatusOr<std::string> text = RenderAssistantCalls(src, {{"get_weather", {{"city", "Paris"}, {"days", 3}}}});
        ASSERT_TRUE(text.ok()) << text.status();
        std::string part = AssistantPart(*text, f);
        // Chat markup around the call is the template's, not the answer's.
        if (f.format == ToolCallFormat::kLlama3 || f.format == ToolCallFormat::kHermes) {
            part = part.substr(part.find_first_not_of("\n"));
            part = part.substr(0, part.find_last_not_of("\n") + 1);
        }
        if (f.format == ToolCallFormat::kMistral) {
            part = part.substr(part.find("[TOOL_CALLS]") + 12);
            // Mistral's template adds the call id; an answer has none.
            const size_t id = part.find(", \"id\": ");
            ASSERT_NE(id, std::string::npos) << part;
            part = part.substr(0, id) + part.substr(part.find('}', id));
        }
        for (ToolChoice::Mode mode : {ToolChoice::Mode::kRequired, ToolChoice::Mode::kAuto}) {
            absl::StatusOr<ToolCallPlan> plan = PlanToolCalls(f.format, tools, {mode, "", true});
            ASSERT_TRUE(plan.ok()) << plan.status();
            absl::StatusOr<grammar::Grammar> g = grammar::ParseGbnf(plan->grammar.text);
            ASSERT_TRUE(g.ok()) << f.file << ": " << g.status() << "\n" << plan->grammar.text;
            absl::StatusOr<std::shared_ptr<const grammar::CompiledGrammar>> cg = grammar::Compile(*g, vocab);
            ASSERT_TRUE(cg.ok()) << cg.status();
            grammar::Matcher m(*cg);
            EXPECT_TRUE(m.AcceptBytes(part) && m.CanEnd()) << f.file << ": " << part;
            grammar::Matcher bad(*cg);
            EXPECT_FALSE(bad.AcceptBytes(std::string(part).replace(part.find("get_weather"), 11, "get_wetter")));
        }
    }
    if (seen == 0) GTEST_SKIP() << "no chat templates";
}

TEST(ToolCalls, GenericGrammarHoldsCallsOrAResponse) {
    const auto vocab = grammar::ByteVocabulary();
    const std::vector<FunctionTool> tools = WeatherTools();
    auto accepts = [&](ToolChoice choice, const std::string& text) {
        absl::StatusOr<ToolCallPlan> plan = PlanToolCalls(ToolCallFormat::kGeneric, tools, choice);
        EXPECT_TRUE(plan.ok()) << plan.status();
        EXPECT_FALSE(plan->system_prompt.empty());
        absl::StatusOr<grammar::Grammar> g = grammar::ParseGbnf(plan->grammar.text);
        EXPECT_TRUE(g.ok()) << g.status() << "\n" << plan->grammar.text;
        if (!g.ok()) return false;
        grammar::Matcher m(*grammar::Compile(*g, vocab));
        return m.AcceptBytes(text) && m.CanEnd();
    };
    const std::string call = "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}]}";
    const std::string two = "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}, "
                            "{\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]}";
    const std::string response = "{\"response\": \"Hello\"}";
    EXPECT_TRUE(accepts({ToolChoice::Mode::kAuto, "", true}, call));
    EXPECT_TRUE(accepts({ToolChoice::Mode::kAuto, "", true}, response));
    EXPECT_TRUE(accepts({ToolChoice::Mode::kAuto, "", true}, two));
    EXPECT_FALSE(accepts({ToolChoice::Mode::kAuto, "", false}, two));
    EXPECT_TRUE(accepts({ToolChoice::Mode::kRequired, "", true}, call));
    EXPECT_FALSE(accepts({ToolChoice::Mode::kRequired, "", true}, response));
    EXPECT_FALSE(accepts({ToolChoice::Mode::kFunction, "get_weather", true}, call));
    EXPECT_FALSE(accepts({ToolChoice::Mode::kRequired, "", true},
                         "{\"tool_calls\": [{\"name\": \"get_time\", \"arguments\": {\"zone\": \"PST\"}}]}"));
}

// The conversation a request with tools renders: the generic format's
// system prompt in front of the conversation's own system message (or as
// one), every other format's conversation untouched; nothing at all
// without tools or under tool_choice none.
TEST(ToolCalls, SetupPutsTheGenericPromptInFrontOfTheSystemMessage) {
    const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "get_time", "parameters": {}}}])");
    auto conversation = [&](Json messages) {
        auto c = std::make_shared<Conversation>();
        c->messages = std::move(messages);
        c->tools = tools;
        return std::shared_ptr<const Conversation>(c);
    };
    const Json user = {{"role", "user"}, {"content", "hi"}};
    const ToolChoice automatic{ToolChoice::Mode::kAuto, "", true};
    const std::string no_tool_section = "{% for m in messages %}{{ m.content }}{% endfor %}";

    auto plain = PrepareToolCalls(no_tool_section, conversation(Json::array({user})), automatic);
    ASSERT_TRUE(plain.ok() && plain->has_value()) << plain.status();
    const ToolCallSetup& p = **plain;
    EXPECT_EQ(p.plan.format, ToolCallFormat::kGeneric);
    ASSERT_EQ(p.conversation->messages.size(), 2u);
    EXPECT_EQ(p.conversation->messages[0], Json({{"role", "system"}, {"content", p.plan.system_prompt}}));
    EXPECT_EQ(p.conversation->messages[1], user);
    ASSERT_EQ(p.tools.size(), 1u);
    EXPECT_EQ(p.tools[0].name, "get_time");

    auto own = conversation(Json::array({{{"role", "system"}, {"content", "Be brief."}}, user}));
    auto merged = PrepareToolCalls(no_tool_section, own, automatic);
    ASSERT_TRUE(merged.ok() && merged->has_value());
    EXPECT_EQ((*merged)->conversation->messages.size(), 2u);
    EXPECT_EQ((*merged)->conversation->messages[0]["content"], (*merged)->plan.system_prompt + "\n\nBe brief.");
    EXPECT_EQ(own->messages[0]["content"], "Be brief.") << "the caller's conversation is not changed";

    const std::string hermes = ReadTemplate("Qwen-Qwen2.5-7B-Instruct.jinja");
    if (!hermes.empty()) {
        auto h = PrepareToolCalls(hermes, own, automatic);
        ASSERT_TRUE(h.ok() && h->has_value());
        EXPECT_EQ((*h)->plan.format, ToolCallFormat::kHermes);
        EXPECT_EQ((*h)->conversation, own) << "a template with a tool section renders the tools itself";
    }
    auto none = PrepareToolCalls(no_tool_section, own, {ToolChoice::Mode::kNone, "", true});
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    auto bad = PrepareToolCalls(no_tool_section, own, {ToolChoice::Mode::kFunction, "nope", true});
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace prepack

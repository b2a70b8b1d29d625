// Tool calls through the engine (Request::tool_choice, Event::tool_call_deltas
// and Event::tool_calls):
// - the lazy grammar of Continuation (ConstrainFrom): free text until the
//   trigger, masked from the token that completes it on (a trigger inside a
//   token, split over tokens, inside <think>, and a token that runs past the
//   trigger into text the grammar refuses), on a hand-made vocabulary with
//   one-hot logits, so every step's token is known;
// - calls read out of the answer (ReadToolCalls): content without markup,
//   deltas that add up to the final calls, thinking kept out of the calls;
// - requests with tools batched (two copies each) under every policy get
//   exactly the tokens, content and calls Generate() gives each alone (a
//   synthetic f32 model, whose numbers do not depend on the batch);
// - SmolLM2-135M-Instruct (no tool section in its template: the generic
//   JSON format): tool_choice required, a named function and auto give
//   calls whose arguments satisfy the tool's schema (checked here by a
//   plain reading of the schema), copies in a batch agree;
// - the Hermes format (Qwen2.5's template) on a Qwen2-shaped model with
//   random weights: the grammar alone makes its calls well formed;
// - request errors at submission.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/engine/engine.h"
#include "core/engine/generate.h"
#include "core/forward/cpu_pass.h"
#include "core/kv/kv_cache.h"
#include "core/request/continuation.h"
#include "core/request/grammar_compiler.h"
#include "tests/test_util.h"

namespace prepack {
namespace {

using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------
// Continuation: the trigger and the tool stream, token by token.

enum : int32_t {
    kUnk, kBos, kEos,
    kSure,        // "Sure"
    kToolA,       // "<tool"
    kToolB,       // "_call>"
    kTrigger,     // "<tool_call>"
    kTriggerNl,   // "<tool_call>\n"
    kTriggerX,    // "<tool_call>x": past the trigger into text the grammar refuses
    kNl,          // "\n"
    kName,        // {"name": "
    kGetTime,     // get_time
    kArgs,        // ", "arguments": 
    kZoneKey,     // {"zone": "
    kUtc,         // UTC
    kCloseArgs,   // "}
    kClose,       // }\n</tool_call>
    kX,           // x
    kThinkOpen,   // <think>
    kThinkClose,  // </think>
    kVocab
};

const Tokenizer& Vocab() {
    static const Tokenizer tok = [] {
        auto t = Tokenizer::FromPieces({"<unk>", "<s>", "</s>", "Sure", "<tool", "_call>", "<tool_call>", "<tool_call>\n",
                                        "<tool_call>x", "\n", "{\"name\": \"", "get_time", "\", \"arguments\": ",
                                        "{\"zone\": \"", "UTC", "\"}", "}\n</tool_call>", "x", "<think>", "</think>"},
                                       {}, {}, kBos, kEos, kUnk);
        EXPECT_TRUE(t.ok()) << t.status();
        return *std::move(t);
    }();
    return tok;
}

std::vector<FunctionTool> TimeTool() {
    auto t = ParseFunctionTools(Json::parse(R"([{"type": "function", "function": {"name": "get_time", "parameters":
        {"type": "object", "properties": {"zone": {"type": "string", "enum": ["UTC", "CET"]}}, "required": ["zone"]}}}])"));
    EXPECT_TRUE(t.ok()) << t.status();
    return *t;
}

// The Hermes plan for TimeTool under auto, one call: the grammar reads
// "<tool_call>\n{...}\n</tool_call>" from the trigger "<tool_call>".
ToolCallPlan HermesPlan() {
    auto plan = PlanToolCalls(ToolCallFormat::kHermes, TimeTool(), {ToolChoice::Mode::kAuto, "", false});
    EXPECT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->trigger, "<tool_call>");
    return *plan;
}

grammar::Matcher HermesMatcher() {
    static GrammarCompiler compiler(Vocab());
    auto m = compiler.NewMatcher(HermesPlan().grammar);
    EXPECT_TRUE(m.ok()) << m.status();
    return *std::move(m);
}

// Logits preferring `want` most and `fallback` next (what the mask leaves
// when it refuses `want`).
std::vector<float> Prefer(int32_t want, int32_t fallback = -1) {
    std::vector<float> l(kVocab, 0.0f);
    if (fallback >= 0) l[fallback] = 5.0f;
    l[want] = 10.0f;
    return l;
}

struct Steps {
    Continuation         c;
    std::vector<int32_t> tokens = {kBos};
    std::string          text, reasoning;
    std::vector<ToolCallDelta> deltas;
    NextToken            last;

    Steps() : c(Vocab(), Greedy(), {}, {64, 512, false}) { c.PrimeWithPrompt(tokens); }
    static SamplingParams Greedy() {
        SamplingParams s;
        s.temperature = 0.0f;
        return s;
    }
    // Samples one token from Prefer(want, fallback); returns it.
    int32_t Step(int32_t want, int32_t fallback = -1) {
        last = c.Next(Prefer(want, fallback), &tokens);
        EXPECT_TRUE(last.status.ok()) << last.status;
        text += last.text;
        reasoning += last.reasoning;
        for (ToolCallDelta& d : last.tool_call_deltas) deltas.push_back(d);
        return last.token;
    }
};

TEST(ToolTrigger, OutputIsFreeUntilTheTriggerThenMasked) {
    Steps r;
    r.c.ConstrainFrom("<tool_call>", HermesMatcher());
    EXPECT_FALSE(r.c.constrained()) << "a lazy grammar does not constrain from the first token";
    EXPECT_EQ(r.Step(kSure), kSure);
    EXPECT_EQ(r.Step(kX), kX) << "before the trigger any token may come";
    EXPECT_EQ(r.Step(kToolA), kToolA);
    EXPECT_FALSE(r.c.grammar_active()) << "\"<tool\" is only the start of the trigger";
    EXPECT_EQ(r.Step(kToolB), kToolB);
    EXPECT_TRUE(r.c.grammar_active()) << "\"<tool\" + \"_call>\" completes it";
    // From here the grammar reads "<tool_call>" and must see "\n" next: x is masked.
    EXPECT_EQ(r.Step(kX, kNl), kNl);
    EXPECT_EQ(r.Step(kX, kName), kName);
    for (int32_t t : {kGetTime, kArgs, kZoneKey, kUtc, kCloseArgs}) EXPECT_EQ(r.Step(t), t);
    EXPECT_FALSE(r.last.finished);
    EXPECT_EQ(r.Step(kEos, kClose), kClose) << "an end token only where the call is complete";
    ASSERT_TRUE(r.last.finished) << "one call, then nothing may follow";
    EXPECT_EQ(r.last.reason, FinishReason::kStop);
    EXPECT_EQ(r.text, "Surex<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>");
}

TEST(ToolTrigger, ATokenHoldingTheTriggerAndMoreIsCaughtUp) {
    Steps r;
    r.c.ConstrainFrom("<tool_call>", HermesMatcher());
    r.Step(kSure);
    EXPECT_EQ(r.Step(kTriggerNl), kTriggerNl);
    ASSERT_TRUE(r.c.grammar_active());
    // The grammar has read "<tool_call>\n": another "\n" is refused.
    EXPECT_EQ(r.Step(kNl, kName), kName);
}

TEST(ToolTrigger, ATokenRunningPastTheTriggerIntoRefusedTextDropsTheGrammar) {
    Steps r;
    r.c.ConstrainFrom("<tool_call>", HermesMatcher());
    EXPECT_EQ(r.Step(kTriggerX), kTriggerX);
    EXPECT_FALSE(r.c.grammar_active()) << "\"<tool_call>x\" is no call: nothing is forced after it";
    EXPECT_EQ(r.Step(kX), kX);
    EXPECT_EQ(r.Step(kTrigger), kTrigger);
    EXPECT_FALSE(r.c.grammar_active()) << "the grammar is gone for the rest of the answer";
    EXPECT_EQ(r.Step(kX), kX);
}

TEST(ToolTrigger, ATriggerInsideThinkingDoesNotCount) {
    Steps r;
    r.c.ConstrainFrom("<tool_call>", HermesMatcher());
    r.c.SplitReasoning(false);
    r.Step(kThinkOpen);
    EXPECT_EQ(r.Step(kTrigger), kTrigger);
    EXPECT_FALSE(r.c.grammar_active()) << "thinking about a call is not a call";
    EXPECT_EQ(r.Step(kX), kX);
    r.Step(kThinkClose);
    EXPECT_EQ(r.Step(kX), kX);
    EXPECT_FALSE(r.c.grammar_active());
    EXPECT_EQ(r.Step(kTrigger), kTrigger);
    EXPECT_TRUE(r.c.grammar_active());
    EXPECT_EQ(r.Step(kX, kNl), kNl);
}

TEST(ToolTrigger, NoTriggerConstrainsFromTheFirstToken) {
    Steps r;
    r.c.ConstrainFrom("", HermesMatcher());
    EXPECT_TRUE(r.c.constrained());
    EXPECT_EQ(r.Step(kSure, kTrigger), kTrigger);
}

// The whole Hermes answer through the tool stream: thinking (which holds
// a call's text) apart, content without markup, one call whose deltas add
// up to the final call.
TEST(ToolStreamInContinuation, CallsComeAsDeltasAndWholeAtTheEnd) {
    const ToolCallPlan plan = HermesPlan();
    Steps r;
    r.c.ConstrainFrom(plan.trigger, HermesMatcher());
    r.c.SplitReasoning(false);
    r.c.ReadToolCalls(ToolCallStream(plan.format, TimeTool(), plan.trigger, 7));
    const std::vector<int32_t> thought = {kThinkOpen, kTriggerNl, kName, kGetTime, kArgs, kZoneKey,
                                          kUtc,       kCloseArgs, kClose, kThinkClose};
    for (int32_t t : thought) EXPECT_EQ(r.Step(t), t);
    EXPECT_FALSE(r.c.grammar_active());
    EXPECT_TRUE(r.deltas.empty()) << "a call inside <think> is thinking";
    EXPECT_EQ(r.reasoning, "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"zone\": \"UTC\"}}\n</tool_call>");
    const std::vector<int32_t> answer = {kSure, kTriggerNl, kName, kGetTime, kArgs, kZoneKey, kUtc, kCloseArgs, kClose};
    for (int32_t t : answer) EXPECT_EQ(r.Step(t), t);
    ASSERT_TRUE(r.last.finished);
    EXPECT_EQ(r.last.reason, FinishReason::kStop);
    EXPECT_EQ(r.text, "Sure") << "content only: no call markup";
    ASSERT_EQ(r.c.tool_calls().size(), 1u);
    const ParsedToolCall& call = r.c.tool_calls()[0];
    EXPECT_EQ(call.name, "get_time");
    EXPECT_EQ(call.arguments, "{\"zone\": \"UTC\"}");
    EXPECT_EQ(call.id.rfind("call_", 0), 0u) << call.id;
    // The deltas, added up, are that call.
    std::string args;
    ASSERT_FALSE(r.deltas.empty());
    EXPECT_EQ(r.deltas[0].id, call.id);
    EXPECT_EQ(r.deltas[0].name, call.name);
    for (const ToolCallDelta& d : r.deltas) {
        EXPECT_EQ(d.index, 0);
        args += d.arguments;
    }
    EXPECT_EQ(args, call.arguments);
}

// ---------------------------------------------------------------------------
// Engine helpers.

struct Collected {
    std::vector<int32_t>        tokens;
    std::string                 text;
    std::vector<ParsedToolCall> from_deltas;   // the deltas added up
    Event                       finish;
};

Collected Collect(Stream& s) {
    Collected c;
    Event e;
    while (s.Next(&e, -1)) {
        if (e.kind == Event::Kind::kFinish) {
            c.finish = e;
            continue;
        }
        c.tokens.push_back(e.token);
        c.text += e.text;
        for (const ToolCallDelta& d : e.tool_call_deltas) {
            if (static_cast<size_t>(d.index) == c.from_deltas.size()) {
                EXPECT_FALSE(d.id.empty() || d.name.empty()) << "a call's first delta has its id and name";
                c.from_deltas.push_back({d.id, d.name, ""});
            }
            EXPECT_LT(static_cast<size_t>(d.index), c.from_deltas.size());
            if (static_cast<size_t>(d.index) < c.from_deltas.size()) c.from_deltas[d.index].arguments += d.arguments;
        }
    }
    return c;
}

std::string CallsText(const std::vector<ParsedToolCall>& calls) {
    std::string s;
    for (const ParsedToolCall& c : calls) s += c.name + c.arguments + ";";
    return s;
}

// `args` against the tool's parameters schema, read plainly: an object,
// every required key there, no key the schema does not list (they all set
// additionalProperties false), each value of its property's type or enum.
void ExpectSatisfies(const std::string& args, const Json& schema) {
    const Json v = Json::parse(args, nullptr, false);
    ASSERT_FALSE(v.is_discarded()) << "arguments are not JSON: " << args;
    ASSERT_TRUE(v.is_object()) << args;
    const Json required = schema.value("required", Json::array());
    const Json properties = schema.value("properties", Json::object());
    for (const Json& key : required) EXPECT_TRUE(v.contains(key.get<std::string>())) << key << " in " << args;
    for (const auto& [key, value] : v.items()) {
        ASSERT_TRUE(properties.contains(key)) << "unlisted key " << key << " in " << args;
        const Json& p = properties[key];
        const std::string type = p.value("type", "");
        if (p.contains("enum")) {
            EXPECT_NE(std::find(p["enum"].begin(), p["enum"].end(), value), p["enum"].end()) << args;
        } else if (type == "string") {
            ASSERT_TRUE(value.is_string()) << args;
            if (p.contains("maxLength")) {
                EXPECT_LE(value.get<std::string>().size(), p["maxLength"].get<size_t>());   // bytes >= code points
            }
        } else if (type == "boolean") {
            EXPECT_TRUE(value.is_boolean()) << args;
        } else if (type == "integer") {
            EXPECT_TRUE(value.is_number_integer()) << args;
        }
    }
}

const Json& WeatherAndTimeTools() {
    static const Json tools = Json::parse(R"([
      {"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "The city", "maxLength": 32},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
          "required": ["city"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "get_time", "description": "Get the current time in a time zone",
        "parameters": {"type": "object", "properties": {
            "timezone": {"type": "string", "description": "An IANA time zone such as Europe/Paris", "maxLength": 32}},
          "required": ["timezone"], "additionalProperties": false}}}
    ])");
    return tools;
}

const Json& SchemaOf(const Json& tools, const std::string& name) {
    for (const Json& t : tools) {
        if (t["function"]["name"] == name) return t["function"]["parameters"];
    }
    ADD_FAILURE() << "no tool " << name;
    static const Json none = Json::object();
    return none;
}

Request ToolRequest(const std::string& question, const Json& tools, ToolChoice choice, int32_t max_tokens = 96) {
    auto conv = std::make_shared<Conversation>();
    conv->messages = Json::array({{{"role", "user"}, {"content", question}}});
    conv->tools = tools;
    Request r;
    r.chat = conv;
    r.tool_choice = std::move(choice);
    r.max_tokens = max_tokens;
    r.sampling.temperature = 0.0f;
    return r;
}

std::unique_ptr<Engine> MakeEngine(const std::string& model, SchedulePolicy policy, const std::string& chat_template = "") {
    EngineOptions o;
    o.model = model;
    o.policy = policy;
    o.threads = 2;
    o.max_batch_tokens = 512;
    o.chat_template_file = chat_template;
    auto e = Engine::Create(o);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
}

// What the request generates alone through Generate() (generate.h) on a
// private KV pool: its conversation rendered with the tools' setup, the
// plan's grammar from its trigger, the calls read by the same stream.
GenerateResult SoloGenerate(const Engine& engine, const Model& model, const Request& r) {
    auto source = engine.chat_templates().SourceFor(*r.chat);
    EXPECT_TRUE(source.ok()) << source.status();
    auto setup = PrepareToolCalls(*source, r.chat, r.tool_choice);
    EXPECT_TRUE(setup.ok() && setup->has_value()) << setup.status();
    if (!setup.ok() || !setup->has_value()) return {};
    const ToolCallSetup& s = **setup;
    auto prompt = engine.RenderChat(*s.conversation);
    EXPECT_TRUE(prompt.ok()) << prompt.status();
    auto pool = KvBlockPool::Create(model.config(), 16, 64ull << 20);
    EXPECT_TRUE(pool.ok());
    if (!prompt.ok() || !pool.ok()) return {};
    ForwardPass fwd(model, **pool);
    GenerateRequest g;
    g.prompt_tokens = prompt->ids;
    g.max_tokens = r.max_tokens;
    g.sampling = r.sampling;
    g.grammar = s.plan.grammar;
    g.grammar_trigger = s.plan.trigger;
    g.tool_calls = ToolCallStream(s.plan.format, s.tools, s.plan.trigger, 1);
    auto out = Generate(fwd, g);
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? *std::move(out) : GenerateResult{};
}

// What every answer with tools must be: the deltas add up to the final
// calls (same ids), no call markup in the text, arguments that satisfy the
// called tool's schema; a forced call (required, a function) is there and
// complete.
void ExpectWellFormed(const Request& r, const Collected& c) {
    ASSERT_TRUE(c.finish.status.ok()) << c.finish.status;
    ASSERT_EQ(c.from_deltas.size(), c.finish.tool_calls.size());
    for (size_t i = 0; i < c.from_deltas.size(); ++i) {
        EXPECT_EQ(c.from_deltas[i].id, c.finish.tool_calls[i].id);
        EXPECT_EQ(c.from_deltas[i].name, c.finish.tool_calls[i].name);
        EXPECT_EQ(c.from_deltas[i].arguments, c.finish.tool_calls[i].arguments);
    }
    // (An answer cut off before its first call's arguments began is not a
    // call: its text is content, as ToolCallStream documents.)
    if (c.finish.finish_reason != FinishReason::kLength || !c.finish.tool_calls.empty()) {
        for (const char* markup : {"\"tool_calls\"", "<tool_call>", "\"arguments\""}) {
            EXPECT_EQ(c.text.find(markup), std::string::npos) << c.text;
        }
    }
    const ToolChoice::Mode mode = r.tool_choice.mode;
    if (mode == ToolChoice::Mode::kRequired || mode == ToolChoice::Mode::kFunction) {
        EXPECT_NE(c.finish.finish_reason, FinishReason::kLength) << "an unfinished call: " << CallsText(c.finish.tool_calls);
        ASSERT_FALSE(c.finish.tool_calls.empty()) << c.text;
        EXPECT_TRUE(c.text.empty()) << "a forced call has no content: " << c.text;
    }
    if (c.finish.finish_reason == FinishReason::kLength) return;   // a cut-off call may be partial
    if (!c.finish.tool_calls.empty()) {
        EXPECT_TRUE(c.text.empty()) << "calls or content, not both: " << c.text;
    }
    if (mode == ToolChoice::Mode::kAuto && c.finish.tool_calls.empty()) {
        EXPECT_FALSE(c.text.empty());
    }
    for (const ParsedToolCall& call : c.finish.tool_calls) {
        if (mode == ToolChoice::Mode::kFunction) {
            EXPECT_EQ(call.name, r.tool_choice.function);
        }
        EXPECT_EQ(call.id.size(), 29u) << call.id;
        ExpectSatisfies(call.arguments, SchemaOf(r.chat->tools, call.name));
    }
    if (!r.tool_choice.parallel) {
        EXPECT_LE(c.finish.tool_calls.size(), 1u);
    }
}

const std::string kQwenModel = testing::ModelsDir() + "/realshape/qwen2-Q4_K_M.gguf";
const std::string kQwenTemplate = testing::ModelsDir() + "/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja";

const Json& ClosedTools() {
    // Enums and booleans only: random weights cannot run a string or a
    // number on past max_tokens.
    static const Json tools = Json::parse(R"([
      {"type": "function", "function": {"name": "set_alarm", "parameters": {"type": "object", "properties": {
          "zone": {"type": "string", "enum": ["UTC", "CET"]}, "loud": {"type": "boolean"}},
        "required": ["zone", "loud"], "additionalProperties": false}}},
      {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {
          "zone": {"type": "string", "enum": ["UTC", "CET", "JST"]}},
        "required": ["zone"], "additionalProperties": false}}}
    ])");
    return tools;
}

std::string Question(const Request& r) { return r.chat->messages[0]["content"].get<std::string>(); }

// ---------------------------------------------------------------------------
// Batched as solo: on a synthetic model (f32 weights: a step's numbers do
// not depend on what else it holds) with a template that has no tool
// section (the generic format), requests with tools batched two copies
// each (n = 2) beside one without tools, under every policy, get exactly
// the tokens, content and calls Generate() gives each alone.

TEST(EngineTools, BatchedUnderEveryPolicyAsSolo) {
    const std::string tmpl = ::testing::TempDir() + std::to_string(getpid()) + "_tools_plain.jinja";
    std::ofstream(tmpl) << "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
                           "{% if add_generation_prompt %}assistant:{% endif %}";
    // One small tool: the generic format lists the tools in the prompt, and
    // the synthetic vocabulary spells most of it byte by byte.
    const Json tools = Json::parse(R"([{"type": "function", "function": {"name": "pick", "parameters":
        {"type": "object", "properties": {"z": {"enum": ["a", "b"]}, "on": {"type": "boolean"}},
         "required": ["z"], "additionalProperties": false}}}])");
    using M = ToolChoice::Mode;
    std::vector<Request> reqs = {
        ToolRequest("Pick.", tools, {M::kRequired, "", false}, 96),
        ToolRequest("Anything?", tools, {M::kAuto, "", true}, 40),
    };
    Request sampled = ToolRequest("Pick one.", tools, {M::kFunction, "pick", false}, 96);
    sampled.sampling.temperature = 0.9f;
    sampled.sampling.seed = 5;
    reqs.push_back(sampled);
    auto model = Model::Load("synthetic:tiny");
    ASSERT_TRUE(model.ok()) << model.status();
    auto first = MakeEngine("synthetic:tiny", SchedulePolicy::kFcfs, tmpl);
    ASSERT_NE(first, nullptr);
    std::vector<GenerateResult> solo;
    for (const Request& r : reqs) solo.push_back(SoloGenerate(*first, **model, r));
    first.reset();
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs, SchedulePolicy::kLru, SchedulePolicy::kBatchLlm}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        auto engine = MakeEngine("synthetic:tiny", policy, tmpl);
        ASSERT_NE(engine, nullptr);
        std::vector<Request> batch;
        for (const Request& r : reqs) {
            batch.push_back(r);
            batch.push_back(r);
        }
        Request plain = ToolRequest("No tools here.", Json(), {}, 16);   // beside them, unconstrained
        batch.push_back(plain);
        auto streams = engine->SubmitBatch(batch);
        ASSERT_EQ(streams.size(), batch.size());
        for (size_t i = 0; i + 1 < batch.size(); ++i) {
            SCOPED_TRACE(i);
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            const Collected c = Collect(**streams[i]);
            ExpectWellFormed(batch[i], c);
            const GenerateResult& want = solo[i / 2];
            EXPECT_EQ(c.tokens, want.tokens);
            EXPECT_EQ(c.text, want.text);
            EXPECT_EQ(CallsText(c.finish.tool_calls), CallsText(want.tool_calls));
            EXPECT_EQ(c.finish.finish_reason, want.finish_reason);
            if (batch[i].tool_choice.mode != M::kAuto) {
                EXPECT_FALSE(c.finish.tool_calls.empty()) << "a forced call";
            }
        }
        ASSERT_TRUE(streams.back().ok());
        EXPECT_TRUE(Collect(*streams.back().value()).finish.tool_calls.empty());
        // One compile per grammar: required and the only tool by name (both
        // one call) are one grammar, auto another; the 4 other requests reuse them.
        EXPECT_EQ(engine->Stats().grammar_cache_misses, 2u);
        EXPECT_EQ(engine->Stats().grammar_cache_hits, 4u);
    }
    std::remove(tmpl.c_str());
}

// ---------------------------------------------------------------------------
// SmolLM2-135M-Instruct: the generic format on a real chat model.

TEST(EngineToolsChatModel, RequiredNamedAndAutoGiveWellFormedAnswers) {
    PREPACK_REQUIRE_CHAT_MODEL();
    const Json& tools = WeatherAndTimeTools();
    using M = ToolChoice::Mode;
    const std::vector<Request> reqs = {
        ToolRequest("What is the weather like in Paris today?", tools, {M::kRequired, "", false}, 64),
        ToolRequest("What time is it in Tokyo right now?", tools, {M::kRequired, "", false}, 64),
        ToolRequest("What is the weather like in Paris today?", tools, {M::kFunction, "get_time", false}, 64),
        ToolRequest("Say hello.", tools, {M::kAuto, "", true}, 32),
    };
    // (Batched as solo under every policy is EngineTools.BatchedUnderEveryPolicyAsSolo's;
    // here a quantized model's answers, which is slower.)
    for (SchedulePolicy policy : {SchedulePolicy::kFcfs}) {
        SCOPED_TRACE(SchedulePolicyName(policy));
        auto engine = MakeEngine(testing::ChatModelPath(), policy);
        ASSERT_NE(engine, nullptr);
        // (Copies of one greedy request need not agree on this quantized
        // model: their prompts are cut into different prefill chunks, whose
        // int8 rounding differs, and near-ties part.)
        const std::vector<Request>& batch = reqs;
        auto streams = engine->SubmitBatch(batch);
        std::vector<std::string> ids;
        for (size_t i = 0; i < batch.size(); ++i) {
            SCOPED_TRACE(Question(batch[i]));
            ASSERT_TRUE(streams[i].ok()) << streams[i].status();
            const Collected c = Collect(**streams[i]);
            ExpectWellFormed(batch[i], c);
            for (const ParsedToolCall& call : c.finish.tool_calls) ids.push_back(call.id);
            std::printf("[%s] %s (tool_choice %d) -> content \"%s\" calls %s (%s)\n", SchedulePolicyName(policy),
                        Question(batch[i]).c_str(), static_cast<int>(batch[i].tool_choice.mode), c.text.c_str(),
                        CallsText(c.finish.tool_calls).c_str(), FinishReasonName(c.finish.finish_reason));
        }
        std::sort(ids.begin(), ids.end());
        EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "call ids are unique across requests";
    }
}

// ---------------------------------------------------------------------------
// The Hermes format on a Qwen2-shaped model with random weights: whatever
// it would write, a required call comes out well formed.

TEST(EngineToolsHermes, RandomWeightsStillWriteWellFormedCalls) {
    if (!testing::FileExists(kQwenModel) || !testing::FileExists(kQwenTemplate)) {
        GTEST_SKIP() << kQwenModel << " or " << kQwenTemplate << " is absent (../shared/models); skipping";
    }
    auto engine = MakeEngine(kQwenModel, SchedulePolicy::kFcfs, kQwenTemplate);
    ASSERT_NE(engine, nullptr);
    using M = ToolChoice::Mode;
    std::vector<Request> reqs = {
        ToolRequest("Wake me up.", ClosedTools(), {M::kRequired, "", false}, 128),
        ToolRequest("What time is it?", ClosedTools(), {M::kFunction, "get_time", false}, 128),
    };
    for (uint64_t seed : {1u, 2u}) {
        Request sampled = reqs[0];
        sampled.sampling.temperature = 1.0f;
        sampled.sampling.seed = seed;
        reqs.push_back(sampled);
    }
    auto streams = engine->SubmitBatch(reqs);
    for (size_t i = 0; i < reqs.size(); ++i) {
        SCOPED_TRACE(i);
        ASSERT_TRUE(streams[i].ok()) << streams[i].status();
        const Collected c = Collect(**streams[i]);
        ExpectWellFormed(reqs[i], c);
        EXPECT_EQ(c.finish.finish_reason, FinishReason::kStop) << "one call, then the grammar is done";
        ASSERT_EQ(c.finish.tool_calls.size(), 1u);
        std::printf("qwen2 random weights: %s\n", CallsText(c.finish.tool_calls).c_str());
    }
}

// ---------------------------------------------------------------------------
// Request errors come back at submission, naming the problem.

TEST(EngineToolsErrors, BadToolRequestsAreRefusedAtSubmission) {
    if (!testing::FileExists(kQwenModel) || !testing::FileExists(kQwenTemplate)) {
        GTEST_SKIP() << kQwenModel << " or " << kQwenTemplate << " is absent (../shared/models); skipping";
    }
    auto engine = MakeEngine(kQwenModel, SchedulePolicy::kFcfs, kQwenTemplate);
    ASSERT_NE(engine, nullptr);
    using M = ToolChoice::Mode;
    auto refused = [&](const Request& r, const std::string& says) {
        const absl::Status st = engine->Submit(r).status();
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << st;
        EXPECT_NE(st.message().find(says), std::string::npos) << st;
    };
    Request with_grammar = ToolRequest("hi", ClosedTools(), {M::kAuto, "", true});
    with_grammar.grammar = {grammar::GrammarSpec::Kind::kJsonObject, ""};
    refused(with_grammar, "tools (with tool_choice auto) and a grammar");
    Request no_tools = ToolRequest("hi", Json(), {M::kRequired, "", true});
    refused(no_tools, "tool_choice required needs tools");
    refused(ToolRequest("hi", ClosedTools(), {M::kFunction, "nope", true}), "\"nope\", which is not in tools");
    refused(ToolRequest("hi", Json::parse(R"([{"type": "function", "function": {"name": "a b"}}])"), {}),
            "tools[0].function.name");
    Request eos = ToolRequest("hi", ClosedTools(), {M::kRequired, "", true});
    eos.ignore_eos = true;
    refused(eos, "ignore_eos");
    // tool_choice none: the tools are rendered, nothing is constrained or read.
    Request none = ToolRequest("hi", ClosedTools(), {M::kNone, "", true}, 4);
    auto s = engine->Submit(none);
    ASSERT_TRUE(s.ok()) << s.status();
    const Collected c = Collect(**s);
    EXPECT_TRUE(c.finish.tool_calls.empty());
    EXPECT_EQ(engine->Stats().grammar_cache_misses, 0u);
    // The same tools and choice twice: one compile.
    for (int i = 0; i < 2; ++i) {
        auto t = engine->Submit(ToolRequest("hi", ClosedTools(), {M::kRequired, "", false}, 1));
        ASSERT_TRUE(t.ok()) << t.status();
        Collect(**t);
    }
    EXPECT_EQ(engine->Stats().grammar_cache_misses, 1u);
    EXPECT_EQ(engine->Stats().grammar_cache_hits, 1u);
}

}  // namespace
}  // namespace prepack

// Structured output in OpenAI request bodies (openai/request.h:
// ResponseFormat): OpenAI's response_format on both endpoints, the vLLM and
// llama.cpp names for the same constraint, and the errors naming the field.
// The grammar itself is checked where it is compiled (capi, engine); here
// only what the body says is, which the expectations below spell out by hand.
#include <gtest/gtest.h>

#include <string>

#include "openai/request.h"

namespace prepack::openai {
namespace {

using Kind = ResponseFormat::Kind;

Json Chat(Json extra) {
    Json b = Json::object();
    b["model"] = "m";
    b["messages"] = Json::array({Json{{"role", "user"}, {"content", "hi"}}});
    for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
    return b;
}

Json Completion(Json extra) {
    Json b = Json::object();
    b["model"] = "m";
    b["prompt"] = "Once";
    for (auto it = extra.begin(); it != extra.end(); ++it) b[it.key()] = it.value();
    return b;
}

// The format a chat body asks for; fails the test when it is refused.
ResponseFormat ChatFormat(const Json& extra) {
    ApiRequest r;
    const absl::Status s = ParseChat(Chat(extra), 64, &r);
    EXPECT_TRUE(s.ok()) << s;
    return r.response_format;
}

// The message a chat body is refused with ("" when it is accepted).
std::string ChatError(const Json& extra) {
    ApiRequest r;
    const absl::Status s = ParseChat(Chat(extra), 64, &r);
    EXPECT_FALSE(s.ok()) << "accepted: " << Chat(extra).dump();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    return std::string(s.message());
}

// "FIELD: why" -> FIELD (what the error envelope reports as `param`).
std::string Param(const std::string& message) { return message.substr(0, message.find(": ")); }

const Json kSchema = Json::parse(R"({"type": "object", "properties": {"name": {"type": "string"},
    "age": {"type": "integer", "minimum": 0}}, "required": ["name", "age"], "additionalProperties": false})");

TEST(ResponseFormat, NoneOrTextIsUnconstrained) {
    EXPECT_EQ(ChatFormat(Json::object()).kind, Kind::kText);
    const ResponseFormat f = ChatFormat(Json{{"response_format", {{"type", "text"}}}});
    EXPECT_EQ(f.kind, Kind::kText);
    EXPECT_FALSE(f.active());
    // null is "not given", as OpenAI's clients send it.
    EXPECT_EQ(ChatFormat(Json{{"response_format", nullptr}}).kind, Kind::kText);
}

TEST(ResponseFormat, JsonObject) {
    const ResponseFormat f = ChatFormat(Json{{"response_format", {{"type", "json_object"}}}});
    EXPECT_EQ(f.kind, Kind::kJsonObject);
    EXPECT_TRUE(f.text.empty());
    EXPECT_EQ(f.field, "response_format");
}

TEST(ResponseFormat, JsonSchemaCarriesTheSchemaNameAndStrict) {
    const Json rf = {{"type", "json_schema"},
                     {"json_schema", {{"name", "person-v1_2"}, {"schema", kSchema}, {"strict", true},
                                      {"description", "a person"}}}};
    const ResponseFormat f = ChatFormat(Json{{"response_format", rf}});
    EXPECT_EQ(f.kind, Kind::kJsonSchema);
    EXPECT_EQ(Json::parse(f.text), kSchema);   // the same schema, whatever its spacing
    EXPECT_EQ(f.text.find('\n'), std::string::npos);
    EXPECT_EQ(f.name, "person-v1_2");
    EXPECT_TRUE(f.strict);
    EXPECT_EQ(f.field, "response_format.json_schema.schema");

    Json lax = rf;
    lax["json_schema"].erase("strict");
    EXPECT_FALSE(ChatFormat(Json{{"response_format", lax}}).strict);
    // A boolean schema is a JSON Schema too.
    Json any = rf;
    any["json_schema"]["schema"] = true;
    EXPECT_EQ(ChatFormat(Json{{"response_format", any}}).text, "true");
}

TEST(ResponseFormat, CompletionsTakeItToo) {
    ApiRequest r;
    const Json rf = {{"type", "json_schema"}, {"json_schema", {{"name", "p"}, {"schema", kSchema}}}};
    ASSERT_TRUE(ParseCompletion(Completion(Json{{"response_format", rf}}), 32000, 64, &r).ok());
    EXPECT_EQ(r.response_format.kind, Kind::kJsonSchema);
    EXPECT_EQ(Json::parse(r.response_format.text), kSchema);
    ApiRequest g;
    ASSERT_TRUE(ParseCompletion(Completion(Json{{"guided_regex", "[0-9]+"}}), 32000, 64, &g).ok());
    EXPECT_EQ(g.response_format.kind, Kind::kRegex);
    EXPECT_EQ(g.response_format.text, "[0-9]+");
}

TEST(ResponseFormat, MalformedJsonSchemaIsRefusedNamingTheField) {
    auto with = [](Json js) { return Json{{"response_format", {{"type", "json_schema"}, {"json_schema", js}}}}; };
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", "json_schema"}}}})), "response_format.json_schema");
    EXPECT_EQ(Param(ChatError(with(Json{{"schema", kSchema}}))), "response_format.json_schema.name");
    EXPECT_EQ(Param(ChatError(with(Json{{"name", "has space"}, {"schema", kSchema}}))),
              "response_format.json_schema.name");
    EXPECT_EQ(Param(ChatError(with(Json{{"name", std::string(65, 'a')}, {"schema", kSchema}}))),
              "response_format.json_schema.name");
    EXPECT_TRUE(ChatFormat(with(Json{{"name", std::string(64, 'a')}, {"schema", kSchema}})).active());
    EXPECT_EQ(Param(ChatError(with(Json{{"name", "p"}}))), "response_format.json_schema.schema");
    EXPECT_EQ(Param(ChatError(with(Json{{"name", "p"}, {"schema", 5}}))), "response_format.json_schema.schema");
    EXPECT_EQ(Param(ChatError(with(Json{{"name", "p"}, {"schema", kSchema}, {"strict", "yes"}}))),
              "response_format.json_schema.strict");
    EXPECT_EQ(Param(ChatError(with(Json{{"name", "p"}, {"schema", kSchema}, {"extra", 1}}))),
              "response_format.json_schema.extra");
    EXPECT_EQ(Param(ChatError(with("a string"))), "response_format.json_schema");
}

TEST(ResponseFormat, UnknownOrMalformedTypeIsRefused) {
    const std::string unknown = ChatError(Json{{"response_format", {{"type", "structural_tag"}}}});
    EXPECT_EQ(Param(unknown), "response_format.type");
    EXPECT_NE(unknown.find("structural_tag"), std::string::npos);
    EXPECT_EQ(Param(ChatError(Json{{"response_format", Json::object()}})), "response_format.type");
    EXPECT_EQ(Param(ChatError(Json{{"response_format", "json_object"}})), "response_format");
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", 3}}}})), "response_format.type");
    // A key the type does not take is refused, not ignored.
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", "text"}, {"schema", kSchema}}}})),
              "response_format.schema");
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", "json_object"}, {"strict", true}}}})),
              "response_format.strict");
}

TEST(ResponseFormat, PrepackRegexAndGrammarTypes) {
    const ResponseFormat re = ChatFormat(Json{{"response_format", {{"type", "regex"}, {"regex", "a|b"}}}});
    EXPECT_EQ(re.kind, Kind::kRegex);
    EXPECT_EQ(re.text, "a|b");
    EXPECT_EQ(re.field, "response_format.regex");
    const std::string gbnf = "root ::= \"yes\" | \"no\"";
    const ResponseFormat g = ChatFormat(Json{{"response_format", {{"type", "grammar"}, {"grammar", gbnf}}}});
    EXPECT_EQ(g.kind, Kind::kGbnf);
    EXPECT_EQ(g.text, gbnf);
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", "regex"}}}})), "response_format.regex");
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", "regex"}, {"regex", ""}}}})),
              "response_format.regex");
    // A NUL would cut the text where the C ABI reads it.
    EXPECT_EQ(Param(ChatError(Json{{"response_format", {{"type", "regex"}, {"regex", std::string("a\0b", 3)}}}})),
              "response_format.regex");
}

TEST(ResponseFormat, LlamaCppJsonObjectWithSchema) {
    const ResponseFormat f = ChatFormat(Json{{"response_format", {{"type", "json_object"}, {"schema", kSchema}}}});
    EXPECT_EQ(f.kind, Kind::kJsonSchema);
    EXPECT_EQ(Json::parse(f.text), kSchema);
    EXPECT_EQ(f.field, "response_format.schema");
}

TEST(ResponseFormat, VllmGuidedFields) {
    const ResponseFormat j = ChatFormat(Json{{"guided_json", kSchema}});
    EXPECT_EQ(j.kind, Kind::kJsonSchema);
    EXPECT_EQ(Json::parse(j.text), kSchema);
    EXPECT_EQ(j.field, "guided_json");
    // vLLM also takes the schema as its text.
    const ResponseFormat t = ChatFormat(Json{{"guided_json", kSchema.dump(2)}});
    EXPECT_EQ(Json::parse(t.text), kSchema);
    EXPECT_EQ(Param(ChatError(Json{{"guided_json", "{\"type\": "}})), "guided_json");
    EXPECT_EQ(Param(ChatError(Json{{"guided_json", "[1]"}})), "guided_json");

    const ResponseFormat g = ChatFormat(Json{{"guided_grammar", "root ::= \"x\""}});
    EXPECT_EQ(g.kind, Kind::kGbnf);
    EXPECT_EQ(g.field, "guided_grammar");
    const ResponseFormat l = ChatFormat(Json{{"grammar", "root ::= \"x\""}});   // llama.cpp's name
    EXPECT_EQ(l.kind, Kind::kGbnf);
    EXPECT_EQ(l.text, "root ::= \"x\"");
    EXPECT_EQ(Param(ChatError(Json{{"guided_regex", 7}})), "guided_regex");
}

TEST(ResponseFormat, GuidedChoiceIsGbnfOfEscapedLiterals) {
    const ResponseFormat f = ChatFormat(Json{{"guided_choice", {"yes", "no"}}});
    EXPECT_EQ(f.kind, Kind::kGbnf);
    EXPECT_EQ(f.text, R"(root ::= "yes" | "no")");
    EXPECT_EQ(f.field, "guided_choice");
    // Quotes, backslashes and control bytes escaped; UTF-8 as it is.
    const ResponseFormat e = ChatFormat(Json{{"guided_choice", {"say \"hi\"", "a\\b", "x\ny\tz\r", "\x01", "é"}}});
    EXPECT_EQ(e.text, "root ::= \"say \\\"hi\\\"\" | \"a\\\\b\" | \"x\\ny\\tz\\r\" | \"\\x01\" | \"é\"");
    EXPECT_EQ(Param(ChatError(Json{{"guided_choice", Json::array()}})), "guided_choice");
    EXPECT_EQ(Param(ChatError(Json{{"guided_choice", {"a", ""}}})), "guided_choice[1]");
    EXPECT_EQ(Param(ChatError(Json{{"guided_choice", {"a", 2}}})), "guided_choice[1]");
    EXPECT_EQ(Param(ChatError(Json{{"guided_choice", "a"}})), "guided_choice");
    Json many = Json::array();
    for (size_t i = 0; i <= kMaxGuidedChoices; ++i) many.push_back("c" + std::to_string(i));
    EXPECT_EQ(Param(ChatError(Json{{"guided_choice", many}})), "guided_choice");
    many.erase(many.size() - 1);
    EXPECT_TRUE(ChatFormat(Json{{"guided_choice", many}}).active());
}

TEST(ResponseFormat, VllmStructuredOutputs) {
    const ResponseFormat j = ChatFormat(Json{{"structured_outputs", {{"json", kSchema}}}});
    EXPECT_EQ(j.kind, Kind::kJsonSchema);
    EXPECT_EQ(j.field, "structured_outputs.json");
    const ResponseFormat r = ChatFormat(Json{{"structured_outputs", {{"regex", "\\d+"}}}});
    EXPECT_EQ(r.kind, Kind::kRegex);
    EXPECT_EQ(r.text, "\\d+");
    EXPECT_EQ(r.field, "structured_outputs.regex");
    EXPECT_EQ(ChatFormat(Json{{"structured_outputs", {{"grammar", "root ::= \"a\""}}}}).kind, Kind::kGbnf);
    EXPECT_EQ(ChatFormat(Json{{"structured_outputs", {{"choice", Json::array({"a"})}}}}).text, R"(root ::= "a")");
    EXPECT_EQ(ChatFormat(Json{{"structured_outputs", {{"json_object", true}}}}).kind, Kind::kJsonObject);
    EXPECT_EQ(ChatFormat(Json{{"structured_outputs", {{"json_object", false}}}}).kind, Kind::kText);
    EXPECT_EQ(Param(ChatError(Json{{"structured_outputs", {{"structural_tag", "x"}}}})),
              "structured_outputs.structural_tag");
    EXPECT_EQ(Param(ChatError(Json{{"structured_outputs", {{"regex", "a"}, {"grammar", "root ::= \"a\""}}}})),
              "structured_outputs.grammar");
}

TEST(ResponseFormat, OneConstraintPerRequest) {
    const std::string m =
        ChatError(Json{{"response_format", {{"type", "json_object"}}}, {"guided_regex", "a"}});
    EXPECT_EQ(Param(m), "guided_regex");
    EXPECT_NE(m.find("conflicts with response_format"), std::string::npos) << m;
    EXPECT_EQ(Param(ChatError(Json{{"guided_json", kSchema}, {"grammar", "root ::= \"a\""}})), "grammar");
    // {"type": "text"} constrains nothing, so it conflicts with nothing.
    EXPECT_EQ(ChatFormat(Json{{"response_format", {{"type", "text"}}}, {"guided_regex", "a"}}).kind, Kind::kRegex);
}

TEST(ResponseFormat, OtherFieldsStillRefusedByName) {
    // The structured-output names are known; neighbours of theirs are not.
    EXPECT_EQ(Param(ChatError(Json{{"guided_decoding_backend", "xgrammar"}})), "guided_decoding_backend");
    ApiRequest r;
    const absl::Status s = ParseCompletion(Completion(Json{{"json_schema", kSchema}}), 32000, 64, &r);
    EXPECT_EQ(Param(std::string(s.message())), "json_schema");
}

}  // namespace
}  // namespace prepack::openai

// The JSON Schema front end (json_schema.h): the GBNF it writes, parsed by
// the GBNF parser and run by the matcher, against Python jsonschema's
// verdicts (tests/data/grammar/schema/goldens.json, made by
// scripts/make_grammar_schema_goldens.py): accepted => valid for every case,
// valid and canonical => accepted. Then integer and number bounds against
// arithmetic, the "key other than these" complement against decoding, each
// refusal by keyword and JSON pointer, the options and the limits.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/grammar_sentences.h"
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "core/grammar/gbnf.h"
#include "core/grammar/json_schema.h"
#include "core/grammar/json_schema_numbers.h"
#include "core/grammar/matcher.h"

namespace prepack::grammar {
namespace {

using OrderedJson = nlohmann::ordered_json;

std::string SchemaGbnf(std::string_view schema, const JsonSchemaOptions& options = {}) {
    absl::StatusOr<std::string> g = JsonSchemaToGbnf(schema, options);
    EXPECT_TRUE(g.ok()) << schema << ": " << g.status();
    return g.ok() ? *g : "root ::= \"\\u0000never\"\n";
}

// ------------------------------------------------------------ the oracle

TEST(JsonSchemaGoldens, VerdictsAgreeWithPythonJsonschema) {
    std::ifstream in(PREPACK_SOURCE_DIR "/tests/data/grammar/schema/goldens.json");
    ASSERT_TRUE(in) << "missing goldens: run scripts/make_grammar_schema_goldens.py";
    const OrderedJson goldens = OrderedJson::parse(in);
    int schemas = 0, cases = 0, accepted_valid = 0, rejected_valid = 0;
    for (const OrderedJson& group : goldens["groups"]) {
        const std::string name = group["name"];
        JsonSchemaOptions options;
        if (group.contains("options")) {
            options.closed_objects_by_default = group["options"].value("closed_objects_by_default", true);
        }
        const std::string schema_text = group["schema"].dump();
        const absl::StatusOr<std::string> gbnf = JsonSchemaToGbnf(std::string_view(schema_text), options);
        ASSERT_TRUE(gbnf.ok()) << name << ": " << gbnf.status();
        Sentences sentences(*gbnf);
        ASSERT_TRUE(sentences.ok()) << name;
        ++schemas;
        int accepted_here = 0;
        for (const OrderedJson& c : group["cases"]) {
            const std::string text = c["text"];
            const bool valid = c["valid"];
            const bool canonical = c["canonical"];
            const bool accepted = sentences.Accepts(text);
            ++cases;
            accepted_here += accepted;
            if (accepted) {
                EXPECT_TRUE(valid) << name << ": the grammar accepts the invalid " << text << "\nschema " << schema_text
                                   << "\n" << *gbnf;
            } else if (valid) {
                ++rejected_valid;
                EXPECT_FALSE(canonical) << name << ": the grammar rejects the valid, canonical " << text << "\nschema "
                                        << schema_text << "\n" << *gbnf;
            }
            accepted_valid += accepted && valid;
        }
        EXPECT_GT(accepted_here, 0) << name << ": a grammar that accepts nothing is sound but useless";
    }
    // The file is what the test is about: a truncated one must not pass.
    EXPECT_GE(schemas, 120);
    EXPECT_GE(cases, 5000);
    std::cout << schemas << " schemas, " << cases << " cases, " << accepted_valid << " valid accepted, "
              << rejected_valid << " valid rejected (non-canonical)\n";
}

// ------------------------------------------------------------ integers and numbers

// Every integer in a window around the bounds, and malformed numerals:
// accepted exactly when in range.
TEST(JsonSchemaNumbers, IntegerRangesMatchArithmetic) {
    std::mt19937 rng(47);
    std::vector<std::pair<std::optional<int64_t>, std::optional<int64_t>>> ranges = {
        {0, 0}, {0, 9}, {0, 10}, {1, 99}, {-9, 9}, {-10, -10}, {-1000, -999}, {5, std::nullopt}, {std::nullopt, -5},
        {std::nullopt, 0}, {0, std::nullopt}, {-1, std::nullopt}, {std::nullopt, 1}, {123, 987}, {-987, -123},
        {-45, 678}, {99, 101}, {100, 199}, {109, 110}, {190, 1009}};
    for (int i = 0; i < 20; ++i) {
        int64_t a = std::uniform_int_distribution<int64_t>(-1100, 1100)(rng);
        int64_t b = std::uniform_int_distribution<int64_t>(-1100, 1100)(rng);
        ranges.emplace_back(std::min(a, b), std::max(a, b));
    }
    for (const auto& [lo, hi] : ranges) {
        OrderedJson schema = {{"type", "integer"}};
        if (lo) schema["minimum"] = *lo;
        if (hi) schema["maximum"] = *hi;
        Sentences sentences(SchemaGbnf(schema.dump()));
        for (int64_t x = -1200; x <= 1200; ++x) {
            const bool in_range = (!lo || x >= *lo) && (!hi || x <= *hi);
            ASSERT_EQ(sentences.Accepts(std::to_string(x)), in_range) << schema.dump() << " " << x;
        }
        for (const char* bad : {"-0", "00", "01", "+1", "1.0", "1e1", "", "-", "--1"}) {
            EXPECT_FALSE(sentences.Accepts(bad)) << schema.dump() << " " << bad;
        }
    }
}

// Bounds past 64 bits: the digit-range construction is on decimal strings.
TEST(JsonSchemaNumbers, HugeIntegerBounds) {
    Sentences sentences(SchemaGbnf(R"({"type":"integer","minimum":-1e30,"maximum":18446744073709551615})"));
    EXPECT_TRUE(sentences.Accepts("18446744073709551615"));
    EXPECT_FALSE(sentences.Accepts("18446744073709551616"));
    EXPECT_TRUE(sentences.Accepts("-1000000000000000019884624837632"));  // the double nearest 1e30 is ...656
    EXPECT_TRUE(sentences.Accepts("-1000000000000000019884624838656"));
    EXPECT_FALSE(sentences.Accepts("-1000000000000000019884624838657"));
    EXPECT_FALSE(sentences.Accepts("-10000000000000000000000000000000"));
}

// Numbers: every accepted text's value (as Python reads it: a double)
// satisfies the bounds; every short plain decimal that does is accepted.
TEST(JsonSchemaNumbers, NumberBoundsMatchArithmetic) {
    struct Bounds {
        const char* schema;
        double lo, hi;
        bool lo_exclusive, hi_exclusive;
    };
    const double inf = INFINITY;
    const std::vector<Bounds> cases = {
        {R"({"type":"number","minimum":0})", 0, inf, false, false},
        {R"({"type":"number","exclusiveMinimum":0})", 0, inf, true, false},
        {R"({"type":"number","maximum":0})", -inf, 0, false, false},
        {R"({"type":"number","exclusiveMaximum":0})", -inf, 0, false, true},
        {R"({"type":"number","minimum":0,"maximum":1})", 0, 1, false, false},
        {R"({"type":"number","minimum":-5,"maximum":12})", -5, 12, false, false},
        {R"({"type":"number","minimum":3})", 3, inf, false, false},
        {R"({"type":"number","maximum":-3})", -inf, -3, false, false},
        {R"({"type":"number","minimum":-20,"maximum":-10})", -20, -10, false, false},
        {R"({"type":"number","exclusiveMinimum":0,"maximum":10})", 0, 10, true, false},
        {R"({"type":"number","minimum":-1,"exclusiveMaximum":0})", -1, 0, false, true},
        {R"({"type":"number","minimum":7,"maximum":7})", 7, 7, false, false},
    };
    std::vector<std::string> texts;
    for (const char* sign : {"", "-"}) {
        for (const char* whole : {"0", "1", "2", "3", "5", "7", "9", "10", "11", "12", "13", "19", "20", "21", "100"}) {
            for (const char* fraction : {"", ".0", ".00", ".5", ".999", ".001", ".0000001", ".9999999999999999999"}) {
                for (const char* exponent : {"", "e0", "e1", "e-1", "E+2", "e-05", "e-99", "e-100", "e400", "e-400"}) {
                    texts.push_back(absl::StrCat(sign, whole, fraction, exponent));
                }
            }
        }
    }
    texts.push_back("0." + std::string(199, '0') + "1");
    texts.push_back("0." + std::string(330, '0') + "1");
    texts.push_back("-0." + std::string(330, '0') + "1");
    for (const Bounds& b : cases) {
        Sentences sentences(SchemaGbnf(b.schema));
        for (const std::string& text : texts) {
            const double x = std::strtod(text.c_str(), nullptr);
            const bool satisfies = (b.lo_exclusive ? x > b.lo : x >= b.lo) && (b.hi_exclusive ? x < b.hi : x <= b.hi);
            const bool accepted = sentences.Accepts(text);
            if (accepted) {
                EXPECT_TRUE(satisfies) << b.schema << " accepts " << text;
            }
            // Plain decimals (no exponent, not "-0...", few digits, so that
            // no rounding is involved) within the bounds.
            const bool plain = text.find_first_of("eE") == std::string::npos && text.size() < 16 &&
                               !(text[0] == '-' && x == 0);
            if (plain && satisfies) {
                EXPECT_TRUE(accepted) << b.schema << " rejects " << text;
            }
        }
    }
}

// ------------------------------------------------------------ objects

// Extra keys of an open object: any key whose decoded value is none of the
// listed names, checked against decoding the key with a JSON parser.
TEST(JsonSchemaObjects, ExtraKeysAreExactlyTheUnlistedNames) {
    const std::vector<std::string> listed = {"a", "ab", "abc", "b\"q", "é", "x\\y", "n\nl", ""};
    OrderedJson properties = OrderedJson::object();
    for (const std::string& name : listed) properties[name] = {{"type", "null"}};
    const OrderedJson schema = {{"type", "object"}, {"properties", properties}, {"additionalProperties", {{"type", "integer"}}}};
    Sentences sentences(SchemaGbnf(schema.dump()));
    const std::vector<std::string> keys = {
        R"("")",      R"("a")",     R"("ab")",   R"("abc")",   R"("abcd")",  R"("b")",      R"("b\"")",   R"("b\"q")",
        R"("b\"qq")", R"("é")",     R"("éé")",   R"("x\\y")",  R"("x\\")",   R"("n\nl")",   R"("n\n")",   R"("aa")",
        R"("ac")",    R"("\t")",    R"("zz")",   R"("\u0061")", R"("a\/b")", R"("😀")",     R"("\"")",    R"("\\")",
        R"("b\"q\"")", R"("\n")"};
    for (const std::string& key : keys) {
        const std::string decoded = OrderedJson::parse(key).get<std::string>();
        const bool is_listed = std::find(listed.begin(), listed.end(), decoded) != listed.end();
        // A key that needs \u or \/ is outside the key grammar (one spelling per character).
        const bool spellable = key.find("\\u") == std::string::npos && key.find("\\/") == std::string::npos;
        const bool accepted = sentences.Accepts(absl::StrCat("{", key, ":1}"));
        EXPECT_EQ(accepted, !is_listed && spellable) << key;
    }
}

// nlohmann::json sorts object keys; the text overload keeps the schema's order.
TEST(JsonSchemaObjects, PropertyOrder) {
    const char* text = R"({"type":"object","properties":{"b":{"type":"integer"},"a":{"type":"integer"}},"required":["b","a"]})";
    Sentences from_text(SchemaGbnf(text));
    EXPECT_TRUE(from_text.Accepts(R"({"b":1,"a":2})"));
    EXPECT_FALSE(from_text.Accepts(R"({"a":2,"b":1})"));
    const absl::StatusOr<std::string> sorted = JsonSchemaToGbnf(nlohmann::json::parse(text));
    ASSERT_TRUE(sorted.ok()) << sorted.status();
    Sentences from_json(*sorted);
    EXPECT_TRUE(from_json.Accepts(R"({"a":2,"b":1})"));
    EXPECT_FALSE(from_json.Accepts(R"({"b":1,"a":2})"));
}

TEST(JsonSchemaObjects, ClosedByDefaultIsAnOption) {
    const char* schema = R"({"type":"object","properties":{"a":{"type":"integer"}}})";
    Sentences closed(SchemaGbnf(schema));
    EXPECT_TRUE(closed.Accepts(R"({"a":1})"));
    EXPECT_FALSE(closed.Accepts(R"({"a":1,"b":2})"));
    JsonSchemaOptions open_options;
    open_options.closed_objects_by_default = false;
    Sentences open(SchemaGbnf(schema, open_options));
    EXPECT_TRUE(open.Accepts(R"({"a":1,"b":2})"));
    EXPECT_TRUE(open.Accepts(R"({"b":[2],"c":{}})"));
    EXPECT_FALSE(open.Accepts(R"({"a":1,"a":2})"));
}

// ------------------------------------------------------------ whitespace and JSON object mode

TEST(JsonObjectMode, AnyObjectWithBoundedWhitespace) {
    Sentences sentences(JsonObjectGbnf());
    for (const char* yes : {"{}", "{ }", "{\n}", R"({"a":[1,{"b":null}],"c":"\u00e9\n"})", "{\n  \"a\": 1,\n  \"b\": [ 1, 2 ]\n}",
                            R"({"a":1,"a":2})", "{\"a\":-0.5e+3}"}) {
        EXPECT_TRUE(sentences.Accepts(yes)) << yes;
    }
    for (const char* no : {"[]", "\"s\"", "1", "{", "{  }", " {}", "{} ", "{\"a\"}", "{\"a\":1,}", "{'a':1}",
                           "{\"a\":01}", "{\"a\":\"\x01\"}", "{\"a\":.5}"}) {
        EXPECT_FALSE(sentences.Accepts(no)) << no;
    }
    EXPECT_TRUE(sentences.Accepts("{\n" + std::string(20, ' ') + "}"));
    EXPECT_FALSE(sentences.Accepts("{\n" + std::string(21, ' ') + "}"));
    JsonSchemaOptions narrow;
    narrow.max_indent = 2;
    Sentences narrow_sentences(JsonObjectGbnf(narrow));
    EXPECT_TRUE(narrow_sentences.Accepts("{\n\t\t\"a\":1}"));
    EXPECT_FALSE(narrow_sentences.Accepts("{\n   \"a\":1}"));
}

// ------------------------------------------------------------ the text itself

TEST(JsonSchemaGbnf, RulesAreNamedAfterTheSchemaPaths) {
    const std::string gbnf = SchemaGbnf(R"({"$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"}},
        "required":["city"]}},"type":"object","properties":{"home":{"$ref":"#/$defs/Address"},
        "tags":{"type":"array","items":{"type":"string"}}},"required":["home","tags"]})");
    for (const char* rule : {"root ::= ", R"("\"home\"" ws ":" ws defs-Address)", "defs-Address ::= ", "defs-Address-city ::= ", "root-tags ::= ",
                             "root-tags-items ::= ", "ws ::= ", "string ::= "}) {
        EXPECT_NE(gbnf.find(rule), std::string::npos) << rule << "\n" << gbnf;
    }
    EXPECT_EQ(gbnf.find("format-"), std::string::npos) << "unused fixed rules are left out\n" << gbnf;
}

TEST(JsonSchemaGbnf, RecursionBecomesRecursiveRules) {
    Sentences sentences(SchemaGbnf(R"({"type":"array","items":{"$ref":"#"},"maxItems":2})"));
    EXPECT_TRUE(sentences.Accepts("[]"));
    EXPECT_TRUE(sentences.Accepts("[[],[[[]],[]]]"));
    EXPECT_FALSE(sentences.Accepts("[[],[],[]]"));
    EXPECT_FALSE(sentences.Accepts("[1]"));
}

// ------------------------------------------------------------ refusals

struct Refusal {
    const char* schema;
    const char* message;  // a substring of the error
};

TEST(JsonSchemaRefusals, NameTheKeywordAndItsPointer) {
    const std::vector<Refusal> refusals = {
        {R"({"type":"object","properties":{"a":{"not":{"type":"string"}}}})", R"(unsupported keyword "not" at /properties/a)"},
        {R"({"if":{},"then":{}})", R"(unsupported keyword "if" at the root)"},
        {R"({"type":"object","properties":{"a~b/c":{"type":"integer","multipleOf":2}}})",
         R"(unsupported keyword "multipleOf" at /properties/a~0b~1c)"},
        {R"({"type":"object","minProperties":1})", R"(unsupported keyword "minProperties" at the root)"},
        {R"({"type":"array","contains":{"type":"integer"}})", R"(unsupported keyword "contains")"},
        {R"({"type":"array","uniqueItems":true})", R"(unsupported keyword "uniqueItems")"},
        {R"({"type":"object","propertyNames":{"maxLength":3}})", R"(unsupported keyword "propertyNames")"},
        {R"({"type":"string","frobnicate":1})", R"(unsupported keyword "frobnicate")"},
        {R"({"type":"string","format":"hostname"})", R"(unsupported format "hostname" at the root)"},
        {R"({"type":"string","format":"date","maxLength":3})", R"("maxLength" together with "format")"},
        {R"({"type":"string","pattern":"a","minLength":3})", R"("minLength" together with "pattern")"},
        {R"({"type":"string","pattern":"(a)\\1"})", R"("pattern" at the root)"},
        {R"({"enum":[]})", R"("enum" at the root is empty)"},
        {R"({"type":"string","enum":[1,2]})", R"(no value of "enum"/"const" at the root)"},
        {R"({"type":"integer","minimum":5,"maximum":3})", "no integer satisfies the bounds at the root"},
        {R"({"type":"integer","exclusiveMinimum":3,"exclusiveMaximum":4})", "no integer satisfies"},
        {R"({"type":"number","minimum":0.5})", R"("minimum" 0.5 at the root is not supported)"},
        {R"({"type":"number","exclusiveMinimum":1})", R"("exclusiveMinimum" 1 at the root is not supported)"},
        {R"({"type":"number","minimum":1,"maximum":0})", "no number satisfies the bounds"},
        {R"({"type":"string","minLength":5,"maxLength":3})", R"(no value satisfies "minLength" 5 and "maxLength" 3)"},
        {R"({"type":"array","minItems":3,"items":false})", R"(no value satisfies "minItems" 3)"},
        {R"({"type":"object","properties":{"a":{}},"required":["b"],"additionalProperties":false})",
         R"(required property "b" at the root is not in "properties" and additionalProperties is false)"},
        {R"({"type":"object","properties":{"a":false},"required":["a"]})", R"(required property "a" at the root has the schema false)"},
        {"false", "the schema is false"},
        {R"({"type":"object","properties":{"a":false}, "additionalProperties":false, "required":["a"]})", "schema false"},
        {R"({"$ref":"#/$defs/Missing"})", R"($ref "#/$defs/Missing" at the root: no "$defs" there)"},
        {R"({"$defs":{},"$ref":"#/$defs/Missing"})", R"($ref "#/$defs/Missing" at the root: no "Missing" there)"},
        {R"({"$ref":"other.json#/a"})", R"(only references inside the schema)"},
        {R"({"$ref":"#anchor"})", "anchors are not supported"},
        {R"({"$ref":1})", R"($ref at the root must be a string)"},
        {R"({"$defs":{"A":{"$ref":["#"]}},"$ref":"#/$defs/A"})", R"($ref at /$defs/A must be a string)"},
        {R"({"type":"object","properties":{"a":{"$ref":{}}}})", R"($ref at /properties/a must be a string)"},
        {R"({"$defs":{"A":{"$ref":"#/$defs/B"},"B":{"$ref":"#/$defs/A"}},"$ref":"#/$defs/A"})", "cycle of references"},
        {R"({"$defs":{"A":{"allOf":[{"$ref":"#/$defs/A"}]}},"$ref":"#/$defs/A"})", "nest deeper"},
        {R"({"oneOf":[{"type":"string"},{"type":"string","minLength":2}]})",
         R"("oneOf" at the root is not supported: its branches are not provably disjoint)"},
        {R"({"oneOf":[{"type":"integer"},{"type":"number"}]})", "not provably disjoint"},
        {R"({"oneOf":[{"type":"object","properties":{"k":{"const":"a"}},"required":["k"]},
                      {"type":"object","properties":{"k":{"enum":["a","b"]}},"required":["k"]}]})", "not provably disjoint"},
        {R"({"anyOf":[{"type":"string"}],"oneOf":[{"type":"string"}]})", R"("anyOf" together with "oneOf")"},
        {R"({"allOf":[{"type":"string"},{"type":"integer"}]})", "allow no common \"type\""},
        {R"({"allOf":[{"type":"string","pattern":"a"},{"pattern":"b"}]})", R"(cannot combine "pattern")"},
        {R"({"type":"array","items":[{"type":"string"}]})", R"("items" as an array at the root)"},
        {R"({"type":"object","patternProperties":{"a":{},"b":{}}})", "more than one pattern"},
        {R"({"type":"object","patternProperties":{"a":{}},"additionalProperties":true})", "open to other properties"},
        {R"({"type":"object","properties":{"abc":{}},"patternProperties":{"b":{}}})",
         R"(property "abc" at the root also matches patternProperties "b")"},
        {R"({"type":"strin"})", R"(unknown type "strin" at the root)"},
        {R"({"type":"string","minLength":20000})", R"("minLength" 20000 at the root is over the supported 10000)"},
        {R"({"type":"integer","minimum":true})", R"("minimum" at the root must be a number)"},
        {R"({"type":"integer","minimum":1e300})", "beyond the supported range"},
        {"[1,2]", "must be a JSON object or a boolean"},
        {"{\"type\":", "not valid JSON"},
    };
    for (const Refusal& r : refusals) {
        const absl::StatusOr<std::string> g = JsonSchemaToGbnf(std::string_view(r.schema));
        ASSERT_FALSE(g.ok()) << r.schema << " was accepted:\n" << *g;
        EXPECT_NE(g.status().message().find(r.message), std::string::npos)
            << r.schema << "\n  got:  " << g.status().message() << "\n  want: " << r.message;
        EXPECT_TRUE(g.status().code() == absl::StatusCode::kInvalidArgument ||
                    g.status().code() == absl::StatusCode::kResourceExhausted)
            << g.status();
    }
}

// A keyword that cannot matter is no reason to refuse: "minLength" only
// constrains strings, "multipleOf" only numbers.
TEST(JsonSchemaRefusals, KeywordsOfTypesNeverProducedAreIgnored) {
    for (const char* schema : {R"({"type":"integer","minLength":3})", R"({"type":"string","multipleOf":3})",
                               R"({"type":"boolean","properties":{"a":{"not":{}}}})",
                               R"({"type":"null","format":"frobnicated"})"}) {
        EXPECT_TRUE(JsonSchemaToGbnf(std::string_view(schema)).ok()) << schema;
    }
}

// ------------------------------------------------------------ limits

TEST(JsonSchemaLimits, DeepAndLargeSchemasAreRefusedNotCrashed) {
    std::string deep;
    for (int i = 0; i < 300; ++i) deep += R"({"type":"array","items":)";
    deep += "{}";
    for (int i = 0; i < 300; ++i) deep += "}";
    const absl::StatusOr<std::string> g = JsonSchemaToGbnf(std::string_view(deep));
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().code(), absl::StatusCode::kResourceExhausted) << g.status();

    std::string deep_const = std::string(200, '[') + std::string(200, ']');
    const std::string const_schema = absl::StrCat(R"({"const":)", deep_const, "}");
    EXPECT_EQ(JsonSchemaToGbnf(std::string_view(const_schema)).status().code(),
              absl::StatusCode::kResourceExhausted);

    // A maximum past what a grammar repeats is lowered (still sound), a minimum refused.
    Sentences capped(SchemaGbnf(R"({"type":"array","items":{"type":"integer"},"maxItems":1000000})"));
    EXPECT_TRUE(capped.Accepts("[1,2,3]"));
    JsonSchemaOptions bad;
    bad.max_indent = -1;
    EXPECT_FALSE(JsonSchemaToGbnf(std::string_view("{}"), bad).ok());
}

}  // namespace
}  // namespace prepack::grammar

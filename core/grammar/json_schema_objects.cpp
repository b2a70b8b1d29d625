// Object schemas: properties in the order `properties` lists them (the
// required ones always, the optional ones each present or not), then, when
// the object is open, any other members whose keys are none of the listed
// names.
#include <map>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/grammar/json_schema_converter.h"
#include "core/grammar/json_schema_patterns.h"
#include "core/grammar/json_schema_primitives.h"
#include "core/grammar/json_schema_text.h"

namespace prepack::grammar::schema {
namespace {

constexpr char kSep[] = R"(ws "," ws)";
constexpr char kQuote[] = R"("\"")";
// Key complements nest one group per character; past this depth the rest
// goes into its own rule (the GBNF parser bounds nesting).
constexpr int kMaxKeyNesting = 32;

struct KeyTrie {
    bool                        terminal = false;
    std::map<uint32_t, KeyTrie> children;
};

}  // namespace

std::string SchemaConverter::KeyNotIn(const std::vector<std::string>& names, const std::string& name) {
    // Over key-char, where each character has one spelling, "decodes to none
    // of the names" is a complement of the names' trie: at each node,
    // stop (unless a name ends here), continue along a child, or leave the
    // trie with any other character and then anything.
    KeyTrie trie;
    for (const std::string& n : names) {
        std::vector<uint32_t> cps;
        if (!DecodeUtf8(n, &cps)) continue;
        bool spellable = true;
        for (const uint32_t c : cps) spellable &= c >= 0x20 || JsonShortEscape(c) != 0;
        if (!spellable) continue;  // key-char cannot produce it anyway
        KeyTrie* node = &trie;
        for (const uint32_t c : cps) node = &node->children[c];
        node->terminal = true;
    }
    if (trie.children.empty() && !trie.terminal) return absl::StrCat(kQuote, " ", std::string(kKeyChar), "* ", kQuote);
    int spilled = 0;
    std::function<std::string(const KeyTrie&, int)> complement = [&](const KeyTrie& node, int depth) -> std::string {
        if (depth >= kMaxKeyNesting) {
            // Its own rule; a failure to get a name only happens past the rule limit, reported later.
            const absl::StatusOr<std::string> rule = NewRule(absl::StrCat(name, "-key-", ++spilled));
            if (!rule.ok()) return std::string(kKeyChar) + "*";
            Define(*rule, complement(node, 0));
            return *rule;
        }
        std::vector<std::string> alts;
        std::string raw_class = R"([^\x22\x5C\x00-\x1F)";
        std::string escapes;
        for (const char e : {'"', '\\', 'b', 'f', 'n', 'r', 't'}) {
            bool taken = false;
            for (const auto& [c, child] : node.children) taken |= JsonShortEscape(c) == e;
            if (!taken) escapes += GbnfClassChar(static_cast<uint8_t>(e));
        }
        for (const auto& [c, child] : node.children) {
            const char e = JsonShortEscape(c);
            const std::string spelling = e != 0 ? GbnfLiteral(std::string{'\\', e}) : GbnfLiteral(EncodeUtf8(c));
            if (e == 0) raw_class += GbnfClassChar(c);
            alts.push_back(Seq({spelling, complement(child, depth + 1)}));
        }
        raw_class += "]";
        const std::string other = escapes.empty() ? raw_class
                                                  : absl::StrCat("( ", raw_class, R"( | "\\" [)", escapes, "] )");
        alts.push_back(Seq({other, std::string(kKeyChar) + "*"}));
        const std::string alternatives = absl::StrCat("( ", absl::StrJoin(alts, " | "), " )");
        return node.terminal ? alternatives : alternatives + "?";
    };
    return Seq({kQuote, complement(trie, 0), kQuote});
}

absl::StatusOr<std::string> SchemaConverter::ObjectBody(const Json& schema, const std::string& pointer,
                                                        const std::string& name, int depth,
                                                        std::set<std::string>* consumed) {
    const Json empty = Json::object();
    const Json* properties = &empty;
    if (const auto it = schema.find("properties"); it != schema.end()) {
        if (!it->is_object()) {
            return absl::InvalidArgumentError(absl::StrCat("\"properties\" at ", Where(pointer), " must be an object"));
        }
        properties = &*it;
        consumed->insert("properties");
    }
    std::vector<std::string> required;
    if (const auto it = schema.find("required"); it != schema.end()) {
        if (!it->is_array()) return absl::InvalidArgumentError(absl::StrCat("\"required\" at ", Where(pointer), " must be an array"));
        for (const Json& r : *it) {
            if (!r.is_string()) {
                return absl::InvalidArgumentError(absl::StrCat("\"required\" at ", Where(pointer), " must hold strings"));
            }
            if (std::find(required.begin(), required.end(), r.get<std::string>()) == required.end()) {
                required.push_back(r.get<std::string>());
            }
        }
        consumed->insert("required");
    }
    // Open or closed: additionalProperties says; when it is absent, objects
    // that list properties (or patternProperties) are closed by default
    // (JsonSchemaOptions), a bare {"type": "object"} stays open (it means
    // "any object").
    const Json* additional = nullptr;
    bool open = !options_.closed_objects_by_default || (properties->empty() && !schema.contains("patternProperties"));
    if (const auto it = schema.find("additionalProperties"); it != schema.end()) {
        if (!it->is_boolean() && !it->is_object()) {
            return absl::InvalidArgumentError(
                absl::StrCat("\"additionalProperties\" at ", Where(pointer), " must be a schema"));
        }
        additional = &*it;
        open = !(it->is_boolean() && !it->get<bool>());
        consumed->insert("additionalProperties");
    }
    // patternProperties: one pattern, in a closed object, whose keys no
    // listed property matches (a key matching both would need both schemas).
    std::optional<PatternGbnf> pattern_key;
    std::string pattern_value;
    if (const auto it = schema.find("patternProperties"); it != schema.end()) {
        if (!it->is_object()) {
            return absl::InvalidArgumentError(absl::StrCat("\"patternProperties\" at ", Where(pointer), " must be an object"));
        }
        if (it->size() > 1) {
            return absl::InvalidArgumentError(absl::StrCat("\"patternProperties\" at ", Where(pointer),
                                                           " with more than one pattern is not supported"));
        }
        if (open) {
            return absl::InvalidArgumentError(absl::StrCat("\"patternProperties\" at ", Where(pointer),
                                                           " in an object open to other properties is not supported "
                                                           "(set additionalProperties to false)"));
        }
        consumed->insert("patternProperties");
        if (it->size() == 1 && !(it->begin().value().is_boolean() && !it->begin().value().get<bool>())) {
            const std::string where = absl::StrCat(pointer, "/patternProperties/", PointerToken(it->begin().key()));
            PP_ASSIGN_OR_RETURN(PatternGbnf key, PatternStringGbnf(it->begin().key(), ++pattern_count_,
                                                                   "patternProperties", Where(pointer)));
            for (auto p = properties->begin(); p != properties->end(); ++p) {
                PP_ASSIGN_OR_RETURN(const bool matches, PatternAcceptsName(key, p.key()));
                if (matches) {
                    return absl::InvalidArgumentError(absl::StrCat("property \"", p.key(), "\" at ", Where(pointer),
                                                                   " also matches patternProperties \"",
                                                                   it->begin().key(), "\": not supported"));
                }
            }
            PP_ASSIGN_OR_RETURN(pattern_value, Visit(it->begin().value(), where, name + "-pattern", depth + 1));
            pattern_rules_ += key.rules;
            pattern_key = std::move(key);
        }
    }

    std::string extra_value = "value";
    if (open && additional != nullptr && additional->is_object()) {
        PP_ASSIGN_OR_RETURN(extra_value, Visit(*additional, pointer + "/additionalProperties", name + "-additional", depth + 1));
    }

    struct Member {
        std::string key;    // the property name
        std::string value;  // its value's rule
        bool        required = false;
    };
    std::vector<Member> members;
    std::vector<std::string> listed;
    for (auto it = properties->begin(); it != properties->end(); ++it) {
        listed.push_back(it.key());
        const bool is_required = std::find(required.begin(), required.end(), it.key()) != required.end();
        const std::string property_pointer = absl::StrCat(pointer, "/properties/", PointerToken(it.key()));
        if (it.value().is_boolean() && !it.value().get<bool>()) {
            if (is_required) {
                return absl::InvalidArgumentError(absl::StrCat("required property \"", it.key(), "\" at ", Where(pointer),
                                                               " has the schema false: no object is valid"));
            }
            continue;  // may not appear: it is simply never produced
        }
        PP_ASSIGN_OR_RETURN(std::string value, Visit(it.value(), property_pointer,
                                                     absl::StrCat(name, "-", RuleNameFragment(it.key())), depth + 1));
        members.push_back({it.key(), std::move(value), is_required});
    }
    for (const std::string& r : required) {
        if (properties->contains(r)) continue;
        if (pattern_key) {
            PP_ASSIGN_OR_RETURN(const bool matches, PatternAcceptsName(*pattern_key, r));
            if (matches) {
                members.push_back({r, pattern_value, true});
                continue;
            }
        }
        if (!open && additional != nullptr) {
            return absl::InvalidArgumentError(absl::StrCat("required property \"", r, "\" at ", Where(pointer),
                                                           " is not in \"properties\" and additionalProperties is "
                                                           "false: no object is valid"));
        }
        // Closed only by default: a property the schema requires is still
        // allowed, with any value (as JSON Schema allows it).
        members.push_back({r, open ? extra_value : std::string("value"), true});
        listed.push_back(r);
    }

    const auto member_text = [&](const Member& m) {
        return absl::StrCat(GbnfLiteral(JsonStringText(m.key)), R"( ws ":" ws )", m.value);
    };
    // Members after the listed ones: other keys (open objects) or keys
    // matching the pattern.
    std::string extra;
    if (open) {
        extra = absl::StrCat(KeyNotIn(listed, name), R"( ws ":" ws )", extra_value);
    } else if (pattern_key) {
        extra = absl::StrCat(pattern_key->expression, R"( ws ":" ws )", pattern_value);
    }
    if (!extra.empty()) {
        // Referred to from several places: one rule keeps the text small.
        PP_ASSIGN_OR_RETURN(const std::string rule, NewRule(name + "-extra"));
        Define(rule, extra);
        extra = rule;
    }
    const std::string extra_tail = extra.empty() ? "" : absl::StrCat("( ", kSep, " ", extra, " )*");
    const size_t n = members.size();
    const bool all_required = std::all_of(members.begin(), members.end(), [](const Member& m) { return m.required; });

    if (n > 0 && all_required) {
        std::vector<std::string> parts;
        for (const Member& m : members) parts.push_back(member_text(m));
        return absl::StrCat(R"("{" ws )", absl::StrJoin(parts, absl::StrCat(" ", kSep, " ")),
                            extra_tail.empty() ? "" : " " + extra_tail, R"( ws "}")");
    }
    // Optional members: from[i] is "the members from i on, at least one"
    // and rest[i] "the members from i on, after one was written". Each is a
    // rule, so the text grows linearly with the number of properties.
    std::vector<std::string> rest(n + 1);
    rest[n] = extra_tail;
    for (size_t i = n; i-- > 1;) {
        const std::string piece = absl::StrCat("( ", kSep, " ", member_text(members[i]), " )", members[i].required ? "" : "?");
        const std::string body = Seq({piece, rest[i + 1]});
        if (rest[i + 1].empty() || i + 1 == n) {
            rest[i] = body;
        } else {
            PP_ASSIGN_OR_RETURN(const std::string rule, NewRule(absl::StrCat(name, "-rest-", i)));
            Define(rule, body);
            rest[i] = rule;
        }
    }
    // from[n]: only extra members (open objects).
    std::string from = Seq({extra, extra_tail});
    std::optional<size_t> first_required;
    for (size_t i = 0; i < n; ++i) {
        if (members[i].required) {
            first_required = i;
            break;
        }
    }
    const size_t last = first_required ? *first_required : n;
    // Built from the last member the chain reaches back to the first.
    for (size_t i = std::min(last + 1, n); i-- > 0;) {
        std::string body = Seq({member_text(members[i]), rest[i + 1]});
        if (!members[i].required && !from.empty()) body = absl::StrCat(body, " | ", from);
        if (i == 0) {
            from = body;
            break;
        }
        PP_ASSIGN_OR_RETURN(const std::string rule, NewRule(absl::StrCat(name, "-from-", i)));
        Define(rule, body);
        from = rule;
    }
    if (from.empty()) return std::string(R"("{" ws "}")");
    if (first_required) return absl::StrCat(R"("{" ws ( )", from, R"( ) ws "}")");
    return absl::StrCat(R"("{" ws ( ( )", from, R"( ) ws )? "}")");
}

}  // namespace prepack::grammar::schema

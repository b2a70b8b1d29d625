// The chat templates of real models (and our own feature templates) rendered
// by core/jinja against goldens that Python's jinja2 rendered in transformers'
// environment: tests/data/chat_templates/goldens.json (see its README).
// Each case must match byte for byte; an "error" case must fail with a
// message containing jinja2's. Every mismatch is reported, with where the
// output first differs. Cases whose template file is absent (the shared
// model templates, the GGUF model) are skipped with a message.
#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "core/jinja/template.h"
#include "core/model/gguf.h"

namespace {

using Json = nlohmann::ordered_json;

const std::string kDataDir = std::string(PREPACK_SOURCE_DIR) + "/tests/data/chat_templates";

bool ReadFile(const std::string& path, std::string& out) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return false;
    std::ostringstream s;
    s << f.rdbuf();
    out = s.str();
    return true;
}

// The template a case names, or "" with `why` set when it is not available.
std::string LoadTemplate(const std::string& ref, std::string& why) {
    const size_t colon = ref.find(':');
    const std::string kind = ref.substr(0, colon), file = ref.substr(colon + 1);
    std::string text;
    if (kind == "shared") {
        const std::string path = std::string(PREPACK_MODELS_DIR) + "/chat-templates/" + file;
        if (!ReadFile(path, text)) why = path + " not found";
    } else if (kind == "repo") {
        const std::string path = kDataDir + "/templates/" + file;
        if (!ReadFile(path, text)) why = path + " not found";
    } else if (kind == "gguf") {
        const std::string path = std::string(PREPACK_SOURCE_DIR) + "/build/models/" + file;
        auto gguf = prepack::GgufFile::Open(path);
        if (!gguf.ok()) {
            why = path + ": " + std::string(gguf.status().message());
        } else {
            auto t = (*gguf)->GetString("tokenizer.chat_template");
            if (t.ok()) {
                text = *t;
            } else {
                why = path + " has no tokenizer.chat_template";
            }
        }
    } else {
        why = "unknown template kind '" + kind + "'";
    }
    return text;
}

// "first difference at byte N: expected ...|... got ...|...".
std::string FirstDifference(const std::string& want, const std::string& got) {
    size_t i = 0;
    while (i < want.size() && i < got.size() && want[i] == got[i]) ++i;
    auto around = [i](const std::string& s) {
        const size_t from = i > 40 ? i - 40 : 0;
        return Json(s.substr(from, i - from) + "|" + s.substr(i, 40)).dump(-1, ' ', false,
                                                                           Json::error_handler_t::replace);
    };
    return "first difference at byte " + std::to_string(i) + " (expected " + std::to_string(want.size()) +
           " bytes, got " + std::to_string(got.size()) + "):\n      expected " + around(want) + "\n      got      " +
           around(got);
}

TEST(ChatTemplateGolden, RendersAsJinja2) {
    std::string raw;
    if (!ReadFile(kDataDir + "/goldens.json", raw)) {
        GTEST_SKIP() << kDataDir << "/goldens.json not found (scripts/make_chat_template_goldens.py writes it)";
    }
    const Json goldens = Json::parse(raw);
    // strftime_now's clock: 12:00:00 UTC on the goldens' date.
    std::tm day{};
    ASSERT_TRUE(strptime(goldens.at("date").get<std::string>().c_str(), "%Y-%m-%d", &day) != nullptr);
    day.tm_hour = 12;
    prepack::jinja::RenderOptions options;
    options.now = timegm(&day);

    std::map<std::string, std::string> missing;  // template -> why
    std::map<std::string, absl::StatusOr<prepack::jinja::Template>> parsed;
    int checked = 0, skipped = 0, failed = 0;
    const Json& cases = goldens.at("cases");
    for (size_t i = 0; i < cases.size(); ++i) {
        const Json& c = cases[i];
        const std::string ref = c.at("template").get<std::string>();
        const std::string conversation = c.at("conversation").get<std::string>();
        if (missing.count(ref) != 0) {
            ++skipped;
            continue;
        }
        auto it = parsed.find(ref);
        if (it == parsed.end()) {
            std::string why;
            const std::string text = LoadTemplate(ref, why);
            if (!why.empty()) {
                missing[ref] = why;
                ++skipped;
                continue;
            }
            it = parsed.emplace(ref, prepack::jinja::Template::Parse(text, ref)).first;
        }
        ++checked;
        const std::string where = "case " + std::to_string(i) + " (" + ref + ", " + conversation + ")";
        if (!it->second.ok()) {
            ++failed;
            ADD_FAILURE() << where << ": parse error: " << it->second.status();
            continue;
        }
        auto r = it->second->Render(c.at("context"), options);
        if (c.contains("error")) {
            const std::string want = c.at("error").get<std::string>();
            if (r.ok()) {
                ++failed;
                ADD_FAILURE() << where << ": rendered, but jinja2 fails with \"" << want << "\"";
            } else if (std::string(r.status().message()).find(want) == std::string::npos) {
                ++failed;
                ADD_FAILURE() << where << ": error \"" << r.status().message() << "\", jinja2's is \"" << want << "\"";
            }
            continue;
        }
        const std::string want = c.at("output").get<std::string>();
        if (!r.ok()) {
            ++failed;
            ADD_FAILURE() << where << ": " << r.status();
        } else if (r->text != want) {
            ++failed;
            ADD_FAILURE() << where << ": " << FirstDifference(want, r->text);
        }
    }
    for (const auto& [ref, why] : missing) std::printf("skipped %s: %s\n", ref.c_str(), why.c_str());
    std::printf("%d cases checked, %d failed, %d skipped\n", checked, failed, skipped);
    if (checked == 0) GTEST_SKIP() << "no golden template available";
}

}  // namespace

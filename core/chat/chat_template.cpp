#include "core/chat/chat_template.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/chat/reasoning.h"

namespace prepack {
namespace {

constexpr char kNoTemplate[] =
    "the model has no chat template (its GGUF lacks tokenizer.chat_template): give one with "
    "--chat-template-file FILE (C ABI: prepack_engine_options.chat_template_file; prepackd: "
    "--chat-template-file), or send a plain prompt";

// Whether the rendered prompt ends inside a <think> section it opened
// itself: the last "<think>" of the markup, with only whitespace after it.
bool EndsThinkingOpen(const jinja::Rendered& r) {
    size_t end = r.text.size();
    while (end > 0 && (r.text[end - 1] == '\n' || r.text[end - 1] == ' ')) --end;
    if (end < kThinkOpen.size() || r.text.compare(end - kThinkOpen.size(), kThinkOpen.size(), kThinkOpen) != 0) {
        return false;
    }
    const size_t begin = end - kThinkOpen.size();
    for (const jinja::Span& s : r.content) {
        if (s.begin < end && s.end > begin) return false;   // a user wrote it
    }
    return true;
}

}  // namespace

std::string SpecialTokenText(const Tokenizer& tokenizer, int32_t id) {
    if (id < 0 || id >= tokenizer.vocab_size()) return "";
    return tokenizer.Piece(id);
}

void ChatTemplates::Add(const std::string& name, const std::string& source, const std::string& label) {
    Entry e;
    e.source = source;
    absl::StatusOr<jinja::Template> t = jinja::Template::Parse(source, label);
    if (t.ok()) {
        e.parsed = std::make_shared<const jinja::Template>(*std::move(t));
    } else {
        e.error = t.status();
    }
    templates_.emplace(name, std::move(e));
}

ChatTemplates ChatTemplates::Load(const Tokenizer& tokenizer) {
    ChatTemplates out;
    for (const auto& [name, text] : tokenizer.chat_templates()) {
        out.Add(name, text, name.empty() ? std::string("tokenizer.chat_template") : "tokenizer.chat_template." + name);
    }
    return out;
}

ChatTemplates ChatTemplates::FromSource(const std::string& source, const std::string& name) {
    ChatTemplates out;
    out.Add("", source, name);
    return out;
}

absl::StatusOr<ChatTemplates> ChatTemplates::LoadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("chat template file '", path, "' cannot be read"));
    std::ostringstream text;
    text << in.rdbuf();
    if (text.str().empty()) return absl::InvalidArgumentError(absl::StrCat("chat template file '", path, "' is empty"));
    return FromSource(text.str(), path);
}

std::vector<std::string> ChatTemplates::names() const {
    std::vector<std::string> out;
    for (const auto& [name, e] : templates_) out.push_back(name.empty() ? "default" : name);
    return out;
}

absl::StatusOr<const ChatTemplates::Entry*> ChatTemplates::Find(const std::string& name, bool has_tools) const {
    if (templates_.empty()) return absl::FailedPreconditionError(kNoTemplate);
    std::string key = name == "default" ? "" : name;
    if (key.empty() && has_tools && templates_.count("tool_use")) key = "tool_use";
    auto it = templates_.find(key);
    if (it == templates_.end()) {
        if (key.empty()) {
            return absl::InvalidArgumentError(absl::StrCat("the model has no default chat template; name one of: ",
                                                           absl::StrJoin(names(), ", ")));
        }
        return absl::InvalidArgumentError(absl::StrCat("the model has no chat template named '", name,
                                                       "' (it has: ", absl::StrJoin(names(), ", "), ")"));
    }
    if (!it->second.parsed) return absl::InvalidArgumentError(it->second.error.message());
    return &it->second;
}

absl::StatusOr<jinja::Rendered> ChatTemplates::RenderContext(const Tokenizer* tokenizer,
                                                             nlohmann::ordered_json context,
                                                             const std::string& name, std::time_t now) const {
    if (!context.is_object()) return absl::InvalidArgumentError("the template variables must be a JSON object");
    const auto tools = context.find("tools");
    const bool has_tools = tools != context.end() && tools->is_array() && !tools->empty();
    PP_ASSIGN_OR_RETURN(const Entry* e, Find(name, has_tools));
    if (tokenizer != nullptr && !context.contains("bos_token")) {
        context["bos_token"] = SpecialTokenText(*tokenizer, tokenizer->bos_id());
    }
    if (tokenizer != nullptr && !context.contains("eos_token")) {
        context["eos_token"] = SpecialTokenText(*tokenizer, tokenizer->eos_id());
    }
    jinja::RenderOptions options;
    options.now = now;
    return e->parsed->Render(context, options);
}

absl::StatusOr<std::string> ChatTemplates::SourceFor(const Conversation& conversation) const {
    const bool has_tools = conversation.tools.is_array() && !conversation.tools.empty();
    PP_ASSIGN_OR_RETURN(const Entry* e, Find(conversation.template_name, has_tools));
    return e->source;
}

absl::StatusOr<ChatPrompt> ChatTemplates::Apply(const Tokenizer& tokenizer, const Conversation& conversation,
                                                bool add_special, std::time_t now) const {
    PP_RETURN_IF_ERROR(ValidateConversation(conversation));
    const bool has_tools = conversation.tools.is_array() && !conversation.tools.empty();
    PP_ASSIGN_OR_RETURN(const Entry* e, Find(conversation.template_name, has_tools));
    const nlohmann::ordered_json context =
        TemplateContext(conversation, SpecialTokenText(tokenizer, tokenizer.bos_id()),
                        SpecialTokenText(tokenizer, tokenizer.eos_id()));
    jinja::RenderOptions options;
    options.now = now;
    PP_ASSIGN_OR_RETURN(jinja::Rendered rendered, e->parsed->Render(context, options));
    ChatPrompt p;
    p.content.reserve(rendered.content.size());
    for (const jinja::Span& s : rendered.content) p.content.emplace_back(s.begin, s.end);
    PP_ASSIGN_OR_RETURN(p.ids, tokenizer.EncodeMarkedUp(rendered.text, p.content, add_special));
    p.reasoning = e->source.find(kThinkOpen) != std::string::npos;
    p.thinking_open = p.reasoning && EndsThinkingOpen(rendered);
    p.text = std::move(rendered.text);
    return p;
}

}  // namespace prepack

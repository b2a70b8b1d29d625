// A model's chat templates and the one path from a conversation to prompt
// ids: render the template (core/jinja) with the conversation, then
// tokenize so that the template's own markup becomes control tokens and the
// text of the messages never does (Tokenizer::EncodeMarkedUp).
#pragma once

#include <ctime>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/status.h"
#include "core/chat/conversation.h"
#include "core/jinja/template.h"
#include "core/model/tokenizer.h"

namespace prepack {

struct ChatPrompt {
    std::string             text;      // the rendered prompt
    Tokenizer::ByteRanges   content;   // bytes of `text` that came from the conversation
    std::vector<int32_t>    ids;
    // Reasoning: the template knows <think> sections (the answer's thinking
    // is reported apart), and whether the prompt already opened one.
    bool                    reasoning = false;
    bool                    thinking_open = false;
};

class ChatTemplates {
public:
    // The templates in the model's metadata (Tokenizer::chat_templates()),
    // or, when `source` is not empty, that text alone as the default (the
    // caller's --chat-template-file). A template that does not parse is kept
    // as its error and reported when used, so a model with a broken template
    // still serves plain prompts.
    static ChatTemplates Load(const Tokenizer& tokenizer);
    // `source` alone as the default template; `name` labels its errors.
    static ChatTemplates FromSource(const std::string& source, const std::string& name);
    // Reads `path` (an error naming it when unreadable or empty) into FromSource.
    static absl::StatusOr<ChatTemplates> LoadFile(const std::string& path);

    bool empty() const { return templates_.empty(); }
    std::vector<std::string> names() const;

    // Renders `conversation` and tokenizes it. `add_special`: BOS as the
    // vocabulary says (never doubled). FAILED_PRECONDITION when there is no
    // template (the message names both ways to give one); INVALID_ARGUMENT
    // for a bad conversation, an unknown template name, or a template error
    // (its own words for raise_exception); RESOURCE_EXHAUSTED past a limit.
    absl::StatusOr<ChatPrompt> Apply(const Tokenizer& tokenizer, const Conversation& conversation,
                                     bool add_special = true, std::time_t now = 0) const;

    // Renders a raw variables object ({"messages", "add_generation_prompt",
    // "bos_token", ...}) with template `name` ("" = default), as
    // `prepack chat-template render` does. bos_token / eos_token default to
    // the vocabulary's (when there is one) if the object lacks them.
    absl::StatusOr<jinja::Rendered> RenderContext(const Tokenizer* tokenizer, nlohmann::ordered_json context,
                                                  const std::string& name = "", std::time_t now = 0) const;

    // The source text of the template Apply renders `conversation` with
    // (its template_name, or "tool_use" when it has tools and the model has
    // one): what tool calls' format is read from (tool_calls.h). Apply's
    // errors for a missing or broken template.
    absl::StatusOr<std::string> SourceFor(const Conversation& conversation) const;

private:
    struct Entry {
        std::string                                source;
        std::shared_ptr<const jinja::Template>     parsed;   // null when it failed to parse
        absl::Status                               error;
    };
    absl::StatusOr<const Entry*> Find(const std::string& name, bool has_tools) const;
    void Add(const std::string& name, const std::string& source, const std::string& label);
    std::map<std::string, Entry> templates_;
};

// The text of a special token as a template writes it ("<|im_start|>"); ""
// for -1.
std::string SpecialTokenText(const Tokenizer& tokenizer, int32_t id);

}  // namespace prepack

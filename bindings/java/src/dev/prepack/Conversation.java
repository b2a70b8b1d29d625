package dev.prepack;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Messages for the model's chat template (the GGUF's, or
 * {@link EngineOptions#chatTemplateFile(String)}), rendered exactly as
 * Hugging Face transformers' {@code apply_chat_template} would. Use it in a
 * chat request ({@link Request#Request(Conversation)}) or see its prompt
 * with {@link Engine#renderChat(Conversation)}. Setters return this, for
 * chaining; a request takes a copy.
 */
public final class Conversation {
    private final List<Message> messages;
    private String toolsJson;
    private String kwargsJson;
    private boolean addGenerationPrompt = true;
    private String templateName;

    /**
     * @throws NullPointerException if {@code messages} or one of them is null
     */
    public Conversation(List<Message> messages) {
        this.messages = new ArrayList<>(messages.size());
        for (Message m : messages) {
            this.messages.add(Objects.requireNonNull(m, "message"));
        }
    }

    public Conversation(Message... messages) {
        this(Arrays.asList(messages));
    }

    /** Appends a message. */
    public Conversation add(Message message) {
        messages.add(Objects.requireNonNull(message, "message"));
        return this;
    }

    /**
     * The tools the model may call: a JSON list of
     * {@code [{"type": "function", "function": {"name", "description", "parameters"}}]}
     * (null: none).
     */
    public Conversation toolsJson(String json) {
        toolsJson = json;
        return this;
    }

    /** Further template variables: a JSON object such as {@code {"enable_thinking": false}} (null: none). */
    public Conversation kwargsJson(String json) {
        kwargsJson = json;
        return this;
    }

    /** End the prompt with the assistant's opening, so the model answers; on by default. */
    public Conversation addGenerationPrompt(boolean on) {
        addGenerationPrompt = on;
        return this;
    }

    /** One of the model's named templates, e.g. "tool_use" (null: the default one). */
    public Conversation templateName(String name) {
        templateName = name;
        return this;
    }

    public List<Message> messages() {
        return Collections.unmodifiableList(messages);
    }

    /** A copy (messages are immutable). */
    Conversation copy() {
        return new Conversation(messages).toolsJson(toolsJson).kwargsJson(kwargsJson)
                .addGenerationPrompt(addGenerationPrompt).templateName(templateName);
    }

    /** A native copy; the caller deletes it. */
    dev.prepack.swig.Conversation toNative() {
        dev.prepack.swig.Conversation n = new dev.prepack.swig.Conversation();
        dev.prepack.swig.ChatMessageVector v = new dev.prepack.swig.ChatMessageVector();
        try {
            for (Message m : messages) {
                dev.prepack.swig.ChatMessage nm = m.toNative();
                v.add(nm);   // copies
                nm.delete();
            }
            n.setMessages(v);   // copies
        } finally {
            v.delete();
        }
        if (toolsJson != null) n.setToolsJson(toolsJson);
        if (kwargsJson != null) n.setKwargsJson(kwargsJson);
        n.setAddGenerationPrompt(addGenerationPrompt);
        if (templateName != null) n.setTemplateName(templateName);
        return n;
    }
}

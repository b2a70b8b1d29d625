package dev.prepack;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * One message of a {@link Conversation}: a role and its content (text, text
 * parts, or none), and optionally a name, tool calls and the id of the tool
 * call it answers. Immutable: the {@code with...} methods return a copy.
 * Message text always stays text: a user who writes {@code <|im_end|>} gets
 * those characters, never the control token.
 *
 * <pre>{@code
 * List<Message> messages = List.of(Message.system("Be brief."), Message.user("Hi there"));
 * }</pre>
 */
public final class Message {
    private final String role;
    private final String content;        // null: parts, or no content
    private final List<String> parts;    // empty: content
    private final String name;
    private final String toolCallsJson;
    private final String toolCallId;

    /**
     * A message with text content, or none when {@code content} is null (an
     * assistant turn of tool calls only).
     *
     * @throws NullPointerException if {@code role} is null
     */
    public Message(String role, String content) {
        this(Objects.requireNonNull(role, "role"), content, List.of(), null, null, null);
    }

    private Message(String role, String content, List<String> parts, String name, String toolCallsJson,
            String toolCallId) {
        this.role = role;
        this.content = content;
        this.parts = parts;
        this.name = name;
        this.toolCallsJson = toolCallsJson;
        this.toolCallId = toolCallId;
    }

    public static Message system(String content) {
        return new Message("system", content);
    }

    public static Message user(String content) {
        return new Message("user", content);
    }

    public static Message assistant(String content) {
        return new Message("assistant", content);
    }

    /** A "tool" message: the result of the tool call {@code toolCallId}. */
    public static Message tool(String toolCallId, String content) {
        return new Message("tool", content).withToolCallId(toolCallId);
    }

    /**
     * A message whose content is text parts (OpenAI's
     * {@code [{"type": "text", "text": ...}]}); templates that expect one
     * string get them joined by "\n".
     *
     * @throws NullPointerException if {@code role}, {@code parts} or a part is null
     * @throws IllegalArgumentException if {@code parts} is empty
     */
    public static Message ofParts(String role, List<String> parts) {
        Objects.requireNonNull(role, "role");
        List<String> copy = new ArrayList<>(parts.size());
        for (String p : parts) {
            copy.add(Objects.requireNonNull(p, "part"));
        }
        if (copy.isEmpty()) {
            throw new IllegalArgumentException("no text parts");
        }
        return new Message(role, null, Collections.unmodifiableList(copy), null, null, null);
    }

    /** This message with a name (null: none). */
    public Message withName(String name) {
        return new Message(role, content, parts, name, toolCallsJson, toolCallId);
    }

    /**
     * This message with tool calls: a JSON list of OpenAI tool calls,
     * {@code [{"type": "function", "function": {"name": ..., "arguments": ...}}]}
     * (null: none). Bad JSON is INVALID_ARGUMENT when the message is used.
     */
    public Message withToolCallsJson(String json) {
        return new Message(role, content, parts, name, json, toolCallId);
    }

    /** This message answering the tool call with this id (null: none). */
    public Message withToolCallId(String id) {
        return new Message(role, content, parts, name, toolCallsJson, id);
    }

    public String role() {
        return role;
    }

    /** The text content; null for text parts or no content. */
    public String content() {
        return content;
    }

    /** The text parts; empty unless made by {@link #ofParts}. */
    public List<String> parts() {
        return parts;
    }

    public String name() {
        return name;
    }

    public String toolCallsJson() {
        return toolCallsJson;
    }

    public String toolCallId() {
        return toolCallId;
    }

    @Override
    public String toString() {
        return role + ": " + (content != null ? content : parts.isEmpty() ? "(no content)" : String.join("\n", parts));
    }

    /** A native copy; the caller deletes it. */
    dev.prepack.swig.ChatMessage toNative() {
        dev.prepack.swig.ChatMessage n = new dev.prepack.swig.ChatMessage();
        n.setRole(role);
        n.setHasContent(content != null);
        if (content != null) n.setContent(content);
        if (!parts.isEmpty()) {
            dev.prepack.swig.StringVector v = new dev.prepack.swig.StringVector(parts);
            n.setContentParts(v);   // copies
            v.delete();
        }
        if (name != null) n.setName(name);
        if (toolCallsJson != null) n.setToolCallsJson(toolCallsJson);
        if (toolCallId != null) n.setToolCallId(toolCallId);
        return n;
    }
}

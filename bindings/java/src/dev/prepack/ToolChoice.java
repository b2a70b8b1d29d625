package dev.prepack;

/**
 * Whether and which tools a chat request with tools
 * ({@link Conversation#toolsJson(String)}) may call, as OpenAI's
 * tool_choice (prepack_tool_choice; ordinal() is the C value).
 */
public enum ToolChoice {
    /** The tools are only rendered for the model to read. */
    NONE,
    /** The default: the model answers in text or calls tools. */
    AUTO,
    /** The model calls at least one tool. */
    REQUIRED,
    /** The model calls the tool {@link Request#toolChoiceFunction(String)} names. */
    FUNCTION
}

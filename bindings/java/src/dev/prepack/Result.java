package dev.prepack;

import java.util.List;

/** A finished request: its tokens, its text and how it ended. Immutable. */
public final class Result {
    private final int[] tokens;
    private final String text;
    private final String reasoning;
    private final FinishReason finishReason;
    private final StatusCode status;
    private final String message;
    private final Usage usage;
    private final List<ToolCall> toolCalls;

    Result(dev.prepack.swig.Result n) {
        tokens = Convert.ints(n.getTokens());
        text = n.getText();
        reasoning = n.getReasoning();
        finishReason = FinishReason.of(n.getFinishReason());
        status = StatusCode.of(n.getStatus());
        message = n.getMessage();
        usage = new Usage(n.getUsage());
        toolCalls = ToolCall.listOf(n.getToolCalls());
    }

    public int[] tokens() {
        return tokens.clone();
    }

    /** The generated text; for a chat request that thought, the answer alone. */
    public String text() {
        return text;
    }

    /** A chat request's thinking ({@code <think>} sections, without the tags); "" otherwise. */
    public String reasoning() {
        return reasoning;
    }

    public FinishReason finishReason() {
        return finishReason;
    }

    /** OK, or why the request failed (in a batch, requests fail one by one). */
    public StatusCode status() {
        return status;
    }

    /** Why, when the status is not OK; "" otherwise. */
    public String message() {
        return message;
    }

    public Usage usage() {
        return usage;
    }

    /**
     * A chat request with tools: every call of the answer, whole (its tokens'
     * deltas added up, the same ids); never part of {@link #text()}. Calls
     * mean OpenAI's finish_reason "tool_calls" unless the finish reason is
     * LENGTH. Unmodifiable.
     */
    public List<ToolCall> toolCalls() {
        return toolCalls;
    }

    /** Throws the result's error when its status is not OK. */
    Result check() {
        if (status != StatusCode.OK) {
            throw new PrepackException(status, message);
        }
        return this;
    }
}

package dev.prepack;

import java.util.List;

/** One generated token: its id, its text and its log-probability. Immutable. */
public final class Token {
    private final int id;
    private final String text;
    private final String reasoning;
    private final float logprob;
    private final int[] topIds;
    private final float[] topLogprobs;
    private final List<ToolCallDelta> toolCallDeltas;

    Token(dev.prepack.swig.Token n) {
        id = n.getId();
        text = n.getText();
        reasoning = n.getReasoning();
        logprob = n.getLogprob();
        topIds = Convert.ints(n.getTopIds());
        topLogprobs = Convert.floats(n.getTopLogprobs());
        toolCallDeltas = ToolCallDelta.listOf(n.getToolCallDeltas());
    }

    public int id() {
        return id;
    }

    /** Whole UTF-8 characters; empty while a stop string or a character is pending. */
    public String text() {
        return text;
    }

    /**
     * A chat request's thinking: this token's part of a {@code <think>}
     * section, apart from {@link #text()} (the answer); the tags are in
     * neither. "" otherwise.
     */
    public String reasoning() {
        return reasoning;
    }

    /** log p(token) under the model. */
    public float logprob() {
        return logprob;
    }

    /** The most likely ids, best first (as many as the request's logprobs). */
    public int[] topIds() {
        return topIds.clone();
    }

    public float[] topLogprobs() {
        return topLogprobs.clone();
    }

    /**
     * A chat request with tools: pieces of the calls generated with this token
     * (often none; a token may carry only these, its text empty). Unmodifiable.
     */
    public List<ToolCallDelta> toolCallDeltas() {
        return toolCallDeltas;
    }

    @Override
    public String toString() {
        return id + ":" + text;
    }
}

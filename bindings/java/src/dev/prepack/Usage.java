package dev.prepack;

/** Token counts and timings of one finished request. Immutable. */
public final class Usage {
    private final int promptTokens;
    private final int completionTokens;
    private final int cachedPromptTokens;
    private final double queueMs;
    private final double ttftMs;
    private final double totalMs;
    private final double prunedFraction;
    private final int reasoningTokens;

    Usage(dev.prepack.swig.Usage n) {
        promptTokens = n.getPromptTokens();
        completionTokens = n.getCompletionTokens();
        cachedPromptTokens = n.getCachedPromptTokens();
        queueMs = n.getQueueMs();
        ttftMs = n.getTtftMs();
        totalMs = n.getTotalMs();
        prunedFraction = n.getPrunedFraction();
        reasoningTokens = n.getReasoningTokens();
    }

    /** A chat request's generated tokens that were thinking (part of completionTokens). */
    public int reasoningTokens() {
        return reasoningTokens;
    }

    /** LazyLLM: fraction of the prompt's token-layers its prefill skipped (0 without pruning). */
    public double prunedFraction() {
        return prunedFraction;
    }

    public int promptTokens() {
        return promptTokens;
    }

    public int completionTokens() {
        return completionTokens;
    }

    /** Prompt tokens served from a shared prefix's KV cache. */
    public int cachedPromptTokens() {
        return cachedPromptTokens;
    }

    /** Submitted to first scheduled. */
    public double queueMs() {
        return queueMs;
    }

    /** Submitted to first token. */
    public double ttftMs() {
        return ttftMs;
    }

    public double totalMs() {
        return totalMs;
    }
}

package dev.prepack;

/** A finished request: its tokens, its text and how it ended. Immutable. */
public final class Result {
    private final int[] tokens;
    private final String text;
    private final FinishReason finishReason;
    private final StatusCode status;
    private final String message;
    private final Usage usage;

    Result(dev.prepack.swig.Result n) {
        tokens = Convert.ints(n.getTokens());
        text = n.getText();
        finishReason = FinishReason.of(n.getFinishReason());
        status = StatusCode.of(n.getStatus());
        message = n.getMessage();
        usage = new Usage(n.getUsage());
    }

    public int[] tokens() {
        return tokens.clone();
    }

    public String text() {
        return text;
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

    /** Throws the result's error when its status is not OK. */
    Result check() {
        if (status != StatusCode.OK) {
            throw new PrepackException(status, message);
        }
        return this;
    }
}

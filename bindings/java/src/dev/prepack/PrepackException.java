package dev.prepack;

/**
 * A call into prepack failed: the status code of the C library and its message.
 * Unchecked, so that it can leave {@link Stream#next()} and friends.
 */
public class PrepackException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final StatusCode status;

    public PrepackException(StatusCode status, String message) {
        super(status + ": " + message);
        this.status = status;
    }

    /** Called by the JNI layer (prepack.i) with the C status number. */
    PrepackException(int status, String message) {
        this(StatusCode.of(status), message);
    }

    /** Why the call failed. */
    public StatusCode getStatus() {
        return status;
    }
}

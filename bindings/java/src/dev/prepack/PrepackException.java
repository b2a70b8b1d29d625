package dev.prepack;

import java.nio.charset.StandardCharsets;

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

    /** Called by the JNI layer (prepack.i) with the C status number and the UTF-8 message. */
    PrepackException(int status, byte[] utf8Message) {
        this(StatusCode.of(status), new String(utf8Message, StandardCharsets.UTF_8));
    }

    /** Why the call failed. */
    public StatusCode getStatus() {
        return status;
    }
}

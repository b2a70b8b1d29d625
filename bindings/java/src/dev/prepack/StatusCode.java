package dev.prepack;

/** The status codes of prepack.h: the google.rpc.Code (gRPC) numbers. */
public enum StatusCode {
    OK(0),
    CANCELLED(1),
    UNKNOWN(2),
    INVALID_ARGUMENT(3),
    DEADLINE_EXCEEDED(4),
    NOT_FOUND(5),
    RESOURCE_EXHAUSTED(8),
    FAILED_PRECONDITION(9),
    OUT_OF_RANGE(11),
    UNIMPLEMENTED(12),
    INTERNAL(13),
    UNAVAILABLE(14),
    DATA_LOSS(15);

    private final int code;

    StatusCode(int code) {
        this.code = code;
    }

    /** The numeric code, as in prepack.h. */
    public int code() {
        return code;
    }

    /** The status with this number; UNKNOWN for numbers a newer library may add. */
    public static StatusCode of(int code) {
        for (StatusCode s : values()) {
            if (s.code == code) {
                return s;
            }
        }
        return UNKNOWN;
    }
}

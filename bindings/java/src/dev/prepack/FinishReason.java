package dev.prepack;

/** Why a request ended (prepack_finish_reason). */
public enum FinishReason {
    NONE,        // still running
    STOP,        // a stop string was generated
    LENGTH,      // max tokens or the end of the context
    EOS,         // the model ended the text
    CANCELLED,   // Stream.cancel(), or the engine closed
    ERROR;       // see the result's status and message

    static FinishReason of(int code) {
        FinishReason[] all = values();
        return code >= 0 && code < all.length ? all[code] : ERROR;
    }
}

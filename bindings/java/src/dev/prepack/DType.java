package dev.prepack;

/** How an engine stores its weight matrices (prepack_dtype; ordinal() is the C value). */
public enum DType {
    /** f32 weights. */
    F32,
    /** bf16 weight matrices: half the memory, and half the bytes read per decoded token. */
    BF16
}

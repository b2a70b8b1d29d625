package dev.prepack;

/** How an engine stores its weight matrices and KV cache (prepack_dtype; ordinal() is the C value). */
public enum DType {
    /** f32 weights. */
    F32,
    /** bf16 weight matrices and KV cache: half the memory, and half the bytes read per decoded token. */
    BF16
}

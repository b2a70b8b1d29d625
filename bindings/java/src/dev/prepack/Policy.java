package dev.prepack;

/** How an engine shares prompt prefixes between requests (prepack_policy). */
public enum Policy {
    /** First come, first served; nothing shared. */
    FCFS,
    /** A block-hash prefix cache with LRU eviction. */
    LRU,
    /** generateBatch groups prompts by a global prefix tree. */
    BATCHLLM
}

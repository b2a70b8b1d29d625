namespace Prepack
{
    /// <summary>How an engine shares prompt prefixes between requests (prepack_policy).</summary>
    public enum Policy
    {
        Fcfs = 0,       // first come, first served; nothing shared
        Lru = 1,        // a block-hash prefix cache with LRU eviction
        BatchLlm = 2,   // GenerateBatch groups prompts by a global prefix tree
    }
}

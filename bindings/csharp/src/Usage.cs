namespace Prepack
{
    /// <summary>Token counts and timings of one finished request. Immutable.</summary>
    public sealed class Usage
    {
        internal Usage(Native.Usage n)
        {
            PromptTokens = n.PromptTokens;
            CompletionTokens = n.CompletionTokens;
            CachedPromptTokens = n.CachedPromptTokens;
            QueueMs = n.QueueMs;
            TtftMs = n.TtftMs;
            TotalMs = n.TotalMs;
            PrunedFraction = n.PrunedFraction;
            ReasoningTokens = n.ReasoningTokens;
        }

        public int PromptTokens { get; private set; }
        public int CompletionTokens { get; private set; }
        /// <summary>Prompt tokens served from a shared prefix's KV cache.</summary>
        public int CachedPromptTokens { get; private set; }
        /// <summary>Submitted to first scheduled.</summary>
        public double QueueMs { get; private set; }
        /// <summary>Submitted to first token.</summary>
        public double TtftMs { get; private set; }
        public double TotalMs { get; private set; }
        /// <summary>LazyLLM: fraction of the prompt's token-layers its prefill skipped (0 without pruning).</summary>
        public double PrunedFraction { get; private set; }
        /// <summary>A chat request's generated tokens that were thinking (part of CompletionTokens).</summary>
        public int ReasoningTokens { get; private set; }
    }
}

using System.Collections.Generic;

namespace Prepack
{
    /// <summary>
    /// One generation request. Unset (null) values keep the library's defaults
    /// (128 tokens, temperature 1, no top-k/top-p/min-p, no penalty); the
    /// library checks the values.
    /// </summary>
    public sealed class Request
    {
        /// <summary>A request for UTF-8 text (BOS added before it unless AddBos is false).</summary>
        public Request(string prompt)
        {
            Prompt = prompt;
            Stop = new List<string>();
        }

        /// <summary>A request for token ids, taken as given (no BOS added).</summary>
        public Request(IEnumerable<int> promptTokens)
        {
            PromptTokens = new List<int>(promptTokens);
            Stop = new List<string>();
        }

        public string Prompt { get; private set; }
        public IList<int> PromptTokens { get; private set; }
        /// <summary>
        /// BOS (and EOS) as the vocabulary says; on by default. Off, an empty prompt
        /// is InvalidArgument; on, it is BOS alone.
        /// </summary>
        public bool? AddBos { get; set; }
        /// <summary>
        /// Control-token text in the prompt, such as &lt;|eot_id|&gt;, becomes that
        /// one token; off (the default) it is ordinary text, the safe choice for
        /// untrusted input.
        /// </summary>
        public bool? ParseSpecial { get; set; }
        /// <summary>Tokens to generate, at least 1.</summary>
        public int? MaxTokens { get; set; }
        /// <summary>0 = greedy.</summary>
        public float? Temperature { get; set; }
        public int? TopK { get; set; }
        public float? TopP { get; set; }
        public float? MinP { get; set; }
        public float? RepetitionPenalty { get; set; }
        /// <summary>Same seed, same tokens.</summary>
        public long? Seed { get; set; }
        /// <summary>Generation ends when one of these appears (it is not in the text).</summary>
        public IList<string> Stop { get; private set; }
        /// <summary>Alternatives reported per token, 0..20.</summary>
        public int? Logprobs { get; set; }
        public bool? IgnoreEos { get; set; }
        /// <summary>Milliseconds from submission; 0 = none.</summary>
        public long? DeadlineMs { get; set; }
        /// <summary>LazyLLM: prune prompt tokens the next token barely attends to.</summary>
        public bool? Lazy { get; set; }
        /// <summary>LazyLLM: how hard to prune, in (0, 1]; unset = the default schedule.</summary>
        public float? LazyKeepRatio { get; set; }
        /// <summary>LazyLLM: an explicit schedule "LAYER:KEEP,..." (overrides the keep ratio).</summary>
        public string LazySchedule { get; set; }
        /// <summary>LazyLLM: pruned prompt tokens one decode step may bring back; unset or 0 = the engine's default bound, -1 = no bound.</summary>
        public int? LazyReviveLimit { get; set; }

        /// <summary>A native copy; the caller disposes it.</summary>
        internal Native.Request ToNative()
        {
            var n = new Native.Request();
            if (PromptTokens != null)
            {
                using (var ids = new Native.IntVector(PromptTokens)) n.PromptTokens = ids;   // copies
            }
            else
            {
                n.Prompt = Prompt ?? "";
            }
            if (AddBos.HasValue) n.AddBos = AddBos.Value;
            if (ParseSpecial.HasValue) n.ParseSpecial = ParseSpecial.Value;
            if (MaxTokens.HasValue) n.MaxTokens = MaxTokens.Value;
            if (Temperature.HasValue) n.Temperature = Temperature.Value;
            if (TopK.HasValue) n.TopK = TopK.Value;
            if (TopP.HasValue) n.TopP = TopP.Value;
            if (MinP.HasValue) n.MinP = MinP.Value;
            if (RepetitionPenalty.HasValue) n.RepetitionPenalty = RepetitionPenalty.Value;
            if (Seed.HasValue) n.Seed = Seed.Value;
            if (Stop.Count > 0)
            {
                using (var stop = new Native.StringVector(Stop)) n.Stop = stop;   // copies
            }
            if (Logprobs.HasValue) n.Logprobs = Logprobs.Value;
            if (IgnoreEos.HasValue) n.IgnoreEos = IgnoreEos.Value;
            if (DeadlineMs.HasValue) n.DeadlineMs = DeadlineMs.Value;
            if (Lazy.HasValue) n.Lazy = Lazy.Value;
            if (LazyKeepRatio.HasValue) n.LazyKeepRatio = LazyKeepRatio.Value;
            if (LazySchedule != null) n.LazySchedule = LazySchedule;
            if (LazyReviveLimit.HasValue) n.LazyReviveLimit = LazyReviveLimit.Value;
            return n;
        }
    }
}

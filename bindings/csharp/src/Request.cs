using System;
using System.Collections.Generic;

namespace Prepack
{
    /// <summary>
    /// One generation request: a prompt (text or token ids) or a conversation
    /// for the model's chat template. Unset (null) values keep the library's
    /// defaults (128 tokens, temperature 1, no top-k/top-p/min-p, no penalty);
    /// the library checks the values. Every form runs everywhere: Start,
    /// Generate, GenerateResult, GenerateBatch and, for conversations, Chat.
    /// </summary>
    public sealed class Request
    {
        /// <summary>
        /// A request for UTF-8 text (BOS added before it unless AddBos is false).
        /// The empty string is a valid prompt (BOS alone).
        /// </summary>
        /// <exception cref="ArgumentNullException">prompt is null.</exception>
        public Request(string prompt)
        {
            if (prompt == null) throw new ArgumentNullException("prompt");
            Prompt = prompt;
            Stop = new List<string>();
        }

        /// <summary>A request for token ids, taken as given (no BOS added); the ids are copied.</summary>
        /// <exception cref="ArgumentNullException">promptTokens is null.</exception>
        /// <exception cref="PrepackException">
        /// InvalidArgument if it is empty, as the C library and prepackd answer an
        /// empty token prompt (for BOS alone, pass its id, or use new Request("")).
        /// </exception>
        public Request(IEnumerable<int> promptTokens)
        {
            if (promptTokens == null) throw new ArgumentNullException("promptTokens");
            PromptTokens = new List<int>(promptTokens);
            if (PromptTokens.Count == 0) throw new PrepackException(StatusCode.InvalidArgument, "prompt_tokens is empty");
            Stop = new List<string>();
        }

        /// <summary>
        /// A chat request: the conversation rendered by the model's chat template,
        /// its markup as control tokens and its messages' text as text. The text
        /// of a model that thinks (&lt;think&gt;) comes apart, as Token.Reasoning.
        /// ParseSpecial true is InvalidArgument for a chat request: message text
        /// never becomes control tokens.
        /// </summary>
        /// <exception cref="ArgumentNullException">chat is null.</exception>
        public Request(Conversation chat)
        {
            if (chat == null) throw new ArgumentNullException("chat");
            Chat = chat;
            Stop = new List<string>();
        }

        public string Prompt { get; private set; }
        public IList<int> PromptTokens { get; private set; }
        /// <summary>The conversation of a chat request; null otherwise.</summary>
        public Conversation Chat { get; private set; }
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
        /// <summary>
        /// Structured output: the generated text is a sentence of this grammar
        /// (tokens that cannot continue it are masked before sampling, and the text
        /// ends only where the grammar may end); unset: None. Its text is Grammar.
        /// A bad grammar makes the request fail with InvalidArgument naming the
        /// problem, as Engine.CheckGrammar says.
        /// </summary>
        public GrammarKind? GrammarKind { get; set; }
        /// <summary>The grammar's text (a JSON Schema, a regex or GBNF); null for None and JsonObject.</summary>
        public string Grammar { get; set; }
        /// <summary>
        /// Whether and which tools a chat request whose conversation has tools may
        /// call; unset: Auto (or Function when ToolChoiceFunction names one). The
        /// calls come in Result.ToolCalls and, as they are generated, in
        /// Token.ToolCallDeltas, never in the text. With tools, any choice but None
        /// excludes a grammar and IgnoreEos.
        /// </summary>
        public ToolChoice? ToolChoice { get; set; }
        /// <summary>The one tool the answer calls (ToolChoice.Function, which an unset choice becomes).</summary>
        public string ToolChoiceFunction { get; set; }
        /// <summary>On by default: an answer may make several calls; off: at most one.</summary>
        public bool? ParallelToolCalls { get; set; }

        /// <summary>A native copy; the caller disposes it.</summary>
        internal Native.Request ToNative()
        {
            var n = new Native.Request();
            if (Chat != null)
            {
                using (Native.Conversation c = Chat.ToNative()) n.Chat = c;   // copies
                n.HasChat = true;
            }
            else if (PromptTokens != null)
            {
                using (var ids = new Native.IntVector(PromptTokens)) n.PromptTokens = ids;   // copies
            }
            else
            {
                n.Prompt = Prompt;   // never null (the constructors)
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
            if (GrammarKind.HasValue) n.GrammarKind = (int)GrammarKind.Value;
            if (Grammar != null) n.Grammar = Grammar;
            if (ToolChoice.HasValue)
            {
                n.ToolChoice = (int)ToolChoice.Value;
            }
            else if (ToolChoiceFunction != null)
            {
                n.ToolChoice = (int)Prepack.ToolChoice.Function;   // naming a tool means calling it, as OpenAI's
            }
            if (ToolChoiceFunction != null) n.ToolChoiceFunction = ToolChoiceFunction;
            if (ParallelToolCalls.HasValue) n.ParallelToolCalls = ParallelToolCalls.Value;
            return n;
        }
    }
}

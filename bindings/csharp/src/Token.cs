using System.Collections.Generic;

namespace Prepack
{
    /// <summary>One generated token. Immutable.</summary>
    public sealed class Token
    {
        internal Token(Native.Token n)
        {
            Id = n.Id;
            Text = n.Text;
            Reasoning = n.Reasoning;
            Logprob = n.Logprob;
            TopIds = n.TopIds.ToArray();
            TopLogprobs = n.TopLogprobs.ToArray();
            ToolCallDeltas = ToolCallDelta.ListOf(n.ToolCallDeltas);
        }

        public int Id { get; private set; }
        /// <summary>Whole UTF-8 characters; empty while a stop string or a character is pending.</summary>
        public string Text { get; private set; }
        /// <summary>
        /// A chat request's thinking: this token's part of a &lt;think&gt; section,
        /// apart from Text (the answer); the tags are in neither. "" otherwise.
        /// </summary>
        public string Reasoning { get; private set; }
        /// <summary>log p(token) under the model.</summary>
        public float Logprob { get; private set; }
        /// <summary>The request's Logprobs most likely ids, best first.</summary>
        public int[] TopIds { get; private set; }
        public float[] TopLogprobs { get; private set; }
        /// <summary>
        /// A chat request with tools: pieces of the calls generated with this token
        /// (often none; a token may carry only these, its Text empty). Read-only.
        /// </summary>
        public IList<ToolCallDelta> ToolCallDeltas { get; private set; }

        public override string ToString()
        {
            return Id + ":" + Text;
        }
    }
}

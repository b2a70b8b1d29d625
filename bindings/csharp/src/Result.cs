using System.Collections.Generic;

namespace Prepack
{
    /// <summary>A finished request: its tokens, its text and how it ended. Immutable.</summary>
    public sealed class Result
    {
        internal Result(Native.Result n)
        {
            Tokens = n.Tokens.ToArray();
            Text = n.Text;
            Reasoning = n.Reasoning;
            FinishReason = (FinishReason)n.FinishReason;
            Status = (StatusCode)n.Status;
            Message = n.Message;
            Usage = new Usage(n.Usage);   // n.Usage views n: copied while n lives
            ToolCalls = ToolCall.ListOf(n.ToolCalls);
        }

        public int[] Tokens { get; private set; }
        /// <summary>The generated text; for a chat request that thought, the answer alone.</summary>
        public string Text { get; private set; }
        /// <summary>A chat request's thinking (&lt;think&gt; sections, without the tags); "" otherwise.</summary>
        public string Reasoning { get; private set; }
        public FinishReason FinishReason { get; private set; }
        /// <summary>Ok, or why the request failed (in a batch, requests fail one by one).</summary>
        public StatusCode Status { get; private set; }
        /// <summary>Why, when Status is not Ok; "" otherwise.</summary>
        public string Message { get; private set; }
        public Usage Usage { get; private set; }
        /// <summary>
        /// A chat request with tools: every call of the answer, whole (its tokens'
        /// deltas added up, the same ids); never part of Text. Calls mean OpenAI's
        /// finish_reason "tool_calls" unless FinishReason is Length. Read-only.
        /// </summary>
        public IList<ToolCall> ToolCalls { get; private set; }

        /// <summary>Throws the result's error when its status is not Ok.</summary>
        internal Result Check()
        {
            if (Status != StatusCode.Ok) throw new PrepackException(Status, Message);
            return this;
        }
    }
}

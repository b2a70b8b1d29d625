using System.Collections.Generic;
using System.Collections.ObjectModel;

namespace Prepack
{
    /// <summary>
    /// A piece of a tool call as it is generated (OpenAI's streaming delta): a
    /// call's first piece has its id and name, its arguments follow in pieces;
    /// those of one Index add up to the ToolCall. Immutable.
    /// </summary>
    public sealed class ToolCallDelta
    {
        internal ToolCallDelta(Native.ToolCallDelta n)
        {
            Index = n.Index;
            Id = n.Id;
            Name = n.Name;
            Arguments = n.Arguments;
        }

        /// <summary>Copies a native vector (it stays owned by its holder).</summary>
        internal static IList<ToolCallDelta> ListOf(Native.ToolCallDeltaVector v)
        {
            var out_ = new List<ToolCallDelta>(v.Count);
            foreach (Native.ToolCallDelta d in v) out_.Add(new ToolCallDelta(d));
            return new ReadOnlyCollection<ToolCallDelta>(out_);
        }

        /// <summary>The call's place in the answer: 0, 1, ...</summary>
        public int Index { get; private set; }
        /// <summary>The call's id on its first piece; "" after.</summary>
        public string Id { get; private set; }
        /// <summary>The function on the call's first piece; "" after.</summary>
        public string Name { get; private set; }
        /// <summary>A piece of the arguments' JSON text (may be "").</summary>
        public string Arguments { get; private set; }

        public override string ToString()
        {
            return Index + ":" + Id + " " + Name + Arguments;
        }
    }
}

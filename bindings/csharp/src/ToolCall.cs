using System.Collections.Generic;
using System.Collections.ObjectModel;

namespace Prepack
{
    /// <summary>
    /// One call a chat request's answer made, whole: OpenAI's
    /// {"id", "function": {"name", "arguments"}}. Immutable.
    /// </summary>
    public sealed class ToolCall
    {
        internal ToolCall(Native.ToolCall n)
        {
            Id = n.Id;
            Name = n.Name;
            Arguments = n.Arguments;
        }

        /// <summary>Copies a native vector (it stays owned by its holder).</summary>
        internal static IList<ToolCall> ListOf(Native.ToolCallVector v)
        {
            var out_ = new List<ToolCall>(v.Count);
            foreach (Native.ToolCall c in v) out_.Add(new ToolCall(c));
            return new ReadOnlyCollection<ToolCall>(out_);
        }

        /// <summary>The call's id, "call_" and 24 characters.</summary>
        public string Id { get; private set; }
        /// <summary>The function called.</summary>
        public string Name { get; private set; }
        /// <summary>The arguments: a JSON object's text, held to the tool's parameters schema.</summary>
        public string Arguments { get; private set; }

        public override string ToString()
        {
            return Id + " " + Name + Arguments;
        }
    }
}

using System;
using System.Collections.Generic;

namespace Prepack
{
    /// <summary>
    /// One message of a Conversation: a role and its content (Content, or the
    /// text Parts when there are any, or none when Content is null and there
    /// are no parts: an assistant turn of tool calls only), and optionally a
    /// name, tool calls and the id of the tool call it answers. Message text
    /// always stays text: a user who writes &lt;|im_end|&gt; gets those
    /// characters, never the control token.
    /// </summary>
    /// <example><code>
    /// var messages = new[] { Message.System("Be brief."), Message.User("Hi there") };
    /// </code></example>
    public sealed class Message
    {
        /// <summary>A message with text content (null: none).</summary>
        /// <exception cref="ArgumentNullException">role is null.</exception>
        public Message(string role, string content)
        {
            if (role == null) throw new ArgumentNullException("role");
            Role = role;
            Content = content;
            Parts = new List<string>();
        }

        public static Message System(string content)
        {
            return new Message("system", content);
        }

        public static Message User(string content)
        {
            return new Message("user", content);
        }

        public static Message Assistant(string content)
        {
            return new Message("assistant", content);
        }

        /// <summary>A "tool" message: the result of the tool call toolCallId.</summary>
        public static Message Tool(string toolCallId, string content)
        {
            return new Message("tool", content) { ToolCallId = toolCallId };
        }

        /// <summary>"system", "user", "assistant", "tool", ...</summary>
        public string Role { get; private set; }
        /// <summary>The text content; null for parts or no content.</summary>
        public string Content { get; set; }
        /// <summary>
        /// Or text parts (OpenAI's [{"type": "text", "text": ...}]), used when there
        /// are any (Content must then be null); templates that expect one string get
        /// them joined by "\n".
        /// </summary>
        public IList<string> Parts { get; private set; }
        public string Name { get; set; }
        /// <summary>
        /// A JSON list of OpenAI tool calls, [{"type": "function", "function": {"name", "arguments"}}]
        /// (null: none). Bad JSON is InvalidArgument when the message is used.
        /// </summary>
        public string ToolCallsJson { get; set; }
        /// <summary>Which tool call a "tool" message answers (null: none).</summary>
        public string ToolCallId { get; set; }

        public override string ToString()
        {
            return Role + ": " + (Content ?? (Parts.Count > 0 ? string.Join("\n", Parts) : "(no content)"));
        }

        /// <summary>A native copy; the caller disposes it.</summary>
        internal Native.ChatMessage ToNative()
        {
            foreach (string p in Parts)
            {
                if (p == null) throw new ArgumentNullException("Parts", "a text part is null");
            }
            var n = new Native.ChatMessage();
            n.Role = Role;
            n.HasContent = Content != null;
            if (Content != null) n.Content = Content;
            if (Parts.Count > 0)
            {
                using (var parts = new Native.StringVector(Parts)) n.ContentParts = parts;   // copies
            }
            if (Name != null) n.Name = Name;
            if (ToolCallsJson != null) n.ToolCallsJson = ToolCallsJson;
            if (ToolCallId != null) n.ToolCallId = ToolCallId;
            return n;
        }
    }
}

using System;
using System.Collections.Generic;

namespace Prepack
{
    /// <summary>
    /// Messages for the model's chat template (the GGUF's, or
    /// EngineOptions.ChatTemplateFile), rendered exactly as Hugging Face
    /// transformers' apply_chat_template would. Use it in a chat request
    /// (new Request(conversation)) or see its prompt with Engine.RenderChat. A
    /// request renders the conversation as it is when the request starts.
    /// </summary>
    public sealed class Conversation
    {
        /// <exception cref="ArgumentNullException">messages is null.</exception>
        public Conversation(IEnumerable<Message> messages)
        {
            if (messages == null) throw new ArgumentNullException("messages");
            Messages = new List<Message>(messages);
            AddGenerationPrompt = true;
        }

        public Conversation(params Message[] messages)
            : this((IEnumerable<Message>)messages)
        {
        }

        public IList<Message> Messages { get; private set; }
        /// <summary>
        /// The tools the model may call: a JSON list of
        /// [{"type": "function", "function": {"name", "description", "parameters"}}] (null: none).
        /// </summary>
        public string ToolsJson { get; set; }
        /// <summary>Further template variables: a JSON object such as {"enable_thinking": false} (null: none).</summary>
        public string KwargsJson { get; set; }
        /// <summary>End the prompt with the assistant's opening, so the model answers; true by default.</summary>
        public bool AddGenerationPrompt { get; set; }
        /// <summary>One of the model's named templates, e.g. "tool_use" (null: the default one).</summary>
        public string TemplateName { get; set; }

        /// <summary>A native copy; the caller disposes it.</summary>
        internal Native.Conversation ToNative()
        {
            foreach (Message m in Messages)
            {
                if (m == null) throw new ArgumentNullException("Messages", "a message is null");
            }
            var n = new Native.Conversation();
            using (var messages = new Native.ChatMessageVector())
            {
                foreach (Message m in Messages)
                {
                    using (Native.ChatMessage nm = m.ToNative()) messages.Add(nm);   // copies
                }
                n.Messages = messages;   // copies
            }
            if (ToolsJson != null) n.ToolsJson = ToolsJson;
            if (KwargsJson != null) n.KwargsJson = KwargsJson;
            n.AddGenerationPrompt = AddGenerationPrompt;
            if (TemplateName != null) n.TemplateName = TemplateName;
            return n;
        }
    }
}

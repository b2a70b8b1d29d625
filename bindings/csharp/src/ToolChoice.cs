namespace Prepack
{
    /// <summary>
    /// Whether and which tools a chat request with tools (Conversation.ToolsJson)
    /// may call, as OpenAI's tool_choice (prepack_tool_choice).
    /// </summary>
    public enum ToolChoice
    {
        None = 0,       // the tools are only rendered for the model to read
        Auto = 1,       // the default: the model answers in text or calls tools
        Required = 2,   // the model calls at least one tool
        Function = 3,   // the model calls Request.ToolChoiceFunction
    }
}

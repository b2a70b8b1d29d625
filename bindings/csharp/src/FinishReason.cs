namespace Prepack
{
    /// <summary>Why a request ended (prepack_finish_reason).</summary>
    public enum FinishReason
    {
        None = 0,        // still running
        Stop = 1,        // a stop string was generated
        Length = 2,      // MaxTokens or the end of the context
        Eos = 3,         // the model ended the text
        Cancelled = 4,   // Stream.Cancel, a CancellationToken, or the engine closed
        Error = 5,       // see Result.Status and Result.Message
    }
}

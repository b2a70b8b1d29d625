// Streams a continuation of a prompt with the prepack C# binding.
//
//   mono Example.exe MODEL.gguf ["prompt"] [max_tokens]
using System;
using System.Threading;
using Prepack;

public static class Example
{
    public static int Main(string[] args)
    {
        if (args.Length < 1)
        {
            Console.Error.WriteLine("usage: Example.exe MODEL.gguf [prompt] [max_tokens]");
            return 2;
        }
        string prompt = args.Length > 1 ? args[1] : "Once upon a time";
        int maxTokens = args.Length > 2 ? int.Parse(args[2]) : 32;

        using (var engine = Engine.Open(new EngineOptions(args[0]) { Threads = 1 }))
        using (var cancel = new CancellationTokenSource())
        {
            // Ctrl-C cancels the request instead of killing the process.
            Console.CancelKeyPress += (sender, e) => { e.Cancel = true; cancel.Cancel(); };
            Console.Write(prompt);
            try
            {
                using (Stream stream = engine.Start(new Request(prompt) { MaxTokens = maxTokens, Temperature = 0f }))
                using (cancel.Token.Register(stream.Cancel))
                {
                    foreach (Token t in stream) Console.Write(t.Text);
                    Result r = stream.Result;
                    Console.WriteLine("\n[{0}, {1} prompt + {2} generated tokens, {3:F1} ms]",
                        r.FinishReason, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalMs);
                }
            }
            catch (PrepackException e)
            {
                Console.Error.WriteLine("\n" + e.Message);
                return 1;
            }
        }
        return 0;
    }
}

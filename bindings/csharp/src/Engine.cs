using System;
using System.Collections.Generic;
using System.Threading;

namespace Prepack
{
    /// <summary>
    /// A loaded model and its scheduler. Thread-safe: requests from all threads
    /// are batched together. Dispose it (using) to free the model.
    /// </summary>
    /// <example><code>
    /// using (var engine = Engine.Open(new EngineOptions("stories260K.gguf")))
    ///     foreach (Token t in engine.Generate(new Request("Once upon a time") { MaxTokens = 32 }))
    ///         Console.Write(t.Text);
    /// </code></example>
    public sealed class Engine : IDisposable
    {
        private readonly Handle<Native.Engine> handle;

        private Engine(Native.Engine engine)
        {
            handle = new Handle<Native.Engine>(engine, "engine");
        }

        /// <summary>Loads the model; PrepackException NotFound, InvalidArgument, ... on failure.</summary>
        public static Engine Open(EngineOptions options)
        {
            using (Native.EngineOptions n = options.ToNative()) return new Engine(Native.Engine.Open(n));
        }

        /// <summary>The library's version, e.g. "0.1.0".</summary>
        public static string Version
        {
            get { return Native.prepack.Version(); }
        }

        /// <summary>
        /// Checks a grammar without an engine or a model: returns when a request
        /// with it would be accepted, else throws PrepackException InvalidArgument
        /// naming the problem (a schema's keyword and JSON pointer, a GBNF line and
        /// column, a regex's offset, an unknown kind, text for JsonObject). Text
        /// null is none, as Request.Grammar.
        /// </summary>
        public static void CheckGrammar(GrammarKind kind, string grammar)
        {
            Native.prepack.CheckGrammar((int)kind, grammar ?? "");
        }

        /// <summary>Starts a request and returns its token stream; dispose the stream when done.</summary>
        public Stream Start(Request request)
        {
            using (Native.Request n = request.ToNative()) return new Stream(handle.Call(e => e.Start(n)));
        }

        /// <summary>
        /// Starts a request (argument errors throw here) and returns its tokens,
        /// read as they are enumerated. Cancelling the token cancels the request:
        /// the enumeration then throws PrepackException(Cancelled). Enumerate it
        /// once: its end disposes the stream, so a second enumeration throws
        /// FailedPrecondition.
        /// </summary>
        public IEnumerable<Token> Generate(Request request, CancellationToken cancellation = default(CancellationToken))
        {
            return Tokens(Start(request), cancellation);
        }

        private static IEnumerable<Token> Tokens(Stream stream, CancellationToken cancellation)
        {
            using (stream)
            using (cancellation.Register(stream.Cancel))
            {
                foreach (Token t in stream) yield return t;
            }
        }

        /// <summary>
        /// Starts a chat request (new Request(conversation)) and returns its tokens,
        /// as Generate does: argument errors throw here, cancelling the token
        /// cancels the request, and the end of the enumeration disposes the stream.
        /// Each token's Reasoning carries a thinking model's &lt;think&gt; text apart
        /// from its Text, and Usage.ReasoningTokens counts those tokens.
        /// PrepackException FailedPrecondition when the model has no chat template
        /// (give one with EngineOptions.ChatTemplateFile), InvalidArgument for a
        /// bad message, bad JSON, a template error, or a request that is not a
        /// chat request.
        /// </summary>
        public IEnumerable<Token> Chat(Request request, CancellationToken cancellation = default(CancellationToken))
        {
            if (request == null) throw new ArgumentNullException("request");
            if (request.Chat == null)
            {
                throw new PrepackException(StatusCode.InvalidArgument, "not a chat request: make it with new Request(Conversation)");
            }
            return Generate(request, cancellation);
        }

        /// <summary>The prompt a chat request of this conversation gets: its text and ids. Errors as Chat.</summary>
        public ChatPrompt RenderChat(Conversation conversation)
        {
            if (conversation == null) throw new ArgumentNullException("conversation");
            using (Native.Conversation n = conversation.ToNative())
            using (Native.ChatPrompt p = handle.Call(e => e.RenderChat(n)))
            {
                return new ChatPrompt(p);
            }
        }

        /// <summary>Runs a request to its end; throws if it ends with a status other than Ok.</summary>
        public Result GenerateResult(Request request)
        {
            using (Native.Request n = request.ToNative())
            using (Native.Result r = handle.Call(e => e.Generate(n)))
            {
                return new Result(r);
            }
        }

        /// <summary>
        /// Runs requests as one offline batch (under Policy.BatchLlm shared prefixes
        /// are computed once; chat requests share their common system prompt).
        /// Results come in request order; a request that fails reports it in its
        /// result's Status rather than by throwing.
        /// </summary>
        public IList<Result> GenerateBatch(IEnumerable<Request> requests)
        {
            using (var input = new Native.RequestVector())
            {
                foreach (Request r in requests)
                {
                    using (Native.Request n = r.ToNative()) input.Add(n);   // copies
                }
                using (Native.ResultVector output = handle.Call(e => e.GenerateBatch(input)))
                {
                    var results = new List<Result>(output.Count);
                    foreach (Native.Result r in output) results.Add(new Result(r));   // views into output
                    return results;
                }
            }
        }

        /// <summary>
        /// The token ids of UTF-8 text. With addSpecial, BOS (and EOS) are added as
        /// the model's vocabulary says. With parseSpecial, the text of a control
        /// token such as &lt;|eot_id|&gt; becomes that one token; without it such
        /// text is ordinary text, the safe choice for untrusted input.
        /// PrepackException InvalidArgument for invalid UTF-8, FailedPrecondition
        /// once the engine is disposed.
        /// </summary>
        public int[] Tokenize(string text, bool addSpecial, bool parseSpecial)
        {
            if (text == null) throw new ArgumentNullException("text");
            using (Native.IntVector ids = handle.Call(e => e.Tokenize(text, addSpecial, parseSpecial)))
            {
                return ids.ToArray();
            }
        }

        /// <summary>
        /// The text of token ids, exactly: every id gives its bytes and control
        /// tokens (BOS, EOS) none, except that the first piece after a BOS drops
        /// the space SentencePiece put before the text, so
        /// Detokenize(Tokenize(s, true, false)) == s. PrepackException
        /// InvalidArgument for an id outside the vocabulary, FailedPrecondition
        /// once the engine is disposed.
        /// </summary>
        public string Detokenize(int[] ids)
        {
            if (ids == null) throw new ArgumentNullException("ids");
            using (var input = new Native.IntVector(ids))
            {
                return handle.Call(e => e.Detokenize(input));
            }
        }

        /// <summary>
        /// Stops the engine and frees the model. Running requests end with
        /// Cancelled; a GenerateBatch in flight is waited for. Idempotent; later
        /// calls throw FailedPrecondition.
        /// </summary>
        public void Dispose()
        {
            handle.Close(e => e.Close());
        }
    }
}

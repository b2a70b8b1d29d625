using System;
using System.Collections;
using System.Collections.Generic;

namespace Prepack
{
    /// <summary>
    /// The tokens of one running request, in order. Enumerate it once, on one
    /// thread; Cancel and Dispose work from any thread. When the request ends
    /// with a status other than Ok (cancelled, deadline exceeded), the
    /// enumeration throws that status as a PrepackException; Result then still
    /// tells how it ended. Until the stream is disposed, its end is answered
    /// again at each Read (null, or that status again). Once disposed, Read and
    /// enumeration throw FailedPrecondition however the request ended; Result
    /// still gives what was read.
    /// </summary>
    public sealed class Stream : IEnumerable<Token>, IDisposable
    {
        private readonly Handle<Native.Stream> handle;

        internal Stream(Native.Stream stream)
        {
            handle = new Handle<Native.Stream>(stream, "stream");
        }

        /// <summary>How the request ended (every token, the text, the status); null while it runs.</summary>
        public Result Result { get; private set; }

        /// <summary>
        /// Waits for the next token; null at the end of a request that ended Ok
        /// (like TextReader.ReadLine). Throws the status of one that did not.
        /// </summary>
        public Token Read()
        {
            // First, so that a stream used after Dispose is never mistaken for
            // one that ended: the end was read before the Dispose.
            handle.RequireOpen();
            if (Result == null)
            {
                Token t = handle.Call(s => Fetch(s));
                if (t != null) return t;
            }
            Result.Check();
            return null;
        }

        private Token Fetch(Native.Stream s)
        {
            if (s.Next(-1) == Native.NextResult.NEXT_TOKEN)
            {
                using (Native.Token t = s.Token()) return new Token(t);
            }
            using (Native.Result r = s.Result()) Result = new Result(r);
            return null;
        }

        public IEnumerator<Token> GetEnumerator()
        {
            Token t;
            while ((t = Read()) != null) yield return t;
        }

        IEnumerator IEnumerable.GetEnumerator()
        {
            return GetEnumerator();
        }

        /// <summary>Stops the request; enumeration then ends with Cancelled. Safe from any thread, any time.</summary>
        public void Cancel()
        {
            handle.IfOpen(s => s.Cancel());
        }

        /// <summary>Cancels the request if it runs and frees it. Idempotent; from any thread.</summary>
        public void Dispose()
        {
            handle.Close(s => s.Close());
        }
    }
}

using System;

namespace Prepack
{
    /// <summary>A call into prepack failed: the C library's status code and message.</summary>
    /// <remarks>Raised from native code through SWIG's pending-exception hook (prepack.i).</remarks>
    public class PrepackException : Exception
    {
        public PrepackException(StatusCode status, string message)
            : base(status + ": " + message)
        {
            Status = status;
        }

        /// <summary>Why the call failed.</summary>
        public StatusCode Status { get; private set; }
    }
}

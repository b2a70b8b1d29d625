using System;
using System.Threading;

namespace Prepack
{
    /// <summary>
    /// A native object used from several threads. Calls hold the read lock and
    /// deletion takes the write lock, so the object is never freed under a call
    /// in flight; calls after close throw FailedPrecondition instead of touching
    /// freed memory.
    /// </summary>
    internal sealed class Handle<T> where T : class, IDisposable
    {
        private readonly ReaderWriterLockSlim rw = new ReaderWriterLockSlim();
        private readonly string what;
        private T obj;   // null once deleted

        internal Handle(T obj, string what)
        {
            this.obj = obj;
            this.what = what;
        }

        /// <summary>Applies f to the open object; throws FailedPrecondition once closed.</summary>
        internal R Call<R>(Func<T, R> f)
        {
            rw.EnterReadLock();
            try
            {
                if (obj == null) throw new PrepackException(StatusCode.FailedPrecondition, what + " is closed");
                return f(obj);
            }
            finally
            {
                rw.ExitReadLock();
            }
        }

        /// <summary>Throws FailedPrecondition once closed.</summary>
        internal void RequireOpen()
        {
            Call(o => 0);
        }

        /// <summary>Applies f to the object if it is still open.</summary>
        internal void IfOpen(Action<T> f)
        {
            rw.EnterReadLock();
            try
            {
                if (obj != null) f(obj);
            }
            finally
            {
                rw.ExitReadLock();
            }
        }

        /// <summary>
        /// Closes the object (under the read lock: its native close ends calls in
        /// flight promptly), then deletes it once they have returned. Idempotent.
        /// </summary>
        internal void Close(Action<T> closer)
        {
            IfOpen(closer);
            rw.EnterWriteLock();
            try
            {
                if (obj != null)
                {
                    obj.Dispose();   // the SWIG proxy deletes the C++ object
                    obj = null;
                }
            }
            finally
            {
                rw.ExitWriteLock();
            }
        }
    }
}

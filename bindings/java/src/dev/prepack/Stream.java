package dev.prepack;

import java.util.Iterator;
import java.util.NoSuchElementException;

/**
 * The tokens of one running request, in order. Iterate on one thread;
 * {@link #cancel()} and {@link #close()} work from any thread.
 *
 * <p>When the request ends with a status other than OK (cancelled, deadline
 * exceeded), {@link #hasNext()} throws that status as a PrepackException;
 * {@link #result()} then still tells how it ended. Until the stream is
 * closed, its end is answered again at each call: {@code hasNext()} false and
 * {@code next()} NoSuchElementException, or that status again. Once closed,
 * {@code hasNext()} and {@code next()} throw FAILED_PRECONDITION however the
 * request ended; {@link #result()} still gives what was read.
 */
public final class Stream implements Iterator<Token>, AutoCloseable {
    private final Handle<dev.prepack.swig.Stream> handle;
    private Token pending;   // read by hasNext(), handed out by next()
    private Result result;   // set when the request has ended

    Stream(dev.prepack.swig.Stream stream) {
        handle = new Handle<>(stream, "stream");
    }

    /** Waits for the next token; false at the end of a request that ended OK. */
    @Override
    public boolean hasNext() {
        // First, so that a stream used after close is never mistaken for one
        // that ended: the end and a pending token were read before the close.
        handle.requireOpen();
        if (pending == null && result == null) {
            fetch();
        }
        if (pending != null) {
            return true;
        }
        result.check();
        return false;
    }

    @Override
    public Token next() {
        if (!hasNext()) {
            throw new NoSuchElementException("the request has ended");
        }
        Token t = pending;
        pending = null;
        return t;
    }

    private void fetch() {
        handle.call(s -> {
            if (s.next(-1) == dev.prepack.swig.NextResult.NEXT_TOKEN) {
                dev.prepack.swig.Token t = s.token();
                try {
                    pending = new Token(t);
                } finally {
                    t.delete();
                }
            } else {
                dev.prepack.swig.Result r = s.result();
                try {
                    result = new Result(r);
                } finally {
                    r.delete();
                }
            }
            return null;
        });
    }

    /** How the request ended (every token, the text, the status); null while it runs. */
    public Result result() {
        return result;
    }

    /** Stops the request; iteration then ends with CANCELLED. Safe from any thread, any time. */
    public void cancel() {
        handle.ifOpen(dev.prepack.swig.Stream::cancel);
    }

    /** Cancels the request if it runs and frees it. Idempotent; from any thread. */
    @Override
    public void close() {
        handle.close(dev.prepack.swig.Stream::close, dev.prepack.swig.Stream::delete);
    }
}

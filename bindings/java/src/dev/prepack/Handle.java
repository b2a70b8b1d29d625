package dev.prepack;

import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A native object used from several threads. Calls hold the read lock and
 * deletion takes the write lock, so the object is never freed under a call
 * in flight; calls after close fail with FAILED_PRECONDITION instead of
 * touching freed memory.
 */
final class Handle<T> {
    private final ReentrantReadWriteLock lock = new ReentrantReadWriteLock();
    private final String what;
    private T object;   // null once deleted

    Handle(T object, String what) {
        this.object = object;
        this.what = what;
    }

    /** Applies f to the open object; throws FAILED_PRECONDITION once closed. */
    <R> R call(Function<T, R> f) {
        lock.readLock().lock();
        try {
            if (object == null) {
                throw new PrepackException(StatusCode.FAILED_PRECONDITION, what + " is closed");
            }
            return f.apply(object);
        } finally {
            lock.readLock().unlock();
        }
    }

    /** Throws FAILED_PRECONDITION once closed. */
    void requireOpen() {
        call(object -> null);
    }

    /** Applies f to the object if it is still open. */
    void ifOpen(Consumer<T> f) {
        lock.readLock().lock();
        try {
            if (object != null) {
                f.accept(object);
            }
        } finally {
            lock.readLock().unlock();
        }
    }

    /**
     * Closes the object (under the read lock: its native close ends calls in
     * flight promptly), then deletes it once they have returned. Idempotent.
     */
    void close(Consumer<T> closer, Consumer<T> deleter) {
        ifOpen(closer);
        lock.writeLock().lock();
        try {
            if (object != null) {
                deleter.accept(object);
                object = null;
            }
        } finally {
            lock.writeLock().unlock();
        }
    }
}

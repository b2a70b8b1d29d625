package prepack

import (
	"context"
	"runtime"
	"sync"

	"prepack.dev/prepack/bindings/internal/native"
)

// Stream is the tokens of one running request:
//
//	for s.Next() {
//		use(s.Token())
//	}
//	if err := s.Err(); err != nil { ... }
//
// Read it from one goroutine; Cancel and Close work from any.
type Stream struct {
	mu      sync.RWMutex  // read: calls using h; write: deleting h
	h       native.Stream // nil once closed
	ctx     context.Context
	done    chan struct{} // closed by Close: stops the context watcher
	once    sync.Once
	watcher sync.WaitGroup

	// Owned by the reading goroutine.
	token  Token
	result *Result
	err    error
}

func newStream(ctx context.Context, h native.Stream) *Stream {
	s := &Stream{h: h, ctx: ctx, done: make(chan struct{})}
	if ctx.Done() != nil {
		// The context cancels the request from its own goroutine, which
		// lives until the context is done or the stream is closed.
		s.watcher.Add(1)
		go func() {
			defer s.watcher.Done()
			select {
			case <-ctx.Done():
				s.Cancel()
			case <-s.done:
			}
		}()
	}
	runtime.SetFinalizer(s, (*Stream).Close)
	return s
}

// Next waits for the next token and reports whether there is one. It
// returns false at the end of the request, or on an error (see Err); until
// the stream is closed, again at each later call, with Err unchanged. On a
// closed stream it returns false and Err is FailedPrecondition, however the
// request had ended; Result still gives what was read.
func (s *Stream) Next() bool {
	if s == nil {
		return false
	}
	s.mu.RLock()
	// Closed first, so that a stream used after Close is never mistaken for
	// one that ended: the end was read before the Close.
	closed := s.h == nil
	fetch := !closed && s.result == nil && s.err == nil
	var err error
	if fetch {
		err = s.read()
	}
	s.mu.RUnlock()
	switch {
	case closed:
		s.err = errorf(FailedPrecondition, "stream is closed")
	case !fetch: // the end, or the error, already read
	case err != nil:
		s.err = err
	case s.result != nil:
		s.err = s.result.Err
		if e, ok := s.err.(*Error); ok && e.Code == Cancelled {
			e.cause = s.ctx.Err() // nil unless the context cancelled it
		}
	}
	return s.err == nil && s.result == nil
}

// read fetches one event into s.token or s.result; the read lock is held
// and s.h is open.
func (s *Stream) read() error {
	var next native.PrepackBindingNextResult
	if err := call(func(st native.Status) { next = s.h.Next(-1, st) }); err != nil {
		return err
	}
	if next == native.NEXT_TOKEN {
		t := s.h.Token() // a copy, ours to delete
		s.token = tokenFrom(t)
		native.DeleteToken(t)
		return nil
	}
	r := s.h.Result()
	res := resultFrom(r)
	native.DeleteResult(r)
	s.result = &res
	return nil
}

// Token is the token the last successful Next read.
func (s *Stream) Token() Token { return s.token }

// Err is why the stream stopped early: nil after a request that ended OK.
// A request cancelled by its context gives an *Error with Code Cancelled
// that wraps ctx.Err().
func (s *Stream) Err() error { return s.err }

// Result is how the request ended (every token, the text, the usage); nil
// until Next has returned false at the end of the request.
func (s *Stream) Result() *Result { return s.result }

// Collect reads the remaining tokens and returns the full result and Err.
func (s *Stream) Collect() (*Result, error) {
	for s.Next() {
	}
	return s.Result(), s.Err()
}

// Cancel stops the request; Next then ends with Cancelled. Safe from any
// goroutine at any time, also after Close.
func (s *Stream) Cancel() {
	if s == nil {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.h != nil {
		s.h.Cancel()
	}
}

// Close cancels the request if it is running and frees the stream.
// Closing twice is harmless; Next on a closed stream returns false with Err
// FailedPrecondition, also after the request had ended.
func (s *Stream) Close() error {
	if s == nil {
		return nil
	}
	s.once.Do(func() { close(s.done) })
	s.watcher.Wait()
	// The native Close wakes a Next in flight; it holds the read lock, so
	// deleting waits for it.
	s.mu.RLock()
	if s.h != nil {
		s.h.Close()
	}
	s.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.h != nil {
		native.DeleteStream(s.h)
		s.h = nil
		runtime.SetFinalizer(s, nil)
	}
	return nil
}

package prepack

import (
	"context"
	"runtime"
	"sync"

	"prepack.dev/prepack/bindings/internal/native"
)

// Engine is a loaded model and its scheduler. It is safe for concurrent
// use: requests from all goroutines are batched together.
type Engine struct {
	mu sync.RWMutex  // read: calls using h; write: deleting h
	h  native.Engine // nil once closed
}

// Version is the library's version, e.g. "0.1.0".
func Version() string { return native.Version() }

// Open loads the model. Errors: NotFound, InvalidArgument, DataLoss, ...
func Open(opts Options) (*Engine, error) {
	n := opts.toNative()
	defer native.DeleteEngineOptions(n)
	var h native.Engine
	if err := call(func(st native.Status) { h = native.EngineOpen(n, st) }); err != nil {
		return nil, err
	}
	e := &Engine{h: h}
	runtime.SetFinalizer(e, (*Engine).Close) // a forgotten engine still frees the model
	return e, nil
}

// use runs f on the open engine, holding it against deletion.
func (e *Engine) use(f func(h native.Engine) error) error {
	if e == nil {
		return errorf(FailedPrecondition, "engine is nil")
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.h == nil {
		return errorf(FailedPrecondition, "engine is closed")
	}
	return f(e.h)
}

// Generate starts a request and returns its token stream; close the stream
// when done. When ctx is done the request is cancelled and the stream ends
// with an error that wraps ctx.Err().
func (e *Engine) Generate(ctx context.Context, req Request) (*Stream, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Code: Cancelled, Message: "context done before the request started", cause: err}
	}
	n, err := req.toNative()
	if err != nil {
		return nil, err
	}
	defer native.DeleteRequest(n)
	var h native.Stream
	err = e.use(func(eh native.Engine) error {
		return call(func(st native.Status) { h = eh.Start(n, st) })
	})
	if err != nil {
		return nil, err
	}
	return newStream(ctx, h), nil
}

// Complete runs a request to its end and returns its full result. When
// the request ends with an error, the result so far comes with it.
func (e *Engine) Complete(ctx context.Context, req Request) (*Result, error) {
	s, err := e.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Collect()
}

// GenerateBatch runs requests as one offline batch (under BatchLLM shared
// prefixes are computed once; chat requests share their common system
// prompt) and returns their results in order. A request that fails reports
// it in its Result.Err; the error is for the batch as a whole (no requests,
// a closed engine, Chat.Kwargs that do not marshal to JSON). ctx is checked
// before the batch starts; a batch then runs to its end.
func (e *Engine) GenerateBatch(ctx context.Context, reqs []Request) ([]Result, error) {
	if ctx != nil && ctx.Err() != nil {
		return nil, &Error{Code: Cancelled, Message: "context done before the batch started", cause: ctx.Err()}
	}
	in := native.NewRequestVector()
	defer native.DeleteRequestVector(in)
	for i := range reqs {
		n, err := reqs[i].toNative()
		if err != nil {
			return nil, errorf(InvalidArgument, "requests[%d]: %s", i, err.(*Error).Message)
		}
		in.Add(n) // copies
		native.DeleteRequest(n)
	}
	var out native.ResultVector
	err := e.use(func(h native.Engine) error {
		return call(func(st native.Status) { out = h.GenerateBatch(in, st) })
	})
	if out != nil {
		defer native.DeleteResultVector(out) // returned by value: ours even on failure
	}
	if err != nil {
		return nil, err
	}
	results := make([]Result, out.Size())
	for i := range results {
		results[i] = resultFrom(out.Get(i)) // Get views the vector's element
	}
	return results, nil
}

// Tokenize returns the token ids of the UTF-8 text. With addSpecial, BOS
// (and EOS) are added as the model's vocabulary says. With parseSpecial,
// the text of a control token such as <|eot_id|> or <|im_end|> becomes that
// one token; without it such text is ordinary text, the safe choice for
// untrusted input. Errors: InvalidArgument for invalid UTF-8,
// FailedPrecondition once the engine is closed.
func (e *Engine) Tokenize(text string, addSpecial, parseSpecial bool) ([]int32, error) {
	var out native.IntVector
	err := e.use(func(h native.Engine) error {
		return call(func(st native.Status) { out = h.Tokenize(text, addSpecial, parseSpecial, st) })
	})
	if out != nil {
		defer native.DeleteIntVector(out) // returned by value: ours even on failure
	}
	if err != nil {
		return nil, err
	}
	return ints(out), nil
}

// Detokenize returns the text of ids, exactly: every id gives its bytes and
// control tokens (BOS, EOS) none, except that the first piece after a BOS
// drops the space SentencePiece put before the text, so
// Detokenize(Tokenize(s, true, false)) == s. Errors:
// InvalidArgument for an id outside the vocabulary, FailedPrecondition
// once the engine is closed.
func (e *Engine) Detokenize(ids []int32) (string, error) {
	in := native.NewIntVector()
	defer native.DeleteIntVector(in)
	for _, id := range ids {
		in.Add(int(id))
	}
	var text string
	err := e.use(func(h native.Engine) error {
		return call(func(st native.Status) { text = h.Detokenize(in, st) })
	})
	if err != nil {
		return "", err
	}
	return text, nil
}

// Close stops the engine and frees the model. Running requests end with
// Cancelled; a GenerateBatch in flight is waited for. Closing twice is
// harmless; other calls on a closed engine return FailedPrecondition.
func (e *Engine) Close() error {
	if e == nil {
		return nil
	}
	// The native Close ends calls in flight promptly; they hold the read
	// lock, so deleting waits for them.
	e.mu.RLock()
	if e.h != nil {
		e.h.Close()
	}
	e.mu.RUnlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.h != nil {
		native.DeleteEngine(e.h)
		e.h = nil
		runtime.SetFinalizer(e, nil)
	}
	return nil
}

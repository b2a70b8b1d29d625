package prepack_test

import (
	"context"
	"reflect"
	"testing"

	prepack "prepack.dev/prepack/bindings/go"
)

// The stream contract of bindings/README.md: the end of a request is
// answered again and again until the stream is closed; after Close every
// read is FailedPrecondition, however the request had ended.

func wantClosed(t *testing.T, s *prepack.Stream, when string) {
	t.Helper()
	if s.Next() {
		t.Errorf("%s: Next() true on a closed stream", when)
	}
	if err := s.Err(); prepack.CodeOf(err) != prepack.FailedPrecondition || err.Error() != "FAILED_PRECONDITION: stream is closed" {
		t.Errorf("%s: Err() = %v, want FailedPrecondition", when, err)
	}
}

func TestAnEndedStreamAnswersItsEndUntilClosed(t *testing.T) {
	s, err := engine.Generate(context.Background(), greedy(cases[0]))
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Collect()
	if err != nil || !reflect.DeepEqual(r.Tokens, cases[0].GreedyIDs) {
		t.Fatalf("collect: %v, %+v", err, r)
	}
	for i := 0; i < 2; i++ { // the end, every time
		if s.Next() || s.Err() != nil || s.Result() != r {
			t.Errorf("after the end: Err %v, Result %p (want %p)", s.Err(), s.Result(), r)
		}
	}

	s.Close()
	wantClosed(t, s, "ended, then closed")
	if _, err := s.Collect(); prepack.CodeOf(err) != prepack.FailedPrecondition {
		t.Errorf("Collect after Close: %v", err)
	}
	s.Cancel() // Cancel and Close stay harmless
	s.Close()
	wantClosed(t, s, "closed twice")
	if s.Result() != r {
		t.Errorf("Result after Close = %p, want %p (what was read stays readable)", s.Result(), r)
	}
}

func TestACancelledStreamReportsCancelledUntilClosed(t *testing.T) {
	s, err := engine.Generate(context.Background(), long())
	if err != nil {
		t.Fatal(err)
	}
	s.Cancel()
	for i := 0; i < 2; i++ {
		if _, err := s.Collect(); prepack.CodeOf(err) != prepack.Cancelled {
			t.Fatalf("cancelled: %v", err)
		}
	}
	s.Close()
	wantClosed(t, s, "cancelled, then closed")
	if s.Result() == nil || s.Result().FinishReason != prepack.FinishCancelled {
		t.Errorf("Result after Close: %+v", s.Result())
	}
}

func TestAStreamClosedBeforeReadingIsFailedPrecondition(t *testing.T) {
	s, err := engine.Generate(context.Background(), greedy(cases[0]))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	wantClosed(t, s, "closed before reading")
	if s.Result() != nil {
		t.Errorf("Result = %+v, want nil", s.Result())
	}
}

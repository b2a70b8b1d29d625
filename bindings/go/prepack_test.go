package prepack_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	prepack "prepack.dev/prepack/bindings/go"
)

// The Go binding against the real stories260K model: greedy output equals
// llama2.c's reference ids, and streaming, batching, cancellation, errors
// and closing behave. PREPACK_MODEL and PREPACK_REFERENCE name the files.

type refCase struct {
	Prompt    string  `json:"prompt"`
	PromptIDs []int32 `json:"prompt_ids"` // llama2.c's encoding, BOS (id 1) first
	GreedyIDs []int32 `json:"greedy_ids"`
}

var (
	engine *prepack.Engine
	cases  []refCase
)

func options() prepack.Options {
	// One thread and a small KV budget: the test machine is small and shared.
	return prepack.Options{Model: os.Getenv("PREPACK_MODEL"), Threads: 1, KVBudgetBytes: 8 << 20}
}

func TestMain(m *testing.M) {
	model, reference := os.Getenv("PREPACK_MODEL"), os.Getenv("PREPACK_REFERENCE")
	data, err := os.ReadFile(reference)
	if _, statErr := os.Stat(model); model == "" || statErr != nil || err != nil {
		fmt.Printf("SKIP: stories260K model not found (%q)\n", model)
		os.Exit(0)
	}
	var ref struct {
		Cases []refCase `json:"cases"`
	}
	if err := json.Unmarshal(data, &ref); err != nil || len(ref.Cases) < 2 {
		fmt.Println("reference.json:", err)
		os.Exit(1)
	}
	cases = ref.Cases
	if engine, err = prepack.Open(options()); err != nil {
		fmt.Println("open:", err)
		os.Exit(1)
	}
	code := m.Run()
	engine.Close()
	closeChatEngine()
	os.Exit(code)
}

func greedy(c refCase) prepack.Request {
	return prepack.Request{Prompt: c.Prompt, MaxTokens: len(c.GreedyIDs), Temperature: 0}
}

func TestGreedyGenerationEqualsReference(t *testing.T) {
	for _, c := range cases {
		r, err := engine.Complete(context.Background(), greedy(c))
		if err != nil {
			t.Fatalf("%q: %v", c.Prompt, err)
		}
		if !reflect.DeepEqual(r.Tokens, c.GreedyIDs) {
			t.Errorf("%q:\n got %v\nwant %v", c.Prompt, r.Tokens, c.GreedyIDs)
		}
		if r.FinishReason != prepack.FinishLength || r.Usage.CompletionTokens != len(c.GreedyIDs) {
			t.Errorf("%q: finish %v, %d tokens", c.Prompt, r.FinishReason, r.Usage.CompletionTokens)
		}
	}
}

func TestLazyOptionsReachTheEngine(t *testing.T) {
	// Keep ratio 1.0 scores every token but keeps them all: the reference ids.
	c := cases[0]
	req := greedy(c)
	req.Lazy, req.LazyKeepRatio = true, 1.0
	r, err := engine.Complete(context.Background(), req)
	if err != nil || !reflect.DeepEqual(r.Tokens, c.GreedyIDs) || r.Usage.PrunedFraction != 0 {
		t.Fatalf("lazy keep 1.0: err %v, tokens %v, pruned %v", err, r.Tokens, r.Usage.PrunedFraction)
	}
	req.LazySchedule = "3:0.5,1:0.2"
	var pe *prepack.Error
	if _, err := engine.Complete(context.Background(), req); !errors.As(err, &pe) || pe.Code != prepack.InvalidArgument ||
		!strings.Contains(pe.Message, "1:0.2") {
		t.Fatalf("bad schedule: got %v", err)
	}
}

func TestStreamingYieldsTheFullResult(t *testing.T) {
	c := cases[0]
	full, err := engine.Complete(context.Background(), greedy(c))
	if err != nil {
		t.Fatal(err)
	}
	s, err := engine.Generate(context.Background(), greedy(c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []int32
	var text strings.Builder
	for s.Next() {
		ids = append(ids, s.Token().ID)
		text.WriteString(s.Token().Text)
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids, full.Tokens) || text.String() != full.Text {
		t.Errorf("stream %v %q\n  full %v %q", ids, text.String(), full.Tokens, full.Text)
	}
	if !reflect.DeepEqual(s.Result().Tokens, full.Tokens) || s.Result().FinishReason != prepack.FinishLength {
		t.Errorf("stream result %+v", s.Result())
	}
}

func TestLogprobsAndStopStrings(t *testing.T) {
	req := greedy(cases[0])
	req.Logprobs = 3
	s, err := engine.Generate(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for s.Next() {
		tok := s.Token()
		// Greedy picks the most likely token, so it heads the alternatives.
		if len(tok.TopIDs) != 3 || len(tok.TopLogprobs) != 3 || tok.TopIDs[0] != tok.ID {
			t.Fatalf("token %+v", tok)
		}
	}
	if s.Err() != nil {
		t.Fatal(s.Err())
	}

	req = greedy(cases[0])
	req.Stop = []string{"Lily"} // in the reference continuation
	r, err := engine.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if r.FinishReason != prepack.FinishStop || strings.Contains(r.Text, "Lily") || !strings.HasSuffix(r.Text, "named ") {
		t.Errorf("stop: %v %q", r.FinishReason, r.Text)
	}
}

func TestBatchEqualsSingleRuns(t *testing.T) {
	var reqs []prepack.Request
	for _, c := range cases {
		reqs = append(reqs, greedy(c))
	}
	reqs = append(reqs, greedy(cases[0])) // a repeat shares its whole prompt
	results, err := engine.GenerateBatch(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(results), len(reqs))
	}
	for i, r := range results {
		single, err := engine.Complete(context.Background(), reqs[i])
		if err != nil || r.Err != nil {
			t.Fatalf("request %d: %v / %v", i, err, r.Err)
		}
		if !reflect.DeepEqual(r.Tokens, single.Tokens) || !reflect.DeepEqual(r.Tokens, cases[i%len(cases)].GreedyIDs) {
			t.Errorf("request %d: batch %v\nsingle %v", i, r.Tokens, single.Tokens)
		}
	}

	results, err = engine.GenerateBatch(context.Background(), []prepack.Request{greedy(cases[0]), {Prompt: "x", MaxTokens: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if results[0].Err != nil || prepack.CodeOf(results[1].Err) != prepack.InvalidArgument {
		t.Errorf("per-request errors: %v, %v", results[0].Err, results[1].Err)
	}
	if _, err := engine.GenerateBatch(context.Background(), nil); prepack.CodeOf(err) != prepack.InvalidArgument {
		t.Errorf("empty batch: %v", err)
	}
}

// long is the longest run the context allows, so it is still going when cancelled.
func long() prepack.Request {
	return prepack.Request{Prompt: cases[0].Prompt, MaxTokens: 500, IgnoreEOS: true}
}

func TestContextCancelEndsTheStream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := engine.Generate(ctx, long())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for s.Next() {
		if n++; n == 1 {
			go cancel() // from another goroutine, while this one waits in Next
		}
	}
	err = s.Err()
	if prepack.CodeOf(err) != prepack.Cancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if s.Result().FinishReason != prepack.FinishCancelled || n >= 500 {
		t.Errorf("finish %v after %d tokens", s.Result().FinishReason, n)
	}
}

func TestCancelFromAnotherGoroutine(t *testing.T) {
	s, err := engine.Generate(context.Background(), long())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first := make(chan struct{})
	done := make(chan struct{})
	go func() {
		<-first
		s.Cancel()
		close(done)
	}()
	n := 0
	for s.Next() {
		if n++; n == 1 {
			close(first)
		}
	}
	<-done
	if prepack.CodeOf(s.Err()) != prepack.Cancelled || n >= 500 {
		t.Fatalf("err = %v after %d tokens", s.Err(), n)
	}
	if s2, err := engine.Generate(context.Background(), long()); err != nil { // the engine goes on
		t.Fatal(err)
	} else {
		s2.Close()
	}
}

func TestInvalidArgumentsAreErrorsWithTheMessage(t *testing.T) {
	ctx := context.Background()
	_, err := engine.Complete(ctx, prepack.Request{Prompt: "Once", Temperature: -1})
	if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), "temperature") {
		t.Errorf("temperature -1: %v", err)
	}
	_, err = engine.Generate(ctx, prepack.Request{Prompt: "Once", MaxTokens: -1})
	if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), "max_tokens") {
		t.Errorf("max_tokens -1: %v", err)
	}
	if _, err = engine.Generate(ctx, prepack.Request{NoBOS: true}); prepack.CodeOf(err) != prepack.InvalidArgument {
		t.Errorf("empty prompt without BOS: %v", err)
	}
	if _, err = engine.Generate(ctx, prepack.Request{PromptTokens: []int32{1, 1 << 30}}); prepack.CodeOf(err) != prepack.InvalidArgument {
		t.Errorf("id outside the vocabulary: %v", err)
	}
	if _, err = prepack.Open(prepack.Options{Model: "/no/such/model.gguf"}); prepack.CodeOf(err) != prepack.NotFound {
		t.Errorf("missing model: %v", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err = engine.Generate(done, greedy(cases[0])); !errors.Is(err, context.Canceled) {
		t.Errorf("done context: %v", err)
	}
}

func TestTokenizeEqualsReferenceAndDetokenizeRoundTrips(t *testing.T) {
	for _, c := range cases {
		if len(c.PromptIDs) < 2 || c.PromptIDs[0] != 1 {
			t.Fatalf("%q: reference.json has no prompt_ids starting with BOS: %v", c.Prompt, c.PromptIDs)
		}
		ids, err := engine.Tokenize(c.Prompt, true, false)
		if err != nil || !reflect.DeepEqual(ids, c.PromptIDs) {
			t.Errorf("%q with BOS: err %v\n got %v\nwant %v", c.Prompt, err, ids, c.PromptIDs)
		}
		bare, err := engine.Tokenize(c.Prompt, false, false)
		if err != nil || !reflect.DeepEqual(bare, c.PromptIDs[1:]) {
			t.Errorf("%q without BOS: err %v\n got %v\nwant %v", c.Prompt, err, bare, c.PromptIDs[1:])
		}
		// Decoding is exact: without a BOS every byte is kept, SentencePiece's
		// dummy-prefix space too; after a BOS that space is dropped.
		if text, err := engine.Detokenize(bare); err != nil || text != " "+c.Prompt {
			t.Errorf("%q: Detokenize(Tokenize) = %q, %v", c.Prompt, text, err)
		}
		if text, err := engine.Detokenize(c.PromptIDs); err != nil || text != c.Prompt {
			t.Errorf("%q: Detokenize(prompt_ids) = %q, %v", c.Prompt, text, err)
		}
	}
	if text, err := engine.Detokenize(nil); err != nil || text != "" {
		t.Errorf("Detokenize(nil) = %q, %v", text, err)
	}
	for _, bad := range [][]int32{{1, 1 << 30}, {-1}, {512}} { // stories260K has 512 ids
		_, err := engine.Detokenize(bad)
		if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), "vocabulary") {
			t.Errorf("Detokenize(%v): %v", bad, err)
		}
	}
	if _, err := engine.Tokenize("\xff", false, false); prepack.CodeOf(err) != prepack.InvalidArgument {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestParseSpecialMakesControlTextOneToken(t *testing.T) {
	// stories260K's id 2 is the control token </s> (its README).
	if ids, err := engine.Tokenize("</s>", false, true); err != nil || !reflect.DeepEqual(ids, []int32{2}) {
		t.Errorf("parse_special on: %v, %v", ids, err)
	}
	plain, err := engine.Tokenize("</s>", false, false)
	if err != nil || len(plain) < 2 {
		t.Fatalf("parse_special off: %v, %v", plain, err)
	}
	for _, id := range plain {
		if id == 2 {
			t.Errorf("parse_special off gave the control token: %v", plain)
		}
	}
	// The request field reaches the engine: BOS + </s> is two prompt tokens.
	req := prepack.Request{Prompt: "</s>", ParseSpecial: true, MaxTokens: 1, IgnoreEOS: true}
	r, err := engine.Complete(context.Background(), req)
	if err != nil || r.Usage.PromptTokens != 2 {
		t.Errorf("request with ParseSpecial: err %v, %d prompt tokens", err, r.Usage.PromptTokens)
	}
	req.ParseSpecial = false
	r, err = engine.Complete(context.Background(), req)
	if err != nil || r.Usage.PromptTokens != 1+len(plain) {
		t.Errorf("request without ParseSpecial: err %v, %d prompt tokens, want %d", err, r.Usage.PromptTokens, 1+len(plain))
	}
}

func TestAnEmptyPromptWithBOSGenerates(t *testing.T) {
	r, err := engine.Complete(context.Background(), prepack.Request{MaxTokens: 4, IgnoreEOS: true})
	if err != nil || r.Usage.CompletionTokens == 0 || len(r.Tokens) == 0 || r.Usage.PromptTokens != 1 {
		t.Fatalf("empty prompt: err %v, usage %+v", err, r.Usage)
	}
}

// Empty (non-nil) PromptTokens is the C library's empty prompt_tokens:
// InvalidArgument, never BOS alone, whatever Prompt says; in a batch, that
// request's own error.
func TestEmptyPromptTokensAreInvalid(t *testing.T) {
	for _, req := range []prepack.Request{{PromptTokens: []int32{}}, {PromptTokens: []int32{}, Prompt: "Once"}} {
		req.MaxTokens = 1
		_, err := engine.Generate(context.Background(), req)
		if e, ok := err.(*prepack.Error); !ok || e.Code != prepack.InvalidArgument || !strings.Contains(e.Message, "prompt_tokens is empty") {
			t.Errorf("%+v: %v", req, err)
		}
	}
	results, err := engine.GenerateBatch(context.Background(), []prepack.Request{{PromptTokens: []int32{}, MaxTokens: 1}, {PromptTokens: []int32{1}, MaxTokens: 1}})
	if err != nil || prepack.CodeOf(results[0].Err) != prepack.InvalidArgument || results[1].Err != nil {
		t.Errorf("batch: %v; %+v", err, results)
	}
}

func TestBF16WeightsGenerateAndABadDTypeIsAnError(t *testing.T) {
	e, err := prepack.Open(prepack.Options{Model: "synthetic:tiny", Threads: 1, DType: prepack.BF16})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.Complete(context.Background(), prepack.Request{Prompt: "Once upon a time", MaxTokens: 4, IgnoreEOS: true})
	if err != nil || len(r.Tokens) != 4 || r.FinishReason != prepack.FinishLength {
		t.Fatalf("bf16: err %v, tokens %v, finish %v", err, r.Tokens, r.FinishReason)
	}
	_, err = prepack.Open(prepack.Options{Model: "synthetic:tiny", Threads: 1, DType: 9})
	if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("dtype 9: %v", err)
	}
}

func TestClosingTwiceIsHarmlessAndAClosedEngineIsAnError(t *testing.T) {
	e, err := prepack.Open(options())
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Generate(context.Background(), greedy(cases[0]))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s.Close()
	s.Cancel()
	if s.Next() || prepack.CodeOf(s.Err()) != prepack.FailedPrecondition {
		t.Errorf("closed stream: %v", s.Err())
	}

	e.Close()
	e.Close()
	if _, err := e.Generate(context.Background(), greedy(cases[0])); prepack.CodeOf(err) != prepack.FailedPrecondition ||
		!strings.Contains(err.Error(), "closed") {
		t.Errorf("closed engine: %v", err)
	}
	if _, err := e.GenerateBatch(context.Background(), []prepack.Request{greedy(cases[0])}); prepack.CodeOf(err) != prepack.FailedPrecondition {
		t.Errorf("closed engine batch: %v", err)
	}
	if _, err := e.Tokenize("Once", true, false); prepack.CodeOf(err) != prepack.FailedPrecondition ||
		!strings.Contains(err.Error(), "closed") {
		t.Errorf("closed engine tokenize: %v", err)
	}
	if _, err := e.Detokenize([]int32{1}); prepack.CodeOf(err) != prepack.FailedPrecondition {
		t.Errorf("closed engine detokenize: %v", err)
	}
	var nilEngine *prepack.Engine
	if _, err := nilEngine.Generate(context.Background(), greedy(cases[0])); err == nil {
		t.Error("nil engine: no error")
	}
	if _, err := nilEngine.Tokenize("Once", true, false); prepack.CodeOf(err) != prepack.FailedPrecondition {
		t.Errorf("nil engine tokenize: %v", err)
	}
}

func TestClosingTheEngineEndsItsStreams(t *testing.T) {
	e, err := prepack.Open(options())
	if err != nil {
		t.Fatal(err)
	}
	s, err := e.Generate(context.Background(), long())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e.Close()
	if _, err := s.Collect(); prepack.CodeOf(err) != prepack.Cancelled {
		t.Errorf("stream of a closed engine: %v", err)
	}
}

func rssKiB(t *testing.T) int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("needs /proc:", err)
	}
	defer f.Close()
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "VmRSS:" {
			n, _ := strconv.Atoi(fields[1])
			return n
		}
	}
	return -1
}

func cycles(t *testing.T, n int) {
	for i := 0; i < n; i++ {
		e, err := prepack.Open(options())
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Complete(context.Background(), prepack.Request{Prompt: "Once upon a time", MaxTokens: 8})
		if err != nil || len(r.Tokens) != 8 {
			t.Fatal(err)
		}
		e.Close()
	}
}

func TestCreateGenerateCloseCyclesDoNotGrowMemory(t *testing.T) {
	cycles(t, 20) // warm-up: allocator pools, library initialisation
	runtime.GC()
	debug.FreeOSMemory()
	before := rssKiB(t)
	cycles(t, 200)
	runtime.GC()
	debug.FreeOSMemory()
	after := rssKiB(t)
	fmt.Printf("memory: VmRSS %d KiB before, %d KiB after 200 cycles (%+d KiB)\n", before, after, after-before)
	// A leaked engine (model + KV cache) is over a megabyte of RSS, so 200
	// of them would be far past this bound.
	if after-before > 16*1024 {
		t.Errorf("VmRSS grew by %d KiB", after-before)
	}
}

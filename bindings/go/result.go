package prepack

import (
	"fmt"

	"prepack.dev/prepack/bindings/internal/native"
)

// FinishReason tells why a request ended.
type FinishReason int

const (
	FinishNone      FinishReason = 0 // still running
	FinishStop      FinishReason = 1 // a stop string was generated
	FinishLength    FinishReason = 2 // MaxTokens or the end of the context
	FinishEOS       FinishReason = 3 // the model ended the text
	FinishCancelled FinishReason = 4 // Cancel, the context, or the engine closed
	FinishError     FinishReason = 5 // see Result.Err
)

func (f FinishReason) String() string {
	names := []string{"NONE", "STOP", "LENGTH", "EOS", "CANCELLED", "ERROR"}
	if f >= 0 && int(f) < len(names) {
		return names[f]
	}
	return fmt.Sprintf("FinishReason(%d)", int(f))
}

// Token is one generated token.
type Token struct {
	ID          int32
	Text        string  // whole UTF-8; empty while a stop string or a character is pending
	Reasoning   string  // a chat request's thinking: this token's part of a <think> section, apart from Text (the tags are in neither)
	Logprob     float32 // log p(token) under the model
	TopIDs      []int32 // the Request.Logprobs most likely ids, best first
	TopLogprobs []float32
	// A chat with tools: pieces of the calls generated with this token
	// (often none; a token may carry only these, its Text empty).
	ToolCallDeltas []ToolCallDelta
}

// Usage is the token counts and timings of a finished request.
type Usage struct {
	PromptTokens       int
	CompletionTokens   int
	CachedPromptTokens int     // served from a shared prefix's KV cache
	QueueMs            float64 // submitted to first scheduled
	TTFTMs             float64 // submitted to first token
	TotalMs            float64
	PrunedFraction     float64 // LazyLLM: fraction of the prompt's token-layers its prefill skipped
	ReasoningTokens    int     // a chat request's generated tokens that were thinking (part of CompletionTokens)
}

// Result is a finished request: all its tokens, its text and how it ended.
type Result struct {
	Tokens       []int32
	Text         string // for a chat request that thought, the answer alone
	Reasoning    string // a chat request's thinking (<think> sections, without the tags)
	FinishReason FinishReason
	Usage        Usage
	Err          error // nil when the request ended OK
	// A chat with tools: every call of the answer, whole (the deltas added
	// up, the same IDs); never part of Text. Calls mean OpenAI's
	// finish_reason "tool_calls" unless FinishReason is FinishLength.
	ToolCalls []ToolCall
}

// The from* functions copy native values; their argument stays the caller's.

func tokenFrom(t native.Token) Token {
	out := Token{ID: int32(t.GetId()), Text: t.GetText(), Reasoning: t.GetReasoning(), Logprob: t.GetLogprob(), TopIDs: ints(t.GetTopIds()),
		ToolCallDeltas: toolCallDeltasFrom(t.GetToolCallDeltas())}
	if lp := t.GetTopLogprobs(); lp.Size() > 0 {
		out.TopLogprobs = make([]float32, lp.Size())
		for i := range out.TopLogprobs {
			out.TopLogprobs[i] = lp.Get(i)
		}
	}
	return out
}

func resultFrom(r native.Result) Result {
	u := r.GetUsage() // a view into r
	out := Result{
		Tokens:       ints(r.GetTokens()),
		Text:         r.GetText(),
		Reasoning:    r.GetReasoning(),
		FinishReason: FinishReason(r.GetFinishReason()),
		Usage: Usage{
			PromptTokens: u.GetPromptTokens(), CompletionTokens: u.GetCompletionTokens(),
			CachedPromptTokens: u.GetCachedPromptTokens(),
			QueueMs:            u.GetQueueMs(), TTFTMs: u.GetTtftMs(), TotalMs: u.GetTotalMs(),
			PrunedFraction: u.GetPrunedFraction(), ReasoningTokens: int(u.GetReasoningTokens()),
		},
		ToolCalls: toolCallsFrom(r.GetToolCalls()),
	}
	if code := Code(r.GetStatus()); code != OK {
		out.Err = &Error{Code: code, Message: r.GetMessage()}
	}
	return out
}

func ints(v native.IntVector) []int32 {
	if v.Size() == 0 {
		return nil
	}
	out := make([]int32, v.Size())
	for i := range out {
		out[i] = int32(v.Get(i))
	}
	return out
}

package prepack

import "prepack.dev/prepack/bindings/internal/native"

// Request is one generation request. Zero fields take the library's
// defaults, except Temperature, whose zero value means greedy decoding
// (the C library's default is 1.0: set it for sampling).
type Request struct {
	Prompt            string   // UTF-8 text; used when PromptTokens is empty
	PromptTokens      []int32  // token ids taken as given (no BOS added)
	NoBOS             bool     // do not put BOS before Prompt (an empty Prompt then is an error)
	ParseSpecial      bool     // control-token text in Prompt (<|eot_id|>) becomes that one token; off: ordinary text
	MaxTokens         int      // tokens to generate; 0 = 128
	Temperature       float32  // 0 = greedy
	TopK              int      // 0 = off
	TopP              float32  // 0 = off (1.0)
	MinP              float32  // 0 = off
	RepetitionPenalty float32  // 0 = off (1.0)
	Seed              uint64   // same seed, same tokens
	Stop              []string // generation ends when one appears (it is not in the text)
	Logprobs          int      // alternatives reported per token, 0..20
	IgnoreEOS         bool
	Lazy              bool    // LazyLLM: prune prompt tokens the next token barely attends to
	LazyKeepRatio     float32 // LazyLLM: how hard to prune, in (0, 1]; 0 = the default schedule
	LazySchedule      string  // LazyLLM: "LAYER:KEEP,..." (overrides LazyKeepRatio)
	LazyReviveLimit   int     // LazyLLM: pruned tokens a decode step may bring back; 0 = the default, -1 = no bound
}

// toNative returns a native copy; the caller deletes it.
func (r *Request) toNative() native.Request {
	n := native.NewRequest()
	if len(r.PromptTokens) > 0 {
		ids := native.NewIntVector()
		for _, id := range r.PromptTokens {
			ids.Add(int(id))
		}
		n.SetPromptTokens(ids) // copies
		native.DeleteIntVector(ids)
	} else {
		n.SetPrompt(r.Prompt)
	}
	n.SetAddBos(!r.NoBOS)
	n.SetParseSpecial(r.ParseSpecial)
	if r.MaxTokens != 0 {
		n.SetMaxTokens(r.MaxTokens)
	}
	n.SetTemperature(r.Temperature)
	n.SetTopK(r.TopK)
	if r.TopP != 0 {
		n.SetTopP(r.TopP)
	}
	n.SetMinP(r.MinP)
	if r.RepetitionPenalty != 0 {
		n.SetRepetitionPenalty(r.RepetitionPenalty)
	}
	n.SetSeed(int64(r.Seed))
	if len(r.Stop) > 0 {
		stop := native.NewStringVector()
		for _, s := range r.Stop {
			stop.Add(s)
		}
		n.SetStop(stop) // copies
		native.DeleteStringVector(stop)
	}
	n.SetLogprobs(r.Logprobs)
	n.SetIgnoreEos(r.IgnoreEOS)
	n.SetLazy(r.Lazy)
	n.SetLazyKeepRatio(r.LazyKeepRatio)
	n.SetLazySchedule(r.LazySchedule)
	n.SetLazyReviveLimit(r.LazyReviveLimit)
	return n
}

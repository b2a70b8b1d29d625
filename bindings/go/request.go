package prepack

import "prepack.dev/prepack/bindings/internal/native"

// Request is one generation request. Zero fields take the library's
// defaults, except Temperature, whose zero value means greedy decoding
// (the C library's default is 1.0: set it for sampling).
//
// Its prompt is one of Chat, PromptTokens or Prompt, as in the C library:
// Chat when set (Prompt and PromptTokens must then be empty and nil);
// otherwise PromptTokens when it is not nil, where an empty (non-nil) slice
// is InvalidArgument "prompt_tokens is empty", never BOS alone; otherwise
// Prompt, where "" is BOS alone (or InvalidArgument with NoBOS). Every form
// runs everywhere: Generate, Complete, GenerateBatch and, with Chat, Chat.
type Request struct {
	Prompt            string        // UTF-8 text; used when PromptTokens is nil and Chat unset
	PromptTokens      []int32       // token ids taken as given (no BOS added); non-nil: the prompt
	Chat              *Conversation // a conversation rendered by the model's chat template (see Engine.Chat)
	NoBOS             bool          // do not put BOS before Prompt (an empty Prompt then is an error)
	ParseSpecial      bool          // control-token text in Prompt (<|eot_id|>) becomes that one token; off: ordinary text; with Chat: InvalidArgument
	MaxTokens         int           // tokens to generate; 0 = 128
	Temperature       float32       // 0 = greedy
	TopK              int           // 0 = off
	TopP              float32       // 0 = off (1.0)
	MinP              float32       // 0 = off
	RepetitionPenalty float32       // 0 = off (1.0)
	Seed              uint64        // same seed, same tokens
	Stop              []string      // generation ends when one appears (it is not in the text)
	Logprobs          int           // alternatives reported per token, 0..20
	IgnoreEOS         bool
	Lazy              bool    // LazyLLM: prune prompt tokens the next token barely attends to
	LazyKeepRatio     float32 // LazyLLM: how hard to prune, in (0, 1]; 0 = the default schedule
	LazySchedule      string  // LazyLLM: "LAYER:KEEP,..." (overrides LazyKeepRatio)
	LazyReviveLimit   int     // LazyLLM: pruned tokens a decode step may bring back; 0 = the default, -1 = no bound

	// Structured output: the generated text is a sentence of this grammar
	// (tokens that cannot continue it are masked before sampling, and the
	// text ends only where the grammar may end), e.g.
	// {GrammarKind: GrammarRegex, Grammar: "(yes|no)"}. A bad grammar is
	// InvalidArgument naming the problem, as CheckGrammar says.
	GrammarKind GrammarKind
	Grammar     string // the schema, regex or GBNF text; "" for GrammarNone and GrammarJSONObject

	// Tool calls of a chat whose Conversation.ToolsJSON lists tools: the
	// calls come in Result.ToolCalls and, as they are generated, in
	// Token.ToolCallDeltas, never in the text. Tools with a choice other
	// than ToolChoiceNone exclude a GrammarKind and IgnoreEOS.
	ToolChoice          ToolChoice // zero: ToolChoiceAuto (ToolChoiceFunction when ToolFunction is set)
	ToolFunction        string     // the one tool to call (ToolChoiceFunction)
	NoParallelToolCalls bool       // at most one call per answer
}

// toNative returns a native copy; the caller deletes it. The only error is
// Chat.Kwargs that do not marshal to JSON.
func (r *Request) toNative() (native.Request, error) {
	var chat native.Conversation
	if r.Chat != nil {
		var err error
		if chat, err = r.Chat.toNative(); err != nil {
			return nil, err
		}
		defer native.DeleteConversation(chat)
	}
	n := native.NewRequest()
	if chat != nil {
		n.SetChat(chat) // copies
		n.SetHasChat(true)
	}
	// Whatever else is set goes too: the library refuses a chat with a
	// prompt, and empty prompt tokens, by name.
	if r.PromptTokens != nil {
		ids := native.NewIntVector()
		for _, id := range r.PromptTokens {
			ids.Add(int(id))
		}
		n.SetPromptTokens(ids) // copies
		native.DeleteIntVector(ids)
		n.SetPromptTokensSet(true)
	}
	n.SetPrompt(r.Prompt)
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
	n.SetGrammarKind(int(r.GrammarKind))
	n.SetGrammar(r.Grammar)
	choice := r.ToolChoice
	if choice == ToolChoiceAuto && r.ToolFunction != "" {
		choice = ToolChoiceFunction // naming a tool means calling it, as OpenAI's {"function": {"name"}}
	}
	n.SetToolChoice(choice.native())
	n.SetToolChoiceFunction(r.ToolFunction)
	n.SetParallelToolCalls(!r.NoParallelToolCalls)
	return n, nil
}

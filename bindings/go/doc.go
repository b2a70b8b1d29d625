// Package prepack runs the prepack inference engine in-process, over
// libprepack.so through a SWIG-generated cgo layer
// (prepack.dev/prepack/bindings/internal/native).
//
//	engine, err := prepack.Open(prepack.Options{Model: "stories260K.gguf"})
//	if err != nil { ... }
//	defer engine.Close()
//	stream, err := engine.Generate(ctx, prepack.Request{Prompt: "Once upon a time", MaxTokens: 32})
//	if err != nil { ... }
//	defer stream.Close()
//	for stream.Next() {
//		fmt.Print(stream.Token().Text)
//	}
//	if err := stream.Err(); err != nil { ... }
//
// Chat requests carry a Conversation, rendered by the model's own chat
// template (or Options.ChatTemplateFile), its messages' text never becoming
// control tokens; a thinking model's <think> text arrives apart, in
// Token.Reasoning:
//
//	chat := &prepack.Conversation{Messages: []prepack.Message{
//		{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi there"}}}
//	stream, err := engine.Chat(ctx, prepack.Request{Chat: chat, MaxTokens: 64})
//	prompt, err := engine.RenderChat(*chat) // the text and ids it gets
//
// Structured output holds the text to a grammar (GrammarJSONObject,
// GrammarJSONSchema, GrammarRegex, GrammarGBNF; CheckGrammar checks one
// without a model), and a chat with tools (Conversation.ToolsJSON) may
// call them as Request.ToolChoice says, the calls arriving in
// Token.ToolCallDeltas and Result.ToolCalls, never in the text:
//
//	res, err := engine.Complete(ctx, prepack.Request{Prompt: "Is it raining?",
//		GrammarKind: prepack.GrammarRegex, Grammar: "(yes|no)"})
//
// Errors are *Error values carrying the library's status Code; bad input
// is an error, never a panic. Engines are safe for concurrent use; a
// Stream is read by one goroutine, while Cancel and Close work from any.
// Every native object is freed by Close (a finalizer catches forgotten
// ones, but close them: the engine holds the model and its KV cache).
package prepack

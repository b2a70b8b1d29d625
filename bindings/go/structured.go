package prepack

import (
	"fmt"

	"prepack.dev/prepack/bindings/internal/native"
)

// GrammarKind is the kind of grammar a request's text must be a sentence
// of (structured output). Its values are prepack.h's prepack_grammar_kind.
type GrammarKind int

const (
	GrammarNone       GrammarKind = 0 // unconstrained (the default)
	GrammarJSONObject GrammarKind = 1 // any JSON object (OpenAI's {"type": "json_object"}); Grammar unused
	GrammarJSONSchema GrammarKind = 2 // Grammar: a JSON Schema's JSON text; objects allow no property it does not name
	GrammarRegex      GrammarKind = 3 // Grammar: a regular expression the whole text matches (JSON Schema's pattern syntax)
	GrammarGBNF       GrammarKind = 4 // Grammar: llama.cpp's GBNF, start rule "root"
)

func (k GrammarKind) String() string {
	names := []string{"NONE", "JSON_OBJECT", "JSON_SCHEMA", "REGEX", "GBNF"}
	if k >= 0 && int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("GrammarKind(%d)", int(k))
}

// CheckGrammar reports whether a request with this grammar would be
// accepted, without an engine or a model: nil, or InvalidArgument naming the
// problem (a schema's keyword and JSON pointer, a GBNF line and column, a
// regex's position, an unknown kind, text for GrammarJSONObject).
func CheckGrammar(kind GrammarKind, grammar string) error {
	return call(func(st native.Status) { native.CheckGrammar(int(kind), grammar, st) })
}

// ToolChoice says whether and which tools a chat request with tools
// (Conversation.ToolsJSON) may call, as OpenAI's tool_choice. The zero
// value is the library's default, ToolChoiceAuto.
type ToolChoice int

const (
	ToolChoiceAuto     ToolChoice = iota // the model answers in text or calls tools (the default)
	ToolChoiceNone                       // the tools are only rendered for the model to read
	ToolChoiceRequired                   // the model calls at least one tool
	ToolChoiceFunction                   // the model calls Request.ToolFunction
)

func (c ToolChoice) String() string {
	names := []string{"AUTO", "NONE", "REQUIRED", "FUNCTION"}
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return fmt.Sprintf("ToolChoice(%d)", int(c))
}

// native is the prepack_tool_choice value. A value outside the enum goes
// as itself (also outside the C enum's 0..3), for the library to refuse by
// name ("tool_choice N is unknown").
func (c ToolChoice) native() int {
	switch c {
	case ToolChoiceNone:
		return 0
	case ToolChoiceAuto:
		return 1
	case ToolChoiceRequired:
		return 2
	case ToolChoiceFunction:
		return 3
	}
	return int(c)
}

// ToolCall is one call a chat request's answer made: OpenAI's
// {"id", "function": {"name", "arguments"}}.
type ToolCall struct {
	ID        string // "call_" + 24 characters
	Name      string // the function called
	Arguments string // a JSON object's text, held to the tool's parameters schema
}

// ToolCallDelta is a piece of a call as it is generated (OpenAI's
// streaming delta): a call's first piece has its ID and Name, its
// Arguments follow in pieces; those of one Index add up to the call.
type ToolCallDelta struct {
	Index     int    // the call's place in the answer: 0, 1, ...
	ID        string // the first piece only; "" after
	Name      string // the first piece only; "" after
	Arguments string // a piece of the arguments' JSON text (may be "")
}

func toolCallsFrom(v native.ToolCallVector) []ToolCall {
	if v.Size() == 0 {
		return nil
	}
	out := make([]ToolCall, v.Size())
	for i := range out {
		c := v.Get(i) // a view into v
		out[i] = ToolCall{ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()}
	}
	return out
}

func toolCallDeltasFrom(v native.ToolCallDeltaVector) []ToolCallDelta {
	if v.Size() == 0 {
		return nil
	}
	out := make([]ToolCallDelta, v.Size())
	for i := range out {
		d := v.Get(i) // a view into v
		out[i] = ToolCallDelta{Index: int(d.GetIndex()), ID: d.GetId(), Name: d.GetName(), Arguments: d.GetArguments()}
	}
	return out
}

package prepack_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	prepack "prepack.dev/prepack/bindings/go"
)

// Structured output and tool calls through the Go binding. Each generated
// text is judged by Go's own regexp and encoding/json, never by prepack.

// ended says whether a request ended where its grammar (or tool-call
// format) let it end, rather than being cut short.
func ended(r *prepack.Result) bool {
	return r.FinishReason == prepack.FinishStop || r.FinishReason == prepack.FinishEOS
}

func TestRegexConstrainsTheWholeText(t *testing.T) {
	for _, re := range []string{`(yes|no)`, `[a-z]{3,8}`, `(red|green|blue) [0-9]{2}`} {
		whole := regexp.MustCompile(`^(?:` + re + `)$`)
		// Greedy, then sampled with a few seeds: every text is a sentence.
		reqs := []prepack.Request{{Prompt: "Once upon a time", MaxTokens: 32, GrammarKind: prepack.GrammarRegex, Grammar: re}}
		for seed := uint64(1); seed <= 4; seed++ {
			reqs = append(reqs, prepack.Request{Prompt: "Once upon a time", MaxTokens: 32, Temperature: 1, Seed: seed,
				GrammarKind: prepack.GrammarRegex, Grammar: re})
		}
		for _, req := range reqs {
			r, err := engine.Complete(context.Background(), req)
			if err != nil {
				t.Fatalf("%q seed %d: %v", re, req.Seed, err)
			}
			if !whole.MatchString(r.Text) || !ended(r) {
				t.Errorf("%q seed %d: %q (%v) is not a whole match", re, req.Seed, r.Text, r.FinishReason)
			}
		}
	}
	// Without the grammar the model writes a story, which no regex above
	// matches: the constraint is what made the texts match.
	free, err := engine.Complete(context.Background(), prepack.Request{Prompt: "Once upon a time", MaxTokens: 32})
	if err != nil || regexp.MustCompile(`^(?:yes|no|[a-z]{3,8})$`).MatchString(free.Text) {
		t.Errorf("unconstrained: %q, %v", free.Text, err)
	}
}

func TestJSONSchemaTextParsesAndValidates(t *testing.T) {
	schema := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 12},
		"age": {"type": "integer", "minimum": 0, "maximum": 99}}, "required": ["name", "age"]}`
	for seed := uint64(0); seed <= 3; seed++ {
		req := prepack.Request{Prompt: "Once upon a time", MaxTokens: 96, Seed: seed, GrammarKind: prepack.GrammarJSONSchema, Grammar: schema}
		if seed > 0 {
			req.Temperature = 1
		}
		r, err := engine.Complete(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]interface{}
		if err := json.Unmarshal([]byte(r.Text), &v); err != nil || !ended(r) {
			t.Fatalf("seed %d: %q (%v): %v", seed, r.Text, r.FinishReason, err)
		}
		name, okName := v["name"].(string)
		age, okAge := v["age"].(float64)
		// Strict objects: the two properties the schema names and no other.
		if len(v) != 2 || !okName || utf8.RuneCountInString(name) > 12 || !okAge || age != float64(int(age)) || age < 0 || age > 99 {
			t.Errorf("seed %d: %q breaks the schema", seed, r.Text)
		}
	}
}

func TestJSONObjectTextIsJSONOrItsPrefix(t *testing.T) {
	// stories260K never closes its object within its context: each text,
	// cut short by MaxTokens, must still be the start of a JSON object.
	for seed := uint64(0); seed <= 3; seed++ {
		r, err := engine.Complete(context.Background(), prepack.Request{Prompt: "Once upon a time", MaxTokens: 48,
			Temperature: float32(seed) / 2, Seed: seed, GrammarKind: prepack.GrammarJSONObject})
		if err != nil {
			t.Fatal(err)
		}
		var v map[string]interface{}
		err = json.Unmarshal([]byte(r.Text), &v)
		switch {
		case !strings.HasPrefix(strings.TrimLeft(r.Text, " \t\n\r"), "{"):
			t.Errorf("seed %d: %q does not open an object", seed, r.Text)
		case r.FinishReason == prepack.FinishLength:
			if err == nil || !strings.Contains(err.Error(), "unexpected end of JSON input") {
				t.Errorf("seed %d: %q is not a JSON prefix: %v", seed, r.Text, err)
			}
		case err != nil:
			t.Errorf("seed %d: %q (%v): %v", seed, r.Text, r.FinishReason, err)
		}
	}
}

func TestBadGrammarsAreRefusedByName(t *testing.T) {
	bad := []struct {
		kind    prepack.GrammarKind
		grammar string
		names   string // in the message
	}{
		{prepack.GrammarRegex, "(yes", "regex at offset 0"},
		{prepack.GrammarGBNF, "root ::= foo", "undefined rule 'foo'"},
		{prepack.GrammarGBNF, "root ::= \"a\"\nroot ::=::", "GBNF 2:"},
		{prepack.GrammarJSONSchema, `{"type": "strin"}`, `"strin"`},
		{prepack.GrammarJSONSchema, `{"type": `, "not valid JSON"},
		{prepack.GrammarJSONObject, "{}", "JSON_OBJECT"},
		{prepack.GrammarKind(9), "x", "grammar_kind 9 is unknown"},
	}
	for _, b := range bad {
		err := prepack.CheckGrammar(b.kind, b.grammar)
		if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), b.names) {
			t.Errorf("CheckGrammar(%v, %q) = %v, want INVALID_ARGUMENT naming %q", b.kind, b.grammar, err, b.names)
		}
		// A request refuses it the same way, before it starts.
		_, runErr := engine.Generate(context.Background(), prepack.Request{Prompt: "Once", GrammarKind: b.kind, Grammar: b.grammar})
		if err == nil || runErr == nil || runErr.Error() != err.Error() {
			t.Errorf("Generate with %v %q: %v, CheckGrammar said %v", b.kind, b.grammar, runErr, err)
		}
	}
	good := []struct {
		kind    prepack.GrammarKind
		grammar string
	}{{prepack.GrammarNone, ""}, {prepack.GrammarJSONObject, ""}, {prepack.GrammarRegex, "[a-z]+"}, {prepack.GrammarRegex, ""},
		{prepack.GrammarGBNF, `root ::= "a" | "b"`}, {prepack.GrammarJSONSchema, `{"type": "integer"}`}}
	for _, g := range good {
		if err := prepack.CheckGrammar(g.kind, g.grammar); err != nil {
			t.Errorf("CheckGrammar(%v, %q) = %v", g.kind, g.grammar, err)
		}
	}
}

func TestToolChoiceReachesTheLibraryAsMeant(t *testing.T) {
	// stories260K has no chat template, so no tools: the library names the
	// choice it received, which checks Go's values against the C enum.
	cases := []struct {
		req   prepack.Request
		names string
	}{
		{prepack.Request{Prompt: "a", ToolChoice: prepack.ToolChoiceRequired}, "tool_choice is REQUIRED but the request has no tools"},
		{prepack.Request{Prompt: "a", ToolFunction: "f"}, "tool_choice is FUNCTION but the request has no tools"},
		{prepack.Request{Prompt: "a", ToolChoice: prepack.ToolChoiceNone, ToolFunction: "f"}, "tool_choice is NONE, which takes no function"},
		{prepack.Request{Prompt: "a", ToolChoice: prepack.ToolChoiceFunction}, "tool_choice_function is NULL or empty"},
		{prepack.Request{Prompt: "a", ToolChoice: 7}, "tool_choice 7 is unknown"},
	}
	for _, c := range cases {
		_, err := engine.Generate(context.Background(), c.req)
		if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), c.names) {
			t.Errorf("%v/%q: %v, want %q", c.req.ToolChoice, c.req.ToolFunction, err, c.names)
		}
	}
	// AUTO (the default) and NONE without tools are plain text.
	for _, choice := range []prepack.ToolChoice{prepack.ToolChoiceAuto, prepack.ToolChoiceNone} {
		r, err := engine.Complete(context.Background(), prepack.Request{Prompt: "Once", MaxTokens: 4, ToolChoice: choice})
		if err != nil || r.Usage.CompletionTokens != 4 || len(r.ToolCalls) != 0 {
			t.Errorf("%v: %+v, %v", choice, r, err)
		}
	}
}

const weatherTools = `[
 {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
 {"type": "function", "function": {"name": "get_time", "description": "The time in a city",
  "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]`

func weatherChat() *prepack.Conversation {
	return &prepack.Conversation{Messages: []prepack.Message{{Role: "user", Content: "What is the weather in Paris?"}}, ToolsJSON: weatherTools}
}

// checkCall fails t unless c is a whole call of tool `name` whose
// arguments are a JSON object with a string "city".
func checkCall(t *testing.T, c prepack.ToolCall, name string) {
	t.Helper()
	var args map[string]interface{}
	if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil {
		t.Errorf("call %+v: arguments do not parse: %v", c, err)
		return
	}
	if _, ok := args["city"].(string); !ok || c.Name != name || !regexp.MustCompile(`^call_[A-Za-z0-9]{24}$`).MatchString(c.ID) {
		t.Errorf("call %+v, want %s with a string city", c, name)
	}
}

func TestChatWithToolsRequiredCallsATool(t *testing.T) {
	e := chat(t)
	s, err := e.Chat(context.Background(), prepack.Request{Chat: weatherChat(), MaxTokens: 96, ToolChoice: prepack.ToolChoiceRequired})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text strings.Builder
	var deltas []prepack.ToolCallDelta
	for s.Next() {
		text.WriteString(s.Token().Text)
		deltas = append(deltas, s.Token().ToolCallDeltas...)
	}
	r := s.Result()
	if err := s.Err(); err != nil || !ended(r) || len(r.ToolCalls) == 0 {
		t.Fatalf("%v, %+v", err, r)
	}
	for _, c := range r.ToolCalls {
		checkCall(t, c, "get_weather")
	}
	// The calls are never text; the deltas add up to the calls, their first
	// piece carrying the id and the name.
	if strings.TrimSpace(r.Text) != "" || text.String() != r.Text {
		t.Errorf("text %q / streamed %q", r.Text, text.String())
	}
	added := make([]prepack.ToolCall, len(r.ToolCalls))
	for _, d := range deltas {
		if d.Index < 0 || d.Index >= len(added) {
			t.Fatalf("delta %+v for %d calls", d, len(added))
		}
		if d.ID != "" {
			if added[d.Index].ID != "" {
				t.Errorf("a second first piece: %+v", d)
			}
			added[d.Index].ID, added[d.Index].Name = d.ID, d.Name
		}
		added[d.Index].Arguments += d.Arguments
	}
	for i := range added {
		if added[i] != r.ToolCalls[i] {
			t.Errorf("deltas add up to %+v, call %+v", added[i], r.ToolCalls[i])
		}
	}
}

func TestToolChoiceFunctionAndBatch(t *testing.T) {
	e := chat(t)
	// Naming a tool calls that one, however the question reads; at most one call.
	only := prepack.Request{Chat: weatherChat(), MaxTokens: 96, ToolFunction: "get_time", NoParallelToolCalls: true}
	r, err := e.Complete(context.Background(), only)
	if err != nil || len(r.ToolCalls) != 1 {
		t.Fatalf("%+v, %v", r, err)
	}
	checkCall(t, r.ToolCalls[0], "get_time")
	// Batches carry calls too, request by request.
	results, err := e.GenerateBatch(context.Background(), []prepack.Request{
		{Chat: weatherChat(), MaxTokens: 96, ToolChoice: prepack.ToolChoiceRequired}, only, {Prompt: "Hi", MaxTokens: 2}})
	if err != nil || len(results) != 3 {
		t.Fatalf("%v, %d results", err, len(results))
	}
	if len(results[0].ToolCalls) == 0 || len(results[1].ToolCalls) != 1 || len(results[2].ToolCalls) != 0 {
		t.Fatalf("calls per result: %+v / %+v / %+v", results[0].ToolCalls, results[1].ToolCalls, results[2].ToolCalls)
	}
	checkCall(t, results[0].ToolCalls[0], "get_weather")
	checkCall(t, results[1].ToolCalls[0], "get_time")
	// A grammar cannot shape an answer the tool-call format shapes.
	_, err = e.Chat(context.Background(), prepack.Request{Chat: weatherChat(), ToolChoice: prepack.ToolChoiceRequired, GrammarKind: prepack.GrammarJSONObject})
	if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), "grammar_kind conflicts with tool_choice REQUIRED") {
		t.Errorf("grammar with tools: %v", err)
	}
}

func TestChatJSONObjectParses(t *testing.T) {
	e := chat(t)
	c := prepack.Conversation{Messages: []prepack.Message{{Role: "user", Content: "Reply with a JSON object with one key \"answer\".\nWhat is 2+2?"}}}
	r, err := e.Complete(context.Background(), prepack.Request{Chat: &c, MaxTokens: 64, GrammarKind: prepack.GrammarJSONObject})
	if err != nil || !ended(r) {
		t.Fatalf("%+v, %v", r, err)
	}
	var v map[string]interface{}
	if err := json.Unmarshal([]byte(r.Text), &v); err != nil {
		t.Errorf("%q: %v", r.Text, err)
	}
}

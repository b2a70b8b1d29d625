package prepack

import (
	"context"
	"encoding/json"

	"prepack.dev/prepack/bindings/internal/native"
)

// Message is one message of a Conversation. Its content is Content, or the
// text Parts when there are any (OpenAI's [{"type": "text", "text": ...}];
// templates that expect one string get them joined by "\n"), or none with
// NoContent (an assistant turn of tool calls only). Message text always
// stays text: a user who writes "<|im_end|>" gets those characters, never
// the control token.
type Message struct {
	Role          string   // "system", "user", "assistant", "tool", ...; required
	Content       string   // UTF-8 text
	Parts         []string // or text parts (Content must then be "")
	NoContent     bool     // no content at all (null), e.g. tool calls only
	Name          string   // optional
	ToolCallsJSON string   // optional: a JSON list of OpenAI tool calls [{"type": "function", "function": {"name", "arguments"}}]
	ToolCallID    string   // optional: which call a "tool" message answers
}

// Conversation is messages for the model's chat template (the GGUF's, or
// Options.ChatTemplateFile), rendered exactly as Hugging Face transformers'
// apply_chat_template would. Put it in Request.Chat, or see its prompt
// with Engine.RenderChat.
type Conversation struct {
	Messages           []Message
	ToolsJSON          string                 // optional: a JSON list of tool definitions [{"type": "function", "function": {...}}]
	Kwargs             map[string]interface{} // optional: further template variables, e.g. {"enable_thinking": false}
	NoGenerationPrompt bool                   // do not end with the assistant's opening
	Template           string                 // optional: one of the model's named templates ("tool_use")
}

// ChatPrompt is the prompt a chat request gets: the rendered text and its
// token ids (BOS as the vocabulary says), the template's markup as control
// tokens and the messages' text as text.
type ChatPrompt struct {
	Text string
	IDs  []int32
}

// toNative returns a native copy; the caller deletes it. Kwargs that do not
// marshal to JSON are InvalidArgument.
func (c *Conversation) toNative() (native.Conversation, error) {
	var kwargs []byte
	if c.Kwargs != nil {
		var err error
		if kwargs, err = json.Marshal(c.Kwargs); err != nil {
			return nil, errorf(InvalidArgument, "chat kwargs: %v", err)
		}
	}
	n := native.NewConversation()
	msgs := native.NewChatMessageVector()
	for i := range c.Messages {
		m := c.Messages[i].toNative()
		msgs.Add(m) // copies
		native.DeleteChatMessage(m)
	}
	n.SetMessages(msgs) // copies
	native.DeleteChatMessageVector(msgs)
	n.SetToolsJson(c.ToolsJSON)
	n.SetKwargsJson(string(kwargs))
	n.SetAddGenerationPrompt(!c.NoGenerationPrompt)
	n.SetTemplateName(c.Template)
	return n, nil
}

func (m *Message) toNative() native.ChatMessage {
	n := native.NewChatMessage()
	n.SetRole(m.Role)
	// Content goes unless parts replace an empty one: both set is the
	// library's InvalidArgument.
	n.SetHasContent(!m.NoContent && (m.Content != "" || len(m.Parts) == 0))
	n.SetContent(m.Content)
	if len(m.Parts) > 0 && !m.NoContent {
		parts := native.NewStringVector()
		for _, p := range m.Parts {
			parts.Add(p)
		}
		n.SetContentParts(parts) // copies
		native.DeleteStringVector(parts)
	}
	n.SetName(m.Name)
	n.SetToolCallsJson(m.ToolCallsJSON)
	n.SetToolCallId(m.ToolCallID)
	return n
}

// Chat starts a chat request (req.Chat set, no Prompt or PromptTokens) and
// returns its token stream, as Generate does; close the stream when done.
// When ctx is done the request is cancelled and the stream ends with an
// error that wraps ctx.Err(). Each Token's Reasoning carries a thinking
// model's <think> text apart from its Text, and the result's
// Usage.ReasoningTokens counts those tokens. Errors: FailedPrecondition
// when the model has no chat template (give one with
// Options.ChatTemplateFile), InvalidArgument for a bad message, bad JSON, a
// template error or a request without Chat.
func (e *Engine) Chat(ctx context.Context, req Request) (*Stream, error) {
	if req.Chat == nil {
		return nil, errorf(InvalidArgument, "not a chat request: Request.Chat is nil")
	}
	return e.Generate(ctx, req)
}

// RenderChat returns the prompt a chat request of c gets. Errors as Chat.
func (e *Engine) RenderChat(c Conversation) (ChatPrompt, error) {
	n, err := c.toNative()
	if err != nil {
		return ChatPrompt{}, err
	}
	defer native.DeleteConversation(n)
	var out native.ChatPrompt
	err = e.use(func(h native.Engine) error {
		return call(func(st native.Status) { out = h.RenderChat(n, st) })
	})
	if out != nil {
		defer native.DeleteChatPrompt(out) // returned by value: ours even on failure
	}
	if err != nil {
		return ChatPrompt{}, err
	}
	return ChatPrompt{Text: out.GetText(), IDs: ints(out.GetIds())}, nil
}

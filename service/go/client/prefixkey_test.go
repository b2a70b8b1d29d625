package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"prepack.dev/prepack/service/go/client"
	"prepack.dev/prepack/service/go/prepackpb"
)

// keyVector is one entry of testdata/prefix_key_vectors.json, the vectors
// service/README.md publishes for the rule (the Python scale-out test
// checks its own copy of the rule against the same file).
type keyVector struct {
	Name     string  `json:"name"`
	Text     *string `json:"text"`
	TokenIDs []int32 `json:"token_ids"`
	Messages []kvMsg `json:"messages"`
	Key      string  `json:"key"`
}

type kvMsg struct {
	Role         string   `json:"role"`
	Content      *string  `json:"content"`
	ContentParts []string `json:"content_parts"`
}

func loadVectors(t *testing.T) []keyVector {
	t.Helper()
	raw, err := os.ReadFile("testdata/prefix_key_vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []keyVector `json:"vectors"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Vectors) == 0 {
		t.Fatal("no vectors")
	}
	return doc.Vectors
}

func vectorRequest(v keyVector) *prepackpb.GenerateRequest {
	switch {
	case v.Text != nil:
		return &prepackpb.GenerateRequest{Prompt: &prepackpb.GenerateRequest_Text{Text: *v.Text}}
	case v.TokenIDs != nil:
		return &prepackpb.GenerateRequest{Prompt: &prepackpb.GenerateRequest_TokenIds{
			TokenIds: &prepackpb.TokenIds{Ids: v.TokenIDs}}}
	}
	conv := &prepackpb.Conversation{}
	for _, m := range v.Messages {
		conv.Messages = append(conv.Messages, &prepackpb.ChatMessage{
			Role: m.Role, Content: m.Content, ContentParts: m.ContentParts})
	}
	return &prepackpb.GenerateRequest{Prompt: &prepackpb.GenerateRequest_Chat{Chat: conv}}
}

// The published vectors hold: the rule in prefixkey.go is the documented one.
func TestPrefixKeyVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		req := vectorRequest(v)
		if got := client.PrefixKey(req); got != v.Key {
			t.Errorf("%s: PrefixKey = %s, want %s", v.Name, got, v.Key)
		}
		if chat := req.GetChat(); chat != nil {
			if got := client.ChatPrefixKey(chat); got != v.Key {
				t.Errorf("%s: ChatPrefixKey = %s, want %s", v.Name, got, v.Key)
			}
		}
	}
}

// headerServer answers Generate and Chat with one final response and
// records the prefix-key header each call carried.
type headerServer struct {
	prepackpb.UnimplementedPrepackServer
	mu   sync.Mutex
	keys [][]string
}

func (s *headerServer) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	s.mu.Lock()
	s.keys = append(s.keys, md.Get(client.PrefixKeyHeader))
	s.mu.Unlock()
}

func (s *headerServer) Generate(_ *prepackpb.GenerateRequest, st prepackpb.Prepack_GenerateServer) error {
	s.record(st.Context())
	return st.Send(&prepackpb.GenerateResponse{FinishReason: prepackpb.FinishReason_FINISH_REASON_LENGTH})
}

func (s *headerServer) Chat(_ *prepackpb.ChatRequest, st prepackpb.Prepack_ChatServer) error {
	s.record(st.Context())
	return st.Send(&prepackpb.GenerateResponse{FinishReason: prepackpb.FinishReason_FINISH_REASON_LENGTH})
}

func (s *headerServer) last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

// Generate and Chat send the key by default, a caller's own key instead of
// it, and none with NoPrefixKey.
func TestPrefixKeyHeaderSent(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := &headerServer{}
	prepackpb.RegisterPrepackServer(srv, hs)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func(opts client.Options) *client.Client {
		c, err := client.Dial(ctx, lis.Addr().String(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := dial(client.Options{})
	defer c.Close()
	off := dial(client.Options{NoPrefixKey: true})
	defer off.Close()

	text := &prepackpb.GenerateRequest{Prompt: &prepackpb.GenerateRequest_Text{Text: "Once upon a time"}}
	conv := &prepackpb.Conversation{Messages: []*prepackpb.ChatMessage{
		{Role: "system", Content: proto.String("Be brief.")}, {Role: "user", Content: proto.String("What is 2+2?")},
		{Role: "assistant", Content: proto.String("4")}, {Role: "user", Content: proto.String("And 3+3?")}}}
	want := func(what string, got []string, key ...string) {
		t.Helper()
		if len(got) != len(key) || (len(key) == 1 && got[0] != key[0]) {
			t.Errorf("%s: header %q, want %q", what, got, key)
		}
	}

	if _, err := c.Generate(ctx, text, nil); err != nil {
		t.Fatal(err)
	}
	want("Generate", hs.last(), "4d01a780ce25dd1c") // the vector "short text"
	if _, err := c.Chat(ctx, &prepackpb.ChatRequest{Conversation: conv}, nil); err != nil {
		t.Fatal(err)
	}
	want("Chat", hs.last(), "28aebcf8ae6f0ac6") // system + first user turn

	own := metadata.AppendToOutgoingContext(ctx, client.PrefixKeyHeader, "tenant-7")
	if _, err := c.Generate(own, text, nil); err != nil {
		t.Fatal(err)
	}
	want("Generate with the caller's key", hs.last(), "tenant-7")

	if _, err := off.Generate(ctx, text, nil); err != nil {
		t.Fatal(err)
	}
	want("Generate with NoPrefixKey", hs.last())
	if _, err := off.Chat(ctx, &prepackpb.ChatRequest{Conversation: conv}, nil); err != nil {
		t.Fatal(err)
	}
	want("Chat with NoPrefixKey", hs.last())
}

// A request's prefix key; Generate and Chat send it by themselves. Behind
// a proxy that hashes the header, these two chats reach one replica: the
// key covers the system prompt and the first user turn only.
func ExampleChatPrefixKey() {
	first := &prepackpb.Conversation{Messages: []*prepackpb.ChatMessage{
		{Role: "system", Content: proto.String("Be brief.")},
		{Role: "user", Content: proto.String("What is 2+2?")}}}
	later := &prepackpb.Conversation{Messages: append(first.Messages,
		&prepackpb.ChatMessage{Role: "assistant", Content: proto.String("4")},
		&prepackpb.ChatMessage{Role: "user", Content: proto.String("And 3+3?")})}
	fmt.Println(client.PrefixKeyHeader, client.ChatPrefixKey(first), client.ChatPrefixKey(later))
	// Output: x-prepack-prefix-key 28aebcf8ae6f0ac6 28aebcf8ae6f0ac6
}

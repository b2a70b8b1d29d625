package client_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	rpb "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"prepack.dev/prepack/service/go/client"
	"prepack.dev/prepack/service/go/prepackpb"
)

// server is a prepackd started by the test itself.
type server struct {
	cmd  *exec.Cmd
	addr string
}

// startServer runs $PREPACKD with args on 127.0.0.1:0 and reads the port
// from its stdout line "prepackd listening on HOST:PORT".
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	bin := os.Getenv("PREPACKD")
	if bin == "" {
		t.Skip("PREPACKD (the prepackd binary) is not set; run through ctest")
	}
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--http-listen", "off", "--threads", "1"}, args...)...)
	cmd.Stderr = os.Stderr
	// If the test binary dies (a ctest timeout), the server goes too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a := strings.TrimPrefix(sc.Text(), "prepackd listening on "); a != sc.Text() {
				addr <- a
			}
		}
	}()
	s := &server{cmd: cmd}
	t.Cleanup(s.stop)
	select {
	case s.addr = <-addr:
	case <-time.After(60 * time.Second):
		t.Fatal("prepackd printed no port within 60 s")
	}
	return s
}

// stop sends SIGTERM and waits (bounded) for a clean exit.
func (s *server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// dial connects and waits until the server is SERVING.
func dial(t *testing.T, s *server) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, s.addr, client.Options{})
	if err != nil {
		t.Fatalf("dial %s: %v", s.addr, err)
	}
	t.Cleanup(func() { c.Close() })
	for {
		ok, err := c.Serving(ctx)
		if err == nil && ok {
			return c
		}
		if ctx.Err() != nil {
			t.Fatalf("not SERVING within 30 s (last error %v)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func greedy(text string, maxTokens int32) *prepackpb.GenerateRequest {
	return &prepackpb.GenerateRequest{
		Prompt: &prepackpb.GenerateRequest_Text{Text: text},
		Sampling: &prepackpb.SamplingParams{
			MaxTokens: proto.Int32(maxTokens), Temperature: proto.Float32(0), IgnoreEos: true,
		},
	}
}

func TestStreamsAGeneration(t *testing.T) {
	c := dial(t, startServer(t, "--model", "synthetic:tiny"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	chunks := 0
	res, err := c.Generate(ctx, greedy("Once upon a time", 24), func(*prepackpb.GenerateResponse) error {
		chunks++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TokenIDs) != 24 || chunks != 25 {
		t.Fatalf("got %d tokens in %d messages, want 24 in 25", len(res.TokenIDs), chunks)
	}
	if res.FinishReason != prepackpb.FinishReason_FINISH_REASON_LENGTH || res.Usage.GetGeneratedTokens() != 24 {
		t.Fatalf("finish %v, usage %v", res.FinishReason, res.Usage)
	}
	// Greedy is deterministic: a second run, and the same request in a
	// batch, give the same tokens.
	again, err := c.Generate(ctx, greedy("Once upon a time", 24), nil)
	if err != nil || !reflect.DeepEqual(again.TokenIDs, res.TokenIDs) || again.Text != res.Text {
		t.Fatalf("second run: %v %v, want %v", again.TokenIDs, err, res.TokenIDs)
	}
	b, err := c.API.GenerateBatch(ctx, &prepackpb.GenerateBatchRequest{
		Requests: []*prepackpb.GenerateRequest{greedy("Once upon a time", 24)},
	})
	if err != nil {
		t.Fatal(err)
	}
	br, err := b.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if br.Index != 0 || !reflect.DeepEqual(br.Result.TokenIds, res.TokenIDs) || br.Result.Text != res.Text {
		t.Fatalf("batch result %v, want tokens %v", br, res.TokenIDs)
	}
}

func TestStoriesReferenceTokens(t *testing.T) {
	dir := filepath.Join(os.Getenv("PREPACK_MODELS_DIR"), "stories260K")
	raw, err := os.ReadFile(filepath.Join(dir, "reference.json"))
	if err != nil {
		t.Skipf("stories260K reference not found in %s (the shared models folder is absent)", dir)
	}
	var ref struct {
		Cases []struct {
			Prompt    string  `json:"prompt"`
			GreedyIDs []int32 `json:"greedy_ids"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	c := dial(t, startServer(t, "--model", filepath.Join(dir, "stories260K.gguf")))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, rc := range ref.Cases {
		req := greedy(rc.Prompt, 48)
		req.Sampling.IgnoreEos = false
		res, err := c.Generate(ctx, req, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.TokenIDs, rc.GreedyIDs) {
			t.Errorf("%q: got %v, want %v", rc.Prompt, res.TokenIDs, rc.GreedyIDs)
		}
	}
}

func TestCancelViaContextFreesKV(t *testing.T) {
	c := dial(t, startServer(t, "--model", "synthetic:tiny"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := 0
	_, err := c.Generate(ctx, greedy("Once upon a time", 2000), func(chunk *prepackpb.GenerateResponse) error {
		got += len(chunk.TokenIds)
		if got == 5 {
			cancel()
		}
		return nil
	})
	if status.Code(err) != codes.Canceled {
		t.Fatalf("err = %v, want Canceled", err)
	}
	// The server stops the request and frees its KV memory promptly.
	deadline := time.Now().Add(5 * time.Second)
	for {
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := c.API.GetStats(sctx, &prepackpb.GetStatsRequest{})
		scancel()
		if err != nil {
			t.Fatal(err)
		}
		if st.KvBytesUsed == 0 && st.InFlight == 0 && st.FinishedByStatus["CANCELLED"] == 1 {
			if st.GeneratedTokens >= 1000 {
				t.Fatalf("the request ran on after the cancel: %d tokens", st.GeneratedTokens)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("KV not freed 5 s after the cancel: %v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestHealthReflectionAndStatusCodes(t *testing.T) {
	s := startServer(t, "--model", "synthetic:tiny")
	c := dial(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if ok, err := c.Serving(ctx); err != nil || !ok {
		t.Fatalf("Serving() = %v, %v; want true", ok, err)
	}

	// Server reflection lists the services.
	conn, err := grpc.DialContext(ctx, s.addr, grpc.WithInsecure(), grpc.WithBlock())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rs, err := rpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.Send(&rpb.ServerReflectionRequest{
		MessageRequest: &rpb.ServerReflectionRequest_ListServices{ListServices: ""},
	}); err != nil {
		t.Fatal(err)
	}
	resp, err := rs.Recv()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names[svc.Name] = true
	}
	for _, want := range []string{"prepack.v1.Prepack", "grpc.health.v1.Health"} {
		if !names[want] {
			t.Errorf("reflection lists %v; %s missing", names, want)
		}
	}

	// A bad field comes back as InvalidArgument naming it.
	bad := greedy("hi", 4)
	bad.Sampling.Temperature = proto.Float32(-1)
	_, err = c.Generate(ctx, bad, nil)
	if status.Code(err) != codes.InvalidArgument ||
		!strings.HasPrefix(status.Convert(err).Message(), "sampling.temperature:") {
		t.Fatalf("err = %v, want InvalidArgument naming sampling.temperature", err)
	}
	// A deadline is honoured.
	dctx, dcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer dcancel()
	_, err = c.Generate(dctx, greedy("Once upon a time", 2000), nil)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DeadlineExceeded", err)
	}
	fmt.Println("health SERVING, reflection", len(names), "services, status codes as documented")
}

// conversation builds a Conversation of (role, content) pairs.
func conversation(pairs ...string) *prepackpb.Conversation {
	c := &prepackpb.Conversation{}
	for i := 0; i+1 < len(pairs); i += 2 {
		c.Messages = append(c.Messages, &prepackpb.ChatMessage{Role: pairs[i], Content: proto.String(pairs[i+1])})
	}
	return c
}

func greedyChat(c *prepackpb.Conversation, maxTokens int32) *prepackpb.ChatRequest {
	return &prepackpb.ChatRequest{
		Conversation: c,
		Sampling: &prepackpb.SamplingParams{
			MaxTokens: proto.Int32(maxTokens), Temperature: proto.Float32(0), IgnoreEos: true,
		},
	}
}

func TestChatWithATemplateFile(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "chat.jinja")
	src := "{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}" +
		"{% if add_generation_prompt %}<assistant>{% endif %}"
	if err := os.WriteFile(tmpl, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c := dial(t, startServer(t, "--model", "synthetic:tiny", "--chat-template-file", tmpl))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	conv := conversation("system", "Be brief.", "user", "Once upon a time")
	r, err := c.RenderChat(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<system>Be brief.\n<user>Once upon a time\n<assistant>"; r.Text != want || len(r.TokenIds) == 0 {
		t.Fatalf("RenderChat = %q (%d ids), want %q", r.Text, len(r.TokenIds), want)
	}

	chunks := 0
	res, err := c.Chat(ctx, greedyChat(conv, 12), func(*prepackpb.GenerateResponse) error {
		chunks++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.TokenIDs) != 12 || chunks != 13 || res.FinishReason != prepackpb.FinishReason_FINISH_REASON_LENGTH {
		t.Fatalf("got %d tokens in %d messages (finish %v), want 12 in 13", len(res.TokenIDs), chunks, res.FinishReason)
	}
	if int(res.Usage.GetPromptTokens()) != len(r.TokenIds) {
		t.Fatalf("prompt tokens %d, RenderChat gave %d", res.Usage.GetPromptTokens(), len(r.TokenIds))
	}
	// Chat is Generate of the rendered ids.
	gen := &prepackpb.GenerateRequest{
		Prompt:   &prepackpb.GenerateRequest_TokenIds{TokenIds: &prepackpb.TokenIds{Ids: r.TokenIds}},
		Sampling: greedyChat(conv, 12).Sampling,
	}
	same, err := c.Generate(ctx, gen, nil)
	if err != nil || !reflect.DeepEqual(same.TokenIDs, res.TokenIDs) || same.Text != res.Text {
		t.Fatalf("Generate of the rendered ids: %v %v, want %v", same.TokenIDs, err, res.TokenIDs)
	}

	// Errors name the field.
	_, err = c.Chat(ctx, greedyChat(&prepackpb.Conversation{}, 4), nil)
	if status.Code(err) != codes.InvalidArgument ||
		!strings.HasPrefix(status.Convert(err).Message(), "conversation.messages: ") {
		t.Fatalf("empty conversation: err = %v, want InvalidArgument naming conversation.messages", err)
	}
	call := conversation("user", "weather?")
	call.Messages = append(call.Messages, &prepackpb.ChatMessage{
		Role:      "assistant",
		ToolCalls: []*prepackpb.ToolCall{{Name: "get_weather", ArgumentsJson: "[1, 2]"}},
	})
	_, err = c.RenderChat(ctx, call)
	if status.Code(err) != codes.InvalidArgument || !strings.HasPrefix(status.Convert(err).Message(),
		"conversation.messages[1].tool_calls[0].arguments_json: must be a JSON object") {
		t.Fatalf("arguments as a list: err = %v, want InvalidArgument naming the field", err)
	}
}

func TestChatWithoutATemplateIsFailedPrecondition(t *testing.T) {
	c := dial(t, startServer(t, "--model", "synthetic:tiny"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := c.Chat(ctx, greedyChat(conversation("user", "hi"), 4), nil)
	if status.Code(err) != codes.FailedPrecondition ||
		!strings.Contains(status.Convert(err).Message(), "--chat-template-file") {
		t.Fatalf("err = %v, want FailedPrecondition naming --chat-template-file", err)
	}
}

func TestSmolLM2ChatML(t *testing.T) {
	model := os.Getenv("PREPACK_CHAT_MODEL")
	if _, err := os.Stat(model); model == "" || err != nil {
		t.Skipf("the chat model %q is absent: fetch it with scripts/get_models.sh", model)
	}
	c := dial(t, startServer(t, "--model", model))
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	conv := conversation("system", "S", "user", "U")
	r, err := c.RenderChat(ctx, conv)
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"; r.Text != want {
		t.Fatalf("RenderChat = %q, want %q", r.Text, want)
	}
	req := greedyChat(conversation("user", "What is the capital of France?"), 16)
	req.Sampling.IgnoreEos = false
	res, err := c.Chat(ctx, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text == "" || res.Usage.GetGeneratedTokens() != int32(len(res.TokenIDs)) {
		t.Fatalf("Chat = %q (%d tokens, usage %v)", res.Text, len(res.TokenIDs), res.Usage)
	}
	fmt.Printf("SmolLM2: %q\n", res.Text)
}

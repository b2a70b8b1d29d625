package client_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"google.golang.org/protobuf/proto"

	"prepack.dev/prepack/service/go/client"
	"prepack.dev/prepack/service/go/prepackpb"
)

// Streams a generation from a prepackd on 127.0.0.1:50051, printing the
// text as it arrives.
func ExampleClient_Generate() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "127.0.0.1:50051", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	req := &prepackpb.GenerateRequest{
		Prompt:   &prepackpb.GenerateRequest_Text{Text: "Once upon a time"},
		Sampling: &prepackpb.SamplingParams{MaxTokens: proto.Int32(48), Temperature: proto.Float32(0)},
	}
	res, err := c.Generate(ctx, req, func(chunk *prepackpb.GenerateResponse) error {
		fmt.Print(chunk.Text)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\n%d tokens, finish %v, first token after %.1f ms\n",
		len(res.TokenIDs), res.FinishReason, res.Usage.GetTtftMs())
}

// Chats with the model through its own chat template, printing the answer
// as it arrives (and a reasoning model's thinking apart from it).
func ExampleClient_Chat() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, "127.0.0.1:50051", client.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	req := &prepackpb.ChatRequest{
		Conversation: &prepackpb.Conversation{Messages: []*prepackpb.ChatMessage{
			{Role: "system", Content: proto.String("You are a helpful assistant.")},
			{Role: "user", Content: proto.String("What is the capital of France?")},
		}},
		Sampling: &prepackpb.SamplingParams{MaxTokens: proto.Int32(64), Temperature: proto.Float32(0)},
	}
	res, err := c.Chat(ctx, req, func(chunk *prepackpb.GenerateResponse) error {
		fmt.Print(chunk.Text)
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("\n%d tokens (%d of them thinking)\n", len(res.TokenIDs), res.Usage.GetReasoningTokens())
}

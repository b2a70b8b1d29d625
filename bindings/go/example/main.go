// Command example streams a continuation of a prompt with the prepack Go binding.
//
//	example MODEL.gguf ["prompt"] [max_tokens]
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"

	prepack "prepack.dev/prepack/bindings/go"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: example MODEL.gguf [prompt] [max_tokens]")
		os.Exit(2)
	}
	prompt, maxTokens := "Once upon a time", 32
	if len(os.Args) > 2 {
		prompt = os.Args[2]
	}
	if len(os.Args) > 3 {
		n, err := strconv.Atoi(os.Args[3])
		if err != nil {
			fmt.Fprintln(os.Stderr, "max_tokens:", err)
			os.Exit(2)
		}
		maxTokens = n
	}

	engine, err := prepack.Open(prepack.Options{Model: os.Args[1], Threads: 1})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer engine.Close()

	// Ctrl-C cancels the request through its context.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	stream, err := engine.Generate(ctx, prepack.Request{Prompt: prompt, MaxTokens: maxTokens})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer stream.Close()
	fmt.Print(prompt)
	for stream.Next() {
		fmt.Print(stream.Token().Text)
	}
	if err := stream.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "\n", err)
		os.Exit(1)
	}
	r := stream.Result()
	fmt.Printf("\n[%v, %d prompt + %d generated tokens, %.1f ms]\n",
		r.FinishReason, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalMs)
}

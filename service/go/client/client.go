// Package client is a small Go client for prepackd, the prepack inference
// server (gRPC service prepack.v1.Prepack).
//
// It wraps the generated stubs in package prepackpb with what most callers
// want: dialing with an optional bearer token, streaming one generation
// (from a prompt, or from a conversation rendered by the model's chat
// template) while the tokens arrive, and asking whether the server is
// serving.
package client

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"prepack.dev/prepack/service/go/prepackpb"
)

// Client is a connection to one prepackd. It is safe for concurrent use.
type Client struct {
	conn *grpc.ClientConn
	// API and Health are the raw stubs, for calls this package does not wrap.
	API         prepackpb.PrepackClient
	Health      healthpb.HealthClient
	noPrefixKey bool
}

// Options configure Dial.
type Options struct {
	// Token is sent as "authorization: Bearer <Token>" (prepackd
	// --auth-token-file). Empty: no token.
	Token string
	// TLS, when set, is used instead of a plaintext connection.
	TLS credentials.TransportCredentials
	// NoPrefixKey: Generate and Chat do not send the PrefixKeyHeader they
	// send by default (see PrefixKey), e.g. behind a proxy that routes on
	// something else. To send a key of one's own instead, set the header in
	// the call's context: metadata.AppendToOutgoingContext(ctx,
	// client.PrefixKeyHeader, key).
	NoPrefixKey bool
}

// Dial connects to prepackd at addr ("127.0.0.1:50051"). It returns once
// the connection is up or ctx is done.
func Dial(ctx context.Context, addr string, opts Options) (*Client, error) {
	dialOpts := []grpc.DialOption{grpc.WithBlock()}
	if opts.TLS != nil {
		dialOpts = append(dialOpts, grpc.WithTransportCredentials(opts.TLS))
	} else {
		// grpc-go 1.33 (Debian 12) predates credentials/insecure.
		dialOpts = append(dialOpts, grpc.WithInsecure())
	}
	if opts.Token != "" {
		dialOpts = append(dialOpts, grpc.WithPerRPCCredentials(bearer{token: opts.Token, secure: opts.TLS != nil}))
	}
	conn, err := grpc.DialContext(ctx, addr, dialOpts...)
	if err != nil {
		return nil, err
	}
	return &Client{conn: conn, API: prepackpb.NewPrepackClient(conn), Health: healthpb.NewHealthClient(conn),
		noPrefixKey: opts.NoPrefixKey}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Result is a whole generation.
type Result struct {
	TokenIDs []int32
	Text     string
	// Reasoning is a reasoning model's thinking (chat requests whose
	// template has <think> sections), apart from Text, the answer.
	Reasoning    string
	FinishReason prepackpb.FinishReason
	Usage        *prepackpb.Usage
}

// Generate streams one generation, sending the request's PrefixKey (unless
// Options.NoPrefixKey, or ctx carries a key already) so that a proxy over
// several replicas sends requests that share a prefix to one replica.
// onChunk (may be nil) sees every response as it arrives, the last one
// included; an error from it cancels
// the request. Cancelling ctx, or its deadline, stops the request on the
// server within one decode step. Errors are gRPC status errors
// (status.Code(err) gives codes.InvalidArgument, codes.OutOfRange, ...).
func (c *Client) Generate(ctx context.Context, req *prepackpb.GenerateRequest,
	onChunk func(*prepackpb.GenerateResponse) error) (*Result, error) {
	ctx, cancel := context.WithCancel(c.withPrefixKey(ctx, func() string { return PrefixKey(req) }))
	defer cancel()
	stream, err := c.API.Generate(ctx, req)
	if err != nil {
		return nil, err
	}
	return collect(stream, onChunk)
}

// Chat streams one generation whose prompt is a conversation, rendered by
// the model's chat template (the GGUF's tokenizer.chat_template, or
// prepackd's --chat-template-file), as Generate does; its prefix key is
// ChatPrefixKey of the conversation. A model without a template answers
// codes.FailedPrecondition; bad messages, JSON or a template's own error
// codes.InvalidArgument naming the field.
func (c *Client) Chat(ctx context.Context, req *prepackpb.ChatRequest,
	onChunk func(*prepackpb.GenerateResponse) error) (*Result, error) {
	ctx, cancel := context.WithCancel(c.withPrefixKey(ctx, func() string { return ChatPrefixKey(req.GetConversation()) }))
	defer cancel()
	stream, err := c.API.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	return collect(stream, onChunk)
}

// RenderChat returns the prompt a conversation renders to and its token
// ids, exactly what Chat would prefill, without generating anything.
func (c *Client) RenderChat(ctx context.Context, conv *prepackpb.Conversation) (*prepackpb.RenderChatResponse, error) {
	return c.API.RenderChat(ctx, &prepackpb.RenderChatRequest{Conversation: conv})
}

// collect reads a Generate or Chat stream to its end.
func collect(stream interface {
	Recv() (*prepackpb.GenerateResponse, error)
}, onChunk func(*prepackpb.GenerateResponse) error) (*Result, error) {
	res := &Result{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return res, nil
		}
		if err != nil {
			return res, err
		}
		res.TokenIDs = append(res.TokenIDs, resp.TokenIds...)
		res.Text += resp.Text
		res.Reasoning += resp.Reasoning
		if resp.FinishReason != prepackpb.FinishReason_FINISH_REASON_UNSPECIFIED {
			res.FinishReason = resp.FinishReason
			res.Usage = resp.Usage
		}
		if onChunk != nil {
			if err := onChunk(resp); err != nil {
				return res, err
			}
		}
	}
}

// Serving reports whether the server's health is SERVING (false while the
// model loads or the server drains).
func (c *Client) Serving(ctx context.Context) (bool, error) {
	resp, err := c.Health.Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return false, err
	}
	return resp.Status == healthpb.HealthCheckResponse_SERVING, nil
}

// bearer adds the shared token to every call.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

// RequireTransportSecurity is false only for plaintext connections, which
// prepackd accepts on loopback.
func (b bearer) RequireTransportSecurity() bool { return b.secure }

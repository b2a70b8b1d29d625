package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"strings"

	"google.golang.org/grpc/metadata"

	"prepack.dev/prepack/service/go/prepackpb"
)

// PrefixKeyHeader is the gRPC metadata key that carries a request's prefix
// key. A proxy in front of several prepackd replicas hashes it (Envoy's
// RING_HASH, service/deploy/envoy) so that requests sharing a prefix reach
// the replica whose prefix cache already holds it.
const PrefixKeyHeader = "x-prepack-prefix-key"

// PrefixKeyBytes is how many bytes of a request's leading content the key
// covers. Requests agreeing on these bytes get one key, and so one replica.
// 256 bytes are about 50-90 tokens, 3-5 of prepackd's 16-token KV blocks:
// shorter than the system prompts and shared documents worth steering
// (hundreds to thousands of bytes), so requests that share one agree on
// the whole key; long enough that requests agreeing on all of it share
// enough KV to be worth keeping together. A longer K would split requests
// whose shared part is shorter than K; a shorter one would pull together
// requests that share too little.
const PrefixKeyBytes = 256

// PrefixKey returns the prefix key of a request, by the rule of
// service/README.md ("Prefix key"), which any client can follow:
//
//   - leading content L: a text prompt's UTF-8 bytes; a token-id prompt's
//     ids, each as 4 bytes little-endian; a conversation's messages from the
//     first up to and including the first whose role is "user" (all of them
//     if none is), each written as its role, a NUL byte, its content (the
//     content_parts joined by "\n" when content is unset) and a NUL byte;
//   - the key: FNV-1a 64 of the first PrefixKeyBytes bytes of L, as 16
//     lowercase hex digits.
//
// For a chat this is the system prompt and the first user turn: with a
// system prompt of PrefixKeyBytes or more, every conversation under it gets
// one key; with a short one, a conversation's later turns (which repeat the
// first) stay with it.
func PrefixKey(req *prepackpb.GenerateRequest) string {
	switch p := req.GetPrompt().(type) {
	case *prepackpb.GenerateRequest_Text:
		return prefixKeyOf([]byte(p.Text))
	case *prepackpb.GenerateRequest_TokenIds:
		return prefixKeyOf(tokenBytes(p.TokenIds.GetIds()))
	case *prepackpb.GenerateRequest_Chat:
		return ChatPrefixKey(p.Chat)
	}
	return prefixKeyOf(nil)
}

// ChatPrefixKey is PrefixKey of a conversation (what Chat sends).
func ChatPrefixKey(conv *prepackpb.Conversation) string {
	var b []byte
	for _, m := range conv.GetMessages() {
		b = append(b, m.GetRole()...)
		b = append(b, 0)
		if m.Content != nil {
			b = append(b, m.GetContent()...)
		} else {
			b = append(b, strings.Join(m.GetContentParts(), "\n")...)
		}
		b = append(b, 0)
		if m.GetRole() == "user" || len(b) >= PrefixKeyBytes {
			break
		}
	}
	return prefixKeyOf(b)
}

func tokenBytes(ids []int32) []byte {
	if n := PrefixKeyBytes / 4; len(ids) > n {
		ids = ids[:n]
	}
	b := make([]byte, 4*len(ids))
	for i, id := range ids {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(id))
	}
	return b
}

func prefixKeyOf(leading []byte) string {
	if len(leading) > PrefixKeyBytes {
		leading = leading[:PrefixKeyBytes]
	}
	h := fnv.New64a()
	h.Write(leading)
	return fmt.Sprintf("%016x", h.Sum64())
}

// withPrefixKey adds the prefix key to ctx's outgoing metadata unless the
// client was told not to or the caller set the header already (the way to
// send a key of one's own: metadata.AppendToOutgoingContext(ctx,
// PrefixKeyHeader, key)).
func (c *Client) withPrefixKey(ctx context.Context, key func() string) context.Context {
	if c.noPrefixKey {
		return ctx
	}
	if md, ok := metadata.FromOutgoingContext(ctx); ok && len(md.Get(PrefixKeyHeader)) > 0 {
		return ctx
	}
	return metadata.AppendToOutgoingContext(ctx, PrefixKeyHeader, key())
}

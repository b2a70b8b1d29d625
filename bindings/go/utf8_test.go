package prepack_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	prepack "prepack.dev/prepack/bindings/go"
)

// Go strings are bytes and cross cgo as they are; these check that
// characters outside the BMP and CJK text come through exactly both ways.

// wide is outside the BMP (emoji, a skin-tone modifier, a musical symbol)
// and CJK: stories260K has no piece for any of it, so each byte is a
// byte-fallback token.
const wide = "🙂世界👋🏽𝄞"

var utf8Texts = []string{wide, "Once upon a time, 🙂 said 世界 👋🏽!", "é€ 😀😀", "🙂", "🦙 café 𝄞"}

// byteIDs are stories260K's ids of byte-fallback text: the dummy-prefix
// space (410), then byte b as id b + 3.
func byteIDs(s string) []int32 {
	ids := []int32{410}
	for i := 0; i < len(s); i++ {
		ids = append(ids, int32(s[i])+3)
	}
	return ids
}

func TestTokenizeSeesTheUTF8Bytes(t *testing.T) {
	ids, err := engine.Tokenize(wide, false, false)
	if err != nil || !reflect.DeepEqual(ids, byteIDs(wide)) {
		t.Fatalf("Tokenize(%q) = %v, %v\nwant %v", wide, ids, err, byteIDs(wide))
	}
	if text, err := engine.Detokenize(ids[1:]); err != nil || text != wide { // the bytes alone
		t.Errorf("Detokenize = %q, %v", text, err)
	}
}

// A lone id of a partial character (🦙 is F0 9F A6 99, ids 243 162 169 156)
// is no error: Go strings are bytes, so its byte comes out as it is.
func TestDetokenizeALoneIDOfPartialUTF8(t *testing.T) {
	llama := byteIDs("🦙")[1:]
	var joined string
	for _, id := range llama {
		text, err := engine.Detokenize([]int32{id})
		if err != nil || text != string([]byte{byte(id - 3)}) {
			t.Errorf("Detokenize([%d]) = %q, %v; want the byte %#x", id, text, err, id-3)
		}
		joined += text
	}
	if joined != "🦙" {
		t.Errorf("the four pieces joined = %q, want 🦙", joined)
	}
	if text, err := engine.Detokenize(llama); err != nil || text != "🦙" {
		t.Errorf("Detokenize(%v) = %q, %v", llama, text, err)
	}
}

func TestUTF8TextRoundTripsThroughTokenizeAndDetokenize(t *testing.T) {
	for _, s := range utf8Texts {
		for _, bos := range []bool{true, false} {
			want := s
			if !bos {
				want = " " + s // no BOS: every byte
			}
			ids, err := engine.Tokenize(s, bos, false)
			if err != nil {
				t.Fatalf("Tokenize(%q, %v): %v", s, bos, err)
			}
			if text, err := engine.Detokenize(ids); err != nil || text != want {
				t.Errorf("Detokenize(Tokenize(%q, %v)) = %q, %v", s, bos, text, err)
			}
		}
	}
}

func TestUTF8PromptsStopStringsAndMessages(t *testing.T) {
	for _, s := range utf8Texts {
		req := prepack.Request{Prompt: s, MaxTokens: 2, IgnoreEOS: true, Stop: []string{"🙂 " + s}}
		st, err := engine.Generate(context.Background(), req)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		var streamed strings.Builder
		for st.Next() {
			streamed.WriteString(st.Token().Text)
		}
		r, err := st.Result(), st.Err()
		st.Close()
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		ids, _ := engine.Tokenize(s, true, false)
		text, _ := engine.Detokenize(r.Tokens)
		if r.Usage.PromptTokens != len(ids) || len(r.Tokens) != 2 || r.Text != text || streamed.String() != text {
			t.Errorf("%q: %d prompt tokens (want %d), tokens %v, text %q, streamed %q, detokenized %q",
				s, r.Usage.PromptTokens, len(ids), r.Tokens, r.Text, streamed.String(), text)
		}
	}
	// The library's message quotes the schedule it rejects.
	_, err := engine.Complete(context.Background(), prepack.Request{Prompt: "Once", Lazy: true, LazySchedule: wide})
	if prepack.CodeOf(err) != prepack.InvalidArgument || !strings.Contains(err.Error(), "'"+wide+"'") {
		t.Errorf("schedule %q: %v", wide, err)
	}
}

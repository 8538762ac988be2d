package journal

import (
	"strings"
	"testing"
)

// BenchmarkDecodeRecordPaired: whether the hand-written decoder of the
// records every turn reads back (decodeFast) pays for itself against
// encoding/json alone, on the same payloads in the same binary: each op
// decodes a typical tool-free turn's started record (300 bytes of
// instructions, a 40-byte input) and its completion (a 60-byte answer).
// go test -run '^$' -bench DecodeRecordPaired -count 5 ./sidecar/internal/journal/
// runs the two alternately (fast, json, fast, json, ...).
func BenchmarkDecodeRecordPaired(b *testing.B) {
	started, err := Encode(TurnStarted{Turn: 1, Instructions: strings.Repeat("You draft release notes. ", 12), Input: "Draft notes for this week, please, now.",
		Model: ModelIdentity{Route: "compatible", Model: "llama3.1:8b"}})
	if err != nil {
		b.Fatal(err)
	}
	completion, err := Encode(ModelCompletion{Turn: 1, Model: "llama3.1:8b", Text: "Release notes: Draft notes for this week, please, now. Done.", FinishReason: "stop"})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		decode func([]byte, any) error
	}{{"fast", Decode}, {"encoding-json", decodeJSON}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var s TurnStarted
				var m ModelCompletion
				if c.decode(started, &s) != nil || c.decode(completion, &m) != nil || s.Turn != 1 || m.Text == "" {
					b.Fatal("decode failed")
				}
			}
		})
	}
}

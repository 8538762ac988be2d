package route

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

// TestMockOpenAIServer sends real requests through the compatible route to
// an OpenAI-compatible server nobody on this project wrote.
func TestMockOpenAIServer(t *testing.T) {
	base := testutil.MockOpenAI(t)
	tests := []struct {
		name, model, input string
		wantStatus         int // 0: accepted, the answer echoes the input
	}{
		{"echo", "gpt-5.6-terra", "Draft notes for this week", 0},
		{"other model name echoed exactly", "llama3.2:3b-instruct", "hello there", 0},
		{"unicode input", "kmx-test-model", "caf\u00e9 \u2014 r\u00e9sum\u00e9", 0},
		// Finding: mock-llm pastes the input into its JSON template without
		// escaping, so an input holding a double quote makes it answer 500.
		// The route reports the status and nothing else.
		{"input with a quote", "kmx-test-model", `say "MARK-quote"`, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := mustCompatible(t, Config{Endpoint: base + "/v1", Model: tt.model})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			comp, err := m.Complete(ctx, ChatRequest(tt.model, "Reply with the input.", tt.input))
			if tt.wantStatus != 0 {
				var re *ReplyError
				if !errors.As(err, &re) || re.Class != ClassStatus || re.Status != tt.wantStatus {
					t.Fatalf("Complete = (%+v, %v), want a status %d refusal", comp, err, tt.wantStatus)
				}
				if strings.Contains(err.Error(), "MARK") || strings.Contains(err.Error(), "SyntaxError") {
					t.Errorf("error %q quotes the input or the server's body", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			want := Completion{Model: tt.model, Text: tt.input, FinishReason: "stop"}
			if !reflect.DeepEqual(comp, want) {
				t.Errorf("Complete = %+v, want %+v", comp, want)
			}
		})
	}
}

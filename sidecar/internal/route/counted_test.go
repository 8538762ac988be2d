package route

import (
	"context"
	"testing"
)

func TestCountedCountsCompleteOnly(t *testing.T) {
	m := &Counted{Model: NewFake()}
	if m.Identity() != NewFake().Identity() || m.Calls() != 0 {
		t.Fatalf("identity %v, calls %d before any call", m.Identity(), m.Calls())
	}
	for i := 0; i < 2; i++ {
		c, err := m.Complete(context.Background(), ChatRequest("fake", "Reply with exactly `alpha`.", "q"))
		if err != nil || c.Text != "alpha" {
			t.Fatalf("Complete = %+v, %v", c, err)
		}
	}
	if m.Calls() != 2 {
		t.Fatalf("Calls = %d after two completions, want 2", m.Calls())
	}
}

package route

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestWithModelSharesTheCredentialSnapshot: a second model on the same
// endpoint sends the same bearer credential without reading the variable
// again, asks for its own model name, and leaves the first route unchanged.
func TestWithModelSharesTheCredentialSnapshot(t *testing.T) {
	var (
		mu     sync.Mutex
		models []string
		auths  []string
	)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body wireRequest
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, "bad", http.StatusBadRequest)
			return
		}
		mu.Lock()
		models = append(models, body.Model)
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, okReply(body.Model, "hi"))
	}))
	defer srv.Close()
	key := testKey()
	var reads atomic.Int32
	getenv := func(name string) string {
		reads.Add(1)
		return map[string]string{"KMX_KEY": key}[name]
	}
	agent := mustCompatible(t, Config{Endpoint: srv.URL + "/v1", KeyEnv: "KMX_KEY", Model: testModel, Getenv: getenv, HTTPClient: trustingClient(t, srv)})
	judgeRoute, err := agent.WithModel("judge-model")
	if err != nil {
		t.Fatalf("WithModel: %v", err)
	}
	for _, m := range []*CompatibleModel{agent, judgeRoute} {
		if _, err := m.Complete(context.Background(), ChatRequest(m.Identity().Model, "sys", "in")); err != nil {
			t.Fatalf("Complete on %s: %v", m.Identity().Model, err)
		}
	}
	if got := reads.Load(); got != 1 {
		t.Errorf("the credential variable was read %d times, want once", got)
	}
	if strings.Join(models, ",") != testModel+",judge-model" {
		t.Errorf("requested models = %v", models)
	}
	for i, a := range auths {
		if a != "Bearer "+key {
			t.Errorf("request %d did not carry the shared credential", i)
		}
	}
	if agent.Identity().Model != testModel || judgeRoute.Identity() != (Identity{Route: Compatible, Model: "judge-model"}) {
		t.Errorf("identities = %+v / %+v", agent.Identity(), judgeRoute.Identity())
	}
	if !judgeRoute.ContainsCredential("x"+key) || judgeRoute.Endpoint() != agent.Endpoint() {
		t.Errorf("the derived route does not share the credential and endpoint")
	}
}

func TestWithModelRefusals(t *testing.T) {
	key := testKey()
	base := mustCompatible(t, Config{Endpoint: "https://api.example.com/v1", KeyEnv: "K", Model: testModel, Getenv: envWith(map[string]string{"K": key})})
	tests := []struct{ name, model, want string }{
		{"empty", "", "no model name"},
		{"fake", "FAKE", "fake model cannot be combined"},
		{"holds credential", "judge-" + key, "contains the endpoint credential"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := base.WithModel(tt.model)
			var ce *ConfigError
			if m != nil || !errors.As(err, &ce) || ce.Field != "model" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("WithModel(%q) = (%v, %v), want a model ConfigError saying %q", tt.name, m, err, tt.want)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("the refusal quotes the credential")
			}
		})
	}
	if base.Identity().Model != testModel {
		t.Errorf("a refused WithModel changed the receiver")
	}
}

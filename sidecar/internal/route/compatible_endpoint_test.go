package route

import (
	"errors"
	"strings"
	"testing"
)

// testKey builds a credential-shaped value at run time so no token-shaped
// literal is ever committed.
func testKey() string { return "gh" + "p_" + strings.Repeat("a1B2", 9) }

func TestParseEndpointAccepts(t *testing.T) {
	tests := []struct {
		name, raw, keyEnv, wantURL string
	}{
		{"https with path", "https://api.example.com/v1", "", "https://api.example.com/v1/chat/completions"},
		{"https with key", "https://api.example.com/v1", "OPENAI_API_KEY", "https://api.example.com/v1/chat/completions"},
		{"https bare host", "https://api.example.com", "", "https://api.example.com/chat/completions"},
		{"https port and deep path", "https://gw.example.com:8443/a/b/c", "K", "https://gw.example.com:8443/a/b/c/chat/completions"},
		{"http 127.0.0.1 with port", "http://127.0.0.1:11434/v1", "", "http://127.0.0.1:11434/v1/chat/completions"},
		{"http 127.0.0.1 no port", "http://127.0.0.1", "", "http://127.0.0.1/chat/completions"},
		{"http [::1] with port", "http://[::1]:8080/v1", "", "http://[::1]:8080/v1/chat/completions"},
		{"http [::1] no port", "http://[::1]/openai", "", "http://[::1]/openai/chat/completions"},
		{"path case kept", "https://api.example.com/OpenAI/V1", "", "https://api.example.com/OpenAI/V1/chat/completions"},
		{"gateway hex account id", "https://gateway.example.com/v1/0123456789abcdef0123456789abcdef/gw/openai", "", "https://gateway.example.com/v1/0123456789abcdef0123456789abcdef/gw/openai/chat/completions"},
		{"underscore var", "https://api.example.com/v1", "_my_key_2", "https://api.example.com/v1/chat/completions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := ParseEndpoint(tt.raw, tt.keyEnv)
			if err != nil {
				t.Fatalf("ParseEndpoint(%q, %q): %v", tt.raw, tt.keyEnv, err)
			}
			if ep.Base() != tt.raw {
				t.Errorf("Base() = %q, want it exactly as given %q", ep.Base(), tt.raw)
			}
			if got := ep.ChatCompletionsURL(); got != tt.wantURL {
				t.Errorf("ChatCompletionsURL() = %q, want %q", got, tt.wantURL)
			}
			if ep.KeyEnv() != tt.keyEnv {
				t.Errorf("KeyEnv() = %q, want %q", ep.KeyEnv(), tt.keyEnv)
			}
		})
	}
}

func TestParseEndpointRefuses(t *testing.T) {
	key := testKey()
	tests := []struct {
		name, raw, keyEnv string
		field, wantText   string
	}{
		{"empty", "", "", "endpoint", "empty"},
		{"localhost over http", "http://localhost:11434/v1", "", "endpoint", "literal address"},
		{"LOCALHOST over http", "http://LOCALHOST:11434/v1", "", "endpoint", "literal address"},
		{"other 127/8 address", "http://127.0.0.2:8080/v1", "", "endpoint", "literal address"},
		{"short 127.1", "http://127.1:8080/v1", "", "endpoint", "literal address"},
		{"trailing-dot 127.0.0.1.", "http://127.0.0.1.:8080/v1", "", "endpoint", "literal address"},
		{"hex loopback", "http://0x7f000001/v1", "", "endpoint", "literal address"},
		{"long ::1 spelling", "http://[0:0:0:0:0:0:0:1]:8080/v1", "", "endpoint", "literal address"},
		{"v4-mapped ::1", "http://[::ffff:127.0.0.1]:8080/v1", "", "endpoint", "literal address"},
		{"ip6-localhost name", "http://ip6-localhost:8080/v1", "", "endpoint", "literal address"},
		{"private address over http", "http://192.168.1.10:8080/v1", "", "endpoint", "literal address"},
		{"public name over http", "http://api.example.com/v1", "", "endpoint", "literal address"},
		{"key over http at 127.0.0.1", "http://127.0.0.1:11434/v1", "MY_KEY", "endpoint", "only over https"},
		{"key over http at ::1", "http://[::1]:11434/v1", "MY_KEY", "endpoint", "only over https"},
		{"userinfo user:pass", "https://user:pass@api.example.com/v1", "", "endpoint", "user information"},
		{"userinfo user only", "https://user@api.example.com/v1", "", "endpoint", "user information"},
		{"key in userinfo", "https://x:" + key + "@api.example.com/v1", "", "endpoint", "credential"},
		{"key in query", "https://api.example.com/v1?api_key=" + key, "", "endpoint", "credential"},
		{"key-ish query", "https://api.example.com/v1?key=abc123", "", "endpoint", "query"},
		{"empty query", "https://api.example.com/v1?", "", "endpoint", "query"},
		{"api-version query", "https://api.example.com/v1?api-version=2024-06-01", "", "endpoint", "query"},
		{"key in fragment", "https://api.example.com/v1#" + key, "", "endpoint", "credential"},
		{"fragment", "https://api.example.com/v1#top", "", "endpoint", "fragment"},
		{"key in path", "https://api.example.com/" + key + "/v1", "", "endpoint", "credential"},
		{"key= in path", "https://api.example.com/key=abc/v1", "", "endpoint", "carries a credential"},
		{"token= in path", "https://api.example.com/v1/token=xyz", "", "endpoint", "carries a credential"},
		{"apikey segment", "https://api.example.com/apikey/abc/v1", "", "endpoint", "carries a credential"},
		{"trailing slash", "https://api.example.com/v1/", "", "endpoint", `ends with "/"`},
		{"trailing slash bare", "http://127.0.0.1:11434/", "", "endpoint", `ends with "/"`},
		{"ftp scheme", "ftp://api.example.com/v1", "", "endpoint", "https://"},
		{"no scheme", "api.example.com/v1", "", "endpoint", "https://"},
		{"ws scheme", "ws://127.0.0.1:8080/v1", "", "endpoint", "https://"},
		{"opaque", "https:api.example.com", "", "endpoint", "no host"},
		{"no host", "https:///v1", "", "endpoint", "no host"},
		{"leading space", " https://api.example.com/v1", "", "endpoint", "spaces"},
		{"embedded newline", "https://api.example.com/v1\nX", "", "endpoint", "spaces"},
		{"bad port", "https://api.example.com:99999/v1", "", "endpoint", "port"},
		{"zero port", "https://api.example.com:0/v1", "", "endpoint", "port"},
		{"empty port", "https://api.example.com:/v1", "", "endpoint", "port"},
		{"unparseable", "https://[::1/v1", "", "endpoint", "not a valid URL"},
		{"var with dash", "https://api.example.com/v1", "MY-KEY", "key-env", "not a valid environment variable name"},
		{"var starting digit", "https://api.example.com/v1", "1KEY", "key-env", "not a valid"},
		{"var with space", "https://api.example.com/v1", "MY KEY", "key-env", "not a valid"},
		{"var is a dollar ref", "https://api.example.com/v1", "$MY_KEY", "key-env", "not a valid"},
		{"value given as var name", "https://api.example.com/v1", key, "key-env", "looks like a credential value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseEndpoint(tt.raw, tt.keyEnv)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("ParseEndpoint(%q, %q) = %v, want a *ConfigError", tt.raw, tt.keyEnv, err)
			}
			if ce.Field != tt.field {
				t.Errorf("Field = %q, want %q", ce.Field, tt.field)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
			if ce.Next == "" {
				t.Errorf("error %q says nothing about what to change", err)
			}
			if strings.Contains(err.Error(), key) {
				t.Errorf("error text repeats the credential")
			}
			if tt.raw != "" && strings.Contains(err.Error(), tt.raw) {
				t.Errorf("error text repeats the endpoint %q", tt.raw)
			}
		})
	}
}

func TestValidateKeyEnvRefusesEmpty(t *testing.T) {
	err := ValidateKeyEnv("")
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "key-env" || !strings.Contains(err.Error(), "drop --key-env") {
		t.Fatalf("ValidateKeyEnv(\"\") = %v, want a key-env refusal saying to drop --key-env", err)
	}
	if err := ValidateKeyEnv("OPENAI_API_KEY"); err != nil {
		t.Fatalf("ValidateKeyEnv(OPENAI_API_KEY) = %v", err)
	}
}

func TestEndpointStringHidesPath(t *testing.T) {
	ep, err := ParseEndpoint("https://api.example.com:8443/private/v1", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := ep.String(), "https://api.example.com:8443"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

package state_test

import (
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/state"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDir(t *testing.T) {
	tests := []struct {
		name    string
		goos    string
		getenv  func(string) string
		want    string
		wantErr string
	}{
		{"KMX_HOME wins on linux", "linux", env("KMX_HOME", "/srv/kmx/", "XDG_CONFIG_HOME", "/x", "HOME", "/home/u"), "/srv/kmx", ""},
		{"KMX_HOME wins on windows", "windows", env("KMX_HOME", `D:\state\kmx`, "LOCALAPPDATA", `C:\Users\u\AppData\Local`), `D:\state\kmx`, ""},
		{"KMX_HOME relative", "linux", env("KMX_HOME", "state", "HOME", "/home/u"), "", "not an absolute path"},
		{"KMX_HOME drive-relative on windows", "windows", env("KMX_HOME", `C:state`), "", "not an absolute path"},
		{"KMX_HOME UNC on windows", "windows", env("KMX_HOME", `\\server\share\kmx`), "", "network (UNC)"},
		{"XDG on linux", "linux", env("XDG_CONFIG_HOME", "/home/u/cfg", "HOME", "/home/u"), "/home/u/cfg/kmx", ""},
		{"relative XDG ignored", "linux", env("XDG_CONFIG_HOME", "cfg", "HOME", "/home/u"), "/home/u/.config/kmx", ""},
		{"HOME on linux", "linux", env("HOME", "/home/u"), "/home/u/.config/kmx", ""},
		{"XDG on freebsd", "freebsd", env("XDG_CONFIG_HOME", "/c"), "/c/kmx", ""},
		{"no HOME on linux", "linux", env(), "", "HOME is"},
		{"darwin ignores XDG", "darwin", env("XDG_CONFIG_HOME", "/x", "HOME", "/Users/u"), "/Users/u/Library/Application Support/kmx", ""},
		{"darwin without HOME", "darwin", env(), "", "HOME is"},
		{"windows LOCALAPPDATA", "windows", env("LOCALAPPDATA", `C:\Users\u\AppData\Local`, "HOME", "/home/u"), `C:\Users\u\AppData\Local\kmx`, ""},
		{"windows forward slashes", "windows", env("LOCALAPPDATA", `C:/Users/u/AppData/Local/`), `C:\Users\u\AppData\Local\kmx`, ""},
		{"windows without LOCALAPPDATA", "windows", env("APPDATA", `C:\Users\u\AppData\Roaming`), "", "LOCALAPPDATA"},
		{"windows UNC LOCALAPPDATA", "windows", env("LOCALAPPDATA", `\\dc\profiles\u`), "", "network (UNC)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := state.Dir(tt.getenv, tt.goos)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Dir = %q, %v; want an error mentioning %q", got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Dir = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

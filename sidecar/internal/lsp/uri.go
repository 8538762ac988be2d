package lsp

import (
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"
)

// uriPath returns the local file path of a file:// URI, or "" for any other
// URI (an untitled buffer has no folder, so no kmx.yaml and no disk copy).
func uriPath(uri string) string {
	p, err := filePath(uri)
	if err != nil {
		return ""
	}
	return p
}

func filePath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%q is not a URI: %w", uri, err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("%q is not a file URI; save the file to disk first", uri)
	}
	p := u.Path
	if runtime.GOOS == "windows" {
		// file:///C:/x → C:\x
		p = strings.TrimPrefix(p, "/")
	}
	return filepath.FromSlash(p), nil
}

package architecture

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/kmxdev/kmx/sidecar/internal/testutil"
)

const module = "github.com/kmxdev/kmx/sidecar/"

// layers reads docs/architecture.md's layer table: each package (relative
// to sidecar/internal/, or cmd/...) and its layer number.
func layers(t *testing.T, root string) map[string]int {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	row := regexp.MustCompile(`^\| (\d+) [^|]*\| ([^|]*)\|`)
	name := regexp.MustCompile("`([^`]+)`")
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		m := row.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		for _, p := range name.FindAllStringSubmatch(m[2], -1) {
			if prev, ok := out[p[1]]; ok {
				t.Errorf("docs/architecture.md puts %s in layers %d and %d: give it one", p[1], prev, n)
			}
			out[p[1]] = n
		}
	}
	if len(out) < 10 {
		t.Fatalf("docs/architecture.md's layer table names only %d packages; the check would prove nothing", len(out))
	}
	return out
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// packages lists the sidecar's packages with their imports (tests aside),
// by `go list -json`, with the test build tag so every package is listed.
func packages(t *testing.T, root string) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "kmxtest", "-json=ImportPath,Imports", "./sidecar/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// short is an import path as the table names it: relative to
// sidecar/internal/, or cmd/NAME; "" for a package outside the sidecar.
func short(path string) string {
	rest, ok := strings.CutPrefix(path, module)
	if !ok {
		return ""
	}
	if in, ok := strings.CutPrefix(rest, "internal/"); ok {
		return in
	}
	return rest
}

// TestImportsFollowTheLayers fails when a package imports one of its own
// layer or a higher one, when a package is in no layer, and when the table
// names a package that does not exist.
func TestImportsFollowTheLayers(t *testing.T) {
	root := testutil.ModuleRoot(t)
	layer := layers(t, root)
	seen := map[string]bool{}
	for _, p := range packages(t, root) {
		from := short(p.ImportPath)
		if from == "architecture" {
			continue
		}
		seen[from] = true
		lf, ok := layer[from]
		if !ok {
			t.Errorf("%s is in no layer: add it to the table in docs/architecture.md (the lowest layer above everything it imports)", from)
			continue
		}
		for _, imp := range p.Imports {
			to := short(imp)
			if to == "" {
				continue
			}
			lt, ok := layer[to]
			if ok && lt >= lf {
				t.Errorf("%s (layer %d) imports %s (layer %d): an import must go to a lower layer (docs/architecture.md)", from, lf, to, lt)
			}
		}
	}
	var stale []string
	for p := range layer {
		if !seen[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/architecture.md names packages that do not exist: %s", strings.Join(stale, ", "))
	}
}

//go:build kmxtest

// Command kmx-ghfixture serves the owned GitHub MCP fixture (ghreadtest)
// for the real-VS-Code test: it prints the endpoint URL and the
// certificate file on one line, keeps the number of HTTP requests it has
// answered in DIR/requests, and serves until it is stopped. Test builds
// only (-tags kmxtest); it is never shipped.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kmxdev/kmx/sidecar/internal/ghread/ghreadtest"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kmx-ghfixture DIR OWNER/REPO")
		os.Exit(2)
	}
	dir, repo := os.Args[1], os.Args[2]
	f, err := ghreadtest.Start(dir, ghreadtest.Options{Items: []ghreadtest.Item{
		{Number: 7, Title: "Add the tool harness", Repository: repo, Merged: true},
		{Number: 8, Title: "Still open", Repository: repo},
	}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "kmx-ghfixture:", err)
		os.Exit(1)
	}
	defer f.Close()
	fmt.Println(f.URL, f.CAFile)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	counts := filepath.Join(dir, "requests")
	last := int64(-1)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
			if n := f.Requests(); n != last {
				if err := os.WriteFile(counts+".tmp", []byte(strconv.FormatInt(n, 10)), 0o600); err == nil {
					_ = os.Rename(counts+".tmp", counts)
				}
				last = n
			}
		}
	}
}

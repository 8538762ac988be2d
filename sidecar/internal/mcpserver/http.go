package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPPath is where the Streamable HTTP endpoint is served.
const HTTPPath = "/mcp"

// CheckLoopback refuses any listen address that is not a literal loopback
// IP with a port (127.0.0.1:0, [::1]:8080). Names such as localhost are
// refused too, since a name can resolve elsewhere. The HTTP mode is for the
// conformance suite only and has no authentication, so it must never be
// reachable from another machine.
func CheckLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("the listen address %q is not HOST:PORT: use 127.0.0.1:0 (or [::1]:0)", addr)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() || ip.Zone() != "" {
		return fmt.Errorf("the listen address %q is not a loopback IP: the test-only HTTP mode listens on 127.0.0.1 or [::1] only", addr)
	}
	if port == "" {
		return fmt.Errorf("the listen address %q has no port: use %s", addr, net.JoinHostPort(host, "0"))
	}
	return nil
}

// ServeHTTP serves srv over Streamable HTTP at http://ADDR/mcp until ctx
// ends, after writing the bound URL as one line to announce (the port may
// have been 0). The SDK's localhost DNS-rebinding protection stays on.
func ServeHTTP(ctx context.Context, srv *mcp.Server, addr string, announce io.Writer) error {
	if err := CheckLoopback(addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle(HTTPPath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(announce, "kmx mcp: serving Streamable HTTP (test only) at http://%s%s\n", ln.Addr(), HTTPPath)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		// Open SSE streams do not end by themselves: cut them.
		if closeErr := hs.Close(); closeErr != nil && !errors.Is(closeErr, http.ErrServerClosed) {
			return fmt.Errorf("stop http: %w", closeErr)
		}
	}
	return nil
}

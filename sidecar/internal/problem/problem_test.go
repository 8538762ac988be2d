package problem

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestText(t *testing.T) {
	base := Wrap(fs.ErrNotExist, SetKMXHome)
	wrapped := fmt.Errorf("kmx journal list: %w", base)
	cases := []struct {
		err  error
		want string
	}{
		{New("the file is too large", "shorten it"), "the file is too large\nnext: shorten it"},
		{wrapped, "kmx journal list: file does not exist\nnext: " + SetKMXHome},
		{errors.New("plain"), "plain"},
		{New("already says: do x", "do x"), "already says\nnext: do x"},
		{New("do x", "do x"), "do x\nnext: do x"},
	}
	for _, c := range cases {
		if got := Text(c.err); got != c.want {
			t.Errorf("Text(%v) = %q, want %q", c.err, got, c.want)
		}
	}
	if !errors.Is(wrapped, fs.ErrNotExist) || NextStep(wrapped) != SetKMXHome {
		t.Errorf("Wrap lost the chain or the step")
	}
}

// TestNoGRPCStatusTextReachesAUser: an error that crossed the in-process
// gRPC listeners is shown without grpc-go's "rpc error: code = … desc = "
// envelope, and a full disk or a read-only state folder gets a step that
// says what to change, even as text only.
func TestNoGRPCStatusTextReachesAUser(t *testing.T) {
	full := status.Error(codes.Internal, "journal append: write /x/run.db-wal: no space left on device")
	wrapped := fmt.Errorf("execute: %w", full)
	for _, err := range []error{full, wrapped} {
		got := Text(err)
		if strings.Contains(got, "rpc error") || strings.Contains(got, "code =") || !strings.Contains(got, "no space left on device") {
			t.Errorf("Text(%v) = %q", err, got)
		}
		if step := StepFor(err, "nothing was kept"); !strings.HasPrefix(step, "free space on the disk") {
			t.Errorf("StepFor(disk full) = %q", step)
		}
	}
	// SQLite says a full disk in its own words, as kmx test showed them on
	// a full state folder (issue 31 item 9): the step is still free space.
	for _, msg := range []string{
		"finish journal 20261205T075931.020024392Z-c83c4dd6: database or disk is full (13)",
		"create journal 20261205T075931.574510436Z-abe6d6fc: write schema: database or disk is full (13)",
	} {
		if step := StepFor(errors.New(msg), "x"); !strings.HasPrefix(step, "free space on the disk") {
			t.Errorf("StepFor(%q) = %q", msg, step)
		}
	}
	if step := StepFor(errors.New("finish journal R: record status: disk I/O error (4874)"), "x"); !strings.Contains(step, "free space on it if it is full") {
		t.Errorf("StepFor(disk I/O error) = %q", step)
	}
	if step := StepFor(fmt.Errorf("create: %w", syscall.EROFS), "x"); !strings.HasPrefix(step, "make the kmx state folder writable") {
		t.Errorf("StepFor(read-only) = %q", step)
	}
	if step := StepFor(errors.New("something else"), "x"); !strings.HasPrefix(step, "run the command again") {
		t.Errorf("StepFor(other) = %q", step)
	}
}

// Clean drops the gRPC envelope from the text and keeps the error chain.
func TestCleanKeepsTheChain(t *testing.T) {
	err := Clean(fmt.Errorf("append: %w", status.Error(codes.Internal, "write: "+syscall.ENOSPC.Error())))
	if got := err.Error(); got != "append: write: no space left on device" {
		t.Fatalf("Clean's text is %q", got)
	}
	if _, ok := status.FromError(errors.Unwrap(err)); !ok {
		t.Fatal("Clean lost the wrapped error")
	}
	if Clean(nil) != nil {
		t.Fatal("Clean(nil) is not nil")
	}
}

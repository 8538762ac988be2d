package problem

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
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

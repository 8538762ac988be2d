package agentfile

import (
	"fmt"
	"io"
	"os"
)

// MaxFileSize is the largest agent file any front reads (CLI, MCP, the
// editor's files that are not open): 8 MiB. An agent file is instructions
// and examples; one this large is a mistake, and parsing it costs hundreds
// of MiB.
const MaxFileSize = 8 << 20

// TooLargeError is an agent file over MaxFileSize. It was refused before
// the rest of it was read.
type TooLargeError struct {
	Path string
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s is larger than 8 MiB, the limit for an agent file", e.Path)
}

// NextStep says what to change (problem.Problem).
func (e *TooLargeError) NextStep() string {
	return "keep the agent file under 8 MiB: move long reference text out of it and shorten its examples"
}

// ReadFile reads an agent file for any front, refusing one larger than
// MaxFileSize before reading the rest of it. Open and read errors are
// returned as the os package gives them (an *fs.PathError).
func ReadFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		return nil, &TooLargeError{Path: path}
	}
	// Files that do not report a size (pipes, /proc) are read one byte past
	// the limit, never further.
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFileSize {
		return nil, &TooLargeError{Path: path}
	}
	return b, nil
}

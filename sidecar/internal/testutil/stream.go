package testutil

import (
	"errors"
	"io"
)

// RecvAll receives from a stream (a gRPC client stream's Recv) until io.EOF
// and returns every message in order, with the first other error. each,
// when not nil, sees every message as it arrives (to answer it on a
// bidirectional stream); an error from it ends the receiving.
func RecvAll[T any](recv func() (T, error), each func(T) error) ([]T, error) {
	var out []T
	for {
		m, err := recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, m)
		if each != nil {
			if err := each(m); err != nil {
				return out, err
			}
		}
	}
}

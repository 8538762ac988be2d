package lsp

import "testing"

// TestEveryCommandIsDispatched: the command table and the generated
// contract name the same commands, so none is advertised and unserved.
func TestEveryCommandIsDispatched(t *testing.T) {
	table := newServer(Options{}).commands()
	for name := range Commands() {
		if table[name] == nil {
			t.Errorf("%s is in the contract but has no handler", name)
		}
	}
	for name := range table {
		if _, ok := Commands()[name]; !ok {
			t.Errorf("%s has a handler but is not in the contract", name)
		}
	}
}

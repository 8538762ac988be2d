package english

import "testing"

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 examples"}, {1, "1 example"}, {2, "2 examples"}, {-1, "-1 examples"}} {
		if got := Plural(c.n, "example"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

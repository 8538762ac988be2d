// Package english holds the wording every front shares when it counts
// things for a person to read ("1 example", "3 examples"), so the CLI, the
// language server and the comparison table say it the same way.
package english

import "strconv"

// Plural is n and word, with an s unless n is 1: "1 example", "0 examples".
// Only for regular nouns; write an irregular one out at its call.
func Plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

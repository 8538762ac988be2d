// Package secrets recognises credential-shaped text and checks whether a
// known credential value appears in text, including JSON-escaped and
// terminal-sanitized forms of it.
//
// It owns the list of credential shapes kmx refuses. It never stores,
// returns, logs or formats a credential value: a Finding carries only the
// shape's human name and byte offsets, and ContainsValue answers yes or no.
//
// # Shapes and their exact rules
//
// Every shape must start at a token boundary: the byte before it is not an
// ASCII letter, digit, '_' or '-' (so "task-..." never starts an "sk-" key).
// Minimum lengths follow the real formats closely enough that ordinary prose
// ("sk-learn", "Bearer of bad news", "AKIA" alone) does not match.
//
//   - "GitHub token": ghp_, gho_, ghu_, ghs_ or ghr_ followed by at least 36
//     ASCII letters or digits; or github_pat_ followed by at least 36
//     letters, digits or '_'.
//   - "API secret key (sk-)": sk-, sk-ant- or sk-proj- followed by at least
//     20 letters, digits, '_' or '-', containing at least one digit and at
//     least one letter.
//   - "AWS access key ID": AKIA or ASIA followed by exactly 16 upper-case
//     letters or digits, then a token boundary.
//   - "Slack token": xoxa-, xoxb-, xoxp-, xoxr- or xoxs- followed by at least
//     10 letters, digits or '-', containing at least one digit.
//   - "Google API key": AIza followed by exactly 35 letters, digits, '_' or
//     '-'.
//   - "PEM private key": a line "-----BEGIN <WORDS >PRIVATE KEY-----"; the
//     finding runs to the matching "-----END ...PRIVATE KEY-----" when one
//     follows, else it covers the header.
//   - "JWT": three base64url segments joined by '.', the first starting
//     "eyJ", each at least 8 characters long.
//   - "Bearer token": the word "bearer" in any letter case, spaces or tabs,
//     then at least 20 characters from [A-Za-z0-9._~+/=-] containing at
//     least one digit and one letter.
//
// When two findings overlap (a JWT inside "Bearer eyJ..."), only the one that
// starts first is kept (the longer one when both start together), so one
// credential yields one finding.
package secrets

import (
	"regexp"
	"sort"
	"strings"
)

// Finding is one credential-shaped span of text. Shape is a human name such
// as "GitHub token"; Start and End are byte offsets, End exclusive. A
// Finding never carries the matched value.
type Finding struct {
	Shape string
	Start int
	End   int
}

// Shape names, stable so that callers and docs can quote them.
const (
	ShapeGitHub = "GitHub token"
	ShapeSK     = "API secret key (sk-)"
	ShapeAWS    = "AWS access key ID"
	ShapeSlack  = "Slack token"
	ShapeGoogle = "Google API key"
	ShapePEM    = "PEM private key"
	ShapeJWT    = "JWT"
	ShapeBearer = "Bearer token"
)

// WithArticle is a shape name with its indefinite article, as a sentence
// names one: "an AWS access key ID", "a GitHub token".
func WithArticle(shape string) string {
	if shape != "" && strings.ContainsRune("AEIOU", rune(shape[0])) {
		return "an " + shape
	}
	return "a " + shape
}

// shape is one credential format: literal anchors found with a fast
// substring search, then a run of token characters after the anchor. Plain
// loops are used instead of one regexp per shape because this runs over the
// whole file on every keystroke, and most anchors ("sk-", "bearer") also
// occur in prose, so the per-candidate cost matters.
type shape struct {
	name    string
	anchors []string
	// class is the byte class of the body after the anchor; min is the
	// least body length, and exact demands precisely min bytes followed by
	// a token boundary.
	class func(byte) bool
	min   int
	exact bool
	// check, when set, is an extra rule on the body (at least one digit and
	// one letter).
	check func(string) bool
}

var shapes = []shape{
	{name: ShapeGitHub, anchors: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_"}, class: isAlnum, min: 36},
	{name: ShapeGitHub, anchors: []string{"github_pat_"}, class: isWordByte, min: 36},
	{name: ShapeSK, anchors: []string{"sk-"}, class: isTokenByte, min: 20, check: digitAndLetter},
	{name: ShapeAWS, anchors: []string{"AKIA", "ASIA"}, class: isUpperOrDigit, min: 16, exact: true},
	{name: ShapeSlack, anchors: []string{"xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"}, class: isAlnumOrDash, min: 10, check: hasDigit},
	{name: ShapeGoogle, anchors: []string{"AIza"}, class: isTokenByte, min: 35, exact: true},
}

// The two shapes whose structure is more than one run use regexps, compiled
// once; they are immutable and safe for concurrent use.
var (
	pemBegin = regexp.MustCompile(`^-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----`)
	pemEnd   = regexp.MustCompile(`-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----`)
	jwt      = regexp.MustCompile(`^eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)
)

// Scan returns every credential-shaped span of text in order of Start. It
// never returns the matched text itself.
func Scan(text string) []Finding {
	var found []Finding
	for i := range shapes {
		found = shapes[i].scan(text, found)
	}
	found = scanRegexp(text, "-----BEGIN ", ShapePEM, pemBegin, found)
	found = scanRegexp(text, "eyJ", ShapeJWT, jwt, found)
	found = scanBearer(text, found)
	return dropOverlaps(found)
}

func (s *shape) scan(text string, found []Finding) []Finding {
	for _, anchor := range s.anchors {
		for from := 0; from < len(text); {
			i := strings.Index(text[from:], anchor)
			if i < 0 {
				break
			}
			start := from + i
			from = start + 1
			if start > 0 && isTokenByte(text[start-1]) {
				continue
			}
			body := start + len(anchor)
			end := body
			for end < len(text) && s.class(text[end]) {
				end++
			}
			switch {
			case end-body < s.min:
				continue
			case s.exact && (end-body != s.min || end < len(text) && isTokenByte(text[end])):
				continue
			case s.check != nil && !s.check(text[body:end]):
				continue
			}
			found = append(found, Finding{Shape: s.name, Start: start, End: end})
			from = end
		}
	}
	return found
}

func scanRegexp(text, anchor, name string, re *regexp.Regexp, found []Finding) []Finding {
	for from := 0; from < len(text); {
		i := strings.Index(text[from:], anchor)
		if i < 0 {
			break
		}
		start := from + i
		from = start + 1
		if name == ShapeJWT && start > 0 && isTokenByte(text[start-1]) {
			continue
		}
		loc := re.FindStringIndex(text[start:])
		if loc == nil {
			continue
		}
		end := start + loc[1]
		if name == ShapePEM {
			if e := pemEnd.FindStringIndex(text[end:]); e != nil {
				end += e[1]
			}
		}
		found = append(found, Finding{Shape: name, Start: start, End: end})
		from = end
	}
	return found
}

// scanBearer looks for the word "bearer" in any letter case. Candidates are
// found with two byte searches ('b' and 'B') rather than a case-insensitive
// regexp, which has no literal prefix to skip ahead with.
func scanBearer(text string, found []Finding) []Finding {
	lower, upper := -1, -1
	for from := 0; from < len(text); {
		if lower < from {
			lower = nextByte(text, from, 'b')
		}
		if upper < from {
			upper = nextByte(text, from, 'B')
		}
		start := min(lower, upper)
		if start == len(text) {
			break
		}
		from = start + 1
		if len(text)-start < 6 || !strings.EqualFold(text[start:start+6], "bearer") {
			continue
		}
		if start > 0 && isTokenByte(text[start-1]) {
			continue
		}
		space := start + 6
		for space < len(text) && (text[space] == ' ' || text[space] == '\t') {
			space++
		}
		end := space
		for end < len(text) && isBearerByte(text[end]) {
			end++
		}
		if space == start+6 || end-space < 20 || !digitAndLetter(text[space:end]) {
			continue
		}
		found = append(found, Finding{Shape: ShapeBearer, Start: start, End: end})
		from = end
	}
	return found
}

// nextByte is the index of c at or after from, len(text) when none.
func nextByte(text string, from int, c byte) int {
	if i := strings.IndexByte(text[from:], c); i >= 0 {
		return from + i
	}
	return len(text)
}

func dropOverlaps(found []Finding) []Finding {
	if len(found) < 2 {
		return found
	}
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].Start != found[j].Start {
			return found[i].Start < found[j].Start
		}
		return found[i].End > found[j].End
	})
	kept := found[:1]
	for _, f := range found[1:] {
		if f.Start < kept[len(kept)-1].End {
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

func isAlnum(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func isWordByte(b byte) bool     { return b == '_' || isAlnum(b) }
func isAlnumOrDash(b byte) bool  { return b == '-' || isAlnum(b) }
func isTokenByte(b byte) bool    { return b == '_' || b == '-' || isAlnum(b) }
func isUpperOrDigit(b byte) bool { return b >= '0' && b <= '9' || b >= 'A' && b <= 'Z' }
func isBearerByte(b byte) bool   { return isTokenByte(b) || strings.IndexByte("._~+/=", b) >= 0 }

func hasDigit(s string) bool {
	return strings.ContainsAny(s, "0123456789")
}

func digitAndLetter(s string) bool {
	letter := false
	for i := 0; i < len(s); i++ {
		if b := s[i]; b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' {
			letter = true
			break
		}
	}
	return letter && hasDigit(s)
}

// Package failures owns kmx's retained Test failures: a small, bounded,
// owner-private projection of completed non-pass Tests kept under
// <kmx state>/eval-failures, and Explain, which reads it back offline.
//
// A record binds the file subject (checked physical parent directory plus
// leaf name), the exact source revision, the agent and judge provider and
// model, the full or subset selection and per-assertion results (judge scores
// and thresholds, never rationale). It never holds instructions, example
// input, an endpoint, a credential, a journal handle or run ID, or a judge's
// reasoning, and a record with a credential-shaped value is refused whole.
//
// The package never talks to a model, provider, tool, config file or
// journal, and never reads verdicts from a journal: the runner hands it a
// Record after a Test completes. A test pins its import graph so that stays
// true. Retention failures are reported as "unavailable" and never change a
// verdict.
package failures

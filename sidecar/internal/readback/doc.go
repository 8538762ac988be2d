// Package readback reads retained runs back from their journals, never
// sending a model call: Inspect replays every journaled turn with every
// model call refused and counted and reports what was journaled (never a
// verdict); Diff compares two runs example by example from their
// inspections and recorded verdicts; PlanRegrade matches a new Test's
// examples to the verified answers of an earlier run so the runner can
// grade them again without an agent call.
//
// Every result is labeled as a replay or comparison, not a test result.
package readback

// Package localpreview runs one agent file's examples (Run and Test) and
// reports a verdict per example. It owns the example loop: selection,
// refusals before anything is created or sent, deadlines, judging and the
// safe report. Execution goes through an Executor; the default places each
// example and each judge sample in a fresh Session on the embedded Sessions
// service, journals every turn and verifies it by replay, so nothing that is
// not a complete, replay-verified turn with passing assertions is ever
// reported as a pass. Inspect replays a retained run's journal with every
// model call refused and counted; it reports what was journaled, never a
// verdict.
//
// Every result is labeled "local preview": it is never deployment
// qualification, suite evidence or a passing receipt.
package localpreview

// Package runner runs one agent file's examples (Run and Test) and reports
// a verdict per example. It takes the plan the invocation package decided
// (nothing is refused here that could have been refused before a send) and
// owns the running: the journal of the run, the example loop and its
// deadlines, trials, judging, re-grades (answers replayed from an earlier
// run that readback matched), capturing live tool results into pending
// recordings, retaining failures for Explain, and the safe report.
// Execution goes through an Executor; the default places each example and
// each judge sample in a fresh Session on the embedded Sessions service,
// journals every turn and verifies it by replay, so nothing that is not a
// complete, replay-verified turn with passing assertions is ever reported
// as a pass.
//
// Every result is labeled "local preview": it is never deployment
// qualification, suite evidence or a passing receipt.
package runner
